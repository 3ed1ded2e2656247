"""Partition commit triggers (Flink's ``PartitionCommitTrigger``): which pending partitions are ready.

A trigger keeps the partitions written but not yet committed, with the time each was first seen.
Its state is a JSON document persisted in the query checkpoint after every batch and restored on
restart; committed partitions leave it, so it holds only what is pending and does not grow with
the age of the query.

- ``process-time``: ready when the wall clock is past first-seen + delay (delay 0: at the batch that
  wrote it).
- ``partition-time``: ready when the watermark, read as a local date-time in
  ``sink.partition-commit.watermark-time-zone``, is past the partition's extracted time + delay.
  With ``sink.partition-commit.idle-timeout`` (sqlext), when no data has arrived for that long, a
  partition whose time + delay is behind the wall clock (same zone) is ready too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlext.sink.extractor import PartitionTimeExtractor


@dataclass
class PendingPartition:
    """A partition written and not yet committed."""

    path: str
    values: list[str]
    first_seen_ms: int


@dataclass
class TriggerState:
    """What a trigger persists: pending partitions, when data last arrived, and (for writers that
    track event time themselves) the largest event time seen."""

    pending: dict[str, PendingPartition] = field(default_factory=dict)
    last_data_ms: int = 0
    max_event_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "last_data_ms": self.last_data_ms,
            "max_event_ms": self.max_event_ms,
            "pending": [
                {"path": p.path, "values": p.values, "first_seen_ms": p.first_seen_ms}
                for p in sorted(self.pending.values(), key=lambda p: p.path)
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TriggerState:
        pending = {
            entry["path"]: PendingPartition(entry["path"], list(entry["values"]), int(entry["first_seen_ms"]))
            for entry in data.get("pending", [])
        }
        return cls(pending, int(data.get("last_data_ms", 0)), int(data.get("max_event_ms", 0)))


class PartitionCommitTrigger(ABC):
    """Decides which pending partitions are ready to commit."""

    def __init__(self, delay: timedelta, state: TriggerState | None = None) -> None:
        self.delay = delay
        self.state = state or TriggerState()

    def add(self, partitions: Iterable[tuple[str, Sequence[str]]], now_ms: int) -> None:
        """Record partitions written by a batch (a re-add keeps the first-seen time)."""
        for path, values in partitions:
            if path not in self.state.pending:
                self.state.pending[path] = PendingPartition(path, list(values), now_ms)
            self.state.last_data_ms = max(self.state.last_data_ms, now_ms)

    def committed(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.state.pending.pop(path, None)

    def all_pending(self) -> list[PendingPartition]:
        """Every pending partition (end of input commits them all)."""
        return sorted(self.state.pending.values(), key=lambda p: p.path)

    @abstractmethod
    def ready(self, watermark_ms: int | None, now_ms: int) -> list[PendingPartition]:
        """The pending partitions ready to commit now."""


class ProcessTimeTrigger(PartitionCommitTrigger):
    """Ready when the wall clock is past first-seen + delay."""

    def ready(self, watermark_ms: int | None, now_ms: int) -> list[PendingPartition]:
        delay_ms = self.delay.total_seconds() * 1000
        return [p for p in self.all_pending() if now_ms >= p.first_seen_ms + delay_ms]


class PartitionTimeTrigger(PartitionCommitTrigger):
    """Ready when the watermark (local time in the watermark zone) is past partition time + delay."""

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
        self.zone = ZoneInfo("UTC" if time_zone.upper() == "Z" else time_zone)
        self.idle_timeout = idle_timeout

    def partition_deadline(self, partition: PendingPartition) -> datetime:
        """The local time the watermark must pass for this partition to be ready."""
        return self.extractor.extract(self.keys, partition.values) + self.delay

    def _local(self, epoch_ms: int) -> datetime:
        return datetime.fromtimestamp(epoch_ms / 1000, self.zone).replace(tzinfo=None)

    def ready(self, watermark_ms: int | None, now_ms: int) -> list[PendingPartition]:
        ready = []
        watermark = self._local(watermark_ms) if watermark_ms is not None and watermark_ms > 0 else None
        idle = (
            self.idle_timeout is not None
            and self.state.last_data_ms > 0
            and now_ms - self.state.last_data_ms >= self.idle_timeout.total_seconds() * 1000
        )
        wall_clock = self._local(now_ms)
        for partition in self.all_pending():
            deadline = self.partition_deadline(partition)
            if (watermark is not None and watermark > deadline) or (idle and wall_clock > deadline):
                ready.append(partition)
        return ready
