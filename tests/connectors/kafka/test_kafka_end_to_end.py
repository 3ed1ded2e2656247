"""Kafka -> hourly table with partition-time commit, end to end through ``sqlext run`` on Spark's Kafka source
(its jars given with ``spark.jars``): JSON, CSV or avro-confluent (confluent-kafka's AvroSerializer, the tests'
schema registry) events over six hours in a 3-partition topic of an Apache Kafka
broker, the driver SIGKILLed mid-stream and restarted, more events produced, and at the end every event
exactly once in the table and every hour the watermark passed committed in the HMS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem import spark_avro
from tests.support.kafka import KafkaBroker, Record, event_records, spark_kafka_conf
from tests.support.schema_registry import SchemaRegistry
from tests.support.tables import assert_partitions_committed
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.kafka, pytest.mark.jars, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
DAY = datetime(2026, 11, 22)
EVENTS = 720  # one every 30 s of event time: six hours, 120 an hour
STEP_S = 30
PER_HOUR = 3600 // STEP_S


def _database(value_format: str) -> str:
    # One per variant: the metastore is shared by the session, and a second run must not find the first's tables.
    return f"kafka_e2e_{value_format}"


def _job(broker: KafkaBroker, table_dir: Path, value_format: str, registry_url: str = "") -> str:
    db = _database(value_format.replace("-", "_"))
    registry = f", 'avro-confluent.url' = '{registry_url}'" if value_format == "avro-confluent" else ""
    return f"""
