"""DuckDB and Polars read sqlext's tables by path, with no metastore, as a user points them at a table's
directory: the interop matrix (:mod:`tests.support.interop`) written by a batch INSERT in parquet, csv and json,
read back and compared value by value with what was written.

What a by-path user must give them (and the test gives):

- the glob ``<table>/[!_.]*/[!_.]*.<ext>``: both readers read every file ``*`` matches, also names starting with
  ``.`` or ``_`` (``_SUCCESS`` is excluded only by its missing extension), and ``**`` descends into
  ``_sqlext/staging``, where a running insert's files are (Polars' ``hidden_file_prefix`` skips file names
  only, not directories). The fixture puts such files beside and under the committed ones;
- the table's column types (the files' schema is the table's for parquet only); a binary column of csv and
  json is base64 text (Flink's and Hive's form), which the query decodes;
- Polars' parquet reader reads Spark's INT96 timestamps as nanoseconds (9999-12-31 overflows): the schema
  gives them microseconds; Polars reads no Hive partition directory of csv or json: the key comes from the
  file's path.

What reads differently (expected exactly, :func:`_as_read_by_path`): csv strings with a backslash, quote or
line break as their escaped text and a line with an escaped delimiter skipped (DuckDB) or shifted (Polars):
neither has an escape character outside quotes; Polars' json DECIMALs through a double.

ORC: neither is run (DuckDB 2.0.1 has no ORC reader; Polars 2.1.0 reads no ORC).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from sqlext.sql.types import spark_json_type
from tests.support.extension import extended_session
from tests.support.interop import (
    HOSTILE_STRINGS,
    PARTITION_KEY,
    assert_rows_equal,
    columns_for,
    create_matrix_sources,
    ddl_columns,
    expected_rows,
    table_options,
)

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

DB = "path_readers"
FORMATS = ("parquet", "csv", "json")
#: The extension of the data files sqlext writes in a format.
EXTENSIONS = {"parquet": "parquet", "csv": "txt", "json": "json"}
BINARY_TYPES = ("BINARY", "VARBINARY", "BYTES")
TIMESTAMP_TYPES = ("TIMESTAMP",)


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The Spark session, extended, with the database ``path_readers``; its root directory."""
    root = tmp_path_factory.mktemp("path_readers")
    with extended_session(spark, root, DB):
        yield root


@pytest.fixture(scope="module")
def written(spark: Any, session: Path) -> Path:
    """For each format, ``path_readers.t_<fmt>`` at ``<root>/t_<fmt>`` holding the matrix's rows, written by a
    batch INSERT; then, in each table, copies of a data file where a by-path reader must not look: a running
    insert's staging directory and hidden names (``.``, ``_``) beside the committed file."""
    create_matrix_sources(spark, DB, session)
    for fmt in FORMATS:
        options = table_options(fmt, session / f"t_{fmt}")
        spark.sql(f"CREATE TABLE {DB}.t_{fmt} ({ddl_columns(fmt)}) PARTITIONED BY (p) WITH ({options})")
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        [row] = spark.sql(f"INSERT INTO {DB}.t_{fmt} SELECT * FROM {DB}.src_{fmt}").collect()
        assert row.status == "FINISHED", row
        _place_files_not_to_read(session / f"t_{fmt}", fmt)
    return session


def _place_files_not_to_read(table: Path, fmt: str) -> None:
    [committed] = (table / "p=a").glob(f"part-*.{EXTENSIONS[fmt]}")
    staging = table / "_sqlext" / "staging" / "in_flight" / "p=a"
    staging.mkdir(parents=True)
    for target in (
        staging / committed.name,
        table / "p=a" / f".{committed.name}",
        table / "p=a" / f"_{committed.name}",
    ):
        shutil.copyfile(committed, target)


def _glob(table: Path, fmt: str) -> str:
    return f"{table}/[!_.]*/[!_.]*.{EXTENSIONS[fmt]}"


