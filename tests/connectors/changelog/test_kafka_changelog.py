"""debezium-json values on the test broker (Apache Kafka): a row a change with Flink's row kind and the
format's ``value.*`` metadata, and a bad event failing naming its topic-partition-offset (or skipped)."""

from __future__ import annotations

from typing import Any

import pytest

from sqlext.catalog.changelog_formats import ROW_KIND
from sqlext.registry import SourceContext, find_factory, validate_table
from sqlext.sql.parser import parse_statement
from sqlext.table import TableDefinition
from tests.connectors.changelog import events
from tests.support.kafka import KafkaBroker, Record

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]

COLUMNS = (
    "id INT, name STRING, price DOUBLE, tbl STRING METADATA FROM 'value.source.table' VIRTUAL, "
    "ing TIMESTAMP_LTZ(3) METADATA FROM 'value.ingestion-timestamp' VIRTUAL, off BIGINT METADATA FROM 'offset'"
)


def _table(broker: KafkaBroker, topic: str, extra: str = "") -> TableDefinition:
    ddl = (
        f"CREATE TABLE cdc.{topic} ({COLUMNS}) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
        f"'properties.bootstrap.servers' = '{broker.bootstrap}', 'scan.startup.mode' = 'earliest-offset', "
        f"'scan.bounded.mode' = 'latest-offset', 'value.format' = 'debezium-json'{extra})"
    )
    table: TableDefinition = parse_statement(ddl).table  # type: ignore[attr-defined]
    validate_table(table)
    return table


def _rows(spark: Any, table: TableDefinition) -> list[tuple[Any, ...]]:
    from pyspark.sql import functions as F

    frame = find_factory("kafka").create_source(SourceContext(spark, table, streaming=False))
    frame = frame.withColumn("ing_ms", F.unix_millis("ing")).orderBy("off")
    return [(r[ROW_KIND], r.id, r.name, r.price, r.tbl, r.ing_ms, r.off) for r in frame.collect()]


def test_debezium_values_read_as_a_changelog_with_their_metadata(kafka_broker: KafkaBroker, spark: Any) -> None:
    kafka_broker.create_topic("cdc_products", 1)
    kafka_broker.produce("cdc_products", [Record(line.encode()) for line in events.DEBEZIUM] + [Record(None)])
    rows = _rows(spark, _table(kafka_broker, "cdc_products"))
    read = [(k, i, n, p) for k, i, n, p, *_ in rows]
    assert read == events.FLINK_READ["debezium-json"]  # the tombstone (a NULL value) skipped, as in Flink
    assert [r[4] for r in rows] == ["products"] * 5
    assert [r[5] for r in rows] == [1700000000100, 1700000000200, 1700000001100, 1700000001100, 1700000002100]
    assert [r[6] for r in rows] == [0, 1, 2, 2, 3]


def test_a_bad_event_names_its_topic_partition_offset(kafka_broker: KafkaBroker, spark: Any) -> None:
    kafka_broker.create_topic("cdc_bad", 1)
    kafka_broker.produce("cdc_bad", [Record(line.encode()) for line in events.UNKNOWN_OP])
    with pytest.raises(Exception) as failure:
        _rows(spark, _table(kafka_broker, "cdc_bad"))
    message = str(failure.value)
    assert 'Table cdc.cdc_bad, topic-partition-offset cdc_bad-0-1: Unknown "op" value "x"' in message
    skipped = _rows(spark, _table(kafka_broker, "cdc_bad", ", 'value.debezium-json.ignore-parse-errors' = 'true'"))
    assert [(k, i) for k, i, *_ in skipped] == [("+I", 1)]
