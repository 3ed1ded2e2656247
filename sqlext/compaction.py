"""Compaction: merge a partition's small files into files near a target size, without any reader of
the HMS ever seeing a row twice or missing one.

Three callers share it: ``auto-compaction`` (the sink compacts a partition right before committing
it), :class:`MergingCommitPolicy` (a commit policy, seed 002's merging policy), and ``sqlext compact``
(committed partitions of an existing table, on demand).

One compaction rewrites one partition directory ``L``. It is recorded in the table's commit log under
the writer name ``_compaction`` (``sqlext commits`` lists it), and goes through these steps:

1. **plan** — the data files of ``L`` smaller than the target are grouped, in name order, into groups
   of at most the target size (files of one group share schema and encoding); recorded ``requested``;
2. **merge** — each group becomes one file in a hidden work dir ``<table>/_sqlext/compaction/<id>/``,
   holding the rows of the group's files in file order and, within a file, in the file's order. When
   the partition is in the HMS, the files left alone are copied there too, so that the work dir holds
   the whole compacted partition. Recorded ``inflight``;
3. **switch** (partition in the HMS) — the HMS partition's location becomes the work dir: one HMS call,
   so HMS readers move from the old set of files to the new one at once;
4. **swap** — the merged-away files leave ``L`` for a hidden trash dir, the merged files take their
   place in ``L``;
5. **switch back** (partition in the HMS) — the location is ``L`` again, with statistics of the files
   now there. Recorded ``completed`` with what replaced what; work dir and trash are removed.

A partition not yet in the HMS (auto-compaction before a first commit) is read by no HMS reader, so
steps 3 and 5 are skipped. A restart undoes a ``requested`` compaction (only its work dir exists) and
finishes an ``inflight`` one from step 3 (every step is idempotent); :meth:`Compactor.recover` does
it, and the sink and ``sqlext compact`` call it before they compact or commit.

What readers see: a query planned before a switch reads the files it listed; a query still reading
the old files of ``L`` when step 4 removes them fails with Spark's missing-file error and can be rerun.
No query returns a wrong count. Compacting a partition that another process is writing at the same
moment is not supported: rows it adds during the compaction stay invisible until the switch back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlext.connectors import filesystem_options as fso
from sqlext.errors import CommitError, PolicyError, ValidationError
from sqlext.faults import fault_point
from sqlext.fs import FileStatus, FileSystem, join, normalize
from sqlext.metastore.client import MetastoreClient
from sqlext.options import MEMORY_FORM, Options, parse_memory_size
from sqlext.sink.commitlog import CommitLog, LogEntry, PlannedFile, State
from sqlext.sink.escaping import parse_partition_path
from sqlext.sink.files import count_rows, data_files
from sqlext.sink.policies import PartitionCommitContext, PartitionCommitPolicy, file_statistics
from sqlext.table import TableDefinition

log = logging.getLogger("sqlext.compaction")

#: The writer name compactions are recorded under in a table's commit log.
COMPACTION_WRITER = "_compaction"
#: Formats whose files can be merged: columnar ones through pyarrow, line-oriented ones by concatenation.
MERGEABLE_FORMATS = ("parquet", "orc", "csv", "json")
WORK_DIR = "_sqlext/compaction"
TRASH_DIR = "_sqlext/trash/_compaction"


@dataclass(frozen=True)
class SourceFile:
    """A data file that may be merged: its status, row count and ``shape`` (files merge only with
    files of the same shape: same schema, timestamp encoding and compression)."""

    status: FileStatus
    rows: int | None
    shape: str


@dataclass(frozen=True)
class MergeGroup:
    """Files merged into one, in this order."""

    sources: tuple[SourceFile, ...]

    @property
    def size(self) -> int:
        return sum(source.status.size for source in self.sources)

    @property
    def rows(self) -> int | None:
        counts = [source.rows for source in self.sources]
        return None if None in counts else sum(c or 0 for c in counts)


def plan_groups(files: Sequence[SourceFile], target_size: int) -> list[MergeGroup]:
    """Group the files smaller than ``target_size``, in the given order, into groups of at most
    ``target_size`` bytes of files of one shape; groups of one file are left out (nothing to merge)."""
    groups: list[MergeGroup] = []
    current: list[SourceFile] = []

    def close() -> None:
        if len(current) > 1:
            groups.append(MergeGroup(tuple(current)))
        current.clear()

    for source in files:
        if source.status.size >= target_size:
            continue
        if current and (
            source.shape != current[0].shape or sum(f.status.size for f in current) + source.status.size > target_size
        ):
            close()
        current.append(source)
    close()
    return groups


# -- formats ---------------------------------------------------------------------------------------


def describe_file(fs: FileSystem, status: FileStatus, file_format: str) -> SourceFile:
    """Read what merging needs from a file's footer (columnar formats); line formats need nothing."""
    if file_format == "parquet":
        import pyarrow.parquet as pq

        with fs.open_input(status.uri) as handle:
            parquet = pq.ParquetFile(handle)
            return SourceFile(status, parquet.metadata.num_rows, _parquet_shape(parquet))
    if file_format == "orc":
        import pyarrow.orc as orc

        with fs.open_input(status.uri) as handle:
            orc_file = orc.ORCFile(handle)
            return SourceFile(status, orc_file.nrows, f"{orc_file.schema}|{orc_file.compression}")
    return SourceFile(status, None, "")


