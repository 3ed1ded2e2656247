"""A source table as a DataFrame: built through its connector, with its computed columns and watermark. Shared by
inserts and lookup joins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import expressions as exp

from sqlext.errors import ValidationError
from sqlext.jobs.checkpoint import checkpoint_root
from sqlext.registry import SourceContext, factory_for
from sqlext.table import TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class SourceFrame:
    """A source table as a DataFrame, with what the insert needs to know about it."""

    table: TableDefinition
    frame: DataFrame
    bounded: bool
    has_watermark: bool


def source_frame(spark: SparkSession, table: TableDefinition, streaming: bool) -> SourceFrame:
    """Build a source table's DataFrame through its connector, with computed columns and watermark."""
    factory = factory_for(table)
    bounded = factory.is_bounded(table)
    frame = factory.create_source(
        SourceContext(spark=spark, table=table, streaming=streaming, state_root=checkpoint_root(spark, None))
    )
    frame = with_computed_columns(frame, table)
    has_watermark = False
    if table.watermark is not None and frame.isStreaming:
        delay = table.watermark.delay
        if delay is None:
            raise ValidationError(
                f"Unsupported watermark on {table.identifier}: '{table.watermark.expression}'. Spark "
                f"runs watermarks of the form '{table.watermark.column} - INTERVAL ''n'' unit' "
                "(or the column alone).",
                statement=table.watermark.expression,
            )
        frame = frame.withWatermark(table.watermark.column, f"{int(delay.total_seconds() * 1000)} milliseconds")
        has_watermark = True
    return SourceFrame(table, frame, bounded, has_watermark)


def with_computed_columns(frame: DataFrame, table: TableDefinition) -> DataFrame:
    """The table's columns in order: ``frame``'s, and each computed column evaluated (``PROCTIME()`` is
    Spark's ``current_timestamp()``, the micro-batch's time)."""
    from pyspark.sql import functions as F

    from sqlext.catalog.changelog_formats import ROW_KIND

    if not any(column.expression for column in table.columns):
        return frame
    kind = [F.col(ROW_KIND)] if ROW_KIND in frame.columns else []  # a changelog's row kinds, last
    selected = []
    for column in table.columns:
        if column.expression:
            spark_sql = _proctime_as_now(sqlglot.parse_one(column.expression, read="spark")).sql(dialect="spark")
            selected.append(F.expr(spark_sql).alias(column.name))
        else:
            selected.append(F.col(f"`{column.name}`"))
    return frame.select(*selected, *kind)


def _proctime_as_now(expression: exp.Expr) -> exp.Expr:
    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous) and node.name.upper() == "PROCTIME" and not node.expressions:
            return exp.CurrentTimestamp()
        return node

    return expression.transform(replace)
