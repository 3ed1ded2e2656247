"""Lookup joins of a stream with the newest committed partition of a table (Flink's processing-time temporal
join of a Hive table with ``'streaming-source.partition.include' = 'latest'``).

``INSERT ... SELECT ... FROM orders AS o JOIN dim FOR SYSTEM_TIME AS OF o.proc_time AS d ON o.k = d.k``, where
``proc_time AS PROCTIME()`` is a computed column of the stream and ``dim`` a partitioned filesystem table with
``'streaming-source.enable' = 'true'`` and ``'streaming-source.partition.include' = 'latest'``:

- only the probe side is a Spark stream. Each micro-batch runs the SELECT as a batch query over that batch and
  the dimension's newest partition (so the rest of the SELECT must be row by row: no aggregation, DISTINCT,
  window function, ORDER BY or LIMIT, and no second stream);
- the newest partition is the last of the partitions the metastore lists (only committed ones) in
  ``streaming-source.partition-order``; it is read once and cached, and looked up again when the cache is older
  than ``streaming-source.monitor-interval`` (unset: 60 min, Flink's default for this join);
- rows are joined with the partition loaded when their micro-batch runs: as in Flink, a row is joined with
  the version of the table at its processing time, give or take the interval.

Why not Spark's stream-static join: Spark reads a static side again every micro-batch (tried: a Python data
source's ``read`` ran once a batch), in Python workers that keep nothing between batches, so it would look up
and read the partition every batch. The per-batch query keeps the loaded partition on the driver and looks
again only at the interval, as Flink's cache does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.streaming.discovery import PartitionDiscovery
from sqlext.connectors.filesystem.streaming.partitions import (
    PartitionSnapshot,
    is_switched,
    key_function,
    name_key_function,
)
from sqlext.connectors.filesystem.streaming.settings import Key, StreamingSourceSettings
from sqlext.connectors.filesystem.streaming.spec import SourceSpec
from sqlext.errors import ValidationError
from sqlext.options import Options
from sqlext.table import Column, TableDefinition, TableIdentifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sqlext.lookup_join")

#: Flink's default ``streaming-source.monitor-interval`` for a temporal join of the latest partition.
DEFAULT_RELOAD_INTERVAL = timedelta(minutes=60)
_NOT_ROW_BY_ROW: Mapping[type[exp.Expr], str] = {
    exp.AggFunc: "an aggregate function",
    exp.Group: "GROUP BY",
    exp.Distinct: "DISTINCT",
    exp.Window: "a window function (OVER)",
    exp.Order: "ORDER BY",
    exp.Limit: "LIMIT",
}


def is_latest_partition_table(table: TableDefinition) -> bool:
    """Whether ``table`` is read as its newest partition (``streaming-source.partition.include = 'latest'``)."""
    options = Options(table.options)
    return bool(options.get(fso.STREAMING_SOURCE_ENABLE)) and (
        options.get(fso.STREAMING_SOURCE_PARTITION_INCLUDE) == fso.INCLUDE_LATEST
    )


def find_lookup_tables(
    session: Any, query: exp.Expr, current: str, streaming: bool
) -> dict[TableIdentifier, TableDefinition]:
    """The sqlext tables the query joins ``FOR SYSTEM_TIME AS OF``, each checked (see the module docstring).
    A sqlext table joined that way must be a latest-partition table, on the right of an inner or left join,
    as of a ``PROCTIME()`` column, in streaming mode."""
    from sqlext.sql.hints import options_hint, with_hint

    found: dict[TableIdentifier, TableDefinition] = {}
    for node in query.find_all(exp.Table):
        version = node.args.get("version")
        ident = TableIdentifier.of_node(node, current)
        if version is None or not session.catalog.table_exists(ident):
            continue
        table = session.catalog.get_table(ident)
        hint = options_hint(node)
        table = with_hint(table, hint) if hint else table
        where = f"JOIN {ident} FOR SYSTEM_TIME AS OF {version.expression.sql(dialect='spark')}"
        if not is_latest_partition_table(table):
            raise ValidationError(
                f"{where}: sqlext runs a temporal join only with the newest partition of a table whose options "
                "say 'streaming-source.enable' = 'true' and 'streaming-source.partition.include' = 'latest' "
                f"(Flink's lookup join of a Hive table); {ident} does not.",
                option=fso.STREAMING_SOURCE_PARTITION_INCLUDE.key,
            )
        if not streaming:
            raise ValidationError(
                f"{where}: a temporal join of the latest partition runs in streaming mode only (as in Flink); "
                "this statement runs with 'execution.runtime-mode' = 'batch'.",
                option="execution.runtime-mode",
                value="batch",
            )
        _check_join(node, where)
        _check_proctime(session, query, current, version.expression, where)
        if not table.partition_keys:
            raise ValidationError(
                f"{where}: {ident} is not partitioned; 'streaming-source.partition.include' = 'latest' joins "
                "the newest partition of a partitioned table.",
                option=fso.STREAMING_SOURCE_PARTITION_INCLUDE.key,
            )
        StreamingSourceSettings.from_table(table)
        found[ident] = table
    if found:
        _check_row_by_row(query)
    return found


def _check_join(node: exp.Table, where: str) -> None:
    join = node.parent
    if not isinstance(join, exp.Join) or join.this is not node:
        raise ValidationError(f"{where}: the table joined FOR SYSTEM_TIME AS OF must be the right side of a JOIN.")
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    if side in ("RIGHT", "FULL") or kind not in ("", "INNER", "OUTER"):
        raise ValidationError(
            f"{where}: a temporal join is an inner JOIN or a LEFT JOIN (as in Flink), not "
            f"{' '.join(part for part in (side, kind) if part)} JOIN."
        )


def _check_proctime(session: Any, query: exp.Expr, current: str, version: exp.Expr, where: str) -> None:
    """``AS OF`` must name a ``PROCTIME()`` column of a table the query reads: Flink joins the latest
    partition in processing time only."""
    if isinstance(version, exp.Column):
        name = version.name.lower()
        for node in query.find_all(exp.Table):
            if node.args.get("version") is not None:
                continue
            ident = TableIdentifier.of_node(node, current)
            if version.table and version.table.lower() not in (node.alias_or_name.lower(), node.name.lower()):
                continue
            if session.catalog.table_exists(ident) and any(
                column.name.lower() == name and is_proctime(column)
                for column in session.catalog.get_table(ident).columns
            ):
                return
    raise ValidationError(
        f"{where}: FOR SYSTEM_TIME AS OF must name a processing-time column of the stream, declared as "
        "'<name> AS PROCTIME()' (Flink joins the latest partition in processing time only)."
    )


def is_proctime(column: Column) -> bool:
    """Whether a column is declared ``AS PROCTIME()``."""
    text = (column.expression or "").replace(" ", "").upper()
    return text == "PROCTIME()"


def _check_row_by_row(query: exp.Expr) -> None:
    for kind, what in _NOT_ROW_BY_ROW.items():
        if query.find(kind) is not None:
            raise ValidationError(
                f"A query with a temporal join of the latest partition runs once per micro-batch of its stream, "
                f"so it can only transform rows one by one; it has {what}. Write the joined rows into a table "
                "and aggregate in a second query.",
                statement=query.sql(dialect="spark"),
            )


@dataclass
class LatestPartition:
    """The newest committed partition of a table as a cached DataFrame, reloaded at the monitor interval."""

    table: TableDefinition
    metastore_uris: str
    view: str
    clock: Callable[[], float] = time.monotonic
    _frame: DataFrame | None = field(default=None, init=False)
    _loaded: tuple[str, str] | None = field(default=None, init=False)
    _checked_at: float | None = field(default=None, init=False)
    _discovery: PartitionDiscovery | None = field(default=None, init=False)

    @property
    def interval(self) -> timedelta:
        """``streaming-source.monitor-interval``; unset, Flink's 60 min for this join."""
        return Options(self.table.options).get(fso.STREAMING_SOURCE_MONITOR_INTERVAL) or DEFAULT_RELOAD_INTERVAL

    def frame(self, spark: SparkSession) -> DataFrame:
        """The partition's rows (the table's columns), looking for a newer partition when the last look is
        older than the interval."""
        now = self.clock()
        if self._frame is None or self._checked_at is None or now - self._checked_at >= self.interval.total_seconds():
            self._reload(spark)
            self._checked_at = now
        assert self._frame is not None
        return self._frame

    def _reload(self, spark: SparkSession) -> None:
        newest = self._newest()
        if newest is None:
            if self._frame is None:
                self._frame = empty_frame(spark, self.table)
                log.info("lookup %s: no committed partition yet; joins find no rows", self.table.identifier)
            return
        if is_switched(newest) and self._frame is not None:
            return  # compaction is swapping its files: keep the cached rows until it switches back
        loaded = (newest.name, newest.signature)
        if loaded == self._loaded and self._frame is not None:
            return
        frame = partition_frame(spark, self.table, newest).cache()
        rows = frame.count()
        if self._frame is not None:
            self._frame.unpersist()
        self._frame, self._loaded = frame, loaded
        log.info(
            "lookup %s: loaded partition %s (%d rows); next look in %s",
            self.table.identifier,
            newest.name,
            rows,
            self.interval,
        )

    def _newest(self) -> PartitionSnapshot | None:
        from sqlext.catalog.metastore.client import MetastoreClient

        spec = source_spec(self.table, self.metastore_uris)
        settings = spec.settings()
        key = key_function(spec, settings)
        if self._discovery is None:
            self._discovery = PartitionDiscovery(spec)
        with MetastoreClient(self.metastore_uris) as client:
            partitions = self._discovery.poll(client, newest_names(name_key_function(spec, settings)))
        return max(partitions, key=lambda p: (key(p), p.name), default=None)

    def release(self) -> None:
        """Drop the cached rows."""
        if self._frame is not None:
            self._frame.unpersist()
            self._frame = None