def _parquet_shape(parquet: Any) -> str:
    return f"{parquet.schema_arrow.remove_metadata()}|int96={_has_int96(parquet)}|{_parquet_codec(parquet)}"


def _has_int96(parquet: Any) -> bool:
    """Spark writes timestamps as INT96 (the encoding Hive's SerDe reads); pyarrow reads them as
    nanoseconds and would write INT64 unless told, so a rewrite keeps what the files have."""
    schema = parquet.schema
    return any(schema.column(i).physical_type == "INT96" for i in range(len(schema)))


def _parquet_codec(parquet: Any) -> str:
    metadata = parquet.metadata
    if metadata.num_row_groups and metadata.num_columns:
        codec = str(metadata.row_group(0).column(0).compression).lower()
        return "none" if codec == "uncompressed" else codec
    return "snappy"


def merge_files(fs: FileSystem, sources: Sequence[SourceFile], target: str, file_format: str) -> None:
    """Write the rows of ``sources`` (in order) into the new file ``target``, in the sources' format
    and encoding, reading one source at a time."""
    writers: dict[str, Callable[[FileSystem, Sequence[SourceFile], str], None]] = {
        "parquet": _merge_parquet,
        "orc": _merge_orc,
    }
    writers.get(file_format, _concatenate)(fs, sources, target)


def _merge_parquet(fs: FileSystem, sources: Sequence[SourceFile], target: str) -> None:
    import pyarrow.parquet as pq

    with fs.open_input(sources[0].status.uri) as handle:
        first = pq.ParquetFile(handle)
        schema, int96, codec = first.schema_arrow, _has_int96(first), _parquet_codec(first)
    with (
        fs.open_output(target) as out,
        pq.ParquetWriter(out, schema, compression=codec, use_deprecated_int96_timestamps=int96) as writer,
    ):
        for source in sources:
            with fs.open_input(source.status.uri) as handle:
                writer.write_table(pq.ParquetFile(handle).read())


def _merge_orc(fs: FileSystem, sources: Sequence[SourceFile], target: str) -> None:
    import pyarrow.orc as orc

    with fs.open_input(sources[0].status.uri) as handle:
        codec = str(orc.ORCFile(handle).compression).lower()
    with fs.open_output(target) as out:
        writer = orc.ORCWriter(out, compression="uncompressed" if codec == "none" else codec)
        for source in sources:
            with fs.open_input(source.status.uri) as handle:
                writer.write(orc.ORCFile(handle).read())
        writer.close()


def _concatenate(fs: FileSystem, sources: Sequence[SourceFile], target: str) -> None:
    """Line formats (csv without header, json lines): the merged file is the files one after another."""
    with fs.open_output(target) as out:
        for source in sources:
            data = fs.read_bytes(source.status.uri)
            out.write(data if not data or data.endswith(b"\n") else data + b"\n")


# -- the protocol ----------------------------------------------------------------------------------


