"""The ``datagen`` connector (Flink's ``DataGenTableSourceFactory``): generated rows, random or a sequence
per field.

Options, as in Flink: ``rows-per-second`` (default 10000), ``number-of-rows`` (set: the source is
bounded), and per field ``fields.<f>.<option>``:

- ``kind``: ``random`` (default) or ``sequence``;
- random numbers: ``min``/``max`` (defaults: the type's range, as Flink; FLOAT/DOUBLE from the smallest
  positive value to the largest, DECIMAL(p, s) the values p and s can hold);
- random strings and bytes: ``length`` (default 100; hex characters, or bytes), ``var-len`` (a random
  length from 1 to ``length``);
- random TIMESTAMP/TIMESTAMP_LTZ: ``max-past`` (a random instant up to that long before now; default 0:
  now). DATE is today, TIME the time of day now, BOOLEAN random;
- sequences (numbers and strings): ``start`` and ``end``, both required; the source ends after the
  shortest sequence (or ``number-of-rows``, whichever comes first), as Flink's does;
- ``null-rate``: the fraction of NULLs (0 to 1).

How rows are made: every value is a Spark SQL expression of the row number (no Python UDFs, so it runs
the same on a cluster). "Random" values are a 64-bit hash of the row number and a per-field salt drawn
when the source is built: distinct rows get independent values and every run differs, yet each row is
reproducible within a run (a replayed micro-batch regenerates the same rows).

- unbounded: Spark's ``rate`` source at ``rows-per-second``; timestamps are the generation time;
- bounded, batch: ``spark.range(n)``;
- bounded, streaming: the rows are generated once (files of ``rows-per-second`` rows, under
  ``<checkpoint root>/_datagen/<table>-<hash of its definition>``) and read back by a file stream, one
  file per micro-batch. The insert runs it with ``availableNow`` (:meth:`DataGenTableFactory.is_bounded`),
  so the query ends when every row is written; a restarted insert finds the same files and resumes from
  its checkpoint instead of starting over. Delete that directory to get new rows for the same table.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlext.errors import OptionError, ValidationError
from sqlext.options import (
    BOOLEAN,
    DURATION,
    INT,
    STRING,
    ConfigOption,
    Options,
    OptionType,
    enum_type,
    positive,
)
from sqlext.registry import ConnectorFactory, SourceContext
from sqlext.table import Column, TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

ROWS_PER_SECOND = ConfigOption(
    "rows-per-second",
    INT,
    10000,
    "Rows generated per second (unbounded); rows per micro-batch of a bounded streaming read.",
    check=positive,
)
NUMBER_OF_ROWS = ConfigOption(
    "number-of-rows", INT, None, "Total rows to generate; set, the source is bounded.", check=positive
)
FIELDS = ConfigOption(
    "fields.",
    STRING,
    None,
    "Per-field options fields.<name>.<option>: kind (random or sequence), min and max (random numbers; "
    "default the type's range), length (random strings and bytes, default 100), var-len (random length up to "
    "length), max-past (random timestamps up to this long before now, default 0), start and end (sequences; "
    "the source ends with the shortest sequence), null-rate (0 to 1).",
    prefix=True,
)

RANDOM, SEQUENCE = "random", "sequence"


def _number(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError("a number") from None


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("an integer") from None


def _rate(text: str) -> float:
    value = _number(text)
    if not 0 <= value <= 1:
        raise ValueError("a number from 0 to 1")
    return value


KIND = enum_type(RANDOM, SEQUENCE)
NUMBER: OptionType[float] = OptionType("Number", _number, form="a number")
INTEGER: OptionType[int] = OptionType("Integer", _integer, form="an integer")
RATE: OptionType[float] = OptionType("Double", _rate, form="a number from 0 to 1")


def _length(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise ValueError("an integer greater than 0")
    return value


LENGTH: OptionType[int] = OptionType("Integer", _length, form="an integer greater than 0")

_INTEGRAL_RANGES = {
    "TINYINT": (-(2**7), 2**7 - 1),
    "SMALLINT": (-(2**15), 2**15 - 1),
    "INT": (-(2**31), 2**31 - 1),
    "INTEGER": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
}
_FRACTIONAL_RANGES = {"FLOAT": (1.4e-45, 3.4028235e38), "DOUBLE": (5e-324, 1.7976931348623157e308)}
_STRINGS = ("CHAR", "VARCHAR", "STRING")
_BYTES = ("BINARY", "VARBINARY", "BYTES")
_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
_OTHERS = ("BOOLEAN", "DATE", "TIME")
_SEQUENCE_TYPES = (*_INTEGRAL_RANGES, *_FRACTIONAL_RANGES, "DECIMAL", *_STRINGS)
_RANDOM_TYPES = (*_SEQUENCE_TYPES, *_BYTES, *_TIMESTAMPS, *_OTHERS)
_SUPPORTED_TYPES = "Supported types: numbers, strings, bytes, BOOLEAN, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ."


def _base_type(column: Column) -> str:
    return re.split(r"[(<\s]", column.type.strip(), maxsplit=1)[0].upper()


def _random_options(base: str) -> dict[str, OptionType[Any]]:
    """Per-field options of a random field of this type (``kind`` and ``null-rate`` apply to all)."""
    common: dict[str, OptionType[Any]] = {"kind": KIND, "null-rate": RATE}
    if base in _INTEGRAL_RANGES:
        return {**common, "min": INTEGER, "max": INTEGER}
    if base in (*_FRACTIONAL_RANGES, "DECIMAL"):
        return {**common, "min": NUMBER, "max": NUMBER}
    if base in (*_STRINGS, *_BYTES):
        return {**common, "length": LENGTH, "var-len": BOOLEAN}
    if base in _TIMESTAMPS:
        return {**common, "max-past": DURATION}
    return common


def _sequence_options() -> dict[str, OptionType[Any]]:
    return {"kind": KIND, "null-rate": RATE, "start": INTEGER, "end": INTEGER}


@dataclass(frozen=True)
class FieldSpec:
    """One column's generator, from its ``fields.<name>.*`` options (raw values, validated)."""

    column: Column
    options: Mapping[str, str]

    @property
    def base(self) -> str:
        return _base_type(self.column)

    @property
    def is_sequence(self) -> bool:
        return self.options.get("kind", RANDOM).strip().lower() == SEQUENCE

    def value(self, option: str, option_type: OptionType[Any], default: Any = None) -> Any:
        return option_type.parse(self.options[option]) if option in self.options else default

    @property
    def length(self) -> int:
        """Rows a sequence yields (``end - start + 1``)."""
        return int(self.value("end", INTEGER)) - int(self.value("start", INTEGER)) + 1


