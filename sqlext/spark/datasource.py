"""The ``sqlext`` Python data source: ``df.writeStream.format("sqlext").option("table", "db.t")``.

For PySpark users and Spark Declarative Pipelines (``dp.create_sink(name, format="sqlext",
options={"table": "db.t"})``). The table is a sqlext table created by DDL; its own options drive the
write (partitioning, rolling, trigger, delay, policies), through the same commit path as ``INSERT INTO``
(:class:`sqlext.connectors.filesystem.commit.committer.BatchCommitter`).

How it differs from the ``INSERT`` path, and why:

- Executors write the files themselves (pyarrow, parquet with INT96 timestamps so every Hive reader
  reads them; orc; csv) into hidden staging dirs, and report them in their commit messages.
- ``commit(messages, batchId)`` runs on the driver in a Python worker that Spark starts for each batch
  (SPARK-48330): nothing survives on ``self``. The batch id and the table's commit log make a replayed
  batch a no-op; the trigger state lives in ``<table path>/_sqlext/state/<query>/``. Files staged by a
  replay, or by an attempt whose process died, are deleted once a batch has been committed.
- The writer does not see Spark's watermark. For ``partition-time``, the watermark a batch commits with is
  the largest event time of the batches up to and including its own (each task reports its max) minus the
  lateness of the table's ``WATERMARK FOR`` declaration (the sink table must declare one): the watermark
  that follows the batch's rows, as Flink's committer has it at a checkpoint.

- Each batch is committed before ``commit`` returns (``sink.partition-commit.async`` does not apply): Spark runs
  ``commit`` in a Python worker that it starts for the batch and that ends with it, and records the batch as
  done once ``commit`` returns, so no sqlext thread lives on to commit a batch while the next is written.

- One writer per table and ``pipeline.name``, and a checkpoint resumes only into the table it was written
  for: see :mod:`sqlext.jobs.writer_claim`.

Options: ``table`` (required), ``pipeline.name`` (the writing query's stable name; default
``sqlext_<db>_<table>``: give each query writing one table its own), ``metastore.uris`` (default: the
``spark.sqlext.metastore.uris`` seen by :func:`register`), ``metastore.retry.deadline`` (how long the start
waits for a metastore that does not answer; default the ``spark.sqlext.metastore.retry.deadline`` seen by
:func:`register`, else 60 s).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

from sqlext.catalog.csv_text import CsvTextForm
from sqlext.catalog.formats import ltz_columns
from sqlext.catalog.metastore import security
from sqlext.catalog.metastore.client import RetryPolicy
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.commit.plan import BatchInfo, StagedFile
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import FileSystemError, TableNotFoundError, ValidationError
from sqlext.io import arrowfs
from sqlext.io.fs import FileSystem, join
from sqlext.io.reach import check_reachable
from sqlext.jobs.checkpoint import TableRef
from sqlext.jobs.writer_claim import WriterClaim
from sqlext.options import parse_duration
from sqlext.table import TableDefinition, TableIdentifier

FORMAT_NAME = "sqlext"
RETRY_DEADLINE_OPTION = "metastore.retry.deadline"
_WRITABLE_FORMATS = ("parquet", "orc", "csv")


@dataclass
class StagedFiles(WriterCommitMessage):
    """What one task wrote: its staged files and the largest event time it saw (epoch ms)."""

    files: list[StagedFile] = field(default_factory=list)
    max_event_ms: int = 0


class SqlextDataSource(DataSource):
    """``format("sqlext")``: a streaming sink into a sqlext table."""

    defaults: dict[str, str] = {}  # noqa: RUF012 - set per registration by register()
    #: The session's ``spark.hadoop.*`` keys: the writer's Python workers have no JVM to ask (see sqlext.io.arrowfs).
    hadoop: dict[str, str] = {}  # noqa: RUF012 - set per registration by register()
    #: The session's metastore security (Kerberos, TLS): the writer's Python workers were not configured with it.
    metastore_security: dict[str, str] = {}  # noqa: RUF012 - set per registration by register()

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def streamWriter(self, schema: Any, overwrite: bool) -> SqlextStreamWriter:
        options = {**self.defaults, **{k.lower(): v for k, v in self.options.items()}}
        if "table" not in options:
            raise ValidationError("format('sqlext') needs .option('table', 'db.table'): the sqlext table to write.")
        uri = options.get("metastore.uris")
        if not uri:
            raise ValidationError(
                "format('sqlext') does not know the metastore: call sqlext.register(spark) on this session, "
                "or give .option('metastore.uris', 'thrift://host:port')."
            )
        security.adopt(self.metastore_security)
        table, table_id = load_sink_table(uri, TableIdentifier.parse(options["table"]), _retry(options))
        ident = table.identifier
        query = options.get("pipeline.name") or f"sqlext_{ident.database}_{ident.name}"
        settings = SinkSettings.from_table(table)
        check_watermark_source(settings, schema.fieldNames())
        arrowfs.configure(self.hadoop)
        # First, and naming the table's path: storage this process cannot reach (hdfs:// without libhdfs or WebHDFS, an
        # s3a:// bucket without keys) fails the start here, before anything is written.
        try:
            check_reachable(FileSystem(settings.path), settings.path)
        except FileSystemError as exc:
            note = arrowfs.default_credentials_note(settings.path, arrowfs.settings())
            if note is None:
                raise
            raise FileSystemError(f"{exc} {note}", value=settings.path) from exc
        claim = WriterClaim(
            settings.path,
            query,
            _state_dir(settings.path, query),
            uri,
            TableRef(str(ident), table_id),
            options.get("checkpointlocation"),
        )
        claim.on_start()
        return SqlextStreamWriter(settings, query, uri, self.hadoop, claim, self.metastore_security)


def check_watermark_source(settings: SinkSettings, columns: list[str]) -> None:
    """``partition-time`` needs the sink table's own watermark here: the writer is not told Spark's."""
    if not settings.partitioned or settings.trigger != fso.TRIGGER_PARTITION_TIME:
        return
    table = settings.table
    fix = (
        f"Create {table.identifier} with 'WATERMARK FOR <column> AS <column> - INTERVAL ...' on a column the "
        "stream writes, or set 'sink.partition-commit.trigger' = 'process-time' on it."
    )
    if table.watermark is None:
        problem = "which it does not declare"
    elif table.watermark.column not in columns:
        written = ", ".join(columns)
        problem = f"on column '{table.watermark.column}', which the stream does not write (it writes {written})"
    else:
        return
    raise ValidationError(
        f"Table {table.identifier} commits partitions by 'partition-time', and format('sqlext') takes the "
        f"watermark from the table's own WATERMARK FOR declaration, {problem}: no partition would ever be "
        f"committed. {fix}",
        option=fso.COMMIT_TRIGGER.key,
        value=settings.trigger,
    )


def _retry(options: dict[str, str]) -> RetryPolicy:
    """The retry policy of the start's metastore calls, from ``metastore.retry.deadline``."""
    raw = options.get(RETRY_DEADLINE_OPTION)
    if not raw:
        return RetryPolicy()
    try:
        return RetryPolicy(deadline_s=parse_duration(raw).total_seconds())
    except ValueError as exc:
        raise ValidationError(
            f"format('sqlext'): invalid value for option '{RETRY_DEADLINE_OPTION}': '{raw}'. Expected {exc}.",
            option=RETRY_DEADLINE_OPTION,
            value=raw,
        ) from None