class Compactor:
    """Compacts partitions of one table (see the module docstring for the protocol)."""

    def __init__(self, table: TableDefinition, metastore: MetastoreClient | None, target_size: int) -> None:
        options = Options(table.options)
        self.table = table
        self.format = str(options.require(fso.FORMAT))
        self.path = normalize(str(options.require(fso.PATH)))
        self.fs = FileSystem(self.path)
        self.log = CommitLog(self.fs, self.path)
        self.metastore = metastore
        self.target_size = target_size

    def compact(self, relative: str, values: Sequence[str]) -> LogEntry | None:
        """Compact one partition (``relative``: its ``k=v/...`` path); None when nothing needed merging."""
        check_mergeable(self.table, self.format)
        location, in_hms = self._location(relative)
        files = [describe_file(self.fs, status, self.format) for status in data_files(self.fs, location)]
        groups = plan_groups(files, self.target_size)
        if not groups:
            return None
        entry = self._plan(relative, values, location, groups, in_hms)
        self.log.write(entry)
        self._merge(entry, groups, files)
        self.log.transition(entry, State.INFLIGHT)
        fault_point("after-merge", entry.batch)
        self._finish(entry)
        return entry

    def recover(self) -> list[LogEntry]:
        """Undo compactions that did not get to ``inflight``, finish those that did; return the latter."""
        finished = []
        for entry in self.log.entries(COMPACTION_WRITER):
            if entry.state is State.REQUESTED:
                log.warning("compaction %d of %s did not finish merging; undoing it", entry.batch, self._where(entry))
                self.fs.delete_dir(self._work_dir(entry.batch))
                self.log.discard(entry)
            elif entry.state is State.INFLIGHT:
                log.warning("compaction %d of %s was interrupted; finishing it", entry.batch, self._where(entry))
                self._finish(entry)
                finished.append(entry)
        return finished

    def _location(self, relative: str) -> tuple[str, bool]:
        """Where the partition's files are: its HMS location when the HMS has it, else the usual path."""
        if self.metastore is not None:
            ident = self.table.identifier
            found = self.metastore.get_partitions_by_names(ident.database, ident.name, [relative])
            if found:
                return normalize(found[0].sd.location), True
        return join(self.path, relative), False

    def _plan(
        self, relative: str, values: Sequence[str], location: str, groups: Sequence[MergeGroup], in_hms: bool
    ) -> LogEntry:
        compaction_id = time.time_ns() // 1000
        work = join(self._work_dir(compaction_id), relative)
        outputs, merged_from = [], {}
        for index, group in enumerate(groups):
            name = _merged_name(compaction_id, index, group.sources[0].status.relative)
            final = join(location, name)
            outputs.append(PlannedFile(join(work, name), final, relative, group.size, group.rows))
            merged_from[final] = [source.status.uri for source in group.sources]
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

    def _finish(self, entry: LogEntry) -> None:
        relative = next(iter(entry.partitions))
        location = entry.files[0].final.rsplit("/", 1)[0]
        if entry.view is not None:
            self._relocate(relative, entry.view)
            fault_point("after-switch", entry.batch)
        self._swap(entry)
        if entry.view is not None:
            self._relocate(relative, location)
        entry.committed_partitions = [relative]
        self.log.transition(entry, State.COMPLETED)
        self.fs.delete_dir(self._work_dir(entry.batch))
        self.fs.delete_dir(join(self.path, TRASH_DIR, f"{entry.batch:020d}"))
        log.info(
            "compaction %d of %s: %d files merged into %d (%s rows) in %s",
            entry.batch,
            self._where(entry),
            len(entry.replaced_files),
            len(entry.files),
            entry.rows,
            location,
        )

    def _swap(self, entry: LogEntry) -> None:
        """Merged-away files to the trash, then merged files into place; each move is skipped when a
        previous run already made it."""
        relative = next(iter(entry.partitions))
        trash = join(self.path, TRASH_DIR, f"{entry.batch:020d}", relative)
        for source in entry.replaced_files:
            if self.fs.exists(source):
                self.fs.move(source, join(trash, source.rsplit("/", 1)[1]))
        fault_point("mid-swap", entry.batch)
        place = self.fs.copy if entry.view is not None else self.fs.move
        for planned in entry.files:
            if not self.fs.exists(planned.final):
                place(planned.staged, planned.final)

    def _relocate(self, relative: str, location: str) -> None:
        """Point the HMS partition at ``location``, with statistics of the files there."""
        assert self.metastore is not None
        ident = self.table.identifier
        found = self.metastore.get_partitions_by_names(ident.database, ident.name, [relative])
        if not found:
            raise CommitError(f"Partition {relative} of {ident} left the metastore during its compaction.")
        partition = found[0]
        files = data_files(self.fs, location)
        counts = [count_rows(self.fs, status, self.format) for status in files]
        rows = None if None in counts else sum(c or 0 for c in counts)
        partition.sd.location = location
        partition.parameters = {**(partition.parameters or {}), **file_statistics(files, rows)}
        self.metastore.alter_partitions(ident.database, ident.name, [partition])

    def _work_dir(self, compaction_id: int) -> str:
        return join(self.path, WORK_DIR, f"{compaction_id:020d}")

    def _where(self, entry: LogEntry) -> str:
        return f"{self.table.identifier} partition {next(iter(entry.partitions), '')}"


def _merged_name(compaction_id: int, index: int, first_source: str) -> str:
    """``compacted-<id>-<n>`` with the first source's suffix (``.c000.snappy.parquet``), so tools that
    go by extension still recognise the file."""
    name = first_source.rsplit("/", 1)[-1]
    suffix = name[name.find(".") :] if "." in name else ""
    return f"compacted-{compaction_id}-{index:05d}{suffix}"