def field_specs(table: TableDefinition) -> list[FieldSpec]:
    """Every physical column's generator spec, validating the ``fields.*`` options on the way."""
    by_name = {column.name.lower(): column for column in table.physical_columns}
    raw: dict[str, dict[str, str]] = {}
    for key, value in table.options.items():
        if key.startswith(FIELDS.key):
            name, _, option = key[len(FIELDS.key) :].rpartition(".")
            if name.lower() not in by_name:
                raise OptionError(
                    f"Option '{key}' names field '{name}', which is not a column of {table.identifier} "
                    f"({', '.join(c.name for c in table.physical_columns)}).",
                    option=key,
                    value=value,
                )
            raw.setdefault(by_name[name.lower()].name, {})[option] = value
    specs = [FieldSpec(column, raw.get(column.name, {})) for column in table.physical_columns]
    for spec in specs:
        _check_field(spec)
    return specs


def _check_field(spec: FieldSpec) -> None:
    name, base = spec.column.name, spec.base
    kind = _keyed(KIND, f"fields.{name}.kind").parse(spec.options["kind"]) if "kind" in spec.options else RANDOM
    if base not in (_SEQUENCE_TYPES if kind == SEQUENCE else _RANDOM_TYPES):
        raise OptionError(
            f"datagen cannot generate field '{name}' of type {spec.column.type} as a {kind} field. "
            + ("Sequences are numbers or strings." if kind == SEQUENCE else _SUPPORTED_TYPES),
            option=f"fields.{name}.kind",
        )
    supported = _sequence_options() if kind == SEQUENCE else _random_options(base)
    for option, value in spec.options.items():
        key = f"fields.{name}.{option}"
        if option not in supported:
            raise OptionError(
                f"Unsupported option '{key}' for 'datagen': a {kind} field of type {spec.column.type} takes "
                f"{', '.join(f'fields.{name}.{o}' for o in supported)}.",
                option=key,
                value=value,
            )
        _keyed(supported[option], key).parse(value)
    if kind == SEQUENCE:
        _check_sequence(spec)
    elif "min" in spec.options and "max" in spec.options and spec.value("min", NUMBER) > spec.value("max", NUMBER):
        raise OptionError(f"'fields.{name}.min' is greater than 'fields.{name}.max'.", option=f"fields.{name}.min")


