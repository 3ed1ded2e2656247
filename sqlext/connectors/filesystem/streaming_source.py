"""The streaming read of committed partitions (Flink's Hive streaming source, ``streaming-source.*``).

In a streaming query, a partitioned ``filesystem`` table with ``'streaming-source.enable' = 'true'`` is read
by a Spark streaming source (a Python data source, :class:`CommittedPartitionSource`) that emits the rows of
each partition once the partition is in the metastore: committed by sqlext's sink, or added by anything else
(``ALTER TABLE ... ADD PARTITION``, ``MSCK REPAIR``, Hive). How it goes:

- discovery asks the metastore for the table's partitions, at most once per
  ``streaming-source.monitor-interval`` (default 1 min) and once per micro-batch;
- each partition has an order key (``streaming-source.partition-order``): its name, its creation time in the
  metastore (the time it was committed), or the time extracted from its values. Partitions are read in that
  order from ``streaming-source.consume-start-offset``; as in Flink, a partition whose key is below the newest
  key read is skipped (it came too late for the order);
- the source's offset, kept by Spark in the query's checkpoint, says what has been read: the newest key, the
  partitions read at that key, and (``streaming-source.read-recommits``) the files read of every partition,
  with the metastore's statistics of the partition when they were read. The end offset of a micro-batch also
  lists the files that batch reads, so that a replayed batch reads exactly those again and a restarted query
  neither skips nor repeats a file;
- a partition read before whose statistics change in the metastore (a late-data re-commit alters the
  partition with new ``numFiles``/``totalSize``) is listed again, and the files not read before are read;
- files are read on the executors with pyarrow (parquet and orc); hidden files (``_``/``.``) and the
  success file are never read;
- progress: the end offset of a micro-batch also carries the commit time of the newest partition read so far
  and how far the source was behind the newest commit in the metastore when it planned the batch
  (:func:`batch_progress`); :class:`ProgressLogger` logs it once a batch, and the reader's
  ``reportLatestOffset`` shows the metastore side (:func:`latest_report`) in Spark's progress.

The pure parts (settings, order keys, :func:`next_offset`) need no Spark; :func:`read_stream` builds the
DataFrame.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.escaping import partition_path
from sqlext.errors import OptionError, PartitionTimeError, ValidationError
from sqlext.options import Options
from sqlext.table import TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlext.registry import SourceContext

log = logging.getLogger("sqlext.streaming_source")

FORMAT_NAME = "sqlext-committed-partitions"
DEFAULT_MONITOR_INTERVAL = timedelta(minutes=1)
OFFSET_VERSION = 1
_READABLE_FORMATS = ("parquet", "orc")
#: A path part of compaction's work dirs (``<table>/_sqlext/compaction/<id>/...``).
_SWITCHED = "/_sqlext/compaction/"
#: Partition parameters whose change means the partition was committed again.
_SIGNATURE_PARAMETERS = ("numFiles", "totalSize", "transient_lastDdlTime")

Key = int | str


@dataclass(frozen=True)
class StreamingSourceSettings:
    """The ``streaming-source.*`` options of a table, parsed and checked together."""

    enabled: bool
    include: str
    monitor_interval: timedelta
    order: str
    start_offset: str | None
    read_recommits: bool

    @classmethod
    def from_table(cls, table: TableDefinition) -> StreamingSourceSettings:
        """Read and check the options (a bad start offset is an :class:`OptionError` naming it)."""
        options = Options(table.options)
        order = options.get(fso.STREAMING_SOURCE_CONSUME_ORDER)
        if fso.STREAMING_SOURCE_PARTITION_ORDER.key in table.options or order is None:
            order = options.get(fso.STREAMING_SOURCE_PARTITION_ORDER)
        settings = cls(
            enabled=bool(options.get(fso.STREAMING_SOURCE_ENABLE)),
            include=options.get(fso.STREAMING_SOURCE_PARTITION_INCLUDE),
            monitor_interval=options.get(fso.STREAMING_SOURCE_MONITOR_INTERVAL) or DEFAULT_MONITOR_INTERVAL,
            order=order,
            start_offset=options.get(fso.STREAMING_SOURCE_CONSUME_START_OFFSET),
            read_recommits=bool(options.get(fso.STREAMING_SOURCE_READ_RECOMMITS)),
        )
        settings.start_key()
        return settings

    def start_key(self) -> Key:
        """The order key reading starts from (inclusive): Flink's defaults are ``""`` and 0."""
        if self.order == fso.ORDER_PARTITION_NAME:
            return self.start_offset or ""
        if self.start_offset is None:
            return 0
        return epoch_ms(_parse_offset_time(self.start_offset))