CREATE DATABASE IF NOT EXISTS {db};
CREATE TABLE IF NOT EXISTS {db}.events_src (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
  `partition` INT METADATA VIRTUAL,
  `offset` BIGINT METADATA VIRTUAL,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka', 'topic' = '{_topic(value_format)}', 'properties.bootstrap.servers' = '{broker.bootstrap}',
  'properties.group.id' = '{db}', 'scan.startup.mode' = 'earliest-offset', 'format' = '{value_format}'{registry}
);
CREATE TABLE IF NOT EXISTS {db}.events (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), src_partition INT, src_offset BIGINT, dt STRING, hr STRING
) PARTITIONED BY (dt, hr) WITH (
  'connector' = 'filesystem', 'path' = '{table_dir.as_uri()}', 'format' = 'parquet',
  'sink.partition-commit.trigger' = 'partition-time',
  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
  'sink.partition-commit.policy.kind' = 'metastore,success-file'
);
SET 'pipeline.name' = '{db}';
SET 'execution.checkpointing.interval' = '1 s';
INSERT INTO {db}.events
SELECT id, user_id, amount, ts, `partition`, `offset`, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH')
FROM {db}.events_src;
"""


def _topic(value_format: str) -> str:
    return f"events_e2e_{value_format.replace('-', '_')}"


#: The events' Avro schema (what a producer of the json events' fields would register).
_EVENT_SCHEMA = {
    "type": "record",
    "name": "Event",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "user_id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}


def _avro_confluent(records: Iterator[Record], registry: SchemaRegistry, topic: str) -> Iterator[Record]:
    """The json events as a user's producer sends them in avro-confluent (confluent-kafka's AvroSerializer)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(_EVENT_SCHEMA))
    context = SerializationContext(topic, MessageField.VALUE)
    for record in records:
        assert record.value is not None
        body = json.loads(record.value)
        body["ts"] = datetime.strptime(body["ts"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        yield replace(record, value=serializer(body, context))


def _ids(table_dir: Path) -> list[int]:
    try:
        dataset = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True)
        return sorted(dataset.to_table(columns=["id"])["id"].to_pylist())
    except (FileNotFoundError, OSError, pa.ArrowInvalid):  # no file yet, or one moved away while reading
        return []


def _committed(table_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in table_dir.glob("dt=*/hr=*/_SUCCESS"))


def _wait(condition: Callable[[], object], process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    """Wait for ``condition`` while the driver runs; its log in the failure if it stopped."""
    wait_for(lambda: condition() or process.poll() is not None, 420, what=what)
    assert process.poll() is None, f"the driver exited while waiting for {what}:\n{log.read_text()[-3000:]}"


def _kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


@pytest.mark.timeout(1800)  # two Spark driver starts; on a loaded 2-core machine each takes minutes
@pytest.mark.parametrize("value_format", ["json", "csv", "avro-confluent"])
def test_kafka_to_hourly_table_exactly_once_across_a_driver_kill(
    kafka_broker: KafkaBroker,
    metastore: MetastoreSettings,
    hms: MetastoreClient,
    tmp_path: Path,
    value_format: str,
    schema_registry: SchemaRegistry,
) -> None:
    topic, table_dir, log = _topic(value_format), tmp_path / "events", tmp_path / "run.log"
    kafka_broker.create_topic(topic, 3)
    job = tmp_path / "kafka_e2e.sql"
    job.write_text(_job(kafka_broker, table_dir, value_format, schema_registry.url))

    def events(first_id: int, count: int, start: datetime) -> Iterator[Record]:
        if value_format == "avro-confluent":
            return _avro_confluent(event_records(first_id, count, start, STEP_S), schema_registry, topic)
        return event_records(first_id, count, start, STEP_S, value_format=value_format)

    conf = spark_kafka_conf()
    if value_format == "avro-confluent":
        conf["spark.jars"] += "," + ",".join(str(jar) for jar in spark_avro.jar_paths())

    command = [
        sys.executable,
        "-m",
        "sqlext.cli",
        "run",
        str(job),
        "--conf",
        f"spark.sqlext.metastore.uris={metastore.uri}",
        *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
    ]
    env = {**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    hour = PER_HOUR

    with log.open("ab") as out:
        first = subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        # A batch commits with the watermark after its own rows: hour 02's events move it past 01:00, so
        # hour 00 is committed mid-stream; then the driver dies.
        kafka_broker.produce(topic, events(0, 2 * hour, DAY))
        _wait(lambda: _ids(table_dir), first, log, "the first batch")
        kafka_broker.produce(topic, events(2 * hour, hour, DAY + timedelta(hours=2)))
        _wait(lambda: _committed(table_dir), first, log, "the first partition commit")
    finally:
        _kill(first)

    kafka_broker.produce(topic, events(3 * hour, 3 * hour, DAY + timedelta(hours=3)))
    with log.open("ab") as out:
        second = subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _ids(table_dir) == list(range(EVENTS)), second, log, "every event")
        # Two events at 07:00 move the watermark past 06:00, so hours 00-05 are all committed.
        kafka_broker.produce(topic, events(EVENTS, 1, DAY + timedelta(hours=7)))
        _wait(lambda: _ids(table_dir)[-1:] == [EVENTS], second, log, "the first closing event")
        # A second event at 07:00 (a second batch): the watermark (ts - 1 s) stays before 07:00, so hour 07
        # stays uncommitted.
        kafka_broker.produce(topic, events(EVENTS + 1, 1, DAY + timedelta(hours=7)))
        six_hours = [f"hr={h:02d}" for h in range(6)]
        _wait(
            lambda: _committed(table_dir) == six_hours and _ids(table_dir)[-1:] == [EVENTS + 1],
            second,
            log,
            "six committed hours and the second closing event",
        )
    finally:
        _kill(second)

    assert _ids(table_dir) == list(range(EVENTS + 2)), "events lost or duplicated"
    names = [f"dt=2026-11-22/hr={h:02d}" for h in range(6)]
    assert_partitions_committed(hms, _database(value_format.replace("-", "_")), "events", table_dir, names, PER_HOUR)
    rows = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    sources = sorted(zip(rows["src_partition"].to_pylist(), rows["src_offset"].to_pylist(), strict=True))
    assert sources == sorted((n % 3, n // 3) for n in range(EVENTS + 2))
