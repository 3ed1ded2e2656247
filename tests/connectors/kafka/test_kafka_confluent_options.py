"""Option checks and registry settings of the ``avro-confluent`` and ``debezium-avro-confluent`` formats (no
Spark, no broker): Flink's keys with their prefixes, credentials into request headers, the reader schema."""

from __future__ import annotations

import base64
import json

import pytest

from sqlext.connectors.kafka import confluent
from sqlext.errors import SqlextError
from sqlext.registry import validate_table
from sqlext.sql.parser import parse_statement
from sqlext.table import TableDefinition


def _table(columns: str = "id BIGINT NOT NULL, name STRING", **options: str) -> TableDefinition:
    merged = {"connector": "kafka", "topic": "t", "properties.bootstrap.servers": "b:9092", **options}
    with_clause = ", ".join(f"'{k}' = '{v}'" for k, v in merged.items())
    table: TableDefinition = parse_statement(f"CREATE TABLE db.t ({columns}) WITH ({with_clause})").table  # type: ignore[attr-defined]
    return table


def test_url_is_required_with_flinks_message() -> None:
    with pytest.raises(SqlextError, match=r"Missing required options are:\n\navro-confluent.url"):
        validate_table(_table(format="avro-confluent"))
    with pytest.raises(SqlextError, match=r"key.avro-confluent.url"):
        validate_table(_table(**{"format": "json", "key.format": "avro-confluent", "key.fields": "id"}))


def test_unknown_option_and_bad_credentials_sources_are_refused() -> None:
    base = {"format": "avro-confluent", "avro-confluent.url": "http://r:8081"}
    with pytest.raises(SqlextError, match=r"Unsupported option 'avro-confluent.uri' of format 'avro-confluent'"):
        validate_table(_table(**base, **{"avro-confluent.uri": "x"}))
    with pytest.raises(SqlextError, match=r"'avro-confluent.basic-auth.user-info' is not set"):
        validate_table(_table(**base, **{"avro-confluent.basic-auth.credentials-source": "USER_INFO"}))
    with pytest.raises(SqlextError, match="takes USER_INFO or URL"):
        validate_table(_table(**base, **{"avro-confluent.basic-auth.credentials-source": "SASL_INHERIT"}))
    with pytest.raises(SqlextError, match="A key format should only deal with INSERT-only records"):
        validate_table(
            _table(
                **base,
                **{"key.format": "debezium-avro-confluent", "key.fields": "id", "key.debezium-avro-confluent.url": "u"},
            )
        )


def test_settings_carry_credentials_stores_and_flinks_reader_schema() -> None:
    table = _table(
        **{
            "format": "avro-confluent",
            "avro-confluent.url": "http://alice:pw@r1:8081, http://r2:8081",
            "avro-confluent.basic-auth.credentials-source": "URL",
            "avro-confluent.properties.schema.registry.ssl.truststore.location": "/t.p12",
            "avro-confluent.ssl.truststore.password": "tp",
        }
    )
    validate_table(table)
    options = {k[len("avro-confluent.") :]: v for k, v in table.options.items() if k.startswith("avro-confluent.")}
    settings = confluent.settings("db.t", "avro-confluent", options, table.physical_columns)
    assert settings.urls == ["http://r1:8081", "http://r2:8081"]
    assert settings.headers == {"Authorization": "Basic " + base64.b64encode(b"alice:pw").decode()}
    assert settings.truststore == {"location": "/t.p12", "password": "tp"}
    assert json.loads(settings.reader_schema) == {
        "type": "record",
        "name": "record",
        "namespace": "org.apache.flink.avro.generated",
        "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"], "default": None}],
    }
    bearer = {"url": "http://r:8081", "bearer-auth.credentials-source": "STATIC_TOKEN", "bearer-auth.token": "tk"}
    assert confluent.settings("db.t", "avro-confluent", bearer, table.physical_columns).headers == {
        "Authorization": "Bearer tk"
    }


def test_debezium_reader_schema_is_flinks_envelope() -> None:
    table = _table(**{"format": "debezium-avro-confluent", "debezium-avro-confluent.url": "http://r:8081"})
    validate_table(table)
    schema = json.loads(confluent.reader_schema("debezium-avro-confluent", {}, table.physical_columns, ""))
    assert [f["name"] for f in schema["fields"]] == ["before", "after", "op"]
    before = schema["fields"][0]["type"]
    assert before[0] == "null" and before[1]["name"] == "record_before"
    assert schema["fields"][2]["type"] == ["null", "string"]
