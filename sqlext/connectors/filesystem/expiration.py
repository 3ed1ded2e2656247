"""Partition expiration (Paimon's ``partition.expiration-*`` options on sqlext tables): committed partitions
older than ``partition.expiration-time`` leave the HMS, then their files leave the table.

A partition's age runs from ``values-time`` (the time its values say, read with the table's
``partition.time-extractor.*`` options in ``sink.partition-commit.watermark-time-zone``, as the commit
trigger reads it) or ``update-time`` (its last commit in the commit log; without one, the commit time the
metastore policy stored). Candidates are the partitions the HMS lists; a partition still pending commit (in
the commit log: written by a batch, not committed since; or in the running insert's trigger) is left alone.

With ``values-time`` a check does not list the table each time (that grew with the table): the first check
of an expirer lists every partition name and keeps the oldest ones, up to
:data:`~sqlext.connectors.filesystem.expiration_horizon.HORIZON_SIZE`, in a
:class:`~sqlext.connectors.filesystem.expiration_horizon.Horizon` whose bound every other one is at or
after. The next checks fetch by name the kept partitions older than the due cutoff (one gone from the HMS
leaves the horizon; each is checked again from its fetched values) and add the partitions the commit log of
any writing query shows committed since, when older than the bound. A check lists the names again when the
cutoff passes the bound (more partitions may be due than are kept) and at least every
:data:`FULL_LISTING_EVERY` checks: a partition an outside writer (Hive, Spark without sqlext, an
``ALTER TABLE ADD PARTITION``) registers with an old time, or one committed while its commit-log entry
was expired between two checks, expires up to that many checks late, never early. Memory: the horizon, plus
one listing while it is read. ``update-time`` lists every check (its times are in the HMS, not the names).

One expiration is recorded in the table's commit log under the writer ``_expiration`` and goes:

1. **plan** — the expired partitions and their data files; recorded ``requested``;
2. **drop** — each partition (and its ``.done`` partition) is dropped from the HMS, data kept; recorded
   ``inflight`` with the time. HMS readers no longer see the partitions;
3. **delete** — once the reader grace has passed (queries that listed the files may still read them, as
   for compaction), the recorded files are deleted, and the directory when no data file is left in it;
   recorded ``completed``: ``sqlext commits`` lists it (operation ``expire``), the timeline draws it.

A crash before 2 leaves the partitions whole; the restart (the next check, or ``sqlext expire``) finishes a
``requested`` expiration from step 2 and an ``inflight`` one from step 3, each step idempotent. So a
partition is never registered without its files: its files go only after it left the HMS.

Only the files listed in step 1 are deleted: rows written into the directory afterwards stay (a running
insert expires under its committer's lock, so no batch moves files meanwhile; a late re-commit registers
the partition again).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.connectors.filesystem.commit_log_archive import table_archive
from sqlext.connectors.filesystem.done_policies import REPORTED_DIR, done_values, is_done_partition
from sqlext.connectors.filesystem.escaping import parse_partition_path
from sqlext.connectors.filesystem.expiration_horizon import Horizon
from sqlext.connectors.filesystem.extractor import create_extractor
from sqlext.connectors.filesystem.files import data_files
from sqlext.errors import ValidationError
from sqlext.faults import fault_point
from sqlext.io.fs import FileSystem, join, normalize
from sqlext.options import Options, parse_zone_id
from sqlext.table import TableDefinition

log = logging.getLogger("sqlext.expiration")

#: The writer name expirations are recorded under in a table's commit log.
EXPIRATION_WRITER = "_expiration"
#: How long queries that listed an expired partition's files may go on reading them.
DEFAULT_READER_GRACE = timedelta(seconds=10)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The time of a ``.done`` partition (never due: it is dropped with its partition).
_NEVER = 2**63 - 1
#: Partition names whose times one process keeps per extraction (about 150 bytes each).
_NAME_TIMES_BOUND = 500_000
#: With ``values-time``, a check lists the table's partition names at least this often (the first check of an
#: expirer lists them too); the checks between take the due partitions from the horizon.
FULL_LISTING_EVERY = 24


@dataclass(frozen=True)
class ExpiredPartition:
    """A partition due to expire: its ``k=v/...`` path, values, HMS location and the time its age counts from."""

    path: str
    values: list[str]
    location: str
    since_ms: int


def commit_history(log_: CommitLog) -> tuple[set[str], dict[str, int]]:
    """From the commit log of every writing query: the partitions written and not committed since (pending),
    and when each partition was last committed (epoch ms)."""
    pending: set[str] = set()
    last_commit: dict[str, int] = {}
    for query in log_.queries():
        if query.startswith("_") or ".replaced-" in query:
            continue  # compaction, expiration, and logs a fresh start set aside
        for entry in log_.entries(query):
            pending.update(entry.partitions)
            if entry.state is not State.COMPLETED:
                continue
            when = entry.completed_ms or entry.batch_time_ms
            for path in entry.committed_partitions:
                pending.discard(path)
                last_commit[path] = max(last_commit.get(path, 0), when)
            for path, at in entry.committed_later.items():
                pending.discard(path)
                last_commit[path] = max(last_commit.get(path, 0), at)
    return pending, last_commit


class PartitionExpirer:
    """Expires the partitions of one table (see the module docstring). ``pending`` gives the partitions a
    running insert holds pending beyond what its commit log says."""

    def __init__(
        self,
        table: TableDefinition,
        metastore: MetastoreClient,
        reader_grace: timedelta = DEFAULT_READER_GRACE,
        pending: Callable[[], set[str]] = set,
    ) -> None:
        options = Options(table.options)
        expiration = options.get(fso.PARTITION_EXPIRATION_TIME)
        if expiration is None or not table.partition_keys:
            raise ValidationError(
                f"Table {table.identifier} has no partitions to expire: set 'partition.expiration-time' (a duration "
                "such as '7 d') on a partitioned table.",
                option=fso.PARTITION_EXPIRATION_TIME.key,
            )
        self.table = table
        self.metastore = metastore
        self.expiration: timedelta = expiration
        self.check_interval: timedelta = options.get(fso.PARTITION_EXPIRATION_CHECK_INTERVAL)
        self.strategy: str = options.get(fso.PARTITION_EXPIRATION_STRATEGY)
        self.reader_grace = reader_grace
        self.pending = pending
        self.path = normalize(str(options.require(fso.PATH)))
        self.fs = FileSystem(self.path)
        self.log = CommitLog(self.fs, self.path)
        self.retained = int(options.get(fso.COMMIT_LOG_RETAINED_BATCHES))
        self.archive = table_archive(self.fs, self.path, int(options.get(fso.COMMIT_LOG_ARCHIVE_RETAINED_BATCHES)))
        self.zone = parse_zone_id(options.get(fso.WATERMARK_TIME_ZONE))
        self.extractor = create_extractor(
            options.get(fso.TIME_EXTRACTOR_KIND),
            options.get(fso.TIME_EXTRACTOR_CLASS),
            options.get(fso.TIME_EXTRACTOR_PATTERN),
            options.get(fso.TIME_EXTRACTOR_FORMATTER),
        )
        self._last_check_ms = 0
        self._name_times = _NameTimes.of(self.table, options)
        self._horizon = Horizon()
        self._checks_since_listing = FULL_LISTING_EVERY  # the first check lists
        self._seen_commits: dict[str, int] = {}

    # -- which partitions -----------------------------------------------------------------------

    def expired(self, now_ms: int | None = None) -> list[ExpiredPartition]:
        """The partitions in the HMS older than the expiration time and not pending commit."""
        now_ms = _now_ms() if now_ms is None else now_ms
        ident, keys = self.table.identifier, list(self.table.partition_keys)
        pending, last_commit = commit_history(self.log)
        pending |= self.pending()
        if self.strategy == fso.EXPIRATION_UPDATE_TIME:
            names = self.metastore.get_partition_names(ident.database, ident.name)
        else:
            # The partition's time is in its name: fetch only the partitions old enough to expire, found in
            # the horizon of the oldest ones between listings (see the module docstring).
            names = self._due_names(now_ms - self.expiration // timedelta(milliseconds=1), last_commit)
        names = [name for name in names if name not in pending]
        by_values = {tuple(parse_partition_path(name, keys)): name for name in names}
        found, fetched = [], set()
        for partition in self.metastore.get_partitions_by_names(ident.database, ident.name, names) if names else []:
            values = list(partition.values)
            if is_done_partition(values):
                continue  # dropped with its partition
            path = by_values[tuple(values)]
            fetched.add(path)
            since = self._since_ms(path, values, partition, last_commit)
            if since is not None and since + self.expiration // timedelta(milliseconds=1) < now_ms:
                found.append(ExpiredPartition(path, values, normalize(partition.sd.location), since))
        self._horizon.discard(name for name in names if name not in fetched)  # dropped by someone else
        return sorted(found, key=lambda p: p.path)

    def _due_names(self, due_before_ms: int, last_commit: dict[str, int]) -> list[str]:
        """The names of the partitions whose names say they are due: from the horizon, or from a full listing
        at the first check, every :data:`FULL_LISTING_EVERY` checks, and when the horizon no longer covers the
        cutoff."""
        self._checks_since_listing += 1
        if self._checks_since_listing <= FULL_LISTING_EVERY:
            self._note_commits(last_commit)
            if self._horizon.covers(due_before_ms):
                return self._horizon.older_than(due_before_ms)
        ident = self.table.identifier
        listed = self.metastore.get_partition_names(ident.database, ident.name)
        self._checks_since_listing = 1
        self._seen_commits = last_commit
        self._horizon.fill((at, name) for name in listed if (at := self._name_time_of(name)) not in (None, _NEVER))
        # As before the horizon: one whose time cannot be extracted is fetched (and kept with a warning).
        return [name for name in listed if self._due(name, due_before_ms)]

    def _note_commits(self, last_commit: dict[str, int]) -> None:
        """Add to the horizon the partitions committed (again) since the last check, as the commit log of every
        writing query says; the horizon keeps those older than its bound."""
        seen = self._seen_commits
        for path, at in last_commit.items():
            if seen.get(path) != at:
                since = self._name_time_of(path)
                if since is not None and since != _NEVER:
                    self._horizon.add(path, since)
        self._seen_commits = last_commit

    def _due(self, name: str, due_before_ms: int) -> bool:
        """Whether a partition, by its name alone, is past its expiration time (one whose time cannot be
        extracted is fetched, and kept with a warning as before; ``.done`` partitions go with theirs)."""
        since = self._name_time_of(name)
        return since is None or since < due_before_ms

    def _name_time_of(self, name: str) -> int | None:
        """:meth:`_name_time`, remembered per process."""
        times = self._name_times
        if name not in times:
            times.remember(name, self._name_time(name))
        return times[name]

    def _name_time(self, name: str) -> int | None:
        """The partition time of a name in epoch ms; :data:`_NEVER` for a ``.done`` partition, None when its
        time cannot be extracted."""
        values = parse_partition_path(name, list(self.table.partition_keys))
        if is_done_partition(values):
            return _NEVER
        try:
            return self._extracted_ms(values)
        except Exception:
            return None

    def _since_ms(self, path: str, values: list[str], partition: object, last_commit: dict[str, int]) -> int | None:
        if self.strategy == fso.EXPIRATION_UPDATE_TIME:
            if path in last_commit:
                return last_commit[path]
            stored = (getattr(partition, "parameters", None) or {}).get("sqlext.commit-time")
            return int(stored) if stored else int(getattr(partition, "createTime", 0) or 0) * 1000
        try:
            return self._extracted_ms(values)
        except Exception as exc:  # a partition whose age is unknown is kept
            log.warning("%s: partition %s is kept: its time cannot be extracted (%s)", self.table.identifier, path, exc)
            return None

    def _extracted_ms(self, values: list[str]) -> int:
        """The partition time of ``values`` in epoch ms, in the table's watermark time zone."""
        local = self.extractor.extract(self.table.partition_keys, values)
        return (local.replace(tzinfo=self.zone, fold=0) - _EPOCH) // timedelta(milliseconds=1)

    # -- the protocol ---------------------------------------------------------------------------

    def expire(self, now_ms: int | None = None, wait: bool = True) -> LogEntry | None:
        """Finish what a crash left, then expire what is due: plan, drop, and (``wait``: after the reader
        grace, here) delete. Without ``wait`` the deletion is left to :meth:`finish_due`. Returns the
        expiration started, if any."""
        now_ms = _now_ms() if now_ms is None else now_ms
        self.recover(wait)
        partitions = self.expired(now_ms)
        if not partitions:
            return None
        entry = LogEntry(
            query=EXPIRATION_WRITER,
            batch=time.time_ns() // 1000,
            state=State.REQUESTED,
            partitions={p.path: p.values for p in partitions},
            batch_time_ms=now_ms,
            operation="expire",
            replaced_files=[f.uri for p in partitions for f in data_files(self.fs, p.location)],
            merged_from={p.path: [p.location] for p in partitions},
        )
        self.log.write(entry)
        self._drop(entry)
        self._horizon.discard(entry.partitions)
        if wait:
            self._wait_for_readers(entry)
            self._delete(entry)
        return entry

    def recover(self, wait: bool = True) -> None:
        """Drop the partitions of ``requested`` expirations; delete the files of ``inflight`` ones whose grace
        has passed (all of them after waiting out the grace, with ``wait``)."""
        for entry in self.log.entries(EXPIRATION_WRITER):
            if entry.state is State.REQUESTED:
                log.warning("expiration %d of %s was interrupted; finishing it", entry.batch, self.table.identifier)
                self._drop(entry)
        if wait:
            for entry in self.log.entries(EXPIRATION_WRITER):
                if entry.state is State.INFLIGHT:
                    self._wait_for_readers(entry)
        self.finish_due()

    def finish_due(self, now_ms: int | None = None) -> list[LogEntry]:
        """Delete the files of dropped partitions whose reader grace has passed; return those expirations."""
        now_ms = _now_ms() if now_ms is None else now_ms
        done = []
        for entry in self.log.entries(EXPIRATION_WRITER):
            if entry.state is State.INFLIGHT and entry.batch_time_ms + self._grace_ms <= now_ms:
                self._delete(entry)
                done.append(entry)
        return done

    def check(self, now_ms: int | None = None) -> None:
        """What a running insert calls at each tick: expire when the check interval has passed since the last
        check, and delete the files of expirations whose grace has passed."""
        now_ms = _now_ms() if now_ms is None else now_ms
        if now_ms - self._last_check_ms >= self.check_interval // timedelta(milliseconds=1):
            self._last_check_ms = now_ms
            self.expire(now_ms, wait=False)
        self.finish_due(now_ms)

    @property
    def _grace_ms(self) -> int:
        return self.reader_grace // timedelta(milliseconds=1)

    def _drop(self, entry: LogEntry) -> None:
        ident = self.table.identifier
        for path, values in entry.partitions.items():
            self.metastore.drop_partition(ident.database, ident.name, values)
            self.metastore.drop_partition(ident.database, ident.name, done_values(values))
            log.info("%s: partition %s expired: dropped from the metastore", ident, path)
        entry.batch_time_ms = _now_ms()  # the reader grace counts from here
        self.log.transition(entry, State.INFLIGHT)
        fault_point("after-expiry-drop", entry.batch)

    def _wait_for_readers(self, entry: LogEntry) -> None:
        left = (entry.batch_time_ms + self._grace_ms - _now_ms()) / 1000
        if left > 0:
            log.info("%s: %g s for queries reading expired partitions' files", self.table.identifier, left)
            time.sleep(left)

    def _delete(self, entry: LogEntry) -> None:
        ident = self.table.identifier
        listed = self.metastore.get_partitions_by_names(ident.database, ident.name, list(entry.partitions))
        back = {tuple(p.values) for p in listed}
        deleted = []
        for path, values in entry.partitions.items():
            location = entry.merged_from.get(path, [join(self.path, path)])[0]
            if tuple(values) in back:
                log.warning("%s: expired partition %s was committed again meanwhile; its files stay", ident, path)
                continue
            for uri in entry.replaced_files:
                if uri.startswith(location + "/"):
                    self.fs.delete_file(uri)
            if not data_files(self.fs, location):
                self.fs.delete_dir(location)
            self.fs.delete_dir(location + ".done")
            self.fs.delete_file(join(self.path, REPORTED_DIR, path + ".json"))
            deleted.append(path)
        entry.committed_partitions = deleted
        self.log.transition(entry, State.COMPLETED)
        self.log.expire(EXPIRATION_WRITER, self.retained, archive=self.archive)
        log.info("%s: %d expired partition(s) deleted: %s", ident, len(deleted), ", ".join(deleted[:5]))