def _data_columns(fmt: str) -> list[tuple[str, str]]:
    return [(name, type_) for name, type_ in columns_for(fmt) if name != PARTITION_KEY]


def _to_python(value: Any, flink_type: str) -> Any:
    """A reader's value as the interop helpers compare it: a ROW (a dict in both readers) as a tuple."""
    if value is None:
        return None
    if flink_type.startswith("ROW"):
        return tuple(value.values())
    if flink_type.startswith("ARRAY<ROW"):
        return [None if item is None else tuple(item.values()) for item in value]
    return value


def _as_python(rows: Sequence[Sequence[Any]], fmt: str) -> list[tuple[Any, ...]]:
    types = [type_ for _, type_ in columns_for(fmt)]
    return [tuple(_to_python(v, t) for v, t in zip(row, types, strict=True)) for row in rows]


# DuckDB


#: Spark's JSON names of the simple types (:func:`spark_json_type`) as DuckDB and Polars call them.
SIMPLE_TYPES: dict[str, tuple[str, Any]] = {
    "boolean": ("BOOLEAN", pl.Boolean),
    "byte": ("TINYINT", pl.Int8),
    "short": ("SMALLINT", pl.Int16),
    "integer": ("INTEGER", pl.Int32),
    "long": ("BIGINT", pl.Int64),
    "float": ("FLOAT", pl.Float32),
    "double": ("DOUBLE", pl.Float64),
    "string": ("VARCHAR", pl.String),
    "binary": ("BLOB", pl.Binary),
    "date": ("DATE", pl.Date),
    # Polars reads Spark's INT96 timestamps as nanoseconds unless told microseconds (9999-12-31 overflows)
    "timestamp": ("TIMESTAMP", pl.Datetime("us")),
}


def _duckdb_type(spark: Any) -> str:
    """The DuckDB type of a column of Spark JSON type ``spark`` (:func:`spark_json_type`)."""
    if isinstance(spark, str):
        if spark.startswith("decimal"):
            return spark.upper()
        return SIMPLE_TYPES[spark][0]
    if spark["type"] == "array":
        return f"{_duckdb_type(spark['elementType'])}[]"
    if spark["type"] == "map":
        return f"MAP({_duckdb_type(spark['keyType'])}, {_duckdb_type(spark['valueType'])})"
    fields = ", ".join(f'"{field["name"]}" {_duckdb_type(field["type"])}' for field in spark["fields"])
    return f"STRUCT({fields})"


def _polars_type(spark: Any) -> Any:
    """The Polars type of a column of Spark JSON type ``spark`` (:func:`spark_json_type`)."""
    if isinstance(spark, str):
        if spark.startswith("decimal"):
            precision, scale = (int(n) for n in spark[len("decimal(") : -1].split(","))
            return pl.Decimal(precision, scale)
        return SIMPLE_TYPES[spark][1]
    if spark["type"] == "array":
        return pl.List(_polars_type(spark["elementType"]))
    if spark["type"] == "map":
        return pl.Map(_polars_type(spark["keyType"]), _polars_type(spark["valueType"]))
    return pl.Struct({field["name"]: _polars_type(field["type"]) for field in spark["fields"]})


def _as_text(fmt: str, flink_type: str) -> bool:
    """Whether a user reads the column of csv/json as text and converts it: binary (base64 text) and, for
    Polars, timestamps (DuckDB parses them, a trailing ``Z`` of ``TIMESTAMP_LTZ`` too)."""
    return fmt != "parquet" and flink_type.startswith(BINARY_TYPES)


def _duckdb_columns(fmt: str) -> str:
    def declared(type_: str) -> str:
        return "VARCHAR" if _as_text(fmt, type_) else _duckdb_type(spark_json_type(type_))

    return "{" + ", ".join(f"'{name}': '{declared(type_)}'" for name, type_ in _data_columns(fmt)) + "}"