def newest_names(name_key: Callable[[str], Key | None] | None) -> Callable[[list[str]], list[str]] | None:
    """The names of the newest partitions by their names' keys (and those whose key is unknown), so that a
    reload fetches those alone; None (fetch every partition) where the order's key is not in the name."""
    if name_key is None:
        return None

    def wanted(names: list[str]) -> list[str]:
        keyed = [(name_key(name), name) for name in names]
        known = [at for at, _ in keyed if at is not None]
        newest = max(known, default=None)
        return [name for at, name in keyed if at is None or at == newest]

    return wanted


def source_spec(table: TableDefinition, metastore_uris: str) -> SourceSpec:
    """What the streaming source's metastore polling needs to know of ``table``."""
    return SourceSpec.of_table(table, metastore_uris, hadoop={})


def partition_frame(spark: SparkSession, table: TableDefinition, partition: PartitionSnapshot) -> DataFrame:
    """One partition's rows as the table's rows: its files read through the table's connector (any format),
    the partition values as columns of the table's types (the default partition name as NULL)."""
    from sqlext.jobs.sources import source_frame

    keys = {key.lower(): value for key, value in zip(table.partition_keys, partition.values, strict=True)}
    nulls = {Options(table.options).get(fso.PARTITION_DEFAULT_NAME), fso.HIVE_DEFAULT_PARTITION}
    columns = tuple(
        replace(column, expression=_literal(keys[column.name.lower()], column.type, nulls))
        if column.name.lower() in keys
        else column
        for column in table.columns
    )
    options = {
        key: value
        for key, value in table.options.items()
        if not key.startswith("streaming-source.") and key != fso.SOURCE_MONITOR_INTERVAL.key
    }
    options[fso.PATH.key] = partition.location
    single = replace(table, columns=columns, options=options, partition_keys=(), watermark=None)
    return source_frame(spark, single, streaming=False).frame


