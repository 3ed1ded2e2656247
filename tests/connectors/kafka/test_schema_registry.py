"""The tests' schema registry (tests/support/schema_registry.py) against confluent-kafka's own
``SchemaRegistryClient``, ``AvroSerializer`` and ``AvroDeserializer``: it answers them as Confluent's registry
does (ids, versions, compatibility, the errors' codes, basic auth)."""

from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.schema_registry import SchemaRegistry

V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": ["null", "string"], "default": None}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}]}
INCOMPATIBLE = {**V1, "fields": [*V1["fields"], {"name": "price", "type": "double"}]}


def _value(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_serializer_frames_records_and_deserializer_reads_them_back(schema_registry: SchemaRegistry) -> None:
    client = SchemaRegistryClient({"url": schema_registry.url})
    data = AvroSerializer(client, json.dumps(V1))({"id": 7, "item": "pen"}, _value("orders"))
    assert data[0] == 0 and struct.unpack(">I", data[1:5])[0] == 1
    fresh = SchemaRegistryClient({"url": schema_registry.url})  # no cache: fetches the schema by id
    assert AvroDeserializer(fresh)(data, _value("orders")) == {"id": 7, "item": "pen"}
    assert ("GET", "/schemas/ids/1") in schema_registry.requests
    assert client.get_subjects() == ["orders-value"]


def test_versions_compatibility_and_errors_as_confluent_answers(schema_registry: SchemaRegistry) -> None:
    client = SchemaRegistryClient({"url": schema_registry.url})
    first = client.register_schema("orders-value", Schema(json.dumps(V1), "AVRO"))
    assert client.test_compatibility("orders-value", Schema(json.dumps(V2), "AVRO")) is True
    assert client.test_compatibility("orders-value", Schema(json.dumps(INCOMPATIBLE), "AVRO")) is False
    second = client.register_schema("orders-value", Schema(json.dumps(V2), "AVRO"))
    assert (first, second) == (1, 2)
    assert client.register_schema("other-value", Schema(json.dumps(V1), "AVRO")) == 1  # same schema, same id
    assert client.get_versions("orders-value") == [1, 2]
    latest = client.get_latest_version("orders-value")
    assert (latest.version, latest.schema_id) == (2, 2)
    assert client.get_version("orders-value", 1).schema_id == 1
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders-value", Schema(json.dumps(INCOMPATIBLE), "AVRO"))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    with pytest.raises(SchemaRegistryError) as unknown:
        SchemaRegistryClient({"url": schema_registry.url}).get_schema(99)
    assert (unknown.value.http_status_code, unknown.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as no_subject:
        client.get_latest_version("nothing-value")
    assert no_subject.value.error_code == 40401
    client.set_compatibility("orders-value", "NONE")
    assert client.get_compatibility("orders-value") == "NONE"
    assert client.register_schema("orders-value", Schema(json.dumps(INCOMPATIBLE), "AVRO")) == 3


def test_basic_auth_and_bearer_tokens() -> None:
    registry = SchemaRegistry(users={"alice": "secret"}, tokens={"t0ken"}).start()
    try:
        good = SchemaRegistryClient({"url": registry.url, "basic.auth.user.info": "alice:secret"})
        assert good.register_schema("a-value", Schema(json.dumps(V1), "AVRO")) == 1
        bearer = SchemaRegistryClient(
            {
                "url": registry.url,
                "bearer.auth.credentials.source": "STATIC_TOKEN",
                "bearer.auth.token": "t0ken",
                "bearer.auth.logical.cluster": "lsrc-1",
                "bearer.auth.identity.pool.id": "pool-1",
            }
        )
        assert bearer.get_subjects() == ["a-value"]
        with pytest.raises(SchemaRegistryError) as refused:
            SchemaRegistryClient({"url": registry.url, "basic.auth.user.info": "alice:wrong"}).get_subjects()
        assert (refused.value.http_status_code, refused.value.error_code) == (401, 401)
    finally:
        registry.stop()
