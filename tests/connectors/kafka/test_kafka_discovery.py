"""``scan.topic-partition-discovery.interval``: partitions that appear while a streaming insert runs are read
from their earliest offset, exactly once.

The streaming test adds partitions the way a ``topic-pattern`` table sees them, as a new matching topic; the
own source's planner's handling of a topic that grows is checked against a stand-in client that answers
metadata and offsets.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.kafka.client import ReadSettings
from sqlext.connectors.kafka.source import _Planner, plan
from sqlext.spark.session import extend
from tests.support.kafka import KafkaBroker, event_records
from tests.support.read_job import committed_ids, start_insert
from tests.support.waiting import wait_for

DAY = datetime(2026, 11, 22)
_names = itertools.count()


@dataclass
class _Topic:
    partitions: dict[int, Any]
    error: Any = None


@dataclass
class _Metadata:
    topics: dict[str, _Topic]


@dataclass
class _FakeClient:
    """Answers ``list_topics`` and ``get_watermark_offsets`` from ``ends``: (topic, partition) -> (low, high)."""

    ends: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    listings: int = 0

    def list_topics(self, timeout: float) -> _Metadata:
        self.listings += 1
        topics: dict[str, _Topic] = {}
        for topic, partition in self.ends:
            topics.setdefault(topic, _Topic({})).partitions[partition] = object()
        return _Metadata(topics)

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        return self.ends[(tp.topic, tp.partition)]


def test_a_partition_added_to_a_topic_joins_at_its_earliest_offset_at_the_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr("sqlext.connectors.kafka.source.time.monotonic", lambda: now[0])
    settings = ReadSettings("t", {"bootstrap.servers": "b:9092"}, topics=["ev"], discovery_interval_s=10.0)
    client = _FakeClient({("ev", 0): (0, 5)})
    planner = _Planner(settings)
    planner._client = client
    start = {("ev", 0): 0}
    first = planner.latest(start)
    assert first == {("ev", 0): 5}

    client.ends = {("ev", 0): (0, 7), ("ev", 1): (3, 9)}  # partition 1 added; its first 3 records already gone
    now[0] += 5  # before the interval: not listed again, the new partition is not seen yet
    assert planner.latest(first) == {("ev", 0): 7}
    now[0] += 5
    second = planner.latest({("ev", 0): 7})
    assert second == {("ev", 0): 7, ("ev", 1): 3}  # joins at its earliest offset, no records in this batch
    assert plan({("ev", 0): 7}, second) == []
    third = planner.latest(second)
    assert [(r.topic, r.partition, r.start, r.end) for r in plan(second, third)] == [("ev", 1, 3, 9)]
    assert client.listings == 2


def test_zero_interval_never_lists_again(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ReadSettings("t", {"bootstrap.servers": "b:9092"}, topics=["ev"], discovery_interval_s=0.0)
    client = _FakeClient({("ev", 0): (0, 5)})
    planner = _Planner(settings)
    planner._client = client
    planner.latest({("ev", 0): 0})
    client.ends[("ev", 1)] = (0, 4)
    assert planner.latest({("ev", 0): 5}) == {("ev", 0): 5}
    assert client.listings == 1


@pytest.mark.spark
@pytest.mark.hms
@pytest.mark.kafka
@pytest.mark.jars
@pytest.mark.slow
def test_a_new_topic_matching_the_pattern_is_read_from_its_earliest_offset_exactly_once(
    kafka_broker: KafkaBroker, spark: Any, kafka_reader: str, hms: MetastoreClient, tmp_path: Path
) -> None:
    run = next(_names)
    first, second = f"disc{run}_a", f"disc{run}_b"
    kafka_broker.create_topic(first, 2)
    kafka_broker.produce(first, event_records(0, 10, DAY, 60, partitions=2))
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS kdisc")
    spark.sql(f"""
        CREATE TABLE kdisc.src{run} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
          t STRING METADATA FROM 'topic' VIRTUAL
        ) WITH (
          'connector' = 'kafka', 'topic-pattern' = 'disc{run}_[a-z]',
          'properties.bootstrap.servers' = '{kafka_broker.bootstrap}', 'scan.startup.mode' = 'earliest-offset',
          'scan.topic-partition-discovery.interval' = '1 s', 'format' = 'json'
        )""")
    sink = tmp_path / "copy"
    spark.sql(f"""
        CREATE TABLE kdisc.copy{run} (id BIGINT, t STRING, dt STRING) PARTITIONED BY (dt) WITH (
          'connector' = 'filesystem', 'path' = '{sink.as_uri()}', 'format' = 'parquet',
          'sink.partition-commit.policy.kind' = 'metastore,success-file'
        )""")
    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    spark.sql(f"SET 'pipeline.name' = 'discovery{run}'")
    insert = f"INSERT INTO kdisc.copy{run} SELECT id, t, DATE_FORMAT(ts, 'yyyy-MM-dd') FROM kdisc.src{run}"
    running = _started(spark, insert, lambda: committed_ids(sink) == list(range(10)))
    try:
        kafka_broker.create_topic(second, 2)
        # Produced before the source can have seen the topic: read because a new partition starts at earliest.
        kafka_broker.produce(second, event_records(10, 10, DAY, 60, partitions=2))
        _wait(running, lambda: committed_ids(sink) == list(range(20)), "the new topic's rows")
        kafka_broker.produce(first, event_records(20, 6, DAY, 60, partitions=2))
        kafka_broker.produce(second, event_records(26, 6, DAY, 60, partitions=2))
        _wait(running, lambda: committed_ids(sink) == list(range(32)), "the rows produced afterwards")
    finally:
        running.stop()
        running.wait(60)
    assert committed_ids(sink) == list(range(32)), "rows lost or duplicated"
    import pyarrow.dataset as ds

    rows = ds.dataset(sink, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    by_topic = sorted(zip(rows["id"].to_pylist(), rows["t"].to_pylist(), strict=True))
    assert by_topic == [(n, first if n < 10 or 20 <= n < 26 else second) for n in range(32)]
    assert hms.get_partition_names("kdisc", f"copy{run}") == ["dt=2026-11-22"]
    assert (sink / "dt=2026-11-22" / "_SUCCESS").exists()


def _wait(running: Any, condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition`` while the insert runs; its failure in the message if it stopped."""
    _until(running, condition, what)
    assert running.query.isActive, f"the insert stopped while waiting for {what}: {running.query.exception()}"


def _started(spark: Any, insert: str, first_rows: Callable[[], bool]) -> Any:
    """The running insert once ``first_rows`` holds; started again (it resumes its checkpoint) when Spark gave
    up on the source's Python process connecting back, which a loaded machine can delay past Spark's deadline
    after the query has left its initializing state."""
    for attempt in range(3):
        running = start_insert(spark, insert)
        _until(running, first_rows, "the first topic's rows")
        if running.query.isActive:
            return running
        failure = str(running.query.exception())
        running.wait(60)
        if "connect back" not in failure or attempt == 2:
            raise AssertionError(f"the insert failed: {failure}")
    raise AssertionError("unreachable")


def _until(running: Any, condition: Callable[[], bool], what: str) -> None:
    wait_for(lambda: condition() or not running.query.isActive, 300, what=what)