def _literal(value: str, flink_type: str, nulls: Collection[str | None]) -> str:
    from sqlext.sql.types import spark_type

    literal = exp.null() if value in nulls else exp.Literal.string(value)
    return exp.cast(literal, exp.DataType.build(spark_type(flink_type), dialect="spark")).sql(dialect="spark")


def empty_frame(spark: SparkSession, table: TableDefinition) -> DataFrame:
    """No rows, the table's columns (for planning, and before anything is committed)."""
    from sqlext.jobs.sources import with_computed_columns
    from sqlext.sql.types import spark_type

    stored = [column for column in table.columns if column.is_physical or column.metadata_key]
    schema = ", ".join(f"`{column.name}` {spark_type(column.type)}" for column in stored)
    return with_computed_columns(spark.createDataFrame([], schema), table)


@dataclass
class LookupJoin:
    """A streaming insert whose query joins its one stream with latest-partition tables."""

    stream_view: str
    query: str
    lookups: list[LatestPartition]
    conform: Callable[[DataFrame], DataFrame]

    def check(self, spark: SparkSession, stream: DataFrame) -> None:
        """Plan the query once on empty inputs, so that what cannot run fails the statement before it starts."""
        spark.createDataFrame([], stream.schema).createOrReplaceTempView(self.stream_view)
        for lookup in self.lookups:
            empty_frame(spark, lookup.table).createOrReplaceTempView(lookup.view)
        self.conform(spark.sql(self.query))
        stream.createOrReplaceTempView(self.stream_view)  # the view is the stream's again

    def batch_rows(self, batch: DataFrame) -> DataFrame:
        """A micro-batch of the stream joined with each table's newest partition, as the sink's rows."""
        spark = batch.sparkSession
        batch.createOrReplaceTempView(self.stream_view)
        for lookup in self.lookups:
            lookup.frame(spark).createOrReplaceTempView(lookup.view)
        return self.conform(spark.sql(self.query))


