"""Flink's files, both ways (csv and json), the same DDL in both engines: a landing zone Flink's
filesystem sink wrote (csv with Flink's defaults and csv declaring an escape character and a null literal,
json with Flink's defaults) reads through sqlext's filesystem source, every value equal; Flink's
filesystem source reads back every value sqlext wrote (csv declaring those options; json); Hive's
LazySimpleSerDe and sqlext's source read that csv back exactly too. What Flink itself cannot keep is
expected as Flink reads it, and documented in docs/connectors.md ("Differences from Flink").

The rows and the comparison are the interop matrix's (:mod:`tests.support.interop`), with one change:
sqlext keeps a ``TIME`` as its text, so the matrix puts hostile strings in ``c_time``; no Flink job can
write those and Flink's readers refuse them, so here a ``c_time`` that is not a time of day is NULL.
Flink writes its rows from literals (``INSERT ... VALUES``), so the Flink-written direction covers the
columns csv holds (no ARRAY, MAP, ROW), with the values as Flink holds them (``CHAR`` padded, ``FLOAT``
literals folded to 7 digits); the sqlext-written direction covers every column of the format.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.registry import SourceContext
from sqlext.spark.session import extend
from sqlext.sql.parser import parse_statement
from sqlext.sql.statements import CreateTable
from tests.connectors.filesystem import test_json_decimals as json_decimals
from tests.support import interop, non_finite
from tests.support.extension import extended_session
from tests.support.flink import Flink
from tests.support.services import spark_own_sql

pytestmark = [pytest.mark.flink, pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

DATABASE = "flinkfiles"
TEXT_FORMATS = ("csv", "json")
_TIME = re.compile(r"\d\d:\d\d:\d\d")
_TEXT_TYPES = ("CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES", "TIME")
_TIME_COLUMN = [name for name, _ in interop.COLUMNS].index("c_time")


def _flink_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    value = row[_TIME_COLUMN]
    if isinstance(value, str) and _TIME.fullmatch(value):
        return row
    return (*row[:_TIME_COLUMN], None, *row[_TIME_COLUMN + 1 :])


FLINK_ROWS = [_flink_row(row) for row in interop.ROWS]
_CHAR_COLUMN = [name for name, _ in interop.COLUMNS].index("c_char")
_FLOAT_COLUMN = [name for name, _ in interop.COLUMNS].index("c_float")


def _as_flink_holds(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row as a Flink job inserting it from literals holds it: a ``CHAR(3)`` value padded with spaces
    to 3 characters, and a ``FLOAT`` literal folded by the planner to 7 significant digits (Calcite's
    REAL precision: ``3.4028234663852886E38`` becomes ``3.402823E38``)."""
    values = list(row)
    if values[_CHAR_COLUMN] is not None:
        values[_CHAR_COLUMN] = values[_CHAR_COLUMN].ljust(3)
    if values[_FLOAT_COLUMN] is not None:
        values[_FLOAT_COLUMN] = struct.unpack("f", struct.pack("f", float(f"{values[_FLOAT_COLUMN]:.7g}")))[0]
    return tuple(values)


#: What a Flink job writes when it inserts :data:`FLINK_ROWS`.
FLINK_WRITTEN_ROWS = [_as_flink_holds(row) for row in FLINK_ROWS]


@pytest.fixture(autouse=True)
def _flink_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matrix's comparison, against the rows of this module."""
    monkeypatch.setattr(interop, "ROWS", FLINK_ROWS)


def _ddl(name: str, fmt: str, columns_of: str, path: Path, options: dict[str, str]) -> str:
    """The CREATE TABLE text, the same for both engines (a backslash in a string is itself in both)."""
    rendered = ", ".join(
        f"'{k}' = '{v}'"
        for k, v in {"connector": "filesystem", "path": path.as_uri(), "format": fmt, **options}.items()
    )
    return f"CREATE TABLE {name} ({interop.ddl_columns(columns_of)}) PARTITIONED BY (p) WITH ({rendered})"


#: Types a Flink SELECT returns as text, parsed back by :func:`_from_flink_text`: PyFlink hands timestamps
#: to Python at milliseconds (and no ``Instant`` at all), a FLOAT as the shortest decimal of the float, and
#: fails on ARRAY, MAP and ROW values (``EOFError: Ran out of input``), which go through ``JSON_STRING``.
_AS_TEXT = ("TIMESTAMP", "FLOAT")


