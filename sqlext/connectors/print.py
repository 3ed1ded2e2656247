"""The ``print`` and ``blackhole`` sinks (as in Flink): rows to stdout, or nowhere."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlext.options import BOOLEAN, INT, STRING, ConfigOption, Options, positive
from sqlext.registry import ConnectorFactory, SinkContext
from sqlext.sink.api import InsertPlan, TableSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

PRINT_IDENTIFIER = ConfigOption("print-identifier", STRING, None, "A prefix for every printed row.")
STANDARD_ERROR = ConfigOption("standard-error", BOOLEAN, False, "Print to standard error instead of standard out.")
PARALLELISM = ConfigOption(
    "sink.parallelism", INT, None, "Accepted for Flink DDL; rows are printed by the driver.", check=positive
)


def format_row(values: Sequence[Any], identifier: str | None) -> str:
    """Flink's print format: ``[identifier> ]+I[v1, v2, ...]``."""
    body = "+I[" + ", ".join("null" if v is None else str(v) for v in values) + "]"
    return f"{identifier}> {body}" if identifier else body


class _ForEachBatchSink(TableSink):
    def handle(self, rows: DataFrame) -> None:
        raise NotImplementedError

    def start_stream(self, rows: DataFrame, plan: InsertPlan) -> StreamingQuery:
        writer = (
            rows.writeStream.foreachBatch(lambda batch, _batch_id: self.handle(batch))
            .queryName(plan.query_name)
            .option("checkpointLocation", plan.checkpoint_location)
        )
        if plan.available_now:
            writer = writer.trigger(availableNow=True)
        elif plan.trigger_interval:
            writer = writer.trigger(processingTime=plan.trigger_interval)
        return writer.start()

    def write_batch(self, rows: DataFrame, plan: InsertPlan) -> None:
        self.handle(rows)


class PrintSink(_ForEachBatchSink):
    def __init__(self, identifier: str | None, to_stderr: bool) -> None:
        self.identifier = identifier
        self.to_stderr = to_stderr

    def handle(self, rows: DataFrame) -> None:
        out = sys.stderr if self.to_stderr else sys.stdout
        for row in rows.toLocalIterator():
            print(format_row(list(row), self.identifier), file=out, flush=True)


class BlackHoleSink(_ForEachBatchSink):
    def handle(self, rows: DataFrame) -> None:
        rows.foreach(lambda _row: None)  # consume the rows, as a sink would


class PrintTableFactory(ConnectorFactory):
    identifier = "print"
    description = "Prints every row (Flink's +I[...] format) on the driver's stdout or stderr; sink only."

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (PRINT_IDENTIFIER, STANDARD_ERROR, PARALLELISM)

    def create_sink(self, context: SinkContext) -> TableSink:
        options = Options(context.table.options)
        return PrintSink(options.get(PRINT_IDENTIFIER), options.get(STANDARD_ERROR))


class BlackHoleTableFactory(ConnectorFactory):
    identifier = "blackhole"
    description = "Swallows every row (for benchmarks and tests); sink only."

    def create_sink(self, context: SinkContext) -> TableSink:
        return BlackHoleSink()