def _parse_offset_time(text: str) -> datetime:
    from sqlext.connectors.filesystem.extractor import DefaultPartitionTimeExtractor

    try:
        return DefaultPartitionTimeExtractor().extract(["offset"], [text])
    except PartitionTimeError:
        raise OptionError(
            f"Invalid value for option '{fso.STREAMING_SOURCE_CONSUME_START_OFFSET.key}': '{text}'. With "
            "'streaming-source.partition-order' 'create-time' or 'partition-time' it is a timestamp "
            "'yyyy-[m]m-[d]d [hh:mm:ss]', e.g. '2026-11-22 08:00:00'.",
            option=fso.STREAMING_SOURCE_CONSUME_START_OFFSET.key,
            value=text,
        ) from None


def epoch_ms(moment: datetime) -> int:
    """A local date-time as epoch milliseconds read as UTC (how Flink compares partition times)."""
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def is_streaming_source(table: TableDefinition) -> bool:
    """Whether a streaming query reads ``table`` as a stream of committed partitions."""
    return bool(Options(table.options).get(fso.STREAMING_SOURCE_ENABLE))


def check_readable(table: TableDefinition, settings: StreamingSourceSettings) -> None:
    """What the streaming source cannot read yet is refused before the query starts, naming it."""
    fmt = Options(table.options).require(fso.FORMAT)
    if settings.include != fso.INCLUDE_ALL:
        raise OptionError(
            f"Table {table.identifier}: 'streaming-source.partition.include' = '{settings.include}' is only "
            "for a temporal (lookup) join of the newest partition, as in Flink: JOIN "
            f"{table.identifier} FOR SYSTEM_TIME AS OF <stream>.<column AS PROCTIME()> ON ...; a streaming "
            "read of the table takes 'all'.",
            option=fso.STREAMING_SOURCE_PARTITION_INCLUDE.key,
            value=settings.include,
        )
    if not table.partition_keys:
        raise ValidationError(
            f"Table {table.identifier} is not partitioned: sqlext's streaming source reads committed partitions "
            "(Flink's also reads new files of an unpartitioned table; sqlext does not yet). Unset "
            "'streaming-source.enable', or set 'source.monitor-interval' to stream new files.",
            option=fso.STREAMING_SOURCE_ENABLE.key,
        )
    if fmt not in _READABLE_FORMATS:
        raise ValidationError(
            f"Table {table.identifier}: the streaming source reads {' and '.join(_READABLE_FORMATS)} files; "
            f"the table's format is '{fmt}'.",
            option=fso.FORMAT.key,
            value=fmt,
        )
    metadata = [column.name for column in table.columns if column.metadata_key]
    if metadata:
        raise ValidationError(
            f"Table {table.identifier}: the streaming source does not fill metadata columns yet "
            f"({', '.join(metadata)}).",
            option=fso.STREAMING_SOURCE_ENABLE.key,
        )


@dataclass(frozen=True)
class PartitionSnapshot:
    """One partition as the metastore shows it now."""

    name: str
    values: tuple[str, ...]
    location: str
    create_time_ms: int
    signature: str
    #: When it was last committed (added or altered) in the metastore; 0 when only the creation is known.
    altered_ms: int = 0

    @property
    def commit_ms(self) -> int:
        """The time of its newest commit: its creation, or its last re-commit (late data, compaction)."""
        return max(self.create_time_ms, self.altered_ms)


