"""The Spark side of the committed-partitions streaming source: a Python data source (Spark's
``DataSourceStreamReader``) whose offsets are :mod:`sqlext.connectors.filesystem.streaming.offsets`'s.

``initialOffset``, ``latestOffset`` and ``partitions`` run on the driver in one Python process that Spark keeps
for the query (they may keep a metastore connection and the time of the last poll); ``read`` runs on the
executors, one task per file, and reads it with pyarrow through :mod:`sqlext.io.arrowfs` (the session's
``spark.hadoop.*`` keys travel in the source's options).

Progress: ``reportLatestOffset`` gives Spark what the newest poll saw in the metastore (shown as the source's
``latestOffset`` in ``StreamingQuery.lastProgress``), and :class:`ProgressLogger`, a query listener on the
driver, logs each batch's partitions, files and lag from its end offset. The log is the driver's: the reader's
own process is Spark's, whose log output goes nowhere users look.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.listener import StreamingQueryListener

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.streaming.discovery import PartitionDiscovery
from sqlext.connectors.filesystem.streaming.offsets import (
    batch_progress,
    files_to_read,
    initial_offset,
    latest_report,
    next_offset,
    unread_names,
)
from sqlext.connectors.filesystem.streaming.partitions import (
    PartitionSnapshot,
    compaction_merges,
    key_function,
    list_partition_files,
    name_key_function,
)
from sqlext.connectors.filesystem.streaming.spec import FORMAT_NAME, SourceSpec
from sqlext.options import Options

log = logging.getLogger("sqlext.streaming_source")


@dataclass
class FilePartition(InputPartition):
    """One file a micro-batch reads, with its partition's values."""

    uri: str
    values: tuple[str, ...]


class CommittedPartitionSource(DataSource):
    """``format("sqlext-committed-partitions")``, option ``spec``: a :class:`SourceSpec` as JSON."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return SourceSpec.from_json(self.options["spec"]).schema_ddl()

    def streamReader(self, schema: Any) -> CommittedPartitionReader:
        return CommittedPartitionReader(SourceSpec.from_json(self.options["spec"]), schema)


class CommittedPartitionReader(DataSourceStreamReader):
    """Offsets: what was read (see :func:`streaming_offsets.next_offset`); a micro-batch reads one file a task."""

    def __init__(self, spec: SourceSpec, schema: Any) -> None:
        self.spec = spec
        self.schema = schema
        self.settings = spec.settings()
        self._client: Any = None
        self._next_poll = 0.0
        self._latest: dict[str, Any] | None = None
        self._polled: list[PartitionSnapshot] = []
        self._discovery = PartitionDiscovery(spec)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        # A copy elsewhere (an executor's) lists at its first poll: the cache of names is this process's.
        state["_discovery"] = PartitionDiscovery(self.spec)
        return state

    def initialOffset(self) -> dict[str, Any]:
        return initial_offset(self.settings)

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:
        now = time.monotonic()
        if now < self._next_poll:
            self._latest = start
            return start
        self._next_poll = now + self.settings.monitor_interval.total_seconds()
        from sqlext.io import arrowfs

        # This process is Spark's Python worker, without a JVM: the partition listings below go through
        # pyarrow, which needs the session's keys (an s3a:// table's endpoint and credentials) as read_file does.
        arrowfs.configure(self.spec.hadoop)
        name_key = name_key_function(self.spec, self.settings)
        partitions = self._discovery.poll(self._metastore(), unread_names(start, self.settings, name_key))
        self._polled = partitions
        options = Options(self.spec.options)
        success_file = options.get(fso.SUCCESS_FILE_NAME)
        table_path = options.require(fso.PATH)
        self._latest = next_offset(
            start,
            partitions,
            self.settings,
            key_function(self.spec, self.settings),
            lambda partition: list_partition_files(partition, success_file),
            lambda partition: compaction_merges(table_path, partition),
        )
        return self._latest

    def reportLatestOffset(self) -> dict[str, Any] | None:
        if self._latest is None:
            return None
        return latest_report(self._latest, self._polled)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        if start == end:
            return []
        return [FilePartition(file.uri, file.values) for file in files_to_read(end)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, FilePartition)
        yield from read_file(self.spec, self.schema, partition.uri, partition.values)

    def commit(self, end: dict[str, Any]) -> None:
        return None

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _metastore(self) -> Any:
        if self._client is None:
            from sqlext.catalog.metastore import security
            from sqlext.catalog.metastore.client import MetastoreClient

            security.adopt(self.spec.metastore_security)  # a Python worker Spark started: not configured
            self._client = MetastoreClient(self.spec.metastore_uris)
        return self._client


def read_file(spec: SourceSpec, schema: Any, uri: str, values: tuple[str, ...]) -> Iterator[Any]:
    """A data file's rows as Arrow record batches in the source's schema (columns matched by name, case
    insensitively; a column the file lacks reads as NULL), with its partition's values."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from sqlext.io import arrowfs

    arrowfs.configure(spec.hadoop)
    target = to_arrow_schema(schema, timezone="UTC")  # Spark takes tz-aware Arrow timestamps as instants
    fmt = Options(spec.options).require(fso.FORMAT)
    with arrowfs.ArrowBackend().open_input(uri) as handle:
        rows = _read_format(fmt, handle)
    by_name = {name.lower(): index for index, name in enumerate(rows.column_names)}
    columns = []
    data_count = len(spec.data_columns)
    for position, field in enumerate(target):
        if position >= data_count:
            value = values[position - data_count]
            columns.append(pa.array([value] * rows.num_rows, type=field.type))
        elif field.name.lower() in by_name:
            columns.append(rows.column(by_name[field.name.lower()]).cast(field.type))
        else:
            columns.append(pa.nulls(rows.num_rows, type=field.type))
    yield from pa.Table.from_arrays(columns, schema=target).to_batches()


def _read_format(fmt: str, handle: Any) -> Any:
    if fmt == "orc":
        from pyarrow import orc

        return orc.ORCFile(handle).read()
    import pyarrow.parquet as pq

    return pq.read_table(handle)


class ProgressLogger(StreamingQueryListener):
    """Logs, once a micro-batch, what each committed-partitions source of the query read (INFO, one line)."""

    def onQueryStarted(self, event: Any) -> None:
        return None

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        for source in progress.sources:
            if source.startOffset == source.endOffset or not source.endOffset:
                continue
            try:
                end = json.loads(source.endOffset)
            except (TypeError, ValueError):
                continue
            batch = batch_progress(end)
            if batch is not None:
                log.info("%s: batch %d %s", progress.name or progress.id, progress.batchId, batch.describe())

    def onQueryIdle(self, event: Any) -> None:
        return None

    def onQueryTerminated(self, event: Any) -> None:
        return None
