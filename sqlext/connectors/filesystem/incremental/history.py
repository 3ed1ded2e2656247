"""What a table's commit log says about its data files, for incremental reads (:mod:`.plan`).

- A **landing** is a data file a writing query's batch moved into the table (an ``append`` or ``overwrite``
  entry that reached ``completed``), landed at the entry's ``completed_ms``.
- A **commit record** says a partition was committed, and when: ``committed_at`` of a batch's entry (its
  ``completed_ms`` in entries written before it was recorded) and ``committed_later``. Compaction and
  expiration record no commits: they add no rows.
- A file is **committed** by the first commit record of its partition at or after it landed (HMS readers
  see every file of the directory from that commit on): that time is the one an incremental window
  compares. A file of a table without partitions is committed when it lands (no partition commit).
- A **merge** is a compaction's merged file and the files it replaced, in row order, with their rows; a
  **removal** a file or directory an ``INSERT OVERWRITE`` or a partition expiration took out of the table.
- A writing query whose log lost its first batches (``sink.commit-log.retained-batches`` expired them, or
  they were deleted) is **truncated**: what it committed before its oldest retained batch is unknown.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.connectors.filesystem.compaction.compactor import COMPACTION_WRITER
from sqlext.connectors.filesystem.expiration import EXPIRATION_WRITER
from sqlext.io.fs import normalize

DATA_OPERATIONS = ("append", "overwrite")


@dataclass(frozen=True)
class Landing:
    """A data file a batch moved into the table."""

    uri: str
    partition: str
    rows: int | None
    landed_ms: int
    query: str
    batch: int


@dataclass(frozen=True)
class Merge:
    """A compaction's merged file: the files it replaced, in row order, and their rows where known."""

    uri: str
    partition: str
    sources: tuple[str, ...]
    source_rows: tuple[int | None, ...]
    compaction: int
    completed: bool


@dataclass(frozen=True)
class Removal:
    """A file, or a directory with everything under it, taken out of the table by an operation."""

    uri: str
    after_ms: int
    by: str

    def covers(self, uri: str) -> bool:
        return uri == self.uri or uri.startswith(self.uri + "/")


@dataclass(frozen=True)
class Truncation:
    """A writing query whose log starts at ``batch`` (> 0, or after a gap): batches before it are gone."""

    query: str
    batch: int
    #: When ``batch`` completed: the lost batches committed before.
    since_ms: int
    #: When ``batch`` started: its pending partitions were still pending then.
    planned_ms: int
    #: Partitions written by the lost batches and not yet committed when ``batch`` was planned (None: not
    #: recorded, so any partition may be such).
    pending: frozenset[str] | None


