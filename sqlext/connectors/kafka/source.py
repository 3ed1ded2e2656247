"""The connector's own Kafka source: a Python data source (``format("sqlext-kafka")``) on confluent-kafka.

Exactly once: a micro-batch is a range of offsets per topic partition, chosen on the driver
(:meth:`KafkaStreamReader.latestOffset`: each partition's latest offset, or the bound) and written by Spark
into the query's checkpoint (``offsets/<batchId>``) before the batch runs. A restarted query replays the
batch it had not finished with exactly those ranges, and records are immutable, so the sink sees the same
rows again and its own idempotence (the commit log) keeps them once. Consumer-group offsets are committed
after each batch only as a courtesy for monitoring (:meth:`KafkaStreamReader.commit`), as Flink commits
them on checkpoints; nothing reads them back except a new query in ``group-offsets`` mode.

Parallelism: one Spark task per topic partition with records in the batch, reading its range on an
executor with a consumer assigned to that one partition.

Discovery: the topic partitions are listed again at most every ``scan.topic-partition-discovery.interval``
(at the next batch after it passed). A new partition (or, with ``topic-pattern``, a new topic) joins at its
earliest offset, as in Flink; a topic that disappears fails the query naming it.

Rows: the raw record (:data:`RAW_SCHEMA`); the factory decodes key and value and picks metadata columns.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from sqlext.connectors.kafka import client as kc
from sqlext.connectors.kafka import options as ko

FORMAT_NAME = "sqlext-kafka"
RAW_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset bigint, timestamp bigint, "
    "timestamp_type int, headers map<string, binary>, leader_epoch int"
)
_ROWS_PER_ARROW_BATCH = 10_000


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """One task: records ``start`` (inclusive) to ``end`` (exclusive) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int


def to_json_offsets(offsets: kc.Offsets) -> dict[str, dict[str, int]]:
    """Offsets as Spark keeps them in the checkpoint: ``{topic: {partition: offset}}``."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def from_json_offsets(data: dict[str, Any]) -> kc.Offsets:
    return {(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}


class KafkaDataSource(DataSource):
    """``format("sqlext-kafka").option("settings", ReadSettings.to_json())``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return RAW_SCHEMA

    def _settings(self) -> kc.ReadSettings:
        return kc.ReadSettings.from_json(self.options["settings"])

    def streamReader(self, schema: Any) -> KafkaStreamReader:
        return KafkaStreamReader(self._settings())

    def reader(self, schema: Any) -> KafkaBatchReader:
        return KafkaBatchReader(self._settings())


class _Planner:
    """Driver side: the partitions, start and end offsets of a read (one consumer, kept across batches)."""

    def __init__(self, settings: kc.ReadSettings) -> None:
        self.settings = settings
        self._client: Any = None
        self._found: dict[str, list[int]] | None = None
        self._listed_at = 0.0
        self._bound: kc.Offsets | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = kc.consumer(self.settings)
        return self._client

    def found(self, refresh: bool = False) -> dict[str, list[int]]:
        interval = self.settings.discovery_interval_s
        due = interval > 0 and time.monotonic() - self._listed_at >= interval
        if self._found is None or (refresh and due):
            self._found = kc.topic_partitions(self.client, self.settings)
            self._listed_at = time.monotonic()
        return self._found

    def start(self) -> kc.Offsets:
        s = self.settings
        offsets = kc.resolve(self.client, s, self.found(), s.startup_mode, s.startup_timestamp, s.startup_offsets)
        kc.LOG.info(
            "Kafka source of %s (sqlext's own reader, confluent-kafka) starts at %s", s.table, to_json_offsets(offsets)
        )
        return offsets

    def bound(self) -> kc.Offsets | None:
        """The end of a bounded read, resolved once (when the query starts); None when unbounded."""
        s = self.settings
        if s.bounded_mode == ko.UNBOUNDED:
            return None
        if self._bound is None:
            self._bound = kc.resolve(
                self.client, s, self.found(), s.bounded_mode, s.bounded_timestamp, s.bounded_offsets
            )
        return self._bound

    def latest(self, start: kc.Offsets) -> kc.Offsets:
        found = self.found(refresh=True)
        gone = sorted({topic for topic, _ in start} - set(found))
        if gone:
            # Re-list now: the cached listing may be older than the topic's deletion or creation.
            found = self._found = kc.topic_partitions(self.client, self.settings)
            gone = sorted({topic for topic, _ in start} - set(found))
        if gone and self.settings.topics is None:
            raise kc.KafkaSourceError(
                f"Topic(s) {', '.join(gone)} read by table {self.settings.table} no longer exist on Kafka broker(s) "
                f"{self.settings.brokers}.",
                option=ko.TOPIC_PATTERN.key,
                value=";".join(gone),
            )
        bound = self.bound()
        end: kc.Offsets = {}
        for topic, partitions in found.items():
            for partition in partitions:
                low, high = kc.watermarks(self.client, self.settings, topic, partition)
                if (topic, partition) not in start:
                    end[(topic, partition)] = low  # a new partition joins at its earliest offset
                    kc.LOG.info("Kafka source of %s: new partition %s-%d", self.settings.table, topic, partition)
                    continue
                limit = bound.get((topic, partition), high) if bound is not None else high
                end[(topic, partition)] = max(start[(topic, partition)], min(high, limit))
        return end

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def plan(start: kc.Offsets, end: kc.Offsets) -> list[OffsetRange]:
    """One task per partition with records between ``start`` and ``end``; a partition new in ``end`` starts
    there (it has no records in this batch)."""
    return [
        OffsetRange(topic, partition, start[(topic, partition)], offset)
        for (topic, partition), offset in sorted(end.items())
        if (topic, partition) in start and offset > start[(topic, partition)]
    ]


