"""Kafka ``avro-confluent`` and ``debezium-avro-confluent`` on the test broker, with the tests' schema registry
(tests/support/schema_registry.py), records produced by confluent-kafka's ``AvroSerializer`` as a user's
producer would: decoded on the JVM on each reader, a compatible new writer version mid-topic read into the same
columns, the change events' row kinds, and the bad inputs (unknown schema id, a record without the frame, an
unreachable registry, refused credentials), each naming table, topic-partition-offset and what was wrong."""

from __future__ import annotations

import itertools
import json
import struct
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sqlext.catalog.changelog_formats import ROW_KIND
from sqlext.registry import SourceContext, find_factory, validate_table
from sqlext.sql.parser import parse_statement
from sqlext.table import TableDefinition
from tests.support.interop import add_spark_avro
from tests.support.kafka import KafkaBroker, Record, add_spark_kafka
from tests.support.schema_registry import SchemaRegistry
from tests.support.tls import TRUSTSTORE_PASSWORD, self_signed
from tests.support.waiting import free_port

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.jars, pytest.mark.slow]

_names = itertools.count()
_DECIMAL = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
_MILLIS = {"type": "long", "logicalType": "timestamp-millis"}
V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": ["null", "string"], "default": None},
        {"name": "price", "type": _DECIMAL},
        {"name": "ts", "type": _MILLIS},
    ],
}
#: V1 and a field with a default: BACKWARD compatible, registered as a new version mid-topic.
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}]}
KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}
COLUMNS = "id BIGINT, item STRING, price DECIMAL(10, 2), ts TIMESTAMP(3), qty INT"
T0 = datetime(2026, 11, 22, 8, 30, 0, 123000, tzinfo=UTC)


def _topic(broker: KafkaBroker) -> str:
    name = f"confluent_{next(_names)}"
    broker.create_topic(name, 1)
    return name


def _table(
    broker: KafkaBroker,
    topic: str,
    registry_url: str,
    columns: str = COLUMNS,
    fmt: str = "avro-confluent",
    **extra: str,
) -> TableDefinition:
    options = {
        "connector": "kafka",
        "topic": topic,
        "properties.bootstrap.servers": broker.bootstrap,
        "scan.startup.mode": "earliest-offset",
        "scan.bounded.mode": "latest-offset",
        "format": fmt,
        f"{fmt}.url": registry_url,
        **extra,
    }
    with_clause = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    table: TableDefinition = parse_statement(f"CREATE TABLE src_db.{topic} ({columns}) WITH ({with_clause})").table  # type: ignore[attr-defined]
    validate_table(table)
    return table


def _serializer(registry: SchemaRegistry, schema: dict[str, Any]) -> AvroSerializer:
    return AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(schema))


def _produce(
    broker: KafkaBroker, topic: str, serializer: AvroSerializer, bodies: list[dict[str, Any]], **kw: Any
) -> None:
    key_serializer = kw.get("key_serializer")
    records = []
    for body in bodies:
        value = serializer(body, SerializationContext(topic, MessageField.VALUE))
        key = (
            key_serializer({"id": body["id"]}, SerializationContext(topic, MessageField.KEY))
            if key_serializer
            else None
        )
        records.append(Record(value, key=key))
    broker.produce(topic, records)


def _read(spark: Any, table: TableDefinition) -> list[Any]:
    return find_factory("kafka").create_source(SourceContext(spark, table, streaming=False)).collect()


@pytest.fixture
def avro_spark(spark: Any) -> Any:
    add_spark_avro(spark)
    return spark


def test_records_of_two_writer_versions_read_into_the_tables_columns(
    kafka_broker: KafkaBroker, avro_spark: Any, kafka_reader: str, schema_registry: SchemaRegistry
) -> None:
    topic = _topic(kafka_broker)
    keys = _serializer(schema_registry, KEY)
    first = [{"id": n, "item": f"i{n}", "price": Decimal(f"{n}.25"), "ts": T0} for n in (1, 2)]
    _produce(kafka_broker, topic, _serializer(schema_registry, V1), first, key_serializer=keys)
    second = [{"id": 3, "item": None, "price": Decimal("-3.50"), "ts": T0, "qty": 5}]
    _produce(kafka_broker, topic, _serializer(schema_registry, V2), second, key_serializer=keys)
    kafka_broker.produce(topic, [Record(None)])  # a tombstone: skipped, as Flink skips it
    assert schema_registry.subjects[f"{topic}-value"] == [1, 3]  # two writer versions on the topic (2: the key's)

    columns = f"k_id BIGINT, {COLUMNS}"
    options = {
        "key.format": "avro-confluent",
        "key.avro-confluent.url": schema_registry.url,
        "key.fields": "k_id",
        "key.fields-prefix": "k_",
        "value.fields-include": "EXCEPT_KEY",
    }
    table = _table(kafka_broker, topic, schema_registry.url, columns, **options)
    rows = sorted(_read(avro_spark, table), key=lambda r: r.id)
    wall = T0.replace(tzinfo=None)
    assert [tuple(r) for r in rows] == [
        (1, 1, "i1", Decimal("1.25"), wall, None),
        (2, 2, "i2", Decimal("2.25"), wall, None),
        (3, 3, None, Decimal("-3.50"), wall, 5),
    ]
    fetched = [path for method, path in schema_registry.requests if path.startswith("/schemas/ids/")]
    assert sorted(set(fetched)) == ["/schemas/ids/1", "/schemas/ids/2", "/schemas/ids/3"]