def _select(name: str, columns_of: str, engine: str = "sqlext") -> str:
    """A SELECT of the matrix's columns; for Flink the :data:`_AS_TEXT` types cast to STRING (a
    ``TIMESTAMP_LTZ`` as its wall-clock time in the job's zone, UTC)."""

    def column(name: str, flink_type: str) -> str:
        if engine == "flink" and flink_type.startswith(_AS_TEXT):
            return f"CAST(`{name}` AS STRING) AS `{name}`"
        if engine == "flink" and interop.is_complex(flink_type):
            return f"JSON_STRING(`{name}`) AS `{name}`"
        return f"`{name}`"

    return f"SELECT {', '.join(column(c, t) for c, t in interop.columns_for(columns_of))} FROM {name}"


# -- Flink writes, sqlext reads ----------------------------------------------------------------------


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def flink_literal(value: Any, flink_type: str) -> str:
    """A Flink SQL expression of ``flink_type`` holding ``value`` (the matrix's Python form)."""
    kind = flink_type.split("(")[0].upper()
    if value is None:
        return f"CAST(NULL AS {flink_type})"
    if kind == "BOOLEAN":
        return "TRUE" if value else "FALSE"
    if kind in ("FLOAT", "DOUBLE", "TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL"):
        return f"CAST({_string(str(value))} AS {flink_type})"
    if kind in ("CHAR", "VARCHAR", "STRING"):
        return f"CAST({_string(value)} AS {flink_type})"
    if kind in ("BINARY", "VARBINARY", "BYTES"):
        return f"CAST(X'{value.hex()}' AS {flink_type})"
    if kind == "DATE":
        return f"DATE '{value.isoformat()}'"
    if kind == "TIME":
        return f"TIME '{value}'"
    if kind in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return f"CAST(TIMESTAMP '{value.isoformat(sep=' ')}' AS {flink_type})"
    raise AssertionError(f"no literal for {flink_type}")


def _values(columns_of: str) -> str:
    types = [t for _, t in interop.columns_for(columns_of)]
    rows = interop.expected_rows(columns_of)
    return ",\n".join(
        "(" + ", ".join(flink_literal(v, t) for v, t in zip(row, types, strict=True)) + ")" for row in rows
    )


#: The Flink-written tables: csv with Flink's defaults, csv declaring an escape character and a null literal
#: (:data:`interop.FLINK_CSV_OPTIONS`), json with Flink's defaults; each read by sqlext with the same DDL.
FLINK_WRITTEN = {"csv": ("csv", {}), "csv-declared": ("csv", interop.FLINK_CSV_OPTIONS), "json": ("json", {})}
_TEXT_COLUMNS = [i for i, (_, t) in enumerate(interop.COLUMNS) if t.split("(")[0] in _TEXT_TYPES]