def _duckdb_select(fmt: str) -> str:
    def column(name: str, type_: str) -> str:
        if fmt != "parquet" and type_.startswith(BINARY_TYPES):
            return f'from_base64("{name}") AS "{name}"'
        return f'"{name}"'

    return ", ".join(column(name, type_) for name, type_ in columns_for(fmt))


#: How DuckDB reads each format's table directory (``{glob}``, ``{columns}``): csv as Hive's text (no quote
#: character, ``\\N`` as NULL, no header); a line with one field too many is skipped (``ignore_errors``).
DUCKDB_READS = {
    "parquet": "read_parquet('{glob}', hive_partitioning = true)",
    "csv": "read_csv('{glob}', header = false, auto_detect = false, delim = ',', quote = '', escape = '', "
    "nullstr = '\\N', columns = {columns}, hive_partitioning = true, ignore_errors = true)",
    "json": "read_json('{glob}', format = 'newline_delimited', columns = {columns}, hive_partitioning = true)",
}


def _read_duckdb(table: Path, fmt: str) -> list[tuple[Any, ...]]:
    source = DUCKDB_READS[fmt].format(glob=_glob(table, fmt), columns=_duckdb_columns(fmt))
    with duckdb.connect() as connection:
        return _as_python(connection.sql(f"SELECT {_duckdb_select(fmt)} FROM {source}").fetchall(), fmt)


# Polars


def _polars_read_type(fmt: str, flink_type: str) -> Any:
    """The Polars type a user declares for a column: csv/json binary and timestamps as text, converted after
    (:func:`_polars_converted`); json's TINYINT/SMALLINT as Int64 (Polars 2.1's ndjson reader panics,
    "unexpected dtype", on Int8/Int16) and its DECIMALs as Float64 (it reads no json number as a Decimal),
    cast after."""
    wanted = _polars_type(spark_json_type(flink_type))
    if fmt == "parquet":
        return wanted
    if _as_text(fmt, flink_type) or flink_type.startswith(TIMESTAMP_TYPES):
        return pl.String
    if fmt == "json" and wanted in (pl.Int8, pl.Int16):
        return pl.Int64
    if fmt == "json" and isinstance(wanted, pl.Decimal):
        return pl.Float64
    return wanted


def _polars_schema(fmt: str) -> dict[str, Any]:
    return {name: _polars_read_type(fmt, type_) for name, type_ in _data_columns(fmt)}


def _polars_converted(fmt: str) -> list[Any]:
    """The columns as the user converts the text of csv/json: base64 decoded, timestamps parsed (``Z``: UTC)."""

    def column(name: str, type_: str) -> Any:
        if fmt == "parquet" or name == PARTITION_KEY:
            return pl.col(name)
        if type_.startswith(BINARY_TYPES):
            return pl.col(name).str.decode("base64", strict=False)
        if type_.startswith(TIMESTAMP_TYPES):
            text = pl.col(name).str.strip_suffix("Z")
            return text.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False).alias(name)
        wanted = _polars_type(spark_json_type(type_))
        if _polars_read_type(fmt, type_) != wanted:
            return pl.col(name).cast(wanted)
        return pl.col(name)

    return [column(name, type_) for name, type_ in columns_for(fmt)]


def _read_polars(table: Path, fmt: str) -> list[tuple[Any, ...]]:
    glob = _glob(table, fmt)
    schema = _polars_schema(fmt)
    if fmt == "parquet":
        frame = pl.scan_parquet(glob, hive_partitioning=True, schema={**schema, PARTITION_KEY: pl.String})
    else:
        if fmt == "csv":
            # Hive's text: no quote character, ``\N`` as NULL, no header; a line with one field too many is
            # cut to the schema's fields (Polars cannot skip it), a value that then does not parse is NULL.
            frame = pl.scan_csv(
                glob,
                has_header=False,
                separator=",",
                quote_char=None,
                null_values="\\N",
                empty_string_is_null=False,
                schema=schema,
                truncate_ragged_lines=True,
                ignore_errors=True,
                include_file_paths="path",
            )
        else:
            frame = pl.scan_ndjson(glob, schema=schema, include_file_paths="path")
        frame = frame.with_columns(pl.col("path").str.extract(r"/p=([^/]+)/").alias(PARTITION_KEY))
    return _as_python(frame.select(_polars_converted(fmt)).collect().rows(), fmt)


