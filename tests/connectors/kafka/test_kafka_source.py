"""The kafka connector against an Apache Kafka broker, through the real Spark session, on each reader (Spark's
Kafka source and sqlext's own, fixture ``kafka_reader``): start modes, key and value formats, metadata columns,
and the errors of a missing topic and a dead broker; then what only the own source does (courtesy commits of
group offsets, a broker dying mid-stream)."""

from __future__ import annotations

import itertools
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.kafka.client import KafkaSourceError
from sqlext.connectors.kafka.factory import SOURCE_CONF
from sqlext.registry import SourceContext, explain_query_failure, find_factory, validate_table
from sqlext.sql.parser import parse_statement
from sqlext.table import TableDefinition
from tests.support.kafka import CLIENT_LOG, KafkaBroker, Record, add_spark_kafka, event_records, start_broker
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.jars, pytest.mark.slow]

_names = itertools.count()
DAY = datetime(2026, 11, 22)


def _topic(broker: KafkaBroker, partitions: int = 3) -> str:
    name = f"src_{next(_names)}"
    broker.create_topic(name, partitions)
    return name


def _table(broker: KafkaBroker, topic: str, columns: str = "", **options: str) -> TableDefinition:
    merged = {
        "connector": "kafka",
        "topic": topic,
        "properties.bootstrap.servers": broker.bootstrap,
        "scan.startup.mode": "earliest-offset",
        "format": "json",
        **options,
    }
    body = columns or "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)"
    with_clause = ", ".join(f"'{k}' = '{v}'" for k, v in merged.items())
    table: TableDefinition = parse_statement(f"CREATE TABLE src_db.{topic} ({body}) WITH ({with_clause})").table  # type: ignore[attr-defined]
    validate_table(table)
    return table


def _stream(spark: Any, table: TableDefinition, tmp_path: Path, name: str) -> Any:
    frame = find_factory("kafka").create_source(SourceContext(spark, table, streaming=True))
    return (
        frame.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / name))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def _ids(spark: Any, name: str) -> list[int]:
    return sorted(row.id for row in spark.sql(f"SELECT id FROM {name}").collect())


def test_earliest_offset_reads_every_record_with_its_metadata(
    kafka_broker: KafkaBroker, spark: Any, kafka_reader: str
) -> None:
    topic = _topic(kafka_broker)
    kafka_broker.produce(topic, event_records(0, 30, DAY, 600))
    columns = (
        "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), `partition` INT METADATA VIRTUAL, "
        "`off` BIGINT METADATA FROM 'offset' VIRTUAL, rts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', "
        "tt STRING METADATA FROM 'timestamp-type' VIRTUAL, h MAP<STRING, BYTES> METADATA FROM 'headers', "
        "t STRING METADATA FROM 'topic' VIRTUAL"
    )
    table = _table(kafka_broker, topic, columns, **{"scan.bounded.mode": "latest-offset"})
    rows = find_factory("kafka").create_source(SourceContext(spark, table, streaming=False)).collect()
    assert sorted(row.id for row in rows) == list(range(30))
    first = next(row for row in rows if row.id == 4)
    assert (first.partition, first.off, first.t, first.tt) == (1, 1, topic, "CreateTime")
    assert first.ts == datetime(2026, 11, 22, 0, 40) and first.rts == first.ts  # session time zone is UTC here
    assert first.h == {"source": bytearray(b"test")} and first.user_id == "u4" and first.amount == 2.0


def test_latest_offset_reads_only_what_comes_after_the_start(
    kafka_broker: KafkaBroker, spark: Any, kafka_reader: str, tmp_path: Path
) -> None:
    topic = _topic(kafka_broker)
    kafka_broker.produce(topic, event_records(0, 12, DAY, 60))
    query = _stream(spark, _table(kafka_broker, topic, **{"scan.startup.mode": "latest-offset"}), tmp_path, "latest")
    try:
        query.processAllAvailable()
        kafka_broker.produce(topic, event_records(100, 9, DAY, 60))
        query.processAllAvailable()
        assert _ids(spark, "latest") == list(range(100, 109))
    finally:
        query.stop()


def test_timestamp_starts_each_partition_at_its_first_record_at_or_after_the_time(
    kafka_broker: KafkaBroker, spark: Any, kafka_reader: str
) -> None:
    topic = _topic(kafka_broker)
    kafka_broker.produce(topic, event_records(0, 60, DAY, 60))  # one event a minute, 20 a partition
    start_ms = int(datetime(2026, 11, 22, 0, 42, 30).timestamp() * 1000) + _utc_offset_ms()
    options = {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(start_ms)}
    table = _table(kafka_broker, topic, **options, **{"scan.bounded.mode": "latest-offset"})
    rows = find_factory("kafka").create_source(SourceContext(spark, table, streaming=False)).collect()
    assert sorted(row.id for row in rows) == list(range(43, 60))


