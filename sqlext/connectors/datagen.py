"""The ``datagen`` connector (as in Flink): generated rows, random or sequence per field.

Unbounded (no ``number-of-rows`` and not all fields sequences with an end): Spark's ``rate`` source at
``rows-per-second``, timestamps at generation time. Bounded: ``number-of-rows`` rows (or the length of the
shortest sequence); a streaming insert from it gets them in micro-batches of ``rows-per-second`` rows (the
rows are generated once into a hidden parquet dir the stream then reads), then ends and commits.

Everything is generated with Spark SQL expressions (no Python UDFs), so it runs the same on a cluster.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlext.errors import OptionError
from sqlext.options import INT, STRING, ConfigOption, Options, OptionType, enum_type, positive
from sqlext.registry import ConnectorFactory, SourceContext
from sqlext.table import Column, TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

ROWS_PER_SECOND = ConfigOption("rows-per-second", INT, 10000, "Rows generated per second.", check=positive)
NUMBER_OF_ROWS = ConfigOption(
    "number-of-rows", INT, None, "Total rows to generate; set, the source is bounded.", check=positive
)
FIELDS = ConfigOption(
    "fields.",
    STRING,
    None,
    "Per-field options fields.<name>.<option>: kind (random or sequence), min, max (numbers), length "
    "(strings, default 100), start and end (sequences; a sequence with an end bounds the source), max-past "
    "(timestamps: up to this long before now, default 0), null-rate (0 to 1).",
    prefix=True,
)
FIELD_OPTIONS: dict[str, OptionType[Any]] = {
    "kind": enum_type("random", "sequence"),
    "min": STRING,
    "max": STRING,
    "max-past": STRING,
    "length": INT,
    "start": STRING,
    "end": STRING,
    "null-rate": STRING,
}
_INTEGRAL = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT")
_FRACTIONAL = ("FLOAT", "DOUBLE", "DECIMAL")


def _field_options(table: TableDefinition) -> dict[str, dict[str, str]]:
    fields: dict[str, dict[str, str]] = {}
    names = {c.name.lower(): c.name for c in table.columns}
    for key, value in table.options.items():
        if not key.startswith("fields."):
            continue
        name, _, option = key[len("fields.") :].rpartition(".")
        if name.lower() not in names:
            raise OptionError(
                f"Option '{key}' names field '{name}', which is not a column of {table.identifier} "
                f"({', '.join(names.values())}).",
                option=key,
            )
        if option not in FIELD_OPTIONS:
            raise OptionError(
                f"Unsupported option '{key}' for 'datagen'. Per-field options are: "
                f"{', '.join('fields.<name>.' + o for o in FIELD_OPTIONS)}.",
                option=key,
            )
        try:
            FIELD_OPTIONS[option].parse(value)
        except ValueError as exc:
            raise OptionError(f"Invalid value for option '{key}': '{value}'. Expected {exc}.", option=key) from None
        fields.setdefault(names[name.lower()], {})[option] = value
    return fields


def _base_type(column: Column) -> str:
    return column.type.split("(")[0].split("<")[0].strip().upper()


class DataGenTableFactory(ConnectorFactory):
    identifier = "datagen"
    description = "Generated rows (random or sequence per field), bounded with number-of-rows; source only."

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (ROWS_PER_SECOND, NUMBER_OF_ROWS, FIELDS)

    def validate(self, table: TableDefinition) -> None:
        super().validate(table)
        for name, options in _field_options(table).items():
            if options.get("kind") == "sequence" and ("start" not in options or "end" not in options):
                raise OptionError(
                    f"Field '{name}' is a sequence: 'fields.{name}.start' and 'fields.{name}.end' are required.",
                    option=f"fields.{name}.kind",
                )

    def row_count(self, table: TableDefinition) -> int | None:
        """Rows a bounded generator produces, or None when it is unbounded."""
        count = Options(table.options).get(NUMBER_OF_ROWS)
        sequences = [o for o in _field_options(table).values() if o.get("kind") == "sequence"]
        lengths = [int(o["end"]) - int(o["start"]) + 1 for o in sequences]
        if lengths:
            count = min([*lengths, *([count] if count else [])])
        return count

    def is_bounded(self, table: TableDefinition) -> bool:
        return self.row_count(table) is not None

    def create_source(self, context: SourceContext) -> DataFrame:
        from pyspark.sql import functions as F

        table = context.table
        options = Options(table.options)
        rows_per_second = options.get(ROWS_PER_SECOND)
        count = self.row_count(table)
        spark = context.spark
        if count is None:
            if not context.streaming:
                raise OptionError(
                    f"datagen table {table.identifier} is unbounded: set 'number-of-rows' to read it in batch mode.",
                    option=NUMBER_OF_ROWS.key,
                )
            base = spark.readStream.format("rate").option("rowsPerSecond", rows_per_second).load()
            return self._columns(base.select(F.col("value").alias("__id"), F.col("timestamp").alias("__now")), table)
        generated = self._columns(
            spark.range(count).select(F.col("id").alias("__id"), F.current_timestamp().alias("__now")), table
        )
        if not context.streaming:
            return generated
        # A bounded stream: generate once, then read back one rows-per-second slice per micro-batch.
        from sqlext.paths import default_home

        location = (default_home() / "datagen" / uuid.uuid4().hex).as_uri()
        slices = max(1, math.ceil(count / rows_per_second))
        ordered = generated.withColumn("__slice", F.floor(F.monotonically_increasing_id() % slices))
        ordered.repartition(slices, "__slice").drop("__slice").write.parquet(location)
        return spark.readStream.schema(generated.schema).option("maxFilesPerTrigger", 1).parquet(location)

    def _columns(self, base: DataFrame, table: TableDefinition) -> DataFrame:
        fields = _field_options(table)
        selected = [
            self._value(column, fields.get(column.name, {})).alias(column.name) for column in table.physical_columns
        ]
        return base.select(*selected)

    def _value(self, column: Column, options: dict[str, str]) -> SparkColumn:
        from pyspark.sql import functions as F

        from sqlext.types import spark_type

        kind = _base_type(column)
        row_id = F.col("__id")
        if options.get("kind") == "sequence":
            value = F.lit(int(options["start"])) + row_id
        elif kind in _INTEGRAL:
            low, high = (
                int(options.get("min", 0)),
                int(options.get("max", 2**31 - 1 if kind != "TINYINT" else 127)),
            )
            value = F.lit(low) + F.floor(F.rand() * (high - low + 1))
        elif kind in _FRACTIONAL:
            low_f, high_f = float(options.get("min", 0)), float(options.get("max", 1_000_000))
            value = F.lit(low_f) + F.rand() * (high_f - low_f)
        elif kind == "BOOLEAN":
            value = F.rand() < 0.5
        elif kind in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            from sqlext.options import parse_duration

            past_ms = int(parse_duration(options.get("max-past", "0 ms")).total_seconds() * 1000)
            value = F.timestamp_millis(F.unix_millis(F.col("__now")) - F.floor(F.rand() * past_ms).cast("bigint"))
        elif kind == "DATE":
            value = F.to_date(F.col("__now"))
        else:
            length = int(options.get("length", 100))
            digest = F.sha2(F.concat(F.rand().cast("string"), row_id.cast("string")), 256)
            value = F.substring(F.repeat(digest, math.ceil(length / 64)), 1, length)
        null_rate = float(options.get("null-rate", 0))
        if null_rate > 0:
            value = F.when(F.rand() < null_rate, F.lit(None)).otherwise(value)
        return value.cast(spark_type(column.type))
