"""The kafka connector's option checks (Flink's wording) and the mapping onto Spark's Kafka source; no
broker, no Spark."""

from __future__ import annotations

import pytest

from sqlext.connectors.kafka.factory import read_settings
from sqlext.connectors.kafka.spark_source import spark_options as spark_kafka_options
from sqlext.connectors.kafka.spark_source import starting_offsets
from sqlext.errors import OptionError, SqlextError
from sqlext.registry import find_factory, validate_table
from sqlext.sql.parser import parse_statement
from sqlext.table import TableDefinition

BASE = {
    "connector": "kafka",
    "topic": "events",
    "properties.bootstrap.servers": "127.0.0.1:9092",
    "format": "json",
}


def _table(columns: str = "id BIGINT, name STRING", **options: str) -> TableDefinition:
    merged = {**BASE, **options}
    for key in [k for k, v in merged.items() if v == "<unset>"]:
        del merged[key]
    with_clause = ", ".join(f"'{k}' = '{v}'" for k, v in merged.items())
    statement = parse_statement(f"CREATE TABLE k ({columns}) WITH ({with_clause})")
    return statement.table  # type: ignore[attr-defined,no-any-return]


INVALID = [
    ({"topic-pattern": "ev.*"}, "Option 'topic' and 'topic-pattern' shouldn't be set together."),
    ({"topic": "<unset>"}, "Either 'topic' or 'topic-pattern' must be set."),
    ({"properties.bootstrap.servers": "<unset>"}, "Missing required options are:\n\nproperties.bootstrap.servers"),
    ({"scan.startup.mode": "earliest"}, "Invalid value for option 'scan.startup.mode': 'earliest'."),
    ({"scan.startup.mode": "timestamp"}, "'scan.startup.timestamp-millis' is required in 'timestamp' startup mode"),
    (
        {"scan.startup.mode": "specific-offsets"},
        "'scan.startup.specific-offsets' is required in 'specific-offsets' startup mode but missing.",
    ),
    (
        {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0;offset:4"},
        "Invalid properties 'scan.startup.specific-offsets' should follow the format "
        "'partition:0,offset:42;partition:1,offset:300', but is 'partition:0;offset:4'.",
    ),
    (
        {
            "topic": "a;b",
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:1",
        },
        "Currently Kafka source only supports specific offset for single topic.",
    ),
    ({"scan.startup.timestamp-millis": "yesterday"}, "Invalid value for option 'scan.startup.timestamp-millis'"),
    ({"scan.bounded.mode": "timestamp"}, "'scan.bounded.timestamp-millis' is required in 'timestamp' bounded mode"),
    ({"format": "<unset>"}, "Could not find required scan format 'value.format'."),
    ({"format": "avro"}, "Invalid value for option 'format': 'avro'."),
    (
        {"key.fields": "id"},
        "The option 'key.fields' can only be declared if a key format is defined using 'key.format'.",
    ),
    ({"key.format": "raw"}, "A key format 'key.format' requires the declaration of one or more of key fields"),
    ({"key.format": "json", "key.fields": "nope"}, "Could not find the field 'nope' in the table schema"),
    (
        {"key.format": "json", "key.fields": "id", "key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"},
        "All fields in 'key.fields' must be prefixed with 'k_' when option 'key.fields-prefix' is set",
    ),
    (
        {"key.format": "json", "key.fields": "id", "key.fields-prefix": "i"},
        "A key prefix is not allowed when option 'value.fields-include' is set to 'ALL'.",
    ),
    ({"csv.field-delimiter": ";"}, "Option 'csv.field-delimiter' is for format options 'csv.*'"),
    ({"scan.topic-partition-discovery.interval": "often"}, "'scan.topic-partition-discovery.interval': 'often'"),
    ({"scan.parallelism": "2"}, "Unsupported options found for 'kafka'."),
    ({"topic-pattern": "ev[", "topic": "<unset>"}, "Invalid value for option 'topic-pattern': 'ev['"),
]


@pytest.mark.parametrize(("options", "message"), INVALID)
def test_bad_options_are_refused_with_flinks_wording(options: dict[str, str], message: str) -> None:
    with pytest.raises(SqlextError) as failure:
        validate_table(_table(**options))
    assert message in failure.value.message


def test_metadata_columns_are_flinks() -> None:
    columns = (
        "id BIGINT, t STRING METADATA FROM 'topic' VIRTUAL, p INT METADATA FROM 'partition' VIRTUAL, "
        "o BIGINT METADATA FROM 'offset' VIRTUAL, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', "
        "tt STRING METADATA FROM 'timestamp-type' VIRTUAL, h MAP<STRING, BYTES> METADATA FROM 'headers', "
        "e INT METADATA FROM 'leader-epoch' VIRTUAL"
    )
    validate_table(_table(columns))
    with pytest.raises(OptionError) as failure:
        validate_table(_table("id BIGINT, f STRING METADATA FROM 'file.name'"))
    assert "reads unknown metadata 'file.name'. The kafka connector offers: topic, partition" in failure.value.message


def test_raw_holds_one_string_or_bytes_column() -> None:
    validate_table(_table("line STRING", format="raw"))
    with pytest.raises(SqlextError) as failure:
        validate_table(_table(format="raw"))
    assert "The 'raw' value format holds exactly one STRING or BYTES column" in failure.value.message


def test_defaults_and_settings_follow_flink() -> None:
    table = _table(
        **{
            "topic": "a; b",
            "value.format": "csv",
            "format": "<unset>",
            "value.csv.field-delimiter": "|",
            "properties.group.id": "g",
            "properties.auto.offset.reset": "earliest",
            "properties.value.deserializer": "x",
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:42;partition:1,offset:300",
        }
    )
    with pytest.raises(OptionError, match="single topic"):
        validate_table(table)
    single = _table(
        **{
            "properties.group.id": "g",
            "scan.startup.mode": "specific-offsets",
            "scan.startup.specific-offsets": "partition:0,offset:42;partition:1,offset:300",
        }
    )
    validate_table(single)
    settings = read_settings(single)
    assert settings.startup_offsets == {0: 42, 1: 300}
    assert settings.group_id == "g" and settings.client == {"bootstrap.servers": "127.0.0.1:9092"}
    assert settings.discovery_interval_s == 300.0  # Flink's 5 min
    defaults = read_settings(_table())
    assert defaults.startup_mode == "group-offsets" and defaults.bounded_mode == "unbounded"
    assert read_settings(_table(topic="a; b")).topics == ["a", "b"]
    assert not find_factory("kafka").is_bounded(_table())
    assert find_factory("kafka").is_bounded(_table(**{"scan.bounded.mode": "latest-offset"}))


def test_options_map_onto_sparks_kafka_source() -> None:
    earliest = read_settings(_table(**{"scan.startup.mode": "earliest-offset", "properties.security.protocol": "SSL"}))
    assert spark_kafka_options(earliest) == {
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "kafka.security.protocol": "SSL",
        "subscribe": "events",
        "startingOffsets": "earliest",
        "includeHeaders": "true",
    }
    # A table without a headers metadata column: Spark's source builds no header arrays.
    assert "includeHeaders" not in spark_kafka_options(earliest, headers=False)
    pattern = {"topic": "<unset>", "topic-pattern": "ev.*", "scan.startup.mode": "timestamp"}
    by_time = read_settings(_table(**pattern, **{"scan.startup.timestamp-millis": "1700000000000"}))
    mapped = spark_kafka_options(by_time)
    assert mapped["subscribePattern"] == "ev.*" and mapped["startingTimestamp"] == "1700000000000"
    assert mapped["startingOffsetsByTimestampStrategy"] == "latest"  # Flink: no record after the time -> the end


def test_specific_and_group_offsets_become_sparks_starting_offsets_json() -> None:
    import json

    found = {"events": [0, 1, 2]}
    specific = read_settings(
        _table(
            **{
                "scan.startup.mode": "specific-offsets",
                "scan.startup.specific-offsets": "partition:0,offset:42",
                "properties.group.id": "g",
            }
        )
    )
    mapped = starting_offsets(specific, found, {("events", 1): 7})
    assert mapped is not None and json.loads(mapped) == {"events": {"0": 42, "1": 7, "2": -2}}  # -2: earliest
    group = read_settings(_table(**{"properties.group.id": "g", "properties.auto.offset.reset": "latest"}))
    mapped = starting_offsets(group, found, {("events", 0): 5})
    assert mapped is not None and json.loads(mapped) == {"events": {"0": 5, "1": -1, "2": -1}}  # -1: latest
    strict = read_settings(_table(**{"properties.group.id": "g"}))
    with pytest.raises(SqlextError, match="group 'g' has no committed offset for partition 1 of topic 'events'"):
        starting_offsets(strict, found, {("events", 0): 5})
    assert starting_offsets(read_settings(_table(**{"scan.startup.mode": "earliest-offset"})), found, {}) is None