class KafkaStreamReader(DataSourceStreamReader):
    """Micro-batches of offset ranges; see the module docstring."""

    def __init__(self, settings: kc.ReadSettings) -> None:
        self.settings = settings
        self._planner: _Planner | None = None

    @property
    def planner(self) -> _Planner:
        if self._planner is None:
            self._planner = _Planner(self.settings)
        return self._planner

    def initialOffset(self) -> dict[str, Any]:
        return to_json_offsets(self.planner.start())

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        return to_json_offsets(self.planner.latest(from_json_offsets(start)))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[OffsetRange]:
        return plan(from_json_offsets(start), from_json_offsets(end))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, OffsetRange)
        return read_range(self.settings, partition)

    def commit(self, end: dict[str, Any]) -> None:
        kc.commit_courtesy(self.planner.client, self.settings, from_json_offsets(end))

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()


class KafkaBatchReader(DataSourceReader):
    """A bounded read (batch mode): from the startup offsets to the bound."""

    def __init__(self, settings: kc.ReadSettings) -> None:
        self.settings = settings

    def partitions(self) -> list[OffsetRange]:
        planner = _Planner(self.settings)
        try:
            start = planner.start()
            return plan(start, planner.latest(start))
        finally:
            planner.close()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, OffsetRange)
        return read_range(self.settings, partition)


def read_range(settings: kc.ReadSettings, task: OffsetRange) -> Iterator[Any]:
    """The records of one offset range, as Arrow record batches (on an executor).

    Records are handled a ``consume`` answer at a time, and turned into columns only when a batch is
    full: a Python loop over each record was most of the executor's own time per record."""
    from confluent_kafka import TopicPartition

    client = kc.consumer(settings)
    try:
        client.assign([TopicPartition(task.topic, task.partition, task.start)])
        pending: list[Any] = []
        position, waited_since = task.start, time.monotonic()
        while position < task.end:
            records = client.consume(min(_ROWS_PER_ARROW_BATCH, task.end - position), timeout=1.0)
            if records:
                _raise_on_error(settings, task, records)
                if records[-1].offset() >= task.end:  # offsets rise within a partition
                    records = [record for record in records if record.offset() < task.end]
                    position = task.end
                if records:
                    pending += records
                    position = max(position, records[-1].offset() + 1)
                waited_since = time.monotonic()
            else:
                position = max(position, _position(client, task))  # gaps: compacted records, transaction markers
                if position < task.end and time.monotonic() - waited_since > settings.timeout_s:
                    raise kc.KafkaSourceError(
                        f"No records from partition {task.partition} of topic '{task.topic}' at offset {position} "
                        f"(expected up to {task.end}) within {settings.timeout_s:g} s; Kafka broker(s) "
                        f"{settings.brokers}, table {settings.table}.",
                        option=ko.TOPIC.key,
                        value=task.topic,
                    )
            if len(pending) >= _ROWS_PER_ARROW_BATCH:
                yield arrow_batch(task, pending)
                pending = []
        if pending:
            yield arrow_batch(task, pending)
    finally:
        client.close()


def _raise_on_error(settings: kc.ReadSettings, task: OffsetRange, records: list[Any]) -> None:
    failed = next((record for record in records if record.error() is not None), None)
    if failed is not None:
        raise kc.KafkaSourceError(
            f"Reading partition {task.partition} of topic '{task.topic}' (table {settings.table}, "
            f"Kafka broker(s) {settings.brokers}) failed: {failed.error()}",
            option=ko.TOPIC.key,
            value=task.topic,
        )


def _position(client: Any, task: OffsetRange) -> int:
    from confluent_kafka import TopicPartition

    [answer] = client.position([TopicPartition(task.topic, task.partition)])
    return int(answer.offset) if answer.offset >= 0 else task.start


_TIMESTAMP_TYPES = {0: None, 1: 0, 2: 1}  # librdkafka's NOT_AVAILABLE, CREATE_TIME, LOG_APPEND_TIME -> Kafka's ids


def arrow_batch(task: OffsetRange, records: list[Any]) -> Any:
    """Records of one topic partition as one Arrow record batch of :data:`RAW_SCHEMA` (topic and partition
    are the task's, not asked of each record)."""
    import pyarrow as pa

    stamps = [record.timestamp() for record in records]
    epochs: list[int | None]
    if records and hasattr(records[0], "leader_epoch"):  # confluent-kafka >= 2.1
        epochs = [epoch if epoch is not None and epoch >= 0 else None for epoch in (r.leader_epoch() for r in records)]
    else:
        epochs = [None] * len(records)
    columns = [
        pa.array([record.key() for record in records], pa.binary()),
        pa.array([record.value() for record in records], pa.binary()),
        pa.array([task.topic] * len(records), pa.string()),
        pa.array([task.partition] * len(records), pa.int32()),
        pa.array([record.offset() for record in records], pa.int64()),
        pa.array([stamp if kind else None for kind, stamp in stamps], pa.int64()),
        pa.array([_TIMESTAMP_TYPES.get(kind) for kind, _ in stamps], pa.int32()),
        pa.array([record.headers() or [] for record in records], pa.map_(pa.string(), pa.binary())),
        pa.array(epochs, pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_arrow_schema())


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.int64()),
            ("timestamp_type", pa.int32()),
            ("headers", pa.map_(pa.string(), pa.binary())),
            ("leader_epoch", pa.int32()),
        ]
    )
