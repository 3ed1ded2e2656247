"""``INSERT INTO|OVERWRITE sink SELECT ... FROM source``: from a parsed statement to a running query.

The SELECT runs as Spark SQL. Each sqlext table it reads is built by its connector (streaming in
streaming mode, bounded in batch mode), gets its computed columns and its ``WATERMARK FOR`` (as Spark's
``withWatermark``), and is registered as a temporary view that the SELECT is rewritten to read. The
rows are matched to the sink's columns by position, as Flink does, static partition values are
added, and the sink's connector writes them. A table joined ``FOR SYSTEM_TIME AS OF`` (the newest
partition of a dimension) is not a source of its own: see :mod:`sqlext.jobs.lookup_join`.

Session options (``SET 'k' = 'v'``), in Flink's names:

- ``execution.runtime-mode``: ``streaming`` (default: the statement starts a query and returns its
  id) or ``batch`` (the statement reads what is there, writes, commits every partition, returns).
- ``pipeline.name``: the insert's stable name (default ``insert_<db>_<table>``), which names its
  checkpoint ``<checkpoint root>/<name>``: running the same insert again resumes it, if the checkpoint is
  its own (same metastore, sink table, sources and query: see :mod:`sqlext.jobs.checkpoint`).
- ``sqlext.insert.start``: ``auto`` (default), ``fresh`` (move the checkpoint aside, start over) or
  ``resume`` (resume it although the query or its sources changed).
- ``table.local-time-zone``: the session time zone of ``TIMESTAMP_LTZ`` values (Spark's
  ``spark.sql.session.timeZone`` while the insert is planned and started; see :mod:`sqlext.jobs.time_zone`).
- ``execution.checkpointing.interval``: the micro-batch interval (Spark's processing-time trigger);
  unset: Spark's default, a new batch as soon as the previous one is done.
- ``table.exec.hive.sink.statistic-auto-gather.enable``: ``true`` (default) or ``false``: whether the commit
  reads the files it commits for their partitions' ``numRows`` (parquet and orc footers, the lines of csv and
  json files). With ``false`` no file is read for it and ``numRows`` is left out; ``numFiles`` and
  ``totalSize`` come from the listing the commit makes anyway and are still written.

Spark's write rebase modes (dates and timestamps before 1582-10-15 in parquet and avro) are ``CORRECTED``
for the insert as the session zone is set, unless the session sets them (:mod:`sqlext.jobs.calendar_rebase`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from sqlext import config as cfg
from sqlext.catalog.changelog_formats import ROW_KIND
from sqlext.connectors.changelog.planning import carry_row_kind, check_insert
from sqlext.errors import ValidationError
from sqlext.frames import StatementResult
from sqlext.io.fs import FileSystem, join, normalize
from sqlext.io.reach import check_reachable
from sqlext.jobs.calendar_rebase import corrected_rebase
from sqlext.jobs.checkpoint import (
    START_OPTION,
    STARTED,
    InsertIdentity,
    StartMode,
    TableRef,
    checkpoint_root,
    configured_root,
    legacy_default_root,
    normalize_metastore,
    prepare,
    record_in_table,
    set_aside_commit_log,
)
from sqlext.jobs.lease import Lease
from sqlext.jobs.lookup_join import find_lookup_tables, plan_lookup_join
from sqlext.jobs.sources import SourceFrame, source_frame
from sqlext.jobs.state_versions import refuse_newer_state
from sqlext.jobs.time_zone import session_time_zone
from sqlext.options import BOOLEAN, ConfigOption, Options, parse_duration
from sqlext.sink import InsertPlan
from sqlext.sql.hints import options_hint, with_hint
from sqlext.table import TableDefinition, TableIdentifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sqlext.insert")
RUNTIME_MODE = "execution.runtime-mode"
PIPELINE_NAME = "pipeline.name"
CHECKPOINT_INTERVAL = "execution.checkpointing.interval"
GATHER_STATISTICS = ConfigOption("table.exec.hive.sink.statistic-auto-gather.enable", BOOLEAN, True)
STREAMING, BATCH = "streaming", "batch"


def runtime_mode(options: Mapping[str, str]) -> str:
    mode = options.get(RUNTIME_MODE, STREAMING).strip().lower()
    if mode not in (STREAMING, BATCH):
        raise ValidationError(
            f"Invalid value for '{RUNTIME_MODE}': '{mode}'. Expected 'streaming' or 'batch'.",
            option=RUNTIME_MODE,
            value=mode,
        )
    return mode


def default_query_name(identifier: TableIdentifier) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", f"insert_{identifier.database}_{identifier.name}")


def conform_to_sink(rows: DataFrame, sink: TableDefinition, static_partitions: Mapping[str, str]) -> DataFrame:
    """Match the query's columns to the sink's physical columns by position, add static partition
    values, and cast to the sink's types."""
    from pyspark.sql import functions as F

    from sqlext.sql.types import spark_type

    static = {key.lower(): value for key, value in static_partitions.items()}
    unknown = sorted(set(static) - {key.lower() for key in sink.partition_keys})
    if unknown:
        raise ValidationError(
            f"PARTITION ({', '.join(unknown)}) names no partition key of {sink.identifier}; its partition "
            f"keys are: {', '.join(sink.partition_keys) or '(none)'}."
        )
    targets = [c for c in sink.physical_columns if c.name.lower() not in static]
    rows = _unique_names(rows)
    kind = [F.col(ROW_KIND)] if ROW_KIND in rows.columns else []  # a changelog's row kinds, kept last
    rows_columns = [name for name in rows.columns if name != ROW_KIND]
    if len(rows_columns) != len(targets):
        raise ValidationError(
            f"INSERT INTO {sink.identifier}: the query returns {len(rows_columns)} columns but the sink "
            f"expects {len(targets)} ({', '.join(c.name for c in targets)}); columns are matched by position."
        )
    by_position = dict(zip((c.name.lower() for c in targets), rows_columns, strict=True))
    selected = []
    for column in sink.physical_columns:
        key = column.name.lower()
        value = F.lit(static[key]) if key in static else F.col(f"`{by_position[key]}`")
        selected.append(value.cast(spark_type(column.type)).alias(column.name))
    return rows.select(*selected, *kind)


