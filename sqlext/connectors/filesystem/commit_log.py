"""The commit log of a table: which batch of which writing query committed which files and partitions.

In the spirit of Hudi's timeline, each batch of each query moves through three states, one small
JSON file at a time under ``<table path>/_sqlext/log/<query>/``:

``<batch>.requested``  the batch's files are staged (hidden) and the moves are planned;
``<batch>.inflight``   moves to the partition directories have begun;
``<batch>.completed``  every file is in place; later it also lists the partitions the batch committed.

A transition writes the next state's file (atomically: temp file + rename) and then removes the
previous one, so a reader finds at least one state for every batch that got that far. Restart reads
it: a ``requested`` or ``inflight`` batch is finished (rolled forward) from its plan; a ``completed``
batch that Spark replays is not written again. The directory name starts with ``_`` so that Spark,
Hive and every Hadoop-style reader skip it when they list the table.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from sqlext.io.fs import FileStatus, FileSystem, join
from sqlext.io.records import RecordFormat

LOG_DIR = "_sqlext/log"
STAGING_DIR = "_sqlext/staging"
_ENTRY_NAME = re.compile(r"^(\d{20})\.(requested|inflight|completed)$")
#: Version 1: the entries as written before versions were recorded (they have none), with the fields below.
ENTRY_FORMAT = RecordFormat("commit log entry", 1)


class EntryArchive(Protocol):
    """Where :meth:`CommitLog.expire` moves the entries it expires (see
    :class:`sqlext.connectors.filesystem.commit_log_archive.CommitLogArchive`)."""

    def add(self, query: str, uri: str, batch: int) -> None:
        """Take the completed entry file ``uri`` of ``query``'s ``batch`` out of the log."""


class State(StrEnum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"


@dataclass
class PlannedFile:
    """One data file of a batch: where it was staged, where it goes, what it holds."""

    staged: str
    final: str
    partition: str
    size: int
    rows: int | None
    #: A file written as a pending multipart upload to ``final`` (S3A's magic committer): the upload as S3A's
    #: ``SinglePendingCommit`` JSON; ``staged`` is then ``final`` too. None: a staged file, moved into place.
    upload: dict[str, Any] | None = None


@dataclass
class LogEntry:
    """One batch of one query in the commit log."""

    query: str
    batch: int
    state: State
    files: list[PlannedFile] = field(default_factory=list)
    partitions: dict[str, list[str]] = field(default_factory=dict)
    watermark_ms: int | None = None
    batch_time_ms: int = 0
    committed_partitions: list[str] = field(default_factory=list)
    replaced_files: list[str] = field(default_factory=list)
    operation: str = "append"
    #: Compaction: each merged file (final URI) and the files it replaced, in row order. Expiration: each
    #: expired partition (path) and its location.
    merged_from: dict[str, list[str]] = field(default_factory=dict)
    #: Compaction only: where HMS readers read the partition while its files are swapped (None: it
    #: was not in the HMS, so no reader could see the swap).
    view: str | None = None
    #: When the batch reached ``completed`` (epoch ms; None in entries written before it was recorded).
    completed_ms: int | None = None
    #: Partitions committed after this batch, by no batch: at the end of the bounded input or by a tick
    #: (a process-time delay passing between batches); partition path -> when (epoch ms). Recorded on the
    #: query's latest entry, so that the log says when every partition was committed.
    committed_later: dict[str, int] = field(default_factory=dict)
    #: When each partition of :attr:`committed_partitions` was recorded committed (epoch ms, taken as the log
    #: records it; the first record stays when a replayed batch commits the partition again). Entries written
    #: before it was recorded have none: their ``completed_ms`` stands in.
    committed_at: dict[str, int] = field(default_factory=dict)
    #: Compaction only: the rows of each file it replaced (where known), to find a replaced file's rows in
    #: the merged file (incremental reads).
    merged_rows: dict[str, int] = field(default_factory=dict)
    #: Partitions of this query that earlier batches wrote and no commit had covered yet when this batch was
    #: planned (None in entries written before it was recorded): a reader whose log lost the earlier batches
    #: knows which partitions may hold files the log does not list.
    pending_partitions: list[str] | None = None
    #: The one batch of a batch-mode insert: the statement finished when this entry is completed and
    #: every partition it wrote is committed (see ``BatchCommitter.settle_interrupted_statement``).
    final: bool = False

    @property
    def rows(self) -> int:
        """Rows of the files whose count is known (see :attr:`rows_known`)."""
        return sum(f.rows or 0 for f in self.files)

    @property
    def uncommitted_partitions(self) -> dict[str, list[str]]:
        """The partitions this batch wrote that no commit recorded in the log yet."""
        return {
            path: values
            for path, values in self.partitions.items()
            if path not in self.committed_partitions and path not in self.committed_later
        }

    @property
    def uploaded(self) -> bool:
        """Whether the batch was written as pending uploads to its files' final keys (S3A's magic committer),
        published by completing them rather than moved."""
        return any(f.upload is not None for f in self.files)

    @property
    def rows_known(self) -> bool:
        """Whether every file's rows were counted (not so for compressed csv/json files, nor without gathered
        statistics)."""
        return all(f.rows is not None for f in self.files)

    @property
    def rows_described(self) -> str:
        """The batch's rows for a log line: the count, or "an uncounted number of" (see :attr:`rows_known`)."""
        return str(self.rows) if self.rows_known else "an uncounted number of"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["state"] = str(self.state)
        return ENTRY_FORMAT.stamp(data)

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "commit log entry") -> LogEntry:
        """The entry in ``data`` (read from ``where``), refusing a format newer than this release reads."""
        data = ENTRY_FORMAT.checked(data, where)
        files = [PlannedFile(**f) for f in data.get("files", [])]
        pending = data.get("pending_partitions")
        return cls(
            query=data["query"],
            batch=int(data["batch"]),
            state=State(data["state"]),
            files=files,
            partitions={k: list(v) for k, v in data.get("partitions", {}).items()},
            watermark_ms=data.get("watermark_ms"),
            batch_time_ms=int(data.get("batch_time_ms", 0)),
            committed_partitions=list(data.get("committed_partitions", [])),
            replaced_files=list(data.get("replaced_files", [])),
            operation=data.get("operation", "append"),
            merged_from={k: list(v) for k, v in data.get("merged_from", {}).items()},
            view=data.get("view"),
            completed_ms=data.get("completed_ms"),
            committed_later={k: int(v) for k, v in data.get("committed_later", {}).items()},
            committed_at={k: int(v) for k, v in data.get("committed_at", {}).items()},
            merged_rows={k: int(v) for k, v in data.get("merged_rows", {}).items()},
            pending_partitions=None if pending is None else list(pending),
            final=bool(data.get("final", False)),
        )


