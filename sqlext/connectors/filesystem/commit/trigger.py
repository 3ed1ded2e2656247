"""Partition commit triggers (Flink's ``PartitionCommitTrigger``): which pending partitions are ready.

A trigger keeps the partitions written but not yet committed, with the time each was first seen, and
the latest batch whose partitions it took in. Its state is a JSON document persisted in the query
checkpoint after every batch and restored on restart; committed partitions leave it, so it holds only
what is pending and does not grow with the age of the query. A batch of the commit log newer than the
state's batch has partitions the state does not hold yet (a crash cut its commit short): the restart adds
them (see :mod:`.committer`).

- ``process-time``: ready when the wall clock is past first-seen + delay (delay 0: at the batch that
  wrote it).
- ``partition-time``: ready when the watermark (epoch millis) is past the partition's extracted local
  time, taken as a time in ``sink.partition-commit.watermark-time-zone``, + delay. A local time that a
  daylight-saving change skips or repeats is taken as Java's ``LocalDateTime.atZone`` takes it (the
  offset before the change), so that decisions are Flink's to the millisecond.
  With ``sink.partition-commit.idle-timeout`` (sqlext), when no data has arrived for that long, a
  partition whose time + delay is behind the wall clock is ready too.

Both decisions are Flink's ``ProcTimeCommitPredicate`` / ``PartitionTimeCommitPredicate``, checked
against Flink itself in ``tests/connectors/filesystem/test_flink_conformance.py``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlext.connectors.filesystem.extractor import PartitionTimeExtractor
from sqlext.io.records import RecordFormat
from sqlext.options import parse_zone_id

#: Version 1: as below (the first trigger state sqlext wrote already said so).
STATE_FORMAT = RecordFormat("trigger state", 1)


@dataclass
class PendingPartition:
    """A partition written and not yet committed."""

    path: str
    values: list[str]
    first_seen_ms: int


@dataclass
class TriggerState:
    """What a trigger persists: pending partitions, when data last arrived, (for writers that track event
    time themselves) the largest event time seen, and the latest batch whose partitions it took in."""

    pending: dict[str, PendingPartition] = field(default_factory=dict)
    last_data_ms: int = 0
    max_event_ms: int = 0
    #: The latest batch whose partitions were added (pending still, or committed since); -1: none yet; None:
    #: not known (a state saved by a sqlext that did not record it, which committed every batch before Spark
    #: recorded it: then every completed batch of the log was added).
    last_batch: int | None = -1

    def to_json(self) -> dict[str, Any]:
        return STATE_FORMAT.stamp(
            {
                "last_data_ms": self.last_data_ms,
                "max_event_ms": self.max_event_ms,
                "last_batch": self.last_batch,
                "pending": [
                    {"path": p.path, "values": p.values, "first_seen_ms": p.first_seen_ms}
                    for p in sorted(self.pending.values(), key=lambda p: p.path)
                ],
            }
        )

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "trigger state") -> TriggerState:
        """The state in ``data`` (read from ``where``), refusing a format newer than this release reads."""
        data = STATE_FORMAT.checked(data, where)
        pending = {
            entry["path"]: PendingPartition(entry["path"], list(entry["values"]), int(entry["first_seen_ms"]))
            for entry in data.get("pending", [])
        }
        last_batch = data.get("last_batch")
        return cls(
            pending,
            int(data.get("last_data_ms", 0)),
            int(data.get("max_event_ms", 0)),
            None if last_batch is None else int(last_batch),
        )


class PartitionCommitTrigger(ABC):
    """Decides which pending partitions are ready to commit."""

    def __init__(self, delay: timedelta, state: TriggerState | None = None) -> None:
        self.delay = delay
        self.state = state or TriggerState()

    def add(
        self,
        partitions: Iterable[tuple[str, Sequence[str]]],
        now_ms: int,
        arrived_ms: int | None = None,
        batch: int | None = None,
    ) -> None:
        """Record partitions written by a batch that started at ``now_ms`` (their first-seen time; a re-add
        keeps the first) and whose data reached the committer at ``arrived_ms`` (default ``now_ms``): the
        idle timeout counts from there, so a batch that ran longer than the timeout is not idle itself.
        ``batch``: the batch that wrote them, remembered as the state's :attr:`TriggerState.last_batch`."""
        if batch is not None:
            self.state.last_batch = max(batch, -1 if self.state.last_batch is None else self.state.last_batch)
        for path, values in partitions:
            if path not in self.state.pending:
                self.state.pending[path] = PendingPartition(path, list(values), now_ms)
            self.state.last_data_ms = max(self.state.last_data_ms, now_ms if arrived_ms is None else arrived_ms)

    def committed(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.state.pending.pop(path, None)

    def all_pending(self) -> list[PendingPartition]:
        """Every pending partition (end of input commits them all)."""
        return sorted(self.state.pending.values(), key=lambda p: p.path)

    def check(self, partitions: Iterable[tuple[str, Sequence[str]]]) -> None:
        """Raise if the trigger could never decide on one of ``partitions`` (before their files are moved);
        a process-time trigger decides on any."""
        return None

    @abstractmethod
    def ready(self, watermark_ms: int | None, now_ms: int) -> list[PendingPartition]:
        """The pending partitions ready to commit now."""


class ProcessTimeTrigger(PartitionCommitTrigger):
    """Ready when the wall clock is past first-seen + delay; with delay 0, at once."""

    def ready(self, watermark_ms: int | None, now_ms: int) -> list[PendingPartition]:
        delay_ms = _millis(self.delay)
        return [p for p in self.all_pending() if delay_ms == 0 or now_ms > p.first_seen_ms + delay_ms]


class PartitionTimeTrigger(PartitionCommitTrigger):
    """Ready when the watermark is past partition time (in the watermark zone) + delay."""

    def __init__(
        self,
        delay: timedelta,
        extractor: PartitionTimeExtractor,
        keys: Sequence[str],
        time_zone: str = "UTC",
        idle_timeout: timedelta | None = None,
        state: TriggerState | None = None,
    ) -> None:
        super().__init__(delay, state)
        self.extractor = extractor
        self.keys = list(keys)
        self.zone = parse_zone_id(time_zone)
        self.idle_timeout = idle_timeout
        #: The highest watermark seen (Spark's never goes back): what a tick between batches compares with.
        self.watermark_ms: int | None = None

    def check(self, partitions: Iterable[tuple[str, Sequence[str]]]) -> None:
        """Extract each new partition's time: a value the pattern or formatter cannot read raises
        :class:`PartitionTimeError` naming the partition and the text, as Flink's job fails."""
        for path, values in partitions:
            if path not in self.state.pending:
                self.extractor.extract(self.keys, values)

    def partition_deadline_ms(self, partition: PendingPartition) -> int:
        """The epoch millis the watermark must pass for this partition to be ready."""
        local = self.extractor.extract(self.keys, partition.values)
        # fold=0: in a gap or an overlap, the offset before the change, as Java's atZone.
        return _millis(local.replace(tzinfo=self.zone, fold=0) - _EPOCH) + _millis(self.delay)

    def ready(self, watermark_ms: int | None, now_ms: int) -> list[PendingPartition]:
        """Pending partitions whose deadline the watermark passed, or the wall clock once idle. Without a
        watermark (a tick between batches) the highest one seen counts: a partition it made ready whose commit
        failed (the metastore away) is then retried by the tick, not only when the next batch comes."""
        ready = []
        if watermark_ms is not None and watermark_ms > 0:
            self.watermark_ms = max(self.watermark_ms or 0, watermark_ms)
        watermark = self.watermark_ms
        idle = (
            self.idle_timeout is not None
            and self.state.last_data_ms > 0
            and now_ms - self.state.last_data_ms >= _millis(self.idle_timeout)
        )
        for partition in self.all_pending():
            deadline = self.partition_deadline_ms(partition)
            if (watermark is not None and watermark > deadline) or (idle and now_ms > deadline):
                ready.append(partition)
        return ready


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _millis(duration: timedelta) -> int:
    return duration // timedelta(milliseconds=1)


def create_trigger(
    kind: str,
    delay: timedelta,
    extractor: PartitionTimeExtractor | None,
    keys: Sequence[str],
    time_zone: str = "UTC",
    idle_timeout: timedelta | None = None,
    state: TriggerState | None = None,
) -> PartitionCommitTrigger:
    """The trigger ``sink.partition-commit.trigger`` names: ``partition-time`` (which needs ``extractor``)
    or ``process-time``."""
    if kind == "partition-time":
        if extractor is None:
            raise ValueError("the partition-time trigger needs a partition time extractor")
        return PartitionTimeTrigger(delay, extractor, keys, time_zone, idle_timeout, state)
    return ProcessTimeTrigger(delay, state)