def load_sink_table(
    metastore_uri: str, ident: TableIdentifier, retry: RetryPolicy | None = None
) -> tuple[TableDefinition, str]:
    """The sqlext table ``ident`` and its id (see :meth:`Catalog.table_id`); a clear error if it does not
    exist or is not a filesystem table, or (:class:`MetastoreUnavailableError`, after ``retry``'s deadline)
    if the metastore does not answer."""
    from sqlext.catalog.hms import Catalog
    from sqlext.catalog.metastore.client import MetastoreClient

    with MetastoreClient(metastore_uri, retry) as client:
        try:
            catalog = Catalog(client)
            table = catalog.get_table(ident)
            table_id = catalog.table_id(ident)
        except TableNotFoundError as exc:
            raise ValidationError(
                f"format('sqlext'): {exc.message} Create the table with sqlext DDL (CREATE TABLE ... WITH "
                f"('connector' = 'filesystem', ...)) in the metastore at {metastore_uri} first."
            ) from None
    fmt = table.options.get("format")
    if table.connector != "filesystem" or fmt not in _WRITABLE_FORMATS:
        raise ValidationError(
            f"format('sqlext'): table {ident} is not a sqlext filesystem table in one of "
            f"{', '.join(_WRITABLE_FORMATS)} (connector '{table.connector}', format '{fmt}')."
        )
    return table, table_id