def check_mergeable(table: TableDefinition, file_format: str) -> None:
    """Refuse formats whose files cannot be merged safely."""
    if file_format not in MERGEABLE_FORMATS:
        raise ValidationError(
            f"Table {table.identifier}: files of format '{file_format}' cannot be compacted; "
            f"compaction supports {', '.join(MERGEABLE_FORMATS)}.",
            option=fso.AUTO_COMPACTION.key,
            value=file_format,
        )
    if file_format == "csv" and str(table.options.get("csv.header", "false")).lower() == "true":
        raise ValidationError(
            f"Table {table.identifier}: csv files with a header line cannot be compacted by concatenation.",
            option="csv.header",
            value="true",
        )


def target_size_of(table: TableDefinition) -> int:
    """The table's ``compaction.file-size``, or its rolling file size."""
    options = Options(table.options)
    return int(options.get(fso.COMPACTION_FILE_SIZE) or options.get(fso.ROLLING_FILE_SIZE))


# -- the merging commit policy ----------------------------------------------------------------------


class MergingCommitPolicy(PartitionCommitPolicy):
    """A commit policy that compacts each partition it commits (seed 002's merging policy, safely).

    Use it through ``'sink.partition-commit.policy.kind' = 'metastore,custom'``,
    ``'sink.partition-commit.policy.class' = 'sqlext.compaction.MergingCommitPolicy'`` and optionally
    ``'sink.partition-commit.policy.class.parameters' = '256MB'`` (the target size; default the table's
    ``compaction.file-size`` or rolling file size). Placed after ``metastore`` it compacts a registered
    partition and updates its HMS statistics; placed before, the ``metastore`` policy that follows
    registers the compacted files.
    """

    def __init__(self, target_size: str | None = None) -> None:
        try:
            self.target_size = parse_memory_size(target_size) if target_size else None
        except ValueError as exc:
            raise PolicyError(
                f"MergingCommitPolicy: target size '{target_size}' is not {MEMORY_FORM}.",
                option=fso.COMMIT_POLICY_CLASS_PARAMETERS.key,
                value=target_size,
            ) from exc

    def commit(self, context: PartitionCommitContext) -> None:
        compactor = Compactor(context.table, context.metastore, self.target_size or target_size_of(context.table))
        compactor.recover()
        if compactor.compact(context.relative_path, context.values) is not None:
            context.files = data_files(context.fs, context.path)
            counts = [count_rows(context.fs, status, compactor.format) for status in context.files]
            context.row_count = None if None in counts else sum(c or 0 for c in counts)


# -- sqlext compact --------------------------------------------------------------------------------


def matching_partitions(names: Iterable[str], keys: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The HMS partition names matching ``k=v`` filters (several values of one key: any of them)."""
    accepted: dict[str, set[str]] = {}
    for item in wanted:
        key, sep, value = item.partition("=")
        if not sep or key not in keys:
            raise ValidationError(
                f"--partition '{item}': expected <key>=<value> with a partition key of the table ({', '.join(keys)})."
            )
        accepted.setdefault(key, set()).add(value)
    chosen = []
    for name in names:
        spec = dict(zip(keys, parse_partition_path(name, keys), strict=True))
        if all(spec[key] in values for key, values in accepted.items()):
            chosen.append(name)
    return chosen


@dataclass
class CompactionSummary:
    """What one ``sqlext compact`` run did."""

    partitions: int = 0
    compacted: int = 0
    files_before: int = 0
    files_after: int = 0

    def add(self, entry: LogEntry | None) -> None:
        self.partitions += 1
        if entry is not None:
            self.compacted += 1
            self.files_before += len(entry.replaced_files)
            self.files_after += len(entry.files)


def compact_table(
    table: TableDefinition,
    metastore: MetastoreClient,
    partition_filters: Sequence[str] = (),
    target_size: int | None = None,
    show_progress: bool = True,
) -> CompactionSummary:
    """Compact the committed partitions of ``table`` (those the HMS lists, narrowed by ``k=v``
    filters), first finishing any compaction a crash interrupted."""
    from tqdm import tqdm

    compactor = Compactor(table, metastore, target_size or target_size_of(table))
    check_mergeable(table, compactor.format)
    compactor.recover()
    ident = table.identifier
    names = matching_partitions(
        metastore.get_partition_names(ident.database, ident.name), table.partition_keys, partition_filters
    )
    summary = CompactionSummary()
    with tqdm(names, desc=f"compacting {ident}", unit="partition", disable=not show_progress) as progress:
        for name in progress:
            summary.add(compactor.compact(name, parse_partition_path(name, table.partition_keys)))
            progress.set_postfix(files=f"{summary.files_before}->{summary.files_after}")
    return summary