def _utc_offset_ms() -> int:
    """``datetime.timestamp()`` of a naive time is local; the events' times are UTC."""
    naive = datetime(2026, 11, 22)
    return int((naive - datetime.utcfromtimestamp(naive.timestamp())).total_seconds() * 1000)


def test_group_offsets_start_at_the_groups_committed_offsets(
    kafka_broker: KafkaBroker, spark: Any, kafka_reader: str
) -> None:
    topic = _topic(kafka_broker)
    kafka_broker.produce(topic, event_records(0, 18, DAY, 60))  # id n is record n // 3 of partition n % 3
    group = f"g-{topic}"
    _commit(kafka_broker, group, topic, {0: 2, 1: 4})  # partition 2: nothing committed
    options = {"scan.startup.mode": "group-offsets", "scan.bounded.mode": "latest-offset"}
    reset = {"properties.group.id": group, "properties.auto.offset.reset": "earliest", **options}
    rows = find_factory("kafka").create_source(SourceContext(spark, _table(kafka_broker, topic, **reset), False))
    expected = [n for n in range(18) if n // 3 >= {0: 2, 1: 4, 2: 0}[n % 3]]
    assert sorted(row.id for row in rows.collect()) == expected
    strict = _table(kafka_broker, topic, **{"properties.group.id": group, **options})
    with pytest.raises(Exception, match=f"group '{group}' has no committed offset for partition 2 of topic"):
        find_factory("kafka").create_source(SourceContext(spark, strict, streaming=False)).collect()


def _commit(broker: KafkaBroker, group: str, topic: str, offsets: dict[int, int]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group}, logger=CLIENT_LOG)
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()


def test_the_own_source_commits_group_offsets_as_a_courtesy(
    kafka_broker: KafkaBroker, spark: Any, tmp_path: Path
) -> None:
    spark.conf.set(SOURCE_CONF, "sqlext")
    topic = _topic(kafka_broker)
    kafka_broker.produce(topic, event_records(0, 9, DAY, 60))
    group = {"properties.group.id": f"g-{topic}"}
    first = _stream(spark, _table(kafka_broker, topic, **group), tmp_path, "group_first")
    try:
        first.processAllAvailable()
        kafka_broker.produce(topic, event_records(9, 3, DAY, 60))
        first.processAllAvailable()
        assert _ids(spark, "group_first") == list(range(12))
    finally:
        first.stop()
        spark.conf.unset(SOURCE_CONF)
    # Spark commits a batch's offsets to the source when the next batch starts: the group holds them as of then.
    committed = _committed(kafka_broker, f"g-{topic}", topic)
    assert 0 < sum(committed.values()) <= 12


def _committed(broker: KafkaBroker, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group}, logger=CLIENT_LOG)
    try:
        answers = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    finally:
        consumer.close()
    return {a.partition: max(a.offset, 0) for a in answers}


def test_a_header_sent_twice_keeps_its_last_value_on_sparks_source(kafka_broker: KafkaBroker, spark: Any) -> None:
    add_spark_kafka(spark)
    spark.conf.set(SOURCE_CONF, "spark")
    try:
        topic = _topic(kafka_broker, 1)
        headers = [("h", b"first"), ("other", b"x"), ("h", b"last")]
        kafka_broker.produce(topic, [Record(b'{"id": 1}', timestamp_ms=1_700_000_000_000, headers=headers)])
        columns = "id BIGINT, h MAP<STRING, BYTES> METADATA FROM 'headers'"
        table = _table(kafka_broker, topic, columns, **{"scan.bounded.mode": "latest-offset"})
        [row] = find_factory("kafka").create_source(SourceContext(spark, table, streaming=False)).collect()
    finally:
        spark.conf.unset(SOURCE_CONF)
    assert row.h == {"h": bytearray(b"last"), "other": bytearray(b"x")}


def test_key_and_value_formats(kafka_broker: KafkaBroker, spark: Any, kafka_reader: str) -> None:
    topic = _topic(kafka_broker, 1)
    records = [Record(f"{n},name {n}".encode(), key=f"k{n}".encode(), timestamp_ms=1_700_000_000_000) for n in range(5)]
    records.append(Record(b"not,a,number", key=b"bad", timestamp_ms=1_700_000_000_000))
    kafka_broker.produce(topic, records)
    options = {
        "format": "csv",
        "csv.ignore-parse-errors": "true",
        "key.format": "raw",
        "key.fields": "k_id",
        "key.fields-prefix": "k_",
        "value.fields-include": "EXCEPT_KEY",
        "scan.bounded.mode": "latest-offset",
    }
    table = _table(kafka_broker, topic, "k_id STRING, id BIGINT, name STRING", **options)
    rows = find_factory("kafka").create_source(SourceContext(spark, table, streaming=False)).collect()
    assert sorted((row.k_id, row.id, row.name) for row in rows) == [(f"k{n}", n, f"name {n}") for n in range(5)]


