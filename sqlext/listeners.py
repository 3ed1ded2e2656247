"""What inserts and metastore calls report as they run: the one hook the metrics and the status page hang on.

The commit path (:mod:`sqlext.connectors.filesystem.commit`) and the metastore client
(:mod:`sqlext.catalog.metastore.client`) call the ``report_*`` functions below; whoever wants to know
(:mod:`sqlext.metrics` when ``spark.sqlext.metrics.port`` is set) adds an :class:`InsertListener`. With no
listener a report costs one empty-list check. A listener that raises is logged and skipped: what watches
an insert never fails it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("sqlext.listeners")


@dataclass(frozen=True)
class InsertRef:
    """Which insert: the sink table (``db.name``), the writing query's name (its ``pipeline.name``) and the
    table's path (where its commit log is)."""

    table: str
    query: str
    path: str = ""


@dataclass(frozen=True)
class BatchCommitted:
    """A batch went through the commit protocol: its files are in place (the commit log says ``completed``)."""

    insert: InsertRef
    batch: int
    rows: int
    files: int
    bytes: int
    watermark_ms: int | None
    #: When the log recorded the batch ``completed`` (epoch ms), as the log holds it.
    completed_ms: int | None
    #: Seconds spent writing the staged files (0 when a replay found them written), and from then to the end.
    write_s: float
    commit_s: float


@dataclass(frozen=True)
class PartitionsCommitted:
    """One round of partition commit (after a batch, at a tick or at the end of input), with what is left."""

    insert: InsertRef
    batch: int | None
    committed: tuple[str, ...]
    #: Rows of the batch written into partitions this process had committed before (late data).
    late_rows: int
    pending: int
    #: When the oldest pending partition was first written (epoch ms), None when nothing is pending.
    oldest_pending_ms: int | None
    compactions: int
    #: True when the metastore did not answer and the ready partitions stayed pending.
    metastore_unavailable: bool
    seconds: float


class InsertListener:
    """Receives reports; override what you need. Called on the reporting thread, so keep it short."""

    def batch_committed(self, event: BatchCommitted) -> None:
        """A batch's files are committed."""

    def partitions_committed(self, event: PartitionsCommitted) -> None:
        """A partition commit round ran."""

    def insert_stopped(self, insert: InsertRef) -> None:
        """The insert's committer closed (its query ended or was stopped)."""

    def metastore_call(self, call: str, outcome: str, seconds: float) -> None:
        """One attempt of a metastore call: ``outcome`` is ``ok``, ``exception`` (the metastore answered with
        an error, e.g. no such table) or ``error`` (no answer: refused, reset, timed out)."""


_LISTENERS: list[InsertListener] = []
_LOCK = threading.Lock()


def add_listener(listener: InsertListener) -> None:
    """Start reporting to ``listener`` (once, however often it is added)."""
    with _LOCK:
        if listener not in _LISTENERS:
            _LISTENERS.append(listener)


def remove_listener(listener: InsertListener) -> None:
    with _LOCK:
        if listener in _LISTENERS:
            _LISTENERS.remove(listener)


def listening() -> bool:
    """Whether anyone listens (reporters skip computing what nobody reads)."""
    return bool(_LISTENERS)


def report_batch(event: BatchCommitted) -> None:
    for listener in list(_LISTENERS):
        _deliver(listener.batch_committed, event)


def report_partitions(event: PartitionsCommitted) -> None:
    for listener in list(_LISTENERS):
        _deliver(listener.partitions_committed, event)


def report_stopped(insert: InsertRef) -> None:
    for listener in list(_LISTENERS):
        _deliver(listener.insert_stopped, insert)


def report_metastore_call(call: str, outcome: str, seconds: float) -> None:
    for listener in list(_LISTENERS):
        try:
            listener.metastore_call(call, outcome, seconds)
        except Exception as exc:
            log.debug("listener %r failed on a metastore call: %s", listener, exc)


def _deliver(method: Callable[[Any], None], event: object) -> None:
    try:
        method(event)
    except Exception as exc:
        log.debug("listener %r failed on %r: %s", method, event, exc)