def _unique_names(rows: DataFrame) -> DataFrame:
    """``rows`` with its columns renamed by position when two share a name (``SELECT id, CAST(id AS STRING)``:
    Spark names both ``id``), so each can be taken by its name; as it was otherwise (a streaming query's plan,
    which its checkpoint was started with, stays the same)."""
    lowered = [name.lower() for name in rows.columns]
    if len(set(lowered)) == len(lowered):
        return rows
    return rows.toDF(*(name if name == ROW_KIND else f"_sqlext_column_{i}" for i, name in enumerate(rows.columns)))


def execute_insert(session: Any, statement: Any) -> StatementResult:
    """Run an INSERT statement on an extended session (see the module docstring)."""
    spark: SparkSession = session.spark
    sink = session.catalog.get_table(statement.target)
    if (table_path := _table_path(sink)) is not None:
        check_reachable(FileSystem(table_path), table_path)  # a wrong bucket or no credentials: named, nothing written
    mode = runtime_mode(session.options)
    gather_statistics = Options(session.options).get(GATHER_STATISTICS)
    if statement.overwrite and mode == STREAMING:
        raise ValidationError(
            f"INSERT OVERWRITE {sink.identifier} is not supported in streaming mode (Flink: 'Streaming mode "
            "not support overwrite'): an unbounded query has no point at which the old data can be replaced. "
            f"Use SET '{RUNTIME_MODE}' = 'batch' for an overwrite, or INSERT INTO.",
            statement=getattr(statement, "sql", None),
        )
    query_name = session.options.get(PIPELINE_NAME) or default_query_name(sink.identifier)
    checkpoint_location = join(
        checkpoint_root(spark, session.config, getattr(session, "metastore_uri", None)), query_name
    )
    if mode == STREAMING and configured_root(spark, session.config) is None:
        _move_legacy_checkpoint(sink, query_name, checkpoint_location)
    refuse_newer_state(checkpoint_location, table_path, query_name)  # before anything is written
    # Claimed before the query is planned, confirmed after: the lease's settle wait passes while Spark plans.
    lease = Lease.claim(FileSystem(checkpoint_location), checkpoint_location, query_name)
    try:
        with session_time_zone(spark, session.options), corrected_rebase(spark):
            return _plan_and_run(session, statement, sink, mode, lease, gather_statistics)
    except BaseException:
        lease.release()
        raise