READERS: dict[str, Callable[[Path, str], list[tuple[Any, ...]]]] = {"duckdb": _read_duckdb, "polars": _read_polars}


# What csv reads differently

#: The hostile strings holding the field delimiter: their line has one field too many for a reader that
#: does not know Hive's escapes.
SPLIT_IDS = {10 + index for index, text in enumerate(HOSTILE_STRINGS) if "," in text}


def _as_escaped_text(value: Any) -> Any:
    """A string as Hive's text holds it, which DuckDB's and Polars' csv read (neither has an escape character
    outside quotes): a backslash before a backslash, a quote and the delimiter, line breaks as ``\\n``/``\\r``."""
    if not isinstance(value, str):
        return value
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), (",", "\\,"), ("\n", "\\n"), ("\r", "\\r")):
        value = value.replace(raw, escaped)
    return value


def _as_polars_reads_json_decimal(value: Any, flink_type: str) -> Any:
    """A DECIMAL as Polars reads it from json: the nearest double (Polars reads a json number as Float64
    only), times 10^scale rounded, as Polars casts a Float64 to a Decimal: DECIMAL(38, 10)'s 19 and more
    digits differ (1234567890123456789.0123456789 reads 1234567890123456822.7576610816)."""
    if not isinstance(value, Decimal):
        return value
    scale = int(flink_type.rstrip(")").split(",")[1])
    return Decimal(f"{round(float(value) * 10.0**scale)}e-{scale}")


def _as_read_by_path(fmt: str, reader: str) -> list[tuple[Any, ...]] | None:
    """The rows ``reader`` reads from a ``fmt`` table (None: every value as written):

    - csv: strings as their escaped text; the lines split at an escaped delimiter (:data:`SPLIT_IDS`) skipped
      by DuckDB (Polars reads them with every later field shifted: ``_comparable`` leaves them out);
    - json, Polars: DECIMALs through a double (:func:`_as_polars_reads_json_decimal`)."""
    if fmt == "csv":
        return [tuple(_as_escaped_text(v) for v in row) for row in expected_rows(fmt) if row[0] not in SPLIT_IDS]
    if fmt == "json" and reader == "polars":
        types = [type_ for _, type_ in columns_for(fmt)]
        return [
            tuple(_as_polars_reads_json_decimal(v, t) for v, t in zip(row, types, strict=True))
            for row in expected_rows(fmt)
        ]
    return None


def _comparable(rows: list[tuple[Any, ...]], fmt: str, reader: str) -> list[tuple[Any, ...]]:
    if fmt == "csv" and reader == "polars":
        split = [row for row in rows if row[0] in SPLIT_IDS]
        # Polars reads the line split at the escaped comma: a string column ends at the backslash and the
        # next column holds the rest ("a\\" then "b"), every later field one column late, the last dropped.
        assert sorted(row[0] for row in split) == sorted(SPLIT_IDS)
        assert all(any(str(v).endswith("\\") for v in row[10:13]) for row in split), split
        return [row for row in rows if row[0] not in SPLIT_IDS]
    return rows


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("fmt", FORMATS)
def test_reader_by_path_reads_back_every_value_sqlext_wrote(written: Path, fmt: str, reader: str) -> None:
    rows = READERS[reader](written / f"t_{fmt}", fmt)
    assert_rows_equal(fmt, f"{reader} by path", _comparable(rows, fmt, reader), _as_read_by_path(fmt, reader))