def _framed(schema_id: int, payload: bytes = b"\x02") -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + payload


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("unknown-id", "does not know schema id 999 (HTTP 404)"),
        ("not-framed", "not a Confluent-framed Avro record (first byte 0x7b"),
        ("unreachable", "the schema registry could not be reached for schema id 1"),
        ("bad-credentials", "refused the credentials (HTTP 401"),
    ],
)
def test_bad_input_fails_naming_table_record_and_cause(
    kafka_broker: KafkaBroker, avro_spark: Any, schema_registry: SchemaRegistry, case: str, expected: str
) -> None:
    add_spark_kafka(avro_spark)
    topic = _topic(kafka_broker)
    url = schema_registry.url
    extra: dict[str, str] = {}
    good = _serializer(schema_registry, V1)(
        {"id": 1, "item": "a", "price": Decimal(1), "ts": T0}, SerializationContext(topic, MessageField.VALUE)
    )
    if case == "unknown-id":
        records = [Record(good), Record(_framed(999))]
    elif case == "not-framed":
        records = [Record(good), Record(b'{"id": 1}')]
    elif case == "unreachable":
        records, url = [Record(good), Record(good)], f"http://127.0.0.1:{free_port()}"
    else:
        schema_registry.users["alice"] = "secret"
        records = [Record(good), Record(good)]
        extra = {"avro-confluent.basic-auth.credentials-source": "USER_INFO"}
        extra["avro-confluent.basic-auth.user-info"] = "alice:wrong"
    kafka_broker.produce(topic, records)
    table = _table(kafka_broker, topic, url, **extra)
    with pytest.raises(Exception) as failed:
        _read(avro_spark, table)
    offset = 0 if case in ("unreachable", "bad-credentials") else 1
    assert f"table src_db.{topic}, topic-partition-offset {topic}-0-{offset}" in str(failed.value)
    assert expected in str(failed.value)


def test_registry_over_tls_with_basic_auth(kafka_broker: KafkaBroker, avro_spark: Any, tmp_path: Path) -> None:
    add_spark_kafka(avro_spark)
    certificate = self_signed(tmp_path)
    registry = SchemaRegistry(users={"alice": "secret"}, tls=certificate).start()
    try:
        topic = _topic(kafka_broker)
        client = SchemaRegistryClient(
            {"url": registry.url, "basic.auth.user.info": "alice:secret", "ssl.ca.location": str(certificate.cert)}
        )
        value = AvroSerializer(client, json.dumps(V1))(
            {"id": 5, "item": "tls", "price": Decimal("0.10"), "ts": T0},
            SerializationContext(topic, MessageField.VALUE),
        )
        kafka_broker.produce(topic, [Record(value)])
        options = {
            "avro-confluent.basic-auth.credentials-source": "USER_INFO",
            "avro-confluent.basic-auth.user-info": "alice:secret",
            "avro-confluent.ssl.truststore.location": str(certificate.truststore()),
            "avro-confluent.ssl.truststore.password": TRUSTSTORE_PASSWORD,
        }
        rows = _read(avro_spark, _table(kafka_broker, topic, registry.url, **options))
        assert [(r.id, r.item, r.price, r.qty) for r in rows] == [(5, "tls", Decimal("0.10"), None)]
    finally:
        registry.stop()


ENVELOPE_VALUE = {
    "type": "record",
    "name": "Value",
    "namespace": "dbserver1.inventory.customers",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
    ],
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "dbserver1.inventory.customers",
    "fields": [
        {"name": "before", "type": ["null", ENVELOPE_VALUE], "default": None},
        {"name": "after", "type": ["null", "dbserver1.inventory.customers.Value"], "default": None},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
}


def test_debezium_envelopes_decode_to_flinks_row_kinds(
    kafka_broker: KafkaBroker, avro_spark: Any, schema_registry: SchemaRegistry
) -> None:
    add_spark_kafka(avro_spark)
    topic = _topic(kafka_broker)
    serializer = _serializer(schema_registry, ENVELOPE)
    events = [
        {"before": None, "after": {"id": 1, "name": "a"}, "op": "r", "ts_ms": 1},
        {"before": None, "after": {"id": 2, "name": "b"}, "op": "c", "ts_ms": 2},
        {"before": {"id": 1, "name": "a"}, "after": {"id": 1, "name": "a2"}, "op": "u", "ts_ms": 3},
        {"before": {"id": 2, "name": "b"}, "after": None, "op": "d", "ts_ms": 4},
    ]
    records = [Record(serializer(e, SerializationContext(topic, MessageField.VALUE))) for e in events]
    kafka_broker.produce(topic, [*records, Record(None)])
    table = _table(kafka_broker, topic, schema_registry.url, "id INT, name STRING", "debezium-avro-confluent")
    frame = find_factory("kafka").create_source(SourceContext(avro_spark, table, streaming=False))
    assert frame.columns == ["id", "name", ROW_KIND]  # the row kind last, as every changelog format's
    assert [tuple(r) for r in frame.collect()] == [
        (1, "a", "+I"),
        (2, "b", "+I"),
        (1, "a", "-U"),
        (1, "a2", "+U"),
        (2, "b", "-D"),
    ]

    bad = {"before": None, "after": {"id": 3, "name": "c"}, "op": "x", "ts_ms": 5}
    kafka_broker.produce(topic, [Record(serializer(bad, SerializationContext(topic, MessageField.VALUE)))])
    with pytest.raises(
        Exception, match=f'table src_db.{topic}, topic-partition-offset {topic}-0-5: Unknown "op" value "x"'
    ):
        _read(avro_spark, table)