@dataclass
class CommitHistory:
    """The commit log of one table, read for incremental reads (see the module docstring)."""

    landings: dict[str, Landing] = field(default_factory=dict)
    #: Files of data batches that did not reach ``completed`` (not committed; not foreign either).
    unfinished: set[str] = field(default_factory=set)
    #: Partition path -> the times it was recorded committed, ascending.
    commits: dict[str, list[int]] = field(default_factory=dict)
    merges: dict[str, Merge] = field(default_factory=dict)
    merged_into: dict[str, str] = field(default_factory=dict)
    removals: list[Removal] = field(default_factory=list)
    truncations: list[Truncation] = field(default_factory=list)
    #: Ids of the compactions the log holds, in any state.
    compactions: set[int] = field(default_factory=set)
    #: Rows of files the log counted (landed files and merged files).
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def has_data_entries(self) -> bool:
        return bool(self.landings or self.unfinished or self.truncations)

    @classmethod
    def read(cls, log: CommitLog) -> CommitHistory:
        """Every entry of every writer of the table's log."""
        history = cls()
        for query in log.queries():
            entries = sorted(log.entries(query), key=lambda entry: entry.batch)
            if query == COMPACTION_WRITER:
                history._add_compactions(entries)
            elif query == EXPIRATION_WRITER:
                history._add_expirations(entries)
            elif not query.startswith("_"):
                history._add_batches(query, entries)
        for times in history.commits.values():
            times.sort()
        return history

    def committed_ms(self, landing: Landing) -> int | None:
        """When ``landing`` was committed: the first commit of its partition at or after it landed (when it
        landed, for a table without partitions); None while no commit covers it."""
        if not landing.partition:
            return landing.landed_ms
        times = self.commits.get(landing.partition, [])
        index = bisect.bisect_left(times, landing.landed_ms)
        return times[index] if index < len(times) else None

    def first_commit_since(self, partition: str, since_ms: int) -> int | None:
        """The first time ``partition`` was recorded committed at or after ``since_ms``."""
        times = self.commits.get(partition, [])
        index = bisect.bisect_left(times, since_ms)
        return times[index] if index < len(times) else None

    def leaves(self, uri: str) -> Iterator[tuple[str, int | None]]:
        """The files whose rows ``uri`` holds, in row order, with their rows: the file itself, or for a merged
        file, the files it replaced (merged files among them expanded in turn)."""
        merge = self.merges.get(uri)
        if merge is None:
            yield uri, self.rows.get(uri)
            return
        for source, rows in zip(merge.sources, merge.source_rows, strict=True):
            if source in self.merges:
                yield from self.leaves(source)
            else:
                yield source, rows if rows is not None else self.rows.get(source)

    def explained(self, uri: str) -> bool:
        """Whether the log knows where every row of ``uri`` came from (a landing, a batch not finished, or a
        merged file of such files)."""
        if uri in self.merges:
            return all(self.explained(source) for source, _ in self.leaves(uri))
        return uri in self.landings or uri in self.unfinished

    def removal_of(self, uri: str, landed_ms: int) -> Removal | None:
        """The recorded operation that took ``uri`` (landed at ``landed_ms``) out of the table, if any."""
        return next((r for r in self.removals if r.covers(uri) and r.after_ms >= landed_ms), None)

    # -- reading the log ----------------------------------------------------------------------------

    def _add_batches(self, query: str, entries: list[LogEntry]) -> None:
        truncation = _truncation(query, entries)
        if truncation is not None:
            self.truncations.append(truncation)
        for entry in entries:
            if entry.operation not in DATA_OPERATIONS:
                continue
            files = [(normalize(f.final), f) for f in entry.files]
            if entry.state is not State.COMPLETED:
                self.unfinished.update(uri for uri, _ in files)
                if entry.operation == "overwrite":
                    self._add_removals(entry, f"INSERT OVERWRITE (writer '{query}', batch {entry.batch})")
                continue
            landed = _completed_ms(entry)
            for uri, planned in files:
                self.landings[uri] = Landing(uri, planned.partition, planned.rows, landed, query, entry.batch)
                if planned.rows is not None:
                    self.rows[uri] = planned.rows
            for path in entry.committed_partitions:
                self.commits.setdefault(path, []).append(entry.committed_at.get(path, landed))
            for path, at in entry.committed_later.items():
                self.commits.setdefault(path, []).append(at)
            if entry.operation == "overwrite":
                self._add_removals(entry, f"INSERT OVERWRITE (writer '{query}', batch {entry.batch})")

    def _add_removals(self, entry: LogEntry, by: str) -> None:
        self.removals.extend(Removal(normalize(uri), entry.batch_time_ms, by) for uri in entry.replaced_files)

    def _add_compactions(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            self.compactions.add(entry.batch)
            partition = next(iter(entry.partitions), "")
            for planned in entry.files:
                merged = normalize(planned.final)
                sources = tuple(normalize(uri) for uri in entry.merged_from.get(planned.final, []))
                rows = tuple(entry.merged_rows.get(uri) for uri in entry.merged_from.get(planned.final, []))
                completed = entry.state is State.COMPLETED
                self.merges[merged] = Merge(merged, partition, sources, rows, entry.batch, completed)
                self.merged_into.update(dict.fromkeys(sources, merged))
                if planned.rows is not None:
                    self.rows[merged] = planned.rows

    def _add_expirations(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            self._add_removals(entry, f"partition expiration {entry.batch} ({', '.join(sorted(entry.partitions))})")


def _completed_ms(entry: LogEntry) -> int:
    return entry.completed_ms if entry.completed_ms is not None else entry.batch_time_ms


def _truncation(query: str, entries: list[LogEntry]) -> Truncation | None:
    """Where ``query``'s log starts when it lost batches: the first entry after the last gap in its batch
    ids (batch ids of a query count from 0 without gaps; expiration removes the oldest completed ones)."""
    if not entries:
        return None
    first = len(entries) - 1
    while first > 0 and entries[first - 1].batch == entries[first].batch - 1:
        first -= 1
    if first == 0 and entries[0].batch == 0:
        return None
    start = entries[first]
    pending = None if start.pending_partitions is None else frozenset(start.pending_partitions)
    return Truncation(query, start.batch, _completed_ms(start), start.batch_time_ms, pending)