def plan_lookup_join(
    spark: SparkSession,
    query: exp.Expr,
    stream_views: Mapping[TableIdentifier, tuple[str, DataFrame]],
    lookups: Mapping[TableIdentifier, TableDefinition],
    current: str,
    metastore_uris: str | None,
    conform: Callable[[DataFrame], DataFrame],
) -> LookupJoin:
    """The per-batch query of an insert with lookup joins; ``query`` reads its stream through the views
    ``stream_views`` already, ``lookups`` are :func:`find_lookup_tables`'s. Checked on empty inputs."""
    if len(stream_views) != 1:
        names = ", ".join(str(ident) for ident in stream_views) or "none"
        raise ValidationError(
            "A query with a temporal join of the latest partition reads exactly one other sqlext table, its "
            f"stream (the probe side of the join); this one reads: {names}.",
            statement=query.sql(dialect="spark"),
        )
    if not metastore_uris:
        raise ValidationError(
            "A temporal join of the latest partition asks the metastore for the newest partition: set "
            "'spark.sqlext.metastore.uris'.",
            option="spark.sqlext.metastore.uris",
        )
    views = {ident: f"__sqlext_lookup_{ident.database}_{ident.name}" for ident in lookups}

    def replace_lookup(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.args.get("version") is not None:
            ident = TableIdentifier.of_node(node, current)
            if ident in views:
                return exp.to_table(views[ident]).as_(node.alias or node.name)
        return node

    [(stream_view, stream)] = stream_views.values()
    join = LookupJoin(
        stream_view=stream_view,
        query=query.copy().transform(replace_lookup).sql(dialect="spark"),
        lookups=[LatestPartition(table, metastore_uris, views[ident]) for ident, table in lookups.items()],
        conform=conform,
    )
    join.check(spark, stream)
    return join