class _NameTimes:
    """Partition name -> partition time (epoch ms, or None when it cannot be extracted), shared by the expirers
    of one process whose tables extract times alike: a name's time depends only on the name, the
    ``partition.time-extractor.*`` options (a custom extractor must be deterministic) and the time zone, so it
    is parsed once per process, not at every scan. Bounded: past :data:`_NAME_TIMES_BOUND` names it starts
    afresh."""

    _shared: ClassVar[dict[tuple[object, ...], _NameTimes]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._times: dict[str, int | None] = {}

    @classmethod
    def of(cls, table: TableDefinition, options: Options) -> _NameTimes:
        """The shared times of the tables that extract partition times as ``table`` does."""
        key = (
            tuple(table.partition_keys),
            options.get(fso.TIME_EXTRACTOR_KIND),
            options.get(fso.TIME_EXTRACTOR_CLASS),
            options.get(fso.TIME_EXTRACTOR_PATTERN),
            options.get(fso.TIME_EXTRACTOR_FORMATTER),
            options.get(fso.WATERMARK_TIME_ZONE),
        )
        with cls._lock:
            return cls._shared.setdefault(key, cls())

    def __contains__(self, name: str) -> bool:
        return name in self._times

    def __getitem__(self, name: str) -> int | None:
        return self._times[name]

    def remember(self, name: str, since: int | None) -> None:
        if len(self._times) >= _NAME_TIMES_BOUND:
            self._times = {}
        self._times[name] = since


def _now_ms() -> int:
    return int(time.time() * 1000)