def order_key(
    partition: PartitionSnapshot, order: str, extract: Callable[[Sequence[str]], datetime] | None = None
) -> Key:
    """The partition's place in ``streaming-source.partition-order``."""
    if order == fso.ORDER_PARTITION_NAME:
        return partition.name
    if order == fso.ORDER_CREATE_TIME:
        return partition.create_time_ms
    assert extract is not None, "partition-time needs an extractor"
    return epoch_ms(extract(partition.values))


@dataclass(frozen=True)
class FileToRead:
    """One data file a micro-batch reads, with its partition."""

    uri: str
    partition: str
    values: tuple[str, ...]


def next_offset(
    start: Mapping[str, Any],
    partitions: Sequence[PartitionSnapshot],
    settings: StreamingSourceSettings,
    key_of: Callable[[PartitionSnapshot], Key],
    list_files: Callable[[PartitionSnapshot], list[str]],
    merged_of: Callable[[PartitionSnapshot], Mapping[str, list[str]]] | None = None,
) -> dict[str, Any]:
    """The end offset of the next micro-batch: ``start`` itself when nothing is new, else an offset whose
    ``batch`` lists the files to read (new partitions in order, then new files of re-committed ones).

    ``merged_of`` says, for a partition, which files compaction merged into which (file names); a merged file
    whose every source was read is taken as read. A partition whose location is a compaction's work dir
    (``sqlext compact`` switching its files) is left for a later poll."""
    _check_order(start, settings)
    key: Any = start["key"]  # all of one type: the order's (checked above)
    seen = set(start.get("seen", []))
    read_ms: int | None = start.get("commit_ms")
    read: dict[str, dict[str, Any]] = {name: dict(entry) for name, entry in start.get("read", {}).items()}
    batch: list[dict[str, Any]] = []
    batch_ms: list[int] = []
    keyed: list[tuple[Any, PartitionSnapshot]] = [(key_of(p), p) for p in partitions]
    keyed.sort(key=lambda pair: (pair[0], pair[1].name))
    newest, newest_names = key, set(seen)
    for partition_key, partition in keyed:
        if is_switched(partition):
            continue  # files being swapped by compaction: the switch back is the commit to read
        if partition.name in read:
            if settings.read_recommits and read[partition.name]["sig"] != partition.signature:
                done = set(read[partition.name]["files"])
                listed = list_files(partition)
                added = [name for name in listed if name not in done]
                if added and merged_of is not None:
                    added = _not_merged_from_read(partition, added, done, merged_of(partition))
                read[partition.name] = {"sig": partition.signature, "files": sorted(done | set(listed))}
                if added:
                    batch.append(_batch_entry(partition, added))
                    batch_ms.append(partition.commit_ms)
            continue
        if partition_key < key or (partition_key == key and partition.name in seen):
            continue  # read already, or too late for the order (as in Flink)
        files = list_files(partition)
        batch.append(_batch_entry(partition, files))
        batch_ms.append(partition.commit_ms)
        if settings.read_recommits:
            read[partition.name] = {"sig": partition.signature, "files": files}
        if partition_key > newest:
            newest, newest_names = partition_key, set()
        if partition_key == newest:
            newest_names.add(partition.name)
    if not batch and newest == key and newest_names == seen and read == start.get("read", {}):
        return dict(start)
    offset: dict[str, Any] = {
        "v": OFFSET_VERSION,
        "order": settings.order,
        "key": newest,
        "seen": sorted(newest_names),
        "batch": batch,
    }
    if settings.read_recommits:
        offset["read"] = read
    if batch_ms:
        newest_commit = max(p.commit_ms for p in partitions)
        # Behind since the newest commit read before; a first batch is behind since the oldest it reads.
        behind_since = read_ms if read_ms is not None else min(batch_ms)
        offset["lag_ms"] = max(0, newest_commit - behind_since)
        read_ms = max(batch_ms if read_ms is None else [read_ms, *batch_ms])
    if read_ms is not None:
        offset["commit_ms"] = read_ms
    return offset


def is_switched(partition: PartitionSnapshot) -> bool:
    """Whether the partition's location is a compaction's work dir (its files are being swapped)."""
    return _SWITCHED in partition.location