def _plan_and_run(
    session: Any, statement: Any, sink: TableDefinition, mode: str, lease: Lease, gather_statistics: bool
) -> StatementResult:
    """Plan the insert's query and run it: to its end in batch mode or from bounded sources, else as a
    streaming query (started here, the lease kept by a heartbeat while it runs); ``gather_statistics``: see
    the module docstring."""
    spark: SparkSession = session.spark
    query_name, checkpoint_location = lease.owner.pipeline, lease.checkpoint
    current = getattr(session, "current_database", None) or "default"
    lookups = find_lookup_tables(session, statement.query, current, streaming=mode == STREAMING)
    sources = _resolve_sources(session, statement.query, streaming=mode == STREAMING, skip=lookups)
    conform = partial(conform_to_sink, sink=sink, static_partitions=statement.static_partitions)
    lookup_join = None
    if lookups:
        lookup_join = plan_lookup_join(
            spark,
            _rewrite(statement.query, sources, current),
            {ident: (_view_name(ident), source.frame) for ident, source in sources.items()},
            lookups,
            current,
            getattr(session, "metastore_uri", None) or spark.conf.get(cfg.METASTORE_URIS, None),
            conform,
        )
        rows = next(iter(sources.values())).frame
    else:
        query = _rewrite(statement.query, sources, current)
        if writes_changelog(session, statement, sources, sink, mode):
            query = carry_row_kind(query, getattr(statement, "sql", None))
        rows = conform(spark.sql(query.sql(dialect="spark")))
    start_mode = StartMode.parse(session.options.get(START_OPTION))
    bounded = all(source.bounded for source in sources.values())
    plan = InsertPlan(
        query_name=query_name,
        checkpoint_location=checkpoint_location,
        static_partitions=dict(statement.static_partitions),
        overwrite=statement.overwrite,
        trigger_interval=_trigger_interval(session.options),
        available_now=bounded,
        batch_rows=lookup_join.batch_rows if lookup_join else None,
        gather_statistics=gather_statistics,
    )
    table_sink = _create_sink(session, sink)
    if lookup_join and not table_sink.runs_batch_rows:
        raise ValidationError(
            f"INSERT INTO {sink.identifier}: a temporal join of the latest partition writes through a sink that "
            f"runs a query per micro-batch; the '{sink.connector}' connector's sink does not (the filesystem "
            "connector's does).",
            statement=getattr(statement, "sql", None),
        )
    if mode == BATCH or not rows.isStreaming:
        try:
            lease.confirm()
            table_sink.write_batch(rows, plan)
        finally:
            lease.release()
        return StatementResult(
            "job_name STRING, sink STRING, status STRING", [(query_name, str(sink.identifier), "FINISHED")]
        )
    _check_watermark(sink, any(source.has_watermark for source in sources.values()))
    identity = insert_identity(session, sink, sources, statement, query_name)
    prepared = prepare(plan.checkpoint_location, identity, start_mode, lambda: _sink_has_log(sink, query_name), lease)
    try:
        table_path = _table_path(sink)
        if table_path and not prepared.resumed:
            set_aside_commit_log(table_path, query_name)
        log.info(
            "%s: %s checkpoint %s (%s)",
            query_name,
            "resuming" if prepared.resumed else "starting a fresh",
            plan.checkpoint_location,
            identity.describe(),
        )
        query = table_sink.start_stream(rows, plan)
    except BaseException:
        prepared.lease.release()
        raise
    STARTED[str(query.id)] = prepared
    prepared.lease.keep_while(partial(_insert_alive, query), partial(_stop_insert, query))
    if table_path:
        try:
            record_in_table(table_path, prepared)
        except Exception as exc:  # only what `sqlext commits` shows; the insert runs on
            log.warning("%s: could not record its checkpoint in %s: %s", query_name, table_path, exc)
    return StatementResult(
        "job_id STRING, job_name STRING, sink STRING", [(str(query.id), query_name, str(sink.identifier))]
    )


def insert_identity(
    session: Any, sink: TableDefinition, sources: Mapping[TableIdentifier, SourceFrame], statement: Any, name: str
) -> InsertIdentity:
    """Whose checkpoint this insert's is: metastore, sink and source ids, the query as it runs and the sink's
    columns it writes."""
    catalog = session.catalog
    current = getattr(session, "current_database", None) or "default"
    query = _rewrite(statement.query, sources, current).sql(dialect="spark")
    if statement.static_partitions:
        values = ", ".join(f"{k} = '{v}'" for k, v in sorted(statement.static_partitions.items()))
        query = f"PARTITION ({values}) {query}"
    static = {key.lower() for key in statement.static_partitions}
    return InsertIdentity(
        pipeline=name,
        metastore=normalize_metastore(catalog.metastore_uri),
        sink=TableRef(str(sink.identifier), catalog.table_id(sink.identifier)),
        sources=tuple(TableRef(str(ident), catalog.table_id(ident)) for ident in sorted(sources, key=str)),
        query=query,
        sink_columns=tuple(c.name for c in sink.physical_columns if c.name.lower() not in static),
    )