class CommitLog:
    """The commit log of one table (all queries writing it)."""

    def __init__(self, fs: FileSystem, table_path: str, cache_reads: bool = False) -> None:
        """``cache_reads``: keep the entries :meth:`entries` read, per query, and read a state file again only
        when a listing shows it changed (size or modification time): for readers that look again and again,
        such as the status page."""
        self.fs = fs
        self.table_path = table_path
        self.root = join(table_path, LOG_DIR)
        #: query -> state file URI -> (size, mtime, entry), as of the last :meth:`entries` of that query.
        self._read_cache: dict[str, dict[str, tuple[int, int, LogEntry]]] | None = {} if cache_reads else None

    def staging_dir(self, query: str, batch: int) -> str:
        """Where a batch's files are written before they are committed (hidden from readers)."""
        return join(self.table_path, STAGING_DIR, query, f"{batch:020d}")

    def _file(self, query: str, batch: int, state: State) -> str:
        return join(self.root, query, f"{batch:020d}.{state}")

    def get(self, query: str, batch: int) -> LogEntry | None:
        """The most advanced state recorded for a batch, or None."""
        for state in (State.COMPLETED, State.INFLIGHT, State.REQUESTED):
            try:
                uri = self._file(query, batch, state)
                return LogEntry.from_json(self.fs.read_json(uri), uri)
            except FileNotFoundError:
                continue
        return None

    def recorded(self, query: str, batch: int) -> bool:
        """Whether the log has any state of a batch, without reading one: safe while another thread moves the
        batch on. States are looked at from the first: the writer records the next state before it drops the
        earlier one, and ``completed`` is the last, so a batch moving on is never missed (:meth:`get` looks from
        the last state and can miss it between two looks)."""
        return any(self.fs.exists(self._file(query, batch, state)) for state in State)

    def write(self, entry: LogEntry) -> None:
        """Record ``entry`` in its state, then drop the file of any earlier state."""
        self.fs.write_json(self._file(entry.query, entry.batch, entry.state), entry.to_json())
        for earlier in State:
            if earlier == entry.state:
                break
            self.fs.delete_file(self._file(entry.query, entry.batch, earlier))

    def discard(self, entry: LogEntry) -> None:
        """Forget a batch that is being undone (every state file of it)."""
        for state in State:
            self.fs.delete_file(self._file(entry.query, entry.batch, state))

    def transition(self, entry: LogEntry, state: State) -> LogEntry:
        entry.state = state
        if state is State.COMPLETED:
            entry.completed_ms = int(time.time() * 1000)
        self.write(entry)
        return entry

    def queries(self) -> list[str]:
        return self.fs.list_dirs(self.root)

    def _latest_states(self, query: str) -> dict[int, tuple[State, FileStatus]]:
        """The most advanced state of each batch of ``query`` and its file, from file names alone."""
        latest: dict[int, tuple[State, FileStatus]] = {}
        for status in self.fs.list_files(join(self.root, query), recursive=False):
            match = _ENTRY_NAME.match(status.relative)
            if match:
                batch, state = int(match.group(1)), State(match.group(2))
                if batch not in latest or _rank(state) > _rank(latest[batch][0]):
                    latest[batch] = (state, status)
        return latest

    def states(self, query: str) -> dict[int, State]:
        """The most advanced state of each batch of ``query``, from file names alone (one listing)."""
        return {batch: state for batch, (state, _) in self._latest_states(query).items()}

    def entries(self, query: str | None = None) -> Iterator[LogEntry]:
        """Every entry (most advanced state per batch), by query then batch."""
        for name in [query] if query else self.queries():
            latest = self._latest_states(name)
            cached = self._read_cache.get(name, {}) if self._read_cache is not None else {}
            kept: dict[str, tuple[int, int, LogEntry]] = {}
            for batch in sorted(latest):
                found = latest[batch][1]
                hit = cached.get(found.uri)
                if hit is not None and hit[:2] == (found.size, found.mtime_ms):
                    entry: LogEntry | None = hit[2]
                else:
                    entry = self._read_listed(name, batch, found.uri)
                if entry is not None:
                    kept[found.uri] = (found.size, found.mtime_ms, entry)
                    yield entry
            if self._read_cache is not None:
                self._read_cache[name] = kept  # only what the log still holds: expired entries leave the cache

    def _read_listed(self, query: str, batch: int, uri: str) -> LogEntry | None:
        """The entry in the state file ``uri`` found by a listing; if that file is gone since (the batch
        moved on to its next state, or was expired), the batch's state now.

        The writer records the next state before it deletes the earlier one, so a state can still vanish
        between two looks of :meth:`get`; a second :meth:`get` finds the state that replaced it. Only a
        reader racing the writer needs it: the writer's own :meth:`get` of a new batch looks once."""
        try:
            return LogEntry.from_json(self.fs.read_json(uri), uri)
        except FileNotFoundError:
            return self.get(query, batch) or self.get(query, batch)

    def last_batch(self, query: str) -> int | None:
        """The highest batch of ``query`` the log has any state of."""
        return max(self._latest_states(query), default=None)

    def expire(
        self,
        query: str,
        retained: int,
        keep: Callable[[int], bool] = lambda batch: False,
        archive: EntryArchive | None = None,
    ) -> list[int]:
        """Take the completed entries of ``query`` but its ``retained`` latest (and those ``keep`` says to
        keep) out of the log, into ``archive`` (None: deleted); return their batch ids. Entries not completed
        are never expired: a restart finishes them."""
        latest = self._latest_states(query)
        older = sorted(latest)[:-retained]  # ids, not arithmetic: compaction ids are timestamps
        expired = [batch for batch in older if latest[batch][0] is State.COMPLETED and not keep(batch)]
        for batch in expired:
            if archive is None:
                self.fs.delete_file(self._file(query, batch, State.COMPLETED))
            else:
                archive.add(query, self._file(query, batch, State.COMPLETED), batch)
        return expired

    def latest_entries(self, query: str, count: int) -> list[LogEntry]:
        """The ``count`` latest entries of ``query``, by batch: one listing and ``count`` reads, however many
        the log holds."""
        latest = self._latest_states(query)
        found = (
            self._read_listed(query, batch, latest[batch][1].uri)
            for batch in sorted(latest)[max(0, len(latest) - count) :]
        )
        return [entry for entry in found if entry is not None]


def _rank(state: str) -> int:
    return list(State).index(State(state))