@dataclass(frozen=True)
class BatchProgress:
    """What one micro-batch of the source read, and how far behind the newest commit it was."""

    partitions: tuple[str, ...]
    files: int
    #: The newest commit in the metastore minus the newest commit read before this batch, when it was planned.
    lag_ms: int

    def describe(self) -> str:
        """One line for the log."""
        shown = ", ".join(self.partitions[:5]) + (", ..." if len(self.partitions) > 5 else "")
        return (
            f"read {len(self.partitions)} partition(s) [{shown}], {self.files} file(s); "
            f"{self.lag_ms / 1000:.1f} s behind the newest commit when planned"
        )


def batch_progress(end: Mapping[str, Any]) -> BatchProgress | None:
    """The progress of the micro-batch that ends at ``end`` (None for an offset that reads nothing, or one
    that is not this source's)."""
    if not isinstance(end, Mapping) or end.get("v") != OFFSET_VERSION or not end.get("batch"):
        return None
    partitions = tuple(dict.fromkeys(entry["p"] for entry in end["batch"]))
    files = sum(len(entry["files"]) for entry in end["batch"])
    return BatchProgress(partitions, files, int(end.get("lag_ms", 0)))


def latest_report(latest: Mapping[str, Any], partitions: Sequence[PartitionSnapshot]) -> dict[str, Any]:
    """What the metastore held at the newest poll, against the newest planned offset ``latest``: Spark shows
    it as the source's ``latestOffset`` in the query's progress. Commits newer than the newest commit read are
    unread; the lag is the newest commit's time minus the newest read one's (the oldest unread one's when
    nothing was read)."""
    read_ms = latest.get("commit_ms")
    unread = [p.commit_ms for p in partitions if read_ms is None or p.commit_ms > read_ms]
    newest = max((p.commit_ms for p in partitions), default=0)
    lag = max(unread) - (min(unread) if read_ms is None else read_ms) if unread else 0
    return {"partitions": len(partitions), "newest_commit_ms": newest, "lag_ms": lag, "unread_commits": len(unread)}


def _not_merged_from_read(
    partition: PartitionSnapshot, added: list[str], done: set[str], merged: Mapping[str, list[str]]
) -> list[str]:
    """The new files that are not compaction's merges of files already read. A merge of files some of which
    were not read is read whole (its read rows again, rather than lose the others), with a warning."""
    unread = []
    for name in added:
        sources = set(merged.get(name, ()))
        if sources and sources <= done:
            continue
        if sources & done:
            log.warning(
                "%s: %s merges files read already and files not read yet (%s); it is read whole, so the rows of "
                "the files read already are read again",
                partition.name,
                name,
                ", ".join(sorted(sources - done)),
            )
        unread.append(name)
    return unread


def initial_offset(settings: StreamingSourceSettings) -> dict[str, Any]:
    """Where a new query starts: the start key, nothing read."""
    offset: dict[str, Any] = {
        "v": OFFSET_VERSION,
        "order": settings.order,
        "key": settings.start_key(),
        "seen": [],
        "batch": [],
    }
    if settings.read_recommits:
        offset["read"] = {}
    return offset


def files_to_read(end: Mapping[str, Any]) -> list[FileToRead]:
    """The files of the micro-batch that ends at ``end``, in order."""
    return [
        FileToRead(_child(entry["loc"], name), entry["p"], tuple(entry["values"]))
        for entry in end.get("batch", [])
        for name in entry["files"]
    ]


def _batch_entry(partition: PartitionSnapshot, files: list[str]) -> dict[str, Any]:
    return {"p": partition.name, "values": list(partition.values), "loc": partition.location, "files": files}


def _child(location: str, name: str) -> str:
    return f"{location.rstrip('/')}/{name}"


def _check_order(start: Mapping[str, Any], settings: StreamingSourceSettings) -> None:
    if start.get("order") != settings.order:
        raise OptionError(
            f"The checkpoint of this streaming read was taken with 'streaming-source.partition-order' = "
            f"'{start.get('order')}'; the table now says '{settings.order}'. Set it back, or start the query "
            "afresh (SET 'sqlext.jobs.insert.start' = 'fresh').",
            option=fso.STREAMING_SOURCE_PARTITION_ORDER.key,
            value=settings.order,
        )