def writes_changelog(
    session: Any, statement: Any, sources: Mapping[TableIdentifier, SourceFrame], sink: TableDefinition, mode: str
) -> bool:
    """Whether the insert writes a changelog; refused as Flink refuses it where its sink or mode cannot take
    one (:mod:`sqlext.connectors.changelog.planning`)."""
    tables = [source.table for source in sources.values()]
    return check_insert(tables, sink, mode == BATCH, getattr(statement, "sql", None))


def _table_path(table: TableDefinition) -> str | None:
    path = table.options.get("path") if table.connector == "filesystem" else None
    return normalize(path) if path else None


def _sink_has_log(sink: TableDefinition, query_name: str) -> bool:
    """A checkpoint without identity is this insert's when the sink's commit log has its batches (or the
    sink keeps no log to tell)."""
    from sqlext.connectors.filesystem.commit_log import CommitLog

    path = _table_path(sink)
    return path is None or CommitLog(FileSystem(path), path).last_batch(query_name) is not None


def _move_legacy_checkpoint(sink: TableDefinition, query_name: str, location: str) -> None:
    """Checkpoints at ``$SQLEXT_HOME/checkpoints/<name>`` (before the default root had a dir per
    metastore) move to their new place when their sink's commit log shows they are this insert's."""
    legacy = join(legacy_default_root(), query_name)
    fs = FileSystem(legacy)
    if legacy == location or fs.exists(location) or not fs.is_dir(join(legacy, "offsets")):
        return
    if fs.exists(join(legacy, "sqlext", "identity.json")) or not _sink_has_log(sink, query_name):
        return
    fs.move(legacy, location)
    log.info("%s: checkpoint moved from %s to %s (one dir per metastore)", query_name, legacy, location)


def _insert_alive(query: Any) -> bool:
    from sqlext.connectors.filesystem.sink import running_insert

    running = running_insert(str(query.id))
    return not running.finished.is_set() if running is not None else bool(query.isActive)


def _stop_insert(query: Any) -> None:
    from sqlext.connectors.filesystem.sink import running_insert

    running = running_insert(str(query.id))
    if running is not None:
        running.stop()
    else:
        query.stop()


def _create_sink(session: Any, table: TableDefinition) -> Any:
    from sqlext.registry import SinkContext, factory_for

    context = SinkContext(spark=session.spark, table=table, catalog=session.catalog, config=session.config)
    return factory_for(table).create_sink(context)


def _check_watermark(sink: TableDefinition, has_watermark: bool) -> None:
    if sink.connector == "filesystem":
        from sqlext.connectors.filesystem.settings import SinkSettings

        SinkSettings.from_table(sink).check_partition_time_needs_watermark(has_watermark)


def _trigger_interval(options: Mapping[str, str]) -> str | None:
    raw = options.get(CHECKPOINT_INTERVAL)
    if not raw:
        return None
    try:
        millis = int(parse_duration(raw).total_seconds() * 1000)
    except ValueError as exc:
        raise ValidationError(
            f"Invalid value for '{CHECKPOINT_INTERVAL}': '{raw}'. Expected {exc}.",
            option=CHECKPOINT_INTERVAL,
            value=raw,
        ) from None
    return f"{millis} milliseconds"


def _resolve_sources(
    session: Any, query: exp.Expr, streaming: bool, skip: Collection[TableIdentifier] = ()
) -> dict[TableIdentifier, SourceFrame]:
    """Build a DataFrame for every sqlext table the query reads (but ``skip``: lookup tables), registered as
    a temp view."""
    resolved: dict[TableIdentifier, SourceFrame] = {}
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    current = getattr(session, "current_database", None) or "default"
    for node in query.find_all(exp.Table):
        if not node.db and node.name.lower() in ctes:
            continue
        ident = TableIdentifier.of_node(node, current)
        if ident in resolved or ident in skip or not session.catalog.table_exists(ident):
            continue  # seen already, or a Spark table or view that Spark resolves itself
        table = session.catalog.get_table(ident)
        hint = options_hint(node)
        source = source_frame(session.spark, with_hint(table, hint) if hint else table, streaming)
        source.frame.createOrReplaceTempView(_view_name(ident))
        resolved[ident] = source
    return resolved


def _view_name(ident: TableIdentifier) -> str:
    return f"__sqlext_{ident.database}_{ident.name}"


def _rewrite(query: exp.Expr, sources: Mapping[TableIdentifier, SourceFrame], current: str) -> exp.Expr:
    """Point the query's references to sqlext tables at their temp views (keeping aliases)."""

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table):
            ident = TableIdentifier.of_node(node, current)
            if ident in sources:
                return exp.to_table(_view_name(ident)).as_(node.alias or node.name)
        return node

    return query.copy().transform(replace)