def test_a_missing_topic_is_named_with_the_broker(kafka_broker: KafkaBroker, spark: Any, kafka_reader: str) -> None:
    table = _table(kafka_broker, "no_such_topic")
    with pytest.raises(KafkaSourceError) as failure:
        find_factory("kafka").create_source(SourceContext(spark, table, streaming=True))
    assert failure.value.message.startswith(
        f"Topic(s) no_such_topic of table src_db.no_such_topic do not exist on Kafka broker(s) {kafka_broker.bootstrap}"
    )


def test_a_dead_broker_is_named_after_the_clients_timeout(spark: Any, kafka_reader: str) -> None:
    dead = f"127.0.0.1:{free_port()}"
    table = parse_statement(
        "CREATE TABLE src_db.dead (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'events', 'format' = 'json', "
        f"'properties.bootstrap.servers' = '{dead}', 'properties.socket.timeout.ms' = '2000')"
    ).table  # type: ignore[attr-defined]
    with pytest.raises(KafkaSourceError) as failure:
        find_factory("kafka").create_source(SourceContext(spark, table, streaming=True))
    assert failure.value.message.startswith(
        f"Kafka broker(s) {dead} did not answer for topic(s) events of table src_db.dead within 2 s"
    )


def test_a_topic_deleted_under_a_running_query_is_named_with_its_table_and_broker(
    kafka_broker: KafkaBroker, spark: Any, kafka_reader: str, tmp_path: Path
) -> None:
    topic = _topic(kafka_broker, 2)
    kafka_broker.produce(topic, event_records(0, 5, DAY, 60, partitions=2))
    table, name = _table(kafka_broker, topic, **{"properties.socket.timeout.ms": "2000"}), f"deleted_{topic}"
    query = _stream(spark, table, tmp_path, name)
    try:
        wait_for(lambda: _ids(spark, name) == list(range(5)) or not query.isActive, 300, what="the rows")
        assert query.isActive, f"failed before the topic was deleted: {query.exception()}"
        kafka_broker.delete_topic(topic)
        wait_for(lambda: not query.isActive, 300, what="the query to fail")
    finally:
        query.stop()
    failure = str(query.exception())
    # Spark's source fails with Kafka's own words, naming neither; sqlext's run and logs add the names.
    told = failure if kafka_reader == "sqlext" else explain_query_failure(failure)
    assert (
        told is not None
        and (
            f"Topic(s) {topic} of table src_db.{topic} no longer exist on Kafka broker(s) {kafka_broker.bootstrap}: "
            "deleted while the query read them."
        )
        in told
    ), failure[:3000]


def test_a_broker_that_dies_mid_stream_fails_the_own_sources_query_naming_broker_and_topic(
    spark: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    spark.conf.set(SOURCE_CONF, "sqlext")
    broker = start_broker(tmp_path_factory.mktemp("dying"))
    try:
        topic = _topic(broker, 1)
        broker.produce(topic, event_records(0, 5, DAY, 60, partitions=1))
        table = _table(broker, topic, **{"properties.socket.timeout.ms": "2000"})
        query = _stream(spark, table, tmp_path, "dying")
        try:
            wait_for(lambda: _ids(spark, "dying") == list(range(5)) or not query.isActive, 300, what="the rows")
            assert query.isActive, f"failed before the broker stopped: {query.exception()}"
            broker.stop()
            wait_for(lambda: not query.isActive, 300, what="the query to fail")
        finally:
            query.stop()
    finally:
        broker.stop()
        spark.conf.unset(SOURCE_CONF)
    message = str(query.exception())
    assert f"Kafka broker(s) {broker.bootstrap} gave no offsets for partition 0 of topic '{topic}'" in message, message


def test_a_broker_restarted_mid_stream_loses_and_doubles_nothing_on_sparks_source(
    spark: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Spark's source waits for the broker (its admin and consumer timeouts) and goes on where it was."""
    add_spark_kafka(spark)
    spark.conf.set(SOURCE_CONF, "spark")
    broker = start_broker(tmp_path_factory.mktemp("restarted"))
    try:
        topic = _topic(broker)
        broker.produce(topic, event_records(0, 30, DAY, 60))
        query = _stream(spark, _table(broker, topic), tmp_path, "restarted")
        try:
            wait_for(lambda: _ids(spark, "restarted") == list(range(30)) or not query.isActive, 300, what="the rows")
            broker.stop()
            broker.start()
            broker.produce(topic, event_records(30, 30, DAY, 60))
            wait_for(lambda: len(_ids(spark, "restarted")) >= 60 or not query.isActive, 300, what="the new rows")
            assert query.isActive, f"the query failed: {query.exception()}"
            assert _ids(spark, "restarted") == list(range(60)), "rows lost or doubled"
        finally:
            query.stop()
    finally:
        broker.stop()
        spark.conf.unset(SOURCE_CONF)