def _check_sequence(spec: FieldSpec) -> None:
    name = spec.column.name
    if "start" not in spec.options or "end" not in spec.options:
        raise OptionError(
            f"Field '{name}' is a sequence: 'fields.{name}.start' and 'fields.{name}.end' are required.",
            option=f"fields.{name}.kind",
        )
    if spec.length < 1:
        raise OptionError(
            f"'fields.{name}.start' ({spec.options['start']}) is greater than 'fields.{name}.end' "
            f"({spec.options['end']}).",
            option=f"fields.{name}.start",
        )


def _keyed(option_type: OptionType[Any], key: str) -> ConfigOption[Any]:
    """A throwaway declaration, to parse a per-field value with the usual "Invalid value" message."""
    return ConfigOption(key, option_type)


class DataGenTableFactory(ConnectorFactory):
    """Generated rows; source only."""

    identifier = "datagen"
    description = "Generated rows (random or sequence per field), bounded with number-of-rows; source only."

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (ROWS_PER_SECOND, NUMBER_OF_ROWS, FIELDS)

    def validate(self, table: TableDefinition) -> None:
        """Declared options, then each ``fields.<f>.<option>``: a column, an option of its kind and type,
        a value of the option's form."""
        super().validate(table)
        for column in table.columns:
            if column.metadata_key:
                raise OptionError(
                    f"Column '{column.name}' reads metadata '{column.metadata_key}', but the datagen connector "
                    "offers no metadata.",
                    value=column.metadata_key,
                )
        field_specs(table)

    def row_count(self, table: TableDefinition) -> int | None:
        """Rows a bounded generator produces, or None when it is unbounded."""
        count = Options(table.options).get(NUMBER_OF_ROWS)
        lengths = [spec.length for spec in field_specs(table) if spec.is_sequence]
        return min([*lengths, *([count] if count else [])]) if lengths or count else None

    def is_bounded(self, table: TableDefinition) -> bool:
        """Bounded with ``number-of-rows`` or a sequence field."""
        return self.row_count(table) is not None

    def create_source(self, context: SourceContext) -> DataFrame:
        """Rows as described in the module docstring."""
        from pyspark.sql import functions as F

        table, spark = context.table, context.spark
        rows_per_second = Options(table.options).get(ROWS_PER_SECOND)
        count = self.row_count(table)
        if count is None:
            if not context.streaming:
                raise OptionError(
                    f"datagen table {table.identifier} is unbounded: set 'number-of-rows' (or a sequence "
                    "field) to read it in batch mode.",
                    option=NUMBER_OF_ROWS.key,
                )
            ticks = spark.readStream.format("rate").option("rowsPerSecond", rows_per_second).load()
            return generate(ticks.select(F.col("value").alias("__id"), F.col("timestamp").alias("__now")), table)
        numbered = spark.range(count).select(F.col("id").alias("__id"), F.current_timestamp().alias("__now"))
        rows = generate(numbered, table)
        if not context.streaming:
            return rows
        if context.state_root is None:
            raise ValidationError(
                f"datagen table {table.identifier} is bounded: streaming it needs a directory to write its rows to "
                "once (SourceContext.state_root, the checkpoint root), and none was given."
            )
        location = _pregenerated(table, rows, rows_per_second, context.state_root)
        return spark.readStream.schema(rows.schema).option("maxFilesPerTrigger", 1).parquet(location)


def generate(numbered: DataFrame, table: TableDefinition) -> DataFrame:
    """The table's physical columns from a frame of ``__id`` (row number) and ``__now`` (generation time)."""
    salts = random.Random()
    return numbered.select(
        *(_field_value(spec, salts.getrandbits(62)).alias(spec.column.name) for spec in field_specs(table))
    )


def _uniform(salt: int, part: int = 0) -> SparkColumn:
    """A double in [0, 1) from a hash of the row number: independent per row, salt and part."""
    from pyspark.sql import functions as F

    bits = F.pmod(F.xxhash64(F.col("__id"), F.lit(salt), F.lit(part)), F.lit(2**53))
    return bits / F.lit(float(2**53))


def _field_value(spec: FieldSpec, salt: int) -> SparkColumn:
    from pyspark.sql import functions as F

    from sqlext.sql.types import spark_type

    value = _sequence_value(spec) if spec.is_sequence else _random_value(spec, salt)
    null_rate = spec.value("null-rate", RATE, 0.0)
    if null_rate > 0:
        value = F.when(_uniform(salt, 99) < null_rate, F.lit(None)).otherwise(value)
    return value.cast(spark_type(spec.column.type))