@pytest.fixture(scope="module")
def flink_written(flink: Flink, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Path]]:
    """One Flink job writing the matrix's rows into each table of :data:`FLINK_WRITTEN`; the DDL sqlext reads
    each with, by key."""
    root = tmp_path_factory.mktemp("flink-written")
    tables = {
        key: (_ddl(f"flink_{key.replace('-', '_')}", fmt, "csv", root / key, options), root / key)
        for key, (fmt, options) in FLINK_WRITTEN.items()
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(interop, "ROWS", FLINK_ROWS)
        values = _values("csv")
    statements = [
        _ddl(f"flink_{key.replace('-', '_')}", fmt, "csv", root / key, options)
        for key, (fmt, options) in FLINK_WRITTEN.items()
    ]
    statements += [f"INSERT INTO flink_{key.replace('-', '_')} VALUES {values}" for key in FLINK_WRITTEN]
    flink.run(statements, mode="batch", **{"table.local-time-zone": "UTC"})
    return tables


def _as_flink_default_csv_reads(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """What Flink's csv with its defaults keeps of a row: it writes a NULL and an empty value alike (an
    empty field), so a NULL in a string, bytes or TIME column (sqlext keeps a TIME as text) reads back empty,
    as Flink itself reads it (docs/connectors.md)."""
    values = list(row)
    for index in _TEXT_COLUMNS:
        if values[index] is None:
            values[index] = b"" if "BINARY" in interop.COLUMNS[index][1] or "BYTES" in interop.COLUMNS[index][1] else ""
    return tuple(values)


@pytest.mark.parametrize("table", list(FLINK_WRITTEN))
def test_sqlext_reads_every_value_flink_wrote(
    flink_written: dict[str, tuple[str, Path]], spark: Any, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = FLINK_WRITTEN_ROWS
    if table == "csv":
        expected = [_as_flink_default_csv_reads(row) for row in FLINK_WRITTEN_ROWS]
    monkeypatch.setattr(interop, "ROWS", expected)
    ddl, path = flink_written[table]
    assert any(path.glob("p=*/part-*")), "Flink wrote its files"
    statement = parse_statement(ddl)
    assert isinstance(statement, CreateTable)
    frame = FileSystemTableFactory().create_source(SourceContext(spark, statement.table, streaming=False))
    rows = frame.select(*[c for c, _ in interop.columns_for("csv")]).collect()
    interop.assert_rows_equal("csv", f"sqlext's source reading Flink's {table}", rows)


# -- sqlext writes, Flink reads ----------------------------------------------------------------------

#: The WITH options of the sqlext-written tables, the same DDL for sqlext, Hive (through the HMS) and Flink.
SQLEXT_WRITTEN_OPTIONS = {"csv": interop.FLINK_CSV_OPTIONS, "json": {}}


@pytest.fixture(scope="module")
def sqlext_written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A csv and a json table sqlext wrote (a batch insert of the matrix's rows), by format."""
    root = tmp_path_factory.mktemp("sqlext-written")
    extend(spark)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    written = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(interop, "ROWS", FLINK_ROWS)
        try:
            for fmt in TEXT_FORMATS:
                landing = root / f"landing_{fmt}"
                spark.createDataFrame(interop.expected_rows(fmt), interop.spark_schema(fmt)).coalesce(1).write.parquet(
                    landing.as_uri()
                )
                src = f"{DATABASE}.src_{fmt}"
                spark.sql(
                    f"CREATE TABLE {src} ({interop.ddl_columns(fmt)}) WITH ('connector' = 'filesystem', "
                    f"'path' = '{landing.as_uri()}', 'format' = 'parquet')"
                )
                spark.sql(_ddl(f"{DATABASE}.sqlext_{fmt}", fmt, fmt, root / fmt, SQLEXT_WRITTEN_OPTIONS[fmt]))
                spark.sql(f"INSERT INTO {DATABASE}.sqlext_{fmt} SELECT * FROM {src}")
                written[fmt] = root / fmt
        finally:
            spark.sql("RESET 'execution.runtime-mode'")
    yield written


def _from_flink_text(rows: list[list[Any]], columns_of: str) -> list[list[Any]]:
    """Rows of a :func:`_select` for Flink with the :data:`_AS_TEXT` columns parsed back."""
    types = [t for _, t in interop.columns_for(columns_of)]

    def rows_as_tuples(value: Any) -> Any:
        if isinstance(value, dict):
            return tuple(rows_as_tuples(v) for v in value.values())
        return [rows_as_tuples(v) for v in value] if isinstance(value, list) else value

    def parse(text: Any, flink_type: str) -> Any:
        if text is not None and interop.is_complex(flink_type):
            value = json.loads(text)
            return value if flink_type.startswith("MAP") else rows_as_tuples(value)
        if text is None or not flink_type.startswith(_AS_TEXT):
            return text
        if flink_type == "FLOAT":
            return struct.unpack("f", struct.pack("f", float(text)))[0]
        whole, _, fraction = text.partition(".")
        return datetime.fromisoformat(f"{whole}.{fraction[:6]:0<6}")

    return [[parse(v, t) for v, t in zip(row, types, strict=True)] for row in rows]


def _as_flink_reads(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Flink's csv reads a field equal to the null literal as NULL, also an escaped or quoted one (its own
    writer's output too), so a string that is the null literal cannot come back (docs/connectors.md)."""
    literal = interop.FLINK_CSV_OPTIONS["csv.null-literal"]
    return tuple(None if value == literal else value for value in row)


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_flink_reads_every_value_sqlext_wrote(
    flink: Flink, sqlext_written: dict[str, Path], fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if fmt == "csv":
        monkeypatch.setattr(interop, "ROWS", [_as_flink_reads(row) for row in FLINK_ROWS])
    path = sqlext_written[fmt]
    ddl = _ddl("t", fmt, fmt, path, SQLEXT_WRITTEN_OPTIONS[fmt])
    rows = flink.query([ddl, _select("t", fmt, "flink")], mode="batch", **{"table.local-time-zone": "UTC"})
    rows = _from_flink_text(rows, fmt)
    interop.assert_rows_equal(fmt, f"Flink's source reading sqlext's {fmt}", rows)


def test_hive_and_sqlext_read_the_csv_flink_reads(spark: Any, sqlext_written: dict[str, Path]) -> None:
    """The csv table declaring Flink's escape character and null literal still reads back exactly through
    Hive's LazySimpleSerDe (Spark SQL on the HMS table) and sqlext's source: the SerDe parameters follow
    the declared options."""
    table = f"{DATABASE}.sqlext_csv"
    spark.catalog.refreshTable(table)
    hive_rows = spark_own_sql(spark)(_select(table, "csv")).collect()
    interop.assert_rows_equal("csv", "Hive's LazySimpleSerDe reading sqlext's csv (Flink's options)", hive_rows)
    ddl = _ddl("t", "csv", "csv", sqlext_written["csv"], SQLEXT_WRITTEN_OPTIONS["csv"])
    statement = parse_statement(ddl)
    assert isinstance(statement, CreateTable)
    frame = FileSystemTableFactory().create_source(SourceContext(spark, statement.table, streaming=False))
    sqlext_rows = frame.select(*[c for c, _ in interop.columns_for("csv")]).collect()
    interop.assert_rows_equal("csv", "sqlext's source reading sqlext's csv (Flink's options)", sqlext_rows)


def test_flink_writes_non_finite_doubles_as_the_strings_mode_string_writes_and_reads_them_back(
    flink: Flink, spark: Any, tmp_path: Path
) -> None:
    """NaN and the infinities in json (docs/connectors.md, "Differences from Flink"): Flink 2.3's json writer,
    with no option for them, writes the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (from a cast and
    from an overflowing product alike); sqlext writes them so with ``json.encode.non-finite-number.mode`` =
    ``STRING`` (its default fails the write), and Flink reads that file back, every value equal."""
    flink_path, strings = tmp_path / "flink_json", tmp_path / "strings"
    strings.mkdir()
    (strings / "values.csv").write_text("1,NaN,-Infinity\n2,1e308,1.5\n")
    # From a source, cast in the job: Flink's planner fails on a non-finite FLOAT constant such as
    # CAST('-Infinity' AS FLOAT) ("Infinite or NaN", Calcite's RexBuilder folding it into a literal); a
    # DOUBLE one, CAST('NaN' AS DOUBLE) or 1e308 * 10, plans and is written as below.
    flink.run(
        [
            f"CREATE TABLE strings (id INT, d STRING, f STRING) WITH ('connector' = 'filesystem', "
            f"'path' = '{strings.as_uri()}', 'format' = 'csv')",
            f"CREATE TABLE non_finite (id INT, d DOUBLE, f FLOAT) WITH ('connector' = 'filesystem', "
            f"'path' = '{flink_path.as_uri()}', 'format' = 'json')",
            "INSERT INTO non_finite SELECT id, CAST(d AS DOUBLE) * 10, CAST(f AS FLOAT) FROM strings",
        ],
        mode="batch",
    )
    lines = sorted(line for file in flink_path.glob("part-*") for line in file.read_text().splitlines())
    assert lines == ['{"id":1,"d":"NaN","f":"-Infinity"}', '{"id":2,"d":"Infinity","f":1.5}']

    with extended_session(spark, tmp_path, "flink_non_finite"):
        src = non_finite.create_source(spark, "flink_non_finite", tmp_path, "src", non_finite.ROWS)
        path = non_finite.create_json_table(spark, "flink_non_finite", tmp_path, "t", "STRING")
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        try:
            spark.sql(f"INSERT INTO flink_non_finite.t SELECT * FROM {src}").collect()
        finally:
            spark.sql("RESET 'execution.runtime-mode'")
    ddl = (
        f"CREATE TABLE t ({non_finite.COLUMNS}) PARTITIONED BY (p) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = 'json')"
    )
    select = "SELECT id, CAST(d AS STRING), CAST(f AS STRING), CAST(a[2] AS STRING), CAST(r.x AS STRING) FROM t"
    assert sorted(flink.query([ddl, select])) == [
        [1, "NaN", "NaN", "NaN", "Infinity"],
        [2, "Infinity", "-Infinity", None, "1.0"],
        [3, "-Infinity", "1.5", None, None],
        [4, "2.5", "2.5", None, "2.5"],
    ]


def test_flink_writes_plain_decimals_as_sqlext_writes_them(flink: Flink, tmp_path: Path) -> None:
    """``json.encode.decimal-as-plain-number`` = ``true``: Flink 2.3 writes, for the DDL and values of
    ``test_json_decimals.py``, the lines sqlext writes there (:data:`json_decimals.PLAIN`, its NULL row aside)."""
    strings, out = tmp_path / "decimal_strings", tmp_path / "flink_plain"
    strings.mkdir()
    (strings / "values.csv").write_text("".join(f"{i},{v}\n" for i, v in enumerate(json_decimals.VALUES, 1)))
    flink.run(
        [
            f"CREATE TABLE strings (id INT, v STRING) WITH ('connector' = 'filesystem', "
            f"'path' = '{strings.as_uri()}', 'format' = 'csv')",
            f"CREATE TABLE plain ({json_decimals.COLUMNS}) WITH ('connector' = 'filesystem', "
            f"'path' = '{out.as_uri()}', 'format' = 'json', 'json.encode.decimal-as-plain-number' = 'TRUE')",
            "INSERT INTO plain SELECT id, d, ARRAY[d], ROW(d), MAP['k', d] FROM "
            "(SELECT id, CAST(v AS DECIMAL(10, 8)) AS d FROM strings)",
        ],
        mode="batch",
    )
    lines = sorted(line for file in out.glob("part-*") for line in file.read_text().splitlines())
    assert lines == json_decimals.PLAIN[:-1]