def snapshot(keys: Sequence[str], partition: Any, default_name: str) -> PartitionSnapshot:
    """A metastore ``Partition`` as a :class:`PartitionSnapshot`."""
    parameters = partition.parameters or {}
    signature = "|".join(
        [partition.sd.location or "", *(str(parameters.get(name, "")) for name in _SIGNATURE_PARAMETERS)]
    )
    values = tuple(partition.values)
    return PartitionSnapshot(
        name=partition_path(keys, list(values), default_name),
        values=values,
        location=partition.sd.location,
        create_time_ms=int(partition.createTime or 0) * 1000,
        signature=signature,
        altered_ms=_int(parameters.get("transient_lastDdlTime")) * 1000,
    )


def _int(text: Any) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def data_file_names(names: Sequence[str], success_file: str) -> list[str]:
    """The readable data files of a listing: not hidden (``_``, ``.``), not the success file."""
    return sorted(name for name in names if not name.startswith(("_", ".")) and name != success_file)


@dataclass(frozen=True)
class SourceSpec:
    """What the source's Python processes need to know about the table (passed as one JSON option)."""

    database: str
    table: str
    metastore_uris: str
    partition_keys: tuple[str, ...]
    data_columns: tuple[tuple[str, str], ...]
    options: Mapping[str, str]
    hadoop: Mapping[str, str]

    @classmethod
    def of_table(cls, table: TableDefinition, metastore_uris: str, hadoop: Mapping[str, str]) -> SourceSpec:
        """The spec of reading ``table`` through the metastore at ``metastore_uris``."""
        return cls(
            database=table.identifier.database,
            table=table.identifier.name,
            metastore_uris=metastore_uris,
            partition_keys=tuple(table.partition_keys),
            data_columns=tuple((c.name, c.type) for c in table.data_columns),
            options=dict(table.options),
            hadoop=hadoop,
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "database": self.database,
                "table": self.table,
                "metastore_uris": self.metastore_uris,
                "partition_keys": list(self.partition_keys),
                "data_columns": [list(c) for c in self.data_columns],
                "options": dict(self.options),
                "hadoop": dict(self.hadoop),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SourceSpec:
        data = json.loads(text)
        return cls(
            database=data["database"],
            table=data["table"],
            metastore_uris=data["metastore_uris"],
            partition_keys=tuple(data["partition_keys"]),
            data_columns=tuple((name, kind) for name, kind in data["data_columns"]),
            options=data["options"],
            hadoop=data["hadoop"],
        )

    def settings(self) -> StreamingSourceSettings:
        return StreamingSourceSettings.from_table(self.definition())

    def definition(self) -> TableDefinition:
        """A table definition enough for option reading and partition-time extraction."""
        from sqlext.table import Column, TableIdentifier

        columns = [Column(name, kind) for name, kind in self.data_columns]
        columns += [Column(key, "STRING") for key in self.partition_keys]
        return TableDefinition(
            TableIdentifier(self.database, self.table), tuple(columns), dict(self.options), self.partition_keys
        )

    def schema_ddl(self) -> str:
        """The source's Spark schema: data columns, then partition keys as strings."""
        from sqlext.sql.types import spark_type

        data = [f"`{name}` {spark_type(kind)}" for name, kind in self.data_columns]
        return ", ".join([*data, *(f"`{key}` string" for key in self.partition_keys)])


def read_stream(context: SourceContext) -> DataFrame:
    """The streaming DataFrame of a table read as committed partitions (see the module docstring)."""
    from sqlext import config as cfg

    table, spark = context.table, context.spark
    settings = StreamingSourceSettings.from_table(table)
    check_readable(table, settings)
    uris = spark.conf.get(cfg.METASTORE_URIS, None)
    if not uris:
        raise ValidationError(
            f"Table {table.identifier} is read as a stream of committed partitions, which needs the metastore: "
            f"set '{cfg.METASTORE_URIS}'.",
            option=cfg.METASTORE_URIS,
        )
    spec = SourceSpec.of_table(table, uris, _hadoop_conf(spark))
    register(spark)
    frame = spark.readStream.format(FORMAT_NAME).schema(spec.schema_ddl()).option("spec", spec.to_json()).load()
    return frame.select(*_output_columns(table))


def _output_columns(table: TableDefinition) -> list[Any]:
    """The table's physical columns in order; partition values as the table's types, the default partition
    name as NULL (as the batch read does)."""
    from pyspark.sql import functions as F

    from sqlext.sql.types import spark_type

    keys = {key.lower() for key in table.partition_keys}
    nulls = {Options(table.options).get(fso.PARTITION_DEFAULT_NAME), fso.HIVE_DEFAULT_PARTITION}
    selected = []
    for column in table.physical_columns:
        value = F.col(f"`{column.name}`")
        if column.name.lower() in keys:
            value = F.when(value.isin(*nulls), F.lit(None)).otherwise(value).cast(spark_type(column.type))
        selected.append(value.alias(column.name))
    return selected


def _hadoop_conf(spark: Any) -> dict[str, str]:
    from sqlext.io import arrowfs

    try:
        conf = dict(spark.conf.getAll)
    except Exception:  # an older Connect server without GetAll
        conf = {}
    return {key: value for key, value in conf.items() if key.startswith(arrowfs.HADOOP_PREFIX)}


_registered: set[int] = set()


def register(spark: Any) -> None:
    """Register the committed-partitions data source on a session; idempotent."""
    if id(spark) in _registered:
        return
    from sqlext.connectors.filesystem.partition_stream import CommittedPartitionSource, ProgressLogger

    spark.dataSource.register(CommittedPartitionSource)
    try:
        spark.streams.addListener(ProgressLogger())
    except Exception as exc:  # Spark Connect runs Python listeners on the server; progress is still in lastProgress
        log.debug("no per-batch progress log for the streaming source: %s", exc)
    _registered.add(id(spark))


def list_partition_files(partition: PartitionSnapshot, success_file: str) -> list[str]:
    """The data files in a partition's directory, by name."""
    from sqlext.io.fs import FileSystem

    fs = FileSystem(partition.location)
    names = [status.relative for status in fs.list_files(partition.location, recursive=False)]
    return data_file_names(names, success_file)


def compaction_merges(table_path: str, partition: PartitionSnapshot) -> dict[str, list[str]]:
    """What compaction merged in a partition, from the table's commit log: merged file name -> the names of
    the files it replaced (entries the log still keeps; see ``sink.commit-log.retained-batches``)."""
    from sqlext.connectors.filesystem.commitlog import CommitLog
    from sqlext.connectors.filesystem.compaction import COMPACTION_WRITER
    from sqlext.io.fs import FileSystem, normalize

    log_ = CommitLog(FileSystem(table_path), table_path)
    location = normalize(partition.location).rstrip("/")
    merged: dict[str, list[str]] = {}
    for entry in log_.entries(COMPACTION_WRITER):
        for final, sources in entry.merged_from.items():
            directory, _, name = normalize(final).rpartition("/")
            if directory == location:
                merged[name] = [source.rsplit("/", 1)[-1] for source in sources]
    return merged


def poll(spec: SourceSpec, client: Any) -> list[PartitionSnapshot]:
    """Every partition of the table in the metastore now."""
    default_name = Options(spec.options).get(fso.PARTITION_DEFAULT_NAME)
    names = client.get_partition_names(spec.database, spec.table)
    found = client.get_partitions_by_names(spec.database, spec.table, names) if names else []
    return [snapshot(spec.partition_keys, partition, default_name) for partition in found]


def key_function(spec: SourceSpec, settings: StreamingSourceSettings) -> Callable[[PartitionSnapshot], Key]:
    """The order key of a partition under the table's settings."""
    extract: Callable[[Sequence[str]], datetime] | None = None
    if settings.order == fso.ORDER_PARTITION_TIME:
        from sqlext.connectors.filesystem.settings import SinkSettings

        extractor = SinkSettings.from_table(spec.definition()).extractor()
        keys = spec.partition_keys

        def extract(values: Sequence[str]) -> datetime:
            return extractor.extract(keys, values)

    return lambda partition: order_key(partition, settings.order, extract)
