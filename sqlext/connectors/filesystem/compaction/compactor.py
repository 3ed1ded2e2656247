"""Compaction: merge a partition's small files into files near a target size, without any reader of
the HMS ever seeing a row twice or missing one.

Three callers share it: ``auto-compaction`` (the sink compacts a partition right before its first
commit), :class:`MergingCommitPolicy` (a commit policy, seed 002's merging policy), and ``sqlext compact``
(committed partitions of an existing table, on demand).

One compaction rewrites one partition directory ``L``. It is recorded in the table's commit log under
the writer name ``_compaction`` (``sqlext commits`` lists it), and goes through these steps:

1. **plan** — the data files of ``L`` smaller than the target are grouped, in name order, into groups
   of at most the target size (files of one group share schema and encoding); recorded ``requested``;
2. **merge** — each group becomes one file in a hidden work dir ``<table>/_sqlext/compaction/<id>/``,
   holding the rows of the group's files in file order and, within a file, in the file's order. When
   the partition is in the HMS, the files left alone are copied there too, so that the work dir holds
   the whole compacted partition. Recorded ``inflight``, with each merged file's size as written;
3. **switch** (partition in the HMS) — the HMS partition's location becomes the work dir: one HMS call,
   so HMS readers move from the old set of files to the new one at once; then the reader grace passes,
   for queries that listed the old files to read them;
4. **swap** — the merged-away files are deleted from ``L`` (the log entry lists them), then the merged
   files take their place in ``L``: ``L`` never holds a merged file beside a file it replaced. No file is
   moved aside first: on an object store that would be a server-side copy of each, for files nothing reads
   again; the rows of the deleted files are in the merged files, whole in the work dir since ``inflight``;
5. **switch back** (partition in the HMS) — the location is ``L`` again, with statistics of the files
   now there. Recorded ``completed`` with what replaced what; the work dir is removed once the
   reader grace has passed again (by a later compaction or recovery, or at the end of ``sqlext compact``).

A partition not yet in the HMS (auto-compaction before a first commit) is read by no HMS reader, so
steps 3 and 5 are skipped. A restart undoes a ``requested`` compaction (only its work dir exists) and
finishes an ``inflight`` one from step 3 (every step is idempotent: the swap deletes the listed files
still there, then places the merged files not yet in ``L``); :meth:`Compactor.recover` does it, and the
sink and ``sqlext compact`` call it before they compact or commit.

What readers see: a query planned before a switch reads the files it listed; one still reading them
after the grace fails with Spark's missing-file error and can be rerun. No query returns a wrong
count. Compacting a partition that another process is writing at the same moment is not supported:
rows it adds during the compaction stay invisible until the switch back.

The files are described and rewritten by :mod:`.compaction_merge`, grouped by :mod:`.compaction_plan`;
``sqlext compact`` runs through :mod:`.compact_command`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import TypeVar

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.commit_log_archive import table_archive
from sqlext.connectors.filesystem.compaction.merge import (
    FilesNotMergeable,
    SourceFile,
    check_mergeable,
    describe_file,
    merge_files,
)
from sqlext.connectors.filesystem.compaction.plan import MergeGroup, plan_groups, target_size_of
from sqlext.connectors.filesystem.escaping import partition_path
from sqlext.connectors.filesystem.files import count_all_rows, data_files
from sqlext.connectors.filesystem.policies import PartitionCommitContext, PartitionCommitPolicy, file_statistics
from sqlext.errors import CommitError, PolicyError
from sqlext.faults import fault_point
from sqlext.io.fs import FileSystem, join, normalize
from sqlext.options import DURATION_FORM, MEMORY_FORM, Options, parse_duration, parse_memory_size
from sqlext.table import TableDefinition

log = logging.getLogger("sqlext.connectors.filesystem.compaction.compactor")
T = TypeVar("T")

#: The writer name compactions are recorded under in a table's commit log.
COMPACTION_WRITER = "_compaction"
WORK_DIR = "_sqlext/compaction"
#: How long queries that listed a partition's old files may go on reading them (see :class:`Compactor`).
DEFAULT_READER_GRACE = timedelta(seconds=10)
#: Where earlier versions moved merged-away files before deleting them; a restart removes what they left.
LEGACY_TRASH_DIR = "_sqlext/trash/_compaction"


# -- the protocol ----------------------------------------------------------------------------------


class Compactor:
    """Compacts partitions of one table (see the module docstring for the protocol).

    ``reader_grace`` is how long queries that listed a partition's old files get to finish reading
    them: the swap waits that long after the switch, and a work dir readers may have listed is
    removed only that long after its compaction completed (by a later compaction or recovery).
    """

    def __init__(
        self,
        table: TableDefinition,
        metastore: MetastoreClient | None,
        target_size: int,
        reader_grace: timedelta = DEFAULT_READER_GRACE,
    ) -> None:
        options = Options(table.options)
        self.table = table
        self.format = str(options.require(fso.FORMAT))
        self.path = normalize(str(options.require(fso.PATH)))
        self.fs = FileSystem(self.path)
        self.log = CommitLog(self.fs, self.path)
        self.metastore = metastore
        self.target_size = target_size
        self.reader_grace = reader_grace
        self.retained_entries = int(options.get(fso.COMMIT_LOG_RETAINED_BATCHES))
        self.archive = table_archive(self.fs, self.path, int(options.get(fso.COMMIT_LOG_ARCHIVE_RETAINED_BATCHES)))

    def compact(self, partitions: Iterable[tuple[str, Sequence[str]]], registered: bool = True) -> list[LogEntry]:
        """Compact partitions given as (``k=v/...`` path, values); return the compactions done.

        ``registered=False`` leaves alone the partitions the HMS already has (auto-compaction: only
        partitions no reader sees yet, so the sink never waits for readers)."""
        check_mergeable(self.table, self.format)
        partitions = list(partitions)
        locations = self._locations([relative for relative, _ in partitions])
        entries = []
        for relative, values in partitions:
            entry = self._prepare(relative, values, locations[relative], registered)
            if entry is not None:
                entries.append(entry)
        self._finish(entries)
        return entries

    def recover(self) -> list[LogEntry]:
        """Undo compactions that did not get to ``inflight``, finish those that did (return them), and
        remove work dirs whose grace has passed."""
        interrupted = []
        for entry in self.log.entries(COMPACTION_WRITER):
            if entry.state is State.REQUESTED:
                log.warning("compaction %d of %s did not finish merging; undoing it", entry.batch, self._where(entry))
                self.fs.delete_dir(self._work_dir(entry.batch))
                self.log.discard(entry)
            elif entry.state is State.INFLIGHT:
                log.warning("compaction %d of %s was interrupted; finishing it", entry.batch, self._where(entry))
                interrupted.append(entry)
        self._finish(interrupted)
        for entry in interrupted:  # one interrupted by an earlier version may have moved files there
            self.fs.delete_dir(self._legacy_trash_dir(entry.batch))
        self.remove_expired()
        return interrupted

    def remove_expired(self, now_ms: int | None = None) -> None:
        """Remove the work dirs of completed compactions older than the reader grace, and the log entries
        of those beyond the table's retained count."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        grace_ms = self.reader_grace.total_seconds() * 1000
        in_grace: set[int] = set()
        for entry in self.log.entries(COMPACTION_WRITER):
            if entry.state is State.COMPLETED and entry.batch_time_ms + grace_ms <= now_ms:
                self._remove_work(entry)
            elif entry.state is State.COMPLETED:
                in_grace.add(entry.batch)
        self.log.expire(COMPACTION_WRITER, self.retained_entries, keep=in_grace.__contains__, archive=self.archive)

    def _prepare(
        self, relative: str, values: Sequence[str], where: tuple[str, bool], registered: bool
    ) -> LogEntry | None:
        """Steps 1-2: plan, merge into the work dir, record ``inflight``."""
        location, in_hms = where
        if in_hms and not registered:
            return None
        files = [describe_file(self.fs, status, self.format) for status in data_files(self.fs, location)]
        groups = plan_groups(files, self.target_size)
        if not groups:
            return None
        entry = self._plan(relative, values, location, groups, in_hms)
        self.log.write(entry)
        try:
            self._merge(entry, groups, files)
        except FilesNotMergeable as exc:
            log.warning("%s is left as it is: its files cannot be merged without changing a value (%s)", location, exc)
            self.fs.delete_dir(self._work_dir(entry.batch))
            self.log.discard(entry)
            return None
        self._record_written_sizes(entry)
        self.log.transition(entry, State.INFLIGHT)
        fault_point("after-merge", entry.batch)
        return entry

    def _finish(self, entries: Sequence[LogEntry]) -> None:
        """Steps 3-5 for every entry, each phase for all entries at once so one grace covers them all."""
        switched = [entry for entry in entries if entry.view is not None]
        self._relocate({next(iter(entry.partitions)): str(entry.view) for entry in switched})
        if switched:
            fault_point("after-switch")
            self.wait_for_readers(len(switched))
        for entry in entries:
            self._swap(entry)
        self._relocate({next(iter(entry.partitions)): self._location_of(entry) for entry in switched})
        for entry in entries:
            entry.committed_partitions = list(entry.partitions)
            entry.batch_time_ms = int(time.time() * 1000)  # completion time: the work dir's grace starts
            self.log.transition(entry, State.COMPLETED)
            if entry.view is None or self.reader_grace.total_seconds() <= 0:
                self._remove_work(entry)  # no reader was pointed at it, or none is waited for
            log.info(
                "compaction %d of %s: %d files merged into %d (%s rows) in %s",
                entry.batch,
                self._where(entry),
                len(entry.replaced_files),
                len(entry.files),
                entry.rows,
                self._location_of(entry),
            )

    def wait_for_readers(self, partitions: int) -> None:
        """Give queries that listed the old files of ``partitions`` partitions the reader grace."""
        seconds = self.reader_grace.total_seconds()
        if seconds > 0:
            log.info(
                "%s: %d partition(s) switched; %g s for queries reading their old files",
                self.table.identifier,
                partitions,
                seconds,
            )
            time.sleep(seconds)

    def _locations(self, relatives: Sequence[str]) -> dict[str, tuple[str, bool]]:
        """Where each partition's files are, and whether the HMS has it: its HMS location when it does,
        else the usual path. One HMS call for all."""
        found = {}
        if self.metastore is not None and relatives:
            ident = self.table.identifier
            for partition in self.metastore.get_partitions_by_names(ident.database, ident.name, list(relatives)):
                found[self._relative(partition.values)] = normalize(partition.sd.location)
        return {
            relative: (found[relative], True) if relative in found else (join(self.path, relative), False)
            for relative in relatives
        }

    def _relative(self, values: Sequence[str]) -> str:
        return partition_path(self.table.partition_keys, values, "")

    @staticmethod
    def _location_of(entry: LogEntry) -> str:
        return entry.files[0].final.rsplit("/", 1)[0]

    def _plan(
        self, relative: str, values: Sequence[str], location: str, groups: Sequence[MergeGroup], in_hms: bool
    ) -> LogEntry:
        compaction_id = time.time_ns() // 1000
        work = join(self._work_dir(compaction_id), relative)
        outputs, merged_from, merged_rows = [], {}, {}
        for index, group in enumerate(groups):
            name = _merged_name(compaction_id, index, group.sources[0].status.relative)
            final = join(location, name)
            outputs.append(PlannedFile(join(work, name), final, relative, group.size, group.rows))
            merged_from[final] = [source.status.uri for source in group.sources]
            merged_rows.update({s.status.uri: s.rows for s in group.sources if s.rows is not None})
        return LogEntry(
            query=COMPACTION_WRITER,
            batch=compaction_id,
            state=State.REQUESTED,
            files=outputs,
            partitions={relative: list(values)},
            batch_time_ms=compaction_id // 1000,
            replaced_files=[uri for sources in merged_from.values() for uri in sources],
            operation="compact",
            merged_from=merged_from,
            merged_rows=merged_rows,
            view=work if in_hms else None,
        )

    def _merge(self, entry: LogEntry, groups: Sequence[MergeGroup], files: Sequence[SourceFile]) -> None:
        for planned, group in zip(entry.files, groups, strict=True):
            merge_files(self.fs, group.sources, planned.staged, self.format)
        if entry.view is not None:
            merged = set(entry.replaced_files)
            for source in files:
                if source.status.uri not in merged:
                    self.fs.copy(source.status.uri, join(entry.view, source.status.relative))

    def _record_written_sizes(self, entry: LogEntry) -> None:
        """Replace each merged file's planned size (its sources' total) by its size as written, before the entry
        is recorded ``inflight``: the log (and ``sqlext commits``) then gives the bytes on disk. One listing of
        the work dir; nothing on recovery goes by these sizes (a swap looks only for the files)."""
        directories = {planned.staged.rsplit("/", 1)[0] for planned in entry.files}
        written = {
            status.uri.rsplit("/", 1)[1]: status.size
            for directory in directories
            for status in self.fs.list_files(directory, recursive=False)
        }
        for planned in entry.files:
            planned.size = written[planned.staged.rsplit("/", 1)[1]]

    def _swap(self, entry: LogEntry) -> None:
        """Step 4: merged-away files deleted, then merged files into place; a file a previous run already
        deleted or placed is skipped. Deleting is safe: the entry is ``inflight``, so its merged files, which
        hold every row of the deleted ones, are whole in the work dir, and a restart places them."""
        for index, source in enumerate(entry.replaced_files):
            self.fs.delete_file(source)
            if index == 0:
                fault_point("mid-delete", entry.batch)
        fault_point("mid-swap", entry.batch)
        place = self.fs.copy if entry.view is not None else self.fs.move
        for planned in entry.files:
            if not self.fs.exists(planned.final):
                place(planned.staged, planned.final)

    def _relocate(self, locations: dict[str, str]) -> None:
        """Point HMS partitions (by ``k=v/...`` path) at new locations, with statistics of the files
        there; one read and one alter call for all."""
        if not locations:
            return
        assert self.metastore is not None
        ident = self.table.identifier
        partitions = self.metastore.get_partitions_by_names(ident.database, ident.name, list(locations))
        by_path = {self._relative(partition.values): partition for partition in partitions}
        for relative, location in locations.items():
            partition = by_path.get(relative)
            if partition is None:
                raise CommitError(f"Partition {relative} of {ident} left the metastore during its compaction.")
            files = data_files(self.fs, location)
            rows = count_all_rows(self.fs, files, self.format)
            partition.sd.location = location
            partition.parameters = {**(partition.parameters or {}), **file_statistics(files, rows)}
        self.metastore.alter_partitions(ident.database, ident.name, list(by_path.values()))

    def _remove_work(self, entry: LogEntry) -> None:
        self.fs.delete_dir(self._work_dir(entry.batch))

    def _work_dir(self, compaction_id: int) -> str:
        return join(self.path, WORK_DIR, f"{compaction_id:020d}")

    def _legacy_trash_dir(self, compaction_id: int) -> str:
        """Where earlier versions moved a compaction's merged-away files (nothing reads them)."""
        return join(self.path, LEGACY_TRASH_DIR, f"{compaction_id:020d}")

    def _where(self, entry: LogEntry) -> str:
        return f"{self.table.identifier} partition {next(iter(entry.partitions), '')}"


