"""The ``print`` and ``blackhole`` sinks (as in Flink): rows to stdout (or stderr), or nowhere.

``print`` writes each row on the driver in Flink's format, ``[print-identifier> ]+I[v1, v2, ...]`` (a
streaming insert through ``foreachBatch``); it is for small results and debugging. ``blackhole``
consumes every row on the executors with Spark's ``noop`` format and keeps nothing (benchmarks, tests).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import date, datetime, time
from typing import TYPE_CHECKING, Any

from sqlext.options import BOOLEAN, INT, STRING, ConfigOption, Options, parallelism
from sqlext.registry import ConnectorFactory, SinkContext
from sqlext.sink import InsertPlan, TableSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

PRINT_IDENTIFIER = ConfigOption(
    "print-identifier", STRING, None, "Message that identifies print and is prefixed to every output row."
)
STANDARD_ERROR = ConfigOption(
    "standard-error", BOOLEAN, False, "Print to standard error instead of standard out (when true)."
)
PARALLELISM = ConfigOption(
    "sink.parallelism", INT, None, "Accepted for Flink DDL; rows are printed by the driver.", check=parallelism
)


def format_value(value: Any) -> str:
    """One value as Flink's ``Row.toString`` shows it (``null``, ``true``, ``2024-01-02T03:04:05``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, datetime | date | time):
        return _java_time(value)
    if isinstance(value, bytes | bytearray):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}={format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):  # a nested ROW (pyspark's Row is a tuple)
        return "+I[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


def _java_time(value: datetime | date | time) -> str:
    """ISO-8601 as Java's ``LocalDateTime.toString``: seconds only when not zero, millis/micros as needed."""
    if not isinstance(value, datetime | time):
        return value.isoformat()
    text = value.isoformat(timespec="microseconds").split("+")[0]
    if value.microsecond % 1000 == 0:
        text = text[:-3]
    if value.microsecond == 0:
        text = text[:-4]
        if value.second == 0:
            text = text[:-3]
    return text


def format_row(values: Sequence[Any], identifier: str | None) -> str:
    """Flink's print format: ``[identifier> ]+I[v1, v2, ...]``."""
    body = "+I[" + ", ".join(format_value(v) for v in values) + "]"
    return f"{identifier}> {body}" if identifier else body


def _with_trigger(writer: DataStreamWriter, plan: InsertPlan) -> DataStreamWriter:
    writer = writer.queryName(plan.query_name).option("checkpointLocation", plan.checkpoint_location)
    if plan.available_now:
        return writer.trigger(availableNow=True)
    if plan.trigger_interval:
        return writer.trigger(processingTime=plan.trigger_interval)
    return writer


class PrintSink(TableSink):
    """Prints rows on the driver (``foreachBatch`` in a stream)."""

    def __init__(self, identifier: str | None, to_stderr: bool) -> None:
        self.identifier = identifier
        self.to_stderr = to_stderr

    def print_rows(self, rows: DataFrame) -> None:
        """Print every row of a bounded DataFrame, in its order."""
        out = sys.stderr if self.to_stderr else sys.stdout
        for row in rows.toLocalIterator():
            print(format_row(list(row), self.identifier), file=out, flush=True)

    def start_stream(self, rows: DataFrame, plan: InsertPlan) -> StreamingQuery:
        writer = rows.writeStream.foreachBatch(lambda batch, _batch_id: self.print_rows(batch))
        return _with_trigger(writer, plan).start()

    def write_batch(self, rows: DataFrame, plan: InsertPlan) -> None:
        self.print_rows(rows)


class BlackHoleSink(TableSink):
    """Consumes rows with Spark's ``noop`` format: every row is computed, nothing is kept."""

    def start_stream(self, rows: DataFrame, plan: InsertPlan) -> StreamingQuery:
        return _with_trigger(rows.writeStream.format("noop"), plan).start()

    def write_batch(self, rows: DataFrame, plan: InsertPlan) -> None:
        rows.write.format("noop").mode("overwrite").save()


class PrintTableFactory(ConnectorFactory):
    """Rows printed on the driver; sink only."""

    identifier = "print"
    description = "Prints every row (Flink's +I[...] format) on the driver's stdout or stderr; sink only."

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (PRINT_IDENTIFIER, STANDARD_ERROR, PARALLELISM)

    def create_sink(self, context: SinkContext) -> TableSink:
        options = Options(context.table.options)
        return PrintSink(options.get(PRINT_IDENTIFIER), bool(options.get(STANDARD_ERROR)))


class BlackHoleTableFactory(ConnectorFactory):
    """Rows swallowed; sink only."""

    identifier = "blackhole"
    description = "Swallows every row (for benchmarks and tests); sink only."

    def create_sink(self, context: SinkContext) -> TableSink:
        return BlackHoleSink()