def _state_dir(table_path: str, query: str) -> str:
    """Where a writer keeps the query's trigger state and lease, in the table (it has no checkpoint of its own)."""
    return join(table_path, "_sqlext", "state", query)


class SqlextStreamWriter(DataSourceStreamArrowWriter):
    """Executors: write Arrow batches into staging files. Driver: commit them through the commit log."""

    def __init__(
        self,
        settings: SinkSettings,
        query_name: str,
        metastore_uri: str,
        hadoop: dict[str, str] | None = None,
        claim: WriterClaim | None = None,
        metastore_security: dict[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.metastore_uri = metastore_uri
        self.hadoop = hadoop or {}
        self.claim = claim
        self.metastore_security = metastore_security or {}
        arrowfs.configure(self.hadoop)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled in a Python worker (executor task or the driver-side commit): no JVM there, so the
        # fallback filesystem learns the session's Hadoop settings before any file is touched, and the
        # metastore client the commit's Kerberos login and TLS.
        self.__dict__.update(state)
        arrowfs.configure(self.hadoop)
        security.adopt(self.metastore_security)

    # -- executors -------------------------------------------------------------------------------

    def write(self, iterator: Iterator[Any]) -> StagedFiles:
        import pyarrow as pa

        batches = [batch for batch in iterator if batch.num_rows]
        if not batches:
            return StagedFiles()
        rows = pa.Table.from_batches(batches)
        staging = join(self.staging_root, f"task-{uuid.uuid4().hex}")
        fs = FileSystem(self.settings.path)
        files = [
            self._write_group(fs, staging, group, values) for values, group in _split_by_keys(rows, self.settings.keys)
        ]
        return StagedFiles(files, _max_event_ms(rows, self.settings.table))

    def _write_group(self, fs: FileSystem, staging: str, rows: Any, values: list[str | None]) -> StagedFile:
        data = rows.drop_columns(list(self.settings.keys)) if self.settings.keys else rows
        extension = "snappy.parquet" if self.settings.format == "parquet" else self.settings.format
        name = f"part-{uuid.uuid4().hex}.{extension}"
        uri = join(staging, name)
        with fs.open_output(uri) as out:
            form = CsvTextForm.from_options(self.settings.format_options) if self.settings.format == "csv" else None
            _write_format(
                self.settings.format,
                data,
                out,
                form,
                ltz_columns([(c.name, c.type) for c in self.settings.table.physical_columns]),
            )
        return StagedFile(uri, _size(fs, uri), values, data.num_rows)

    # -- driver ----------------------------------------------------------------------------------

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.claim is not None:
            self.claim.before_commit(batchId)
        committer = BatchCommitter(self.settings, self.query_name, self.state_dir, self.metastore_uri)
        try:
            state = committer.trigger.state
            batch_max = max((m.max_event_ms for m in messages if isinstance(m, StagedFiles)), default=0)
            # The watermark that follows this batch's rows, as Flink's committer has it at a checkpoint (a
            # replay of a batch the log has finds the value its first run recorded there).
            info = BatchInfo(self._watermark(max(state.max_event_ms, batch_max)), int(time.time() * 1000))
            staged = [f for m in messages if isinstance(m, StagedFiles) for f in m.files]
            committer.process(batchId, info, lambda: staged)
            if batch_max > state.max_event_ms:
                state.max_event_ms = batch_max
                committer.save_state()
        finally:
            committer.close()
        # Every file of the batch is in its partition and the next batch has not started: what is left in
        # this query's staging dir was written by attempts that died, or by a replay of a committed batch.
        FileSystem(self.settings.path).delete_dir(self.staging_root)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        fs = FileSystem(self.settings.path)
        for message in messages:
            if isinstance(message, StagedFiles):
                for staged in message.files:
                    fs.delete_file(staged.uri)

    @property
    def staging_root(self) -> str:
        """This query's hidden staging dir (one ``task-*`` dir per writing task)."""
        return join(self.settings.path, "_sqlext", "staging", self.query_name)

    @property
    def state_dir(self) -> str:
        return _state_dir(self.settings.path, self.query_name)

    def _watermark(self, max_event_ms: int) -> int | None:
        watermark = self.settings.table.watermark
        if watermark is None or max_event_ms <= 0:
            return None
        lateness = int(watermark.delay.total_seconds() * 1000) if watermark.delay else 0
        return max_event_ms - lateness


def _split_by_keys(rows: Any, keys: tuple[str, ...]) -> Iterator[tuple[list[str | None], Any]]:
    """(partition values, rows) per distinct combination of the key columns (values as strings)."""
    import pyarrow.compute as pc

    if not keys:
        yield [], rows
        return
    as_text = {key: pc.cast(rows[key], "string") for key in keys}
    for combination in rows.select(list(keys)).group_by(list(keys)).aggregate([]).to_pylist():
        mask = None
        values: list[str | None] = []
        for key in keys:
            value = combination[key]
            text = None if value is None or value == "" else str(value)
            values.append(text)
            test = pc.is_null(rows[key]) if value is None else pc.equal(as_text[key], str(value))
            mask = test if mask is None else pc.and_(mask, test)
        yield values, rows.filter(mask)


def _write_format(
    file_format: str, rows: Any, out: Any, form: CsvTextForm | None = None, ltz: Sequence[str] = ()
) -> None:
    """One staged file; csv in the table's text form (see :mod:`sqlext.catalog.csv_text`), as the sink writes it."""
    if file_format == "parquet":
        import pyarrow.parquet as pq

        # INT96 timestamps: the only encoding both Spark and Hive's ParquetHiveSerDe read (see DESIGN).
        pq.write_table(rows, out, compression="snappy", use_deprecated_int96_timestamps=True)
    elif file_format == "orc":
        import pyarrow.orc as orc

        orc.write_table(_naive_timestamps(rows), out)
    else:
        out.write(form.encode_rows(rows, ltz) if form else b"")


def _naive_timestamps(rows: Any) -> Any:
    """Zoned timestamps as UTC wall-clock ones: pyarrow writes zoned ones as ORC ``TIMESTAMP_INSTANT``, a
    type Hive 2.3's ORC reader does not know; a plain ORC ``TIMESTAMP`` written in UTC is the same instant."""
    import pyarrow as pa

    for index, column in enumerate(rows.schema):
        if pa.types.is_timestamp(column.type) and column.type.tz is not None:
            naive = rows.column(index).cast(pa.timestamp(column.type.unit))
            rows = rows.set_column(index, pa.field(column.name, naive.type, column.nullable), naive)
    return rows


def _size(fs: FileSystem, uri: str) -> int:
    parent, _, name = uri.rpartition("/")
    return next(s.size for s in fs.list_files(parent, recursive=False) if s.relative == name)


def _max_event_ms(rows: Any, table: TableDefinition) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.watermark is None or table.watermark.column not in rows.column_names:
        return 0
    column = rows[table.watermark.column]
    if not pa.types.is_timestamp(column.type):
        return 0
    largest = pc.max(pc.cast(column, pa.timestamp("ms", tz=column.type.tz))).as_py()
    return int(largest.timestamp() * 1000) if largest is not None else 0


def register(spark: Any) -> None:
    """Register ``format("sqlext")`` on a Spark session (classic or Spark Connect); idempotent.

    The metastore the data source uses is the session's ``spark.sqlext.metastore.uris`` (or the embedded
    metastore, started if needed), waited for up to its ``spark.sqlext.metastore.retry.deadline``."""
    from sqlext.catalog.metastore import launcher
    from sqlext.config import METASTORE_RETRY_DEADLINE, METASTORE_URIS, SqlextConfig

    config = SqlextConfig.load()
    uri = spark.conf.get(METASTORE_URIS, None) or config.metastore_uris
    if not uri:
        uri = launcher.start(launcher.MetastoreSettings.from_config(config)).uri
    defaults = {"metastore.uris": uri}
    deadline = spark.conf.get(METASTORE_RETRY_DEADLINE, None) or config.get(METASTORE_RETRY_DEADLINE)
    if deadline:
        defaults[RETRY_DEADLINE_OPTION] = deadline
    session_conf = _session_conf(spark)
    hadoop = arrowfs.carried(session_conf)  # the Hadoop keys, and the Kerberos login for WebHDFS
    secured = security.settings_of({**config.values, **session_conf})
    attributes = {"defaults": defaults, "hadoop": hadoop, "metastore_security": secured}
    source = type("SqlextDataSource", (SqlextDataSource,), attributes)
    spark.dataSource.register(source)


def _session_conf(spark: Any) -> dict[str, str]:
    """Every key of the session's conf (classic and Spark Connect); empty if the server does not say."""
    try:
        return dict(spark.conf.getAll)
    except Exception:  # an older Connect server without GetAll
        return {}
