"""The file formats as every HMS reader reads them back: how sqlext writes its files (the descriptor each
format gets in the HMS is :mod:`sqlext.catalog.hive_storage`'s; csv text, written and read,
:mod:`sqlext.catalog.csv_text`'s).

What every reader of a table's HMS descriptor must read back exactly is what was written, so each
format is written in the form its Hive SerDe reads (Spark, Trino and Flink read that form too):

- **parquet**: Spark's writer with ``spark.sql.parquet.writeLegacyFormat=true`` (Hive's layout: decimals
  as fixed-length byte arrays, lists and maps as Hive 2 reads them) and INT96 timestamps, given per
  write (never the session's setting). pyarrow rewrites keep the layout of the files they merge.
- **orc**: Spark's orc writer, as is. Parquet's and orc's format options reach the writer under their
  Hadoop keys (``'orc.compress' = 'ZLIB'`` as ``orc.compress``), as Flink passes them.
- **csv**: text in Hive's ``LazySimpleSerDe`` form (:mod:`sqlext.catalog.csv_text`).
- **json**: Spark's json writer with timestamps as ``yyyy-MM-dd HH:mm:ss.ffffff`` (what Hive's JSON
  SerDes and Flink's json ``SQL`` standard read), ``TIMESTAMP_LTZ`` in UTC with ``Z`` (what Flink's json
  reads), decimals as numbers (plain with ``json.encode.decimal-as-plain-number``,
  :mod:`sqlext.catalog.json_decimals`), bytes in base64, NULL fields as ``null``, a NaN or infinite DOUBLE/FLOAT
  as Flink's string unless ``json.encode.non-finite-number.mode`` says otherwise
  (:mod:`sqlext.catalog.json_numbers`); the HMS gets hcatalog's ``JsonSerDe`` (Hive 3/4 and Trino), Spark
  reads through the table's provider parameters.
- **avro**: Spark's Avro writer (``spark-avro``) with Flink's schema as ``avroSchema``
  (:mod:`sqlext.catalog.avro_form`); the HMS gets Hive's ``AvroSerDe`` with that schema as
  ``avro.schema.literal``.
- **raw**: one value a line, its bytes as they are (``raw.charset`` for a STRING), as Flink's filesystem
  connector writes a serialization format (a line feed after each record); Spark's text writer writes them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from sqlext.catalog.csv_text import CsvTextForm, utc_text
from sqlext.errors import OptionError, ValidationError
from sqlext.options import is_true

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Spark writer options that make parquet files Hive's SerDe reads (decimals, lists, maps; INT96 times).
PARQUET_WRITE_OPTIONS = {
    "spark.sql.parquet.writeLegacyFormat": "true",
    "spark.sql.parquet.outputTimestampType": "INT96",
}
#: Flink json ``timestamp-format.standard`` -> the pattern sqlext writes (Spark's, microseconds).
JSON_WRITE_TIMESTAMP_FORMATS = {
    "SQL": "yyyy-MM-dd HH:mm:ss.SSSSSS",
    "ISO-8601": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}
#: Types csv cannot hold (Flink's csv format refuses them too).
CSV_UNSUPPORTED = ("ARRAY", "MAP", "MULTISET", "ROW")


#: The types a raw table's one data column may have (Flink's raw holds numbers too, in binary; sqlext not).
RAW_TYPES = ("CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES")


def check_columns(fmt: str, columns: Sequence[tuple[str, str]], format_options: Mapping[str, str] = {}) -> None:
    """Refuse a column whose type the format cannot hold (``columns``: (name, Flink type), the data columns:
    not the partition keys; ``format_options``: the format's options, prefix stripped)."""
    if fmt == "avro":
        from sqlext.catalog import avro_schema

        legacy = format_options.get(avro_schema.LEGACY_KEY, "true").strip().lower() != "false"
        avro_schema.check_columns(columns, legacy)
        return
    if fmt == "raw":
        _check_raw_columns(columns)
        return
    if fmt != "csv":
        return
    for name, flink_type in columns:
        if flink_type.upper().startswith(CSV_UNSUPPORTED):
            raise ValidationError(
                f"Column '{name}' has type {flink_type}, which format 'csv' cannot hold (csv holds no ARRAY, "
                "MAP, MULTISET or ROW, as in Flink). Use format 'json', 'parquet' or 'orc', or flatten the column.",
                value=flink_type,
            )


def _check_raw_columns(columns: Sequence[tuple[str, str]]) -> None:
    from sqlext.sql.types import flink_type

    if len(columns) != 1 or flink_type(columns[0][1]).root not in RAW_TYPES:
        shown = ", ".join(f"{name} {type_}" for name, type_ in columns) or "none"
        raise ValidationError(
            "The 'raw' format holds exactly one data column (besides the partition keys), of type STRING, "
            f"VARCHAR, CHAR, BYTES, VARBINARY or BINARY (a line of text or bytes); the table has: {shown}.",
            value=shown,
        )


def ltz_columns(columns: Sequence[tuple[str, str]]) -> list[str]:
    """The names of the ``TIMESTAMP_LTZ`` columns among ``columns`` ((name, Flink type))."""
    return [name for name, flink_type in columns if flink_type.upper().startswith("TIMESTAMP_LTZ")]


def prepare_write(
    fmt: str,
    format_options: Mapping[str, str],
    rows: DataFrame,
    keys: Sequence[str],
    ltz: Collection[str] = (),
    columns: Sequence[tuple[str, str, bool]] = (),
    table: str = "the table",
) -> tuple[DataFrame, str, dict[str, str]]:
    """The frame, Spark format and writer options that write ``rows`` in the form every reader of the
    table's HMS descriptor reads back (see the module docstring); ``ltz``: the ``TIMESTAMP_LTZ`` columns;
    ``columns``: the table's physical columns (name, Flink type, nullable), which avro and raw need;
    ``table``: the table's name, for the errors a value that cannot be written raises."""
    if fmt == "avro":
        return _prepare_avro(format_options, rows, keys, columns)
    if fmt == "raw":
        return _prepare_raw(format_options, rows, keys, columns)
    if fmt in ("debezium-json", "canal-json", "maxwell-json"):
        from sqlext.catalog.changelog_encoding import event_lines
        from sqlext.catalog.json_decimals import mark_decimals, plain_decimals, unmarked

        marker = None
        if plain_decimals(format_options):
            rows, marker = mark_decimals(rows, keys)
        frame, spark_format, options = event_lines(fmt, json_write_options(format_options), rows, keys)
        return frame.withColumn("value", unmarked(frame["value"], marker)), spark_format, options
    if fmt == "parquet":
        return rows, "parquet", {**hadoop_keys(fmt, format_options), **PARQUET_WRITE_OPTIONS}
    if fmt == "csv":
        from pyspark.sql import functions as F

        form = CsvTextForm.from_options(format_options)
        data = [name for name in rows.columns if name not in keys]
        frame = rows.select(form.line(rows, data, ltz).alias("value"), *(F.col(f"`{k}`") for k in keys))
        return frame, "text", {}
    if fmt == "json":
        from sqlext.catalog.json_decimals import plain_decimals
        from sqlext.catalog.json_numbers import guard_non_finite, non_finite_mode

        options = json_write_options(format_options)
        not_null = [name for name, _, nullable in columns if not nullable]
        rows = guard_non_finite(rows, non_finite_mode(format_options), table, keys, not_null)
        if ltz:
            pattern = options["timestampFormat"]
            rows = rows.select(
                *(utc_text(rows[f"`{c}`"], pattern).alias(c) if c in ltz else f"`{c}`" for c in rows.columns)
            )
        if plain_decimals(format_options):
            return _plain_json_lines(rows, keys, options)
        return rows, "json", options
    return rows, fmt, hadoop_keys(fmt, format_options)


def _plain_json_lines(
    rows: DataFrame, keys: Sequence[str], options: dict[str, str]
) -> tuple[DataFrame, str, dict[str, str]]:
    """``json.encode.decimal-as-plain-number`` = ``true``: the lines Spark's json writer would write, with
    every DECIMAL plain (:mod:`sqlext.catalog.json_decimals`); the rows as they are if none holds one."""
    from pyspark.sql import functions as F

    from sqlext.catalog.json_decimals import mark_decimals, unmarked

    marked, marker = mark_decimals(rows, keys)
    if marker is None:
        return rows, "json", options
    data = F.struct(*(marked[f"`{c}`"] for c in marked.columns if c not in keys))
    line = unmarked(F.to_json(data, options), marker)
    return marked.select(line.alias("value"), *(F.col(f"`{k}`") for k in keys)), "text", {"lineSep": "\n"}


def hadoop_keys(fmt: str, format_options: Mapping[str, str]) -> dict[str, str]:
    """A parquet or orc table's format options as the writer's Hadoop keys, prefix kept (``orc.compress``,
    ``parquet.block.size``): Flink hands them to the format's writer so, and Spark's writer reads them from the
    write options the same way (its own ``compression`` aside)."""
    return {f"{fmt}.{key}": value for key, value in format_options.items()}


def json_write_options(format_options: Mapping[str, str]) -> dict[str, str]:
    """Spark json writer options from a table's Flink json options."""
    standard = format_options.get("timestamp-format.standard", "SQL").strip().upper()
    pattern = JSON_WRITE_TIMESTAMP_FORMATS.get(standard)
    if pattern is None:
        raise OptionError(
            f"Invalid value for option 'json.timestamp-format.standard': '{standard}'. "
            f"Expected one of: {', '.join(JSON_WRITE_TIMESTAMP_FORMATS)}.",
            option="json.timestamp-format.standard",
            value=standard,
        )
    return {
        "timestampFormat": pattern,
        "timestampNTZFormat": pattern,
        "dateFormat": "yyyy-MM-dd",
        "ignoreNullFields": str(is_true(format_options, "encode.ignore-null-fields")).lower(),
    }


def _prepare_avro(
    format_options: Mapping[str, str], rows: DataFrame, keys: Sequence[str], columns: Sequence[tuple[str, str, bool]]
) -> tuple[DataFrame, str, dict[str, str]]:
    from pyspark.sql import functions as F

    from sqlext.catalog.avro_form import AvroForm

    data = [column for column in columns if column[0] not in keys]
    form = AvroForm.from_options(format_options, data)
    zone = rows.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    frame = rows.select(
        *(form.written(rows[f"`{name}`"], name, flink, zone).alias(name) for name, flink, _ in data),
        *(F.col(f"`{k}`") for k in keys),
    )
    return frame, "avro", form.write_options()


def _prepare_raw(
    format_options: Mapping[str, str], rows: DataFrame, keys: Sequence[str], columns: Sequence[tuple[str, str, bool]]
) -> tuple[DataFrame, str, dict[str, str]]:
    from pyspark.sql import functions as F

    from sqlext.sql.types import spark_type

    [(name, flink, _)] = [column for column in columns if column[0] not in keys]
    value = rows[f"`{name}`"]
    data = value if spark_type(flink) == "binary" else F.encode(value, format_options.get("charset", "UTF-8"))
    null = F.raise_error(
        F.lit(f"Column '{name}' holds NULL, which format 'raw' cannot write (a line holds a value; Flink fails too).")
    )
    # The bytes as they are: Spark's text writer writes a string's bytes without looking at them.
    line = F.when(value.isNull(), null).otherwise(data).cast("binary").cast("string")
    return rows.select(line.alias("value"), *(F.col(f"`{k}`") for k in keys)), "text", {"lineSep": "\n"}