def _merged_name(compaction_id: int, index: int, first_source: str) -> str:
    """``compacted-<id>-<n>`` with the first source's suffix (``.c000.snappy.parquet``), so tools that
    go by extension still recognise the file."""
    name = first_source.rsplit("/", 1)[-1]
    suffix = name[name.find(".") :] if "." in name else ""
    return f"compacted-{compaction_id}-{index:05d}{suffix}"


# -- the merging commit policy ----------------------------------------------------------------------


class MergingCommitPolicy(PartitionCommitPolicy):
    """A commit policy that compacts each partition it commits (seed 002's merging policy, safely).

    Use it through ``'sink.partition-commit.policy.kind' = 'metastore,custom'``,
    ``'sink.partition-commit.policy.class' = 'sqlext.connectors.filesystem.MergingCommitPolicy'`` and optionally
    ``'sink.partition-commit.policy.class.parameters' = '256MB'`` (the target size; default the table's
    ``compaction.file-size`` or rolling file size). Placed after ``metastore`` it compacts a registered
    partition and updates its HMS statistics; placed before, the ``metastore`` policy that follows
    registers the compacted files.
    """

    def __init__(self, target_size: str | None = None, reader_grace: str | None = None) -> None:
        self.target_size = _policy_parameter(parse_memory_size, target_size, "target size", MEMORY_FORM)
        grace = _policy_parameter(parse_duration, reader_grace, "reader grace", DURATION_FORM)
        self.reader_grace = DEFAULT_READER_GRACE if grace is None else grace

    def commit_all(self, contexts: Sequence[PartitionCommitContext]) -> None:
        if not contexts:
            return
        first = contexts[0]
        target = self.target_size or target_size_of(first.table)
        compactor = Compactor(first.table, first.metastore, target, self.reader_grace)
        compactor.recover()
        compactor.compact([(context.relative_path, context.values) for context in contexts])
        for context in contexts:
            context.files = data_files(context.fs, context.path)
            context.row_count = count_all_rows(context.fs, context.files, compactor.format)


def _policy_parameter(parse: Callable[[str], T], text: str | None, what: str, form: str) -> T | None:
    if not text:
        return None
    try:
        return parse(text)
    except ValueError as exc:
        raise PolicyError(
            f"MergingCommitPolicy: {what} '{text}' is not {form}.",
            option=fso.COMMIT_POLICY_CLASS_PARAMETERS.key,
            value=text,
        ) from exc