def _sequence_value(spec: FieldSpec) -> SparkColumn:
    from pyspark.sql import functions as F

    return F.lit(int(spec.value("start", INTEGER))) + F.col("__id")


def _random_value(spec: FieldSpec, salt: int) -> SparkColumn:
    from pyspark.sql import functions as F

    base = spec.base
    if base in _INTEGRAL_RANGES:
        low, high = _INTEGRAL_RANGES[base]
        return _random_integer(int(spec.value("min", INTEGER, low)), int(spec.value("max", INTEGER, high)), salt)
    if base in _FRACTIONAL_RANGES or base == "DECIMAL":
        low_f, high_f = _FRACTIONAL_RANGES.get(base) or _decimal_range(spec.column.type)
        low_f, high_f = spec.value("min", NUMBER, low_f), spec.value("max", NUMBER, high_f)
        drawn = F.lit(low_f) + _uniform(salt) * (F.lit(high_f) - F.lit(low_f))
        return F.least(F.greatest(drawn, F.lit(low_f)), F.lit(high_f))  # no rounding past the type's range
    if base in (*_STRINGS, *_BYTES):
        return _random_text(spec, salt)
    if base in _TIMESTAMPS:
        past = spec.value("max-past", DURATION)
        past_ms = int(past.total_seconds() * 1000) if past else 0
        offset = F.floor(_uniform(salt) * F.lit(past_ms)).cast("bigint")
        return F.timestamp_millis(F.unix_millis(F.col("__now")) - offset)
    if base == "BOOLEAN":
        return _uniform(salt) < F.lit(0.5)
    if base == "DATE":
        return F.to_date(F.col("__now"))
    return F.date_format(F.col("__now"), "HH:mm:ss")  # TIME: the time of day (a string in Spark)


def _random_integer(low: int, high: int, salt: int) -> SparkColumn:
    """``low + (hash mod span)`` in DECIMAL(20, 0), which holds a BIGINT's whole range."""
    from pyspark.sql import functions as F

    span = F.lit(str(high - low + 1)).cast("decimal(20,0)")
    hashed = F.xxhash64(F.col("__id"), F.lit(salt)).cast("decimal(20,0)")
    return F.lit(str(low)).cast("decimal(20,0)") + F.pmod(hashed, span)


def _decimal_range(flink_type: str) -> tuple[float, float]:
    match = re.search(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", flink_type)
    precision, scale = (int(match.group(1)), int(match.group(2) or 0)) if match else (10, 0)
    largest = 10.0 ** (precision - scale) - 10.0 ** (-scale)
    return -largest, largest


def _random_text(spec: FieldSpec, salt: int) -> SparkColumn:
    """Random hex characters (strings) or bytes, ``length`` long (or 1 to ``length`` with ``var-len``)."""
    from pyspark.sql import functions as F

    length = int(spec.value("length", LENGTH, 100))
    is_bytes = spec.base in _BYTES
    hex_chars = 2 * length if is_bytes else length
    pieces = [F.sha2(F.concat_ws("/", F.lit(str(salt)), F.col("__id"), F.lit(str(k))), 256) for k in range(64)]
    hex_text = F.concat(*pieces[: math.ceil(hex_chars / 64)])
    size: SparkColumn = F.lit(hex_chars)
    if spec.value("var-len", BOOLEAN, False):
        chosen = F.lit(1) + F.floor(_uniform(salt, 1) * F.lit(length)).cast("int")
        size = chosen * F.lit(2) if is_bytes else chosen
    text = F.substring(hex_text, F.lit(1), size)
    return F.unhex(text) if is_bytes else text


def _pregenerated(table: TableDefinition, rows: DataFrame, rows_per_second: int, state_root: str) -> str:
    """Write a bounded table's rows once (files of ``rows_per_second`` rows) and return where they are."""
    from sqlext.io.fs import FileSystem, join

    definition = json.dumps(
        [str(table.identifier), [(c.name, c.type) for c in table.physical_columns], sorted(table.options.items())]
    )
    digest = hashlib.sha256(definition.encode()).hexdigest()[:16]
    location = join(state_root, "_datagen", f"{table.identifier}-{digest}")
    if not FileSystem(location).exists(join(location, "_SUCCESS")):
        rows.coalesce(1).write.mode("overwrite").option("maxRecordsPerFile", rows_per_second).parquet(location)
    return location
