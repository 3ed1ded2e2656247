"""The interop matrix's data: one row set over every Flink type sqlext maps, and the comparison of what a
reader reads back with it.

Reusable by any reader (Spark native, Hive's SerDe, sqlext's filesystem source, Flink's filesystem source):

- :data:`COLUMNS` — ``(name, Flink type)`` of every column; :func:`columns_for` narrows them to what a format holds
  (csv holds no ARRAY/MAP/ROW); :func:`ddl_columns` gives the column list of a CREATE TABLE for a format;
- :data:`FORMAT_OPTIONS` — the WITH options the matrix's tables of a format declare (besides connector, path,
  format), the same for every engine that reads or writes them;
- :data:`ROWS` — the inserted rows (Python values, in :data:`COLUMNS` order; ``id`` is the key);
  :func:`expected_rows` gives them for a format, as a reader of Spark's precision reads them back;
- :func:`assert_rows_equal` — fails naming format, reader, row id, column, expected and actual value;
- :func:`table_options` and :func:`create_matrix_sources` — a matrix table's WITH options, and for every format a
  sqlext source table over landing files holding :data:`ROWS`, for tests to insert from.

Values: ordinary ones, NULL in every column, the extremes of each type, and hostile strings (the delimiter,
quotes, backslash, ``\\n``, ``\\r``, tab, ``\\x01``, NUL, non-ASCII, the empty string, the NULL literal text).
Timestamps are wall-clock values (naive datetimes) in the reading session's time zone. Spark keeps
microseconds, so ``TIMESTAMP(9)`` values are given with microseconds only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

#: The partition key (a STRING); every other column is a data column.
PARTITION_KEY = "p"

#: ``(name, Flink type)`` of the table's columns, the partition key last.
COLUMNS: list[tuple[str, str]] = [
    ("id", "INT"),
    ("c_boolean", "BOOLEAN"),
    ("c_tinyint", "TINYINT"),
    ("c_smallint", "SMALLINT"),
    ("c_int", "INT"),
    ("c_bigint", "BIGINT"),
    ("c_float", "FLOAT"),
    ("c_double", "DOUBLE"),
    ("c_decimal_10_2", "DECIMAL(10, 2)"),
    ("c_decimal_38_10", "DECIMAL(38, 10)"),
    ("c_char", "CHAR(3)"),
    ("c_varchar", "VARCHAR(40)"),
    ("c_string", "STRING"),
    ("c_binary", "BINARY(4)"),
    ("c_varbinary", "VARBINARY(16)"),
    ("c_bytes", "BYTES"),
    ("c_date", "DATE"),
    ("c_time", "TIME(0)"),
    ("c_timestamp_0", "TIMESTAMP(0)"),
    ("c_timestamp_3", "TIMESTAMP(3)"),
    ("c_timestamp_6", "TIMESTAMP(6)"),
    ("c_timestamp_9", "TIMESTAMP(9)"),
    ("c_timestamp_ltz", "TIMESTAMP_LTZ(3)"),
    ("c_array", "ARRAY<INT>"),
    ("c_map", "MAP<STRING, INT>"),
    ("c_row", "ROW<`a` INT, `b` STRING>"),
    ("c_nested", "ARRAY<ROW<`k` STRING, `v` ARRAY<DOUBLE>>>"),
    (PARTITION_KEY, "STRING"),
]

#: Types a format cannot hold (as Flink's csv format refuses them).
COMPLEX_PREFIXES = ("ARRAY", "MAP", "ROW", "MULTISET")
FORMATS = ("parquet", "orc", "csv", "json", "avro")
#: Types Flink's avro format holds no value of with its default (legacy) timestamp mapping.
AVRO_UNSUPPORTED = ("TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP_LTZ")

#: WITH options of the matrix's tables per format (Flink's names), beyond connector/path/format.
FORMAT_OPTIONS: dict[str, dict[str, str]] = {"parquet": {}, "orc": {}, "csv": {}, "json": {}, "avro": {}}
#: The csv options a table declares so that Flink's csv reads what sqlext writes, the same DDL in both
#: engines (Flink's csv has no escape character and no null literal by default, and then cannot read a NULL
#: of a non-string column, its own either); Hive reads the same files through the SerDe parameters.
FLINK_CSV_OPTIONS: dict[str, str] = {"csv.escape-character": "\\", "csv.null-literal": "\\N"}

HOSTILE_STRINGS = [
    "a,b",
    'say "hi"',
    '"quoted"',
    "back\\slash",
    "ends with \\",
    "line\nbreak",
    "carriage\rreturn",
    "crlf\r\n",
    "tab\there",
    "ctrl\x01a",
    "nul\x00byte",
    "ünïcödé ✓ 日本 😀",
    "",
    "\\N",
    "NULL",
    "  padded  ",
    "|;\t,\x01",
]

_MAX_FLOAT = 3.4028234663852886e38  # the largest float32, as a Python float
_MAX_DOUBLE = 1.7976931348623157e308


def _row(id_: int, **values: Any) -> tuple[Any, ...]:
    unknown = set(values) - {name for name, _ in COLUMNS}
    assert not unknown, unknown
    return tuple(id_ if name == "id" else values.get(name) for name, _ in COLUMNS)


def _ordinary() -> tuple[Any, ...]:
    return _row(
        1,
        c_boolean=True,
        c_tinyint=7,
        c_smallint=300,
        c_int=70000,
        c_bigint=5_000_000_000,
        c_float=1.5,
        c_double=2.25,
        c_decimal_10_2=Decimal("12345.67"),
        c_decimal_38_10=Decimal("1234567890123456789.0123456789"),
        c_char="abc",
        c_varchar="plain",
        c_string="hello world",
        c_binary=b"\x01\x02\x03\x04",
        c_varbinary=b"bin",
        c_bytes=b"\x00\xff\x10",
        c_date=date(2026, 1, 2),
        c_time="12:34:56",
        c_timestamp_0=datetime(2026, 1, 2, 3, 4, 5),
        c_timestamp_3=datetime(2026, 1, 2, 3, 4, 5, 123000),
        c_timestamp_6=datetime(2026, 1, 2, 3, 4, 5, 123456),
        c_timestamp_9=datetime(2026, 1, 2, 3, 4, 5, 999999),
        c_timestamp_ltz=datetime(2026, 1, 2, 3, 4, 5, 500000),
        c_array=[1, None, 3],
        c_map={"k1": 1, "k2": None},
        c_row=(1, "x"),
        c_nested=[("n", [1.5, None]), ("m", [])],
        p="a",
    )


def _extremes(id_: int, low: bool) -> tuple[Any, ...]:
    sign = -1 if low else 1
    return _row(
        id_,
        c_boolean=not low,
        c_tinyint=-128 if low else 127,
        c_smallint=-32768 if low else 32767,
        c_int=-(2**31) if low else 2**31 - 1,
        c_bigint=-(2**63) if low else 2**63 - 1,
        c_float=sign * _MAX_FLOAT,
        c_double=sign * _MAX_DOUBLE,
        c_decimal_10_2=Decimal(f"{'-' if low else ''}99999999.99"),
        c_decimal_38_10=Decimal(f"{'-' if low else ''}{'9' * 28}.{'9' * 10}"),
        c_char="zzz",
        c_varchar="x" * 40,
        c_string="s" * 1000,
        c_binary=b"\xff" * 4,
        c_varbinary=b"\x00" * 16,
        c_bytes=bytes(range(256)),
        c_date=date(1970, 1, 1) if low else date(9999, 12, 31),
        c_time="00:00:00" if low else "23:59:59",
        c_timestamp_0=datetime(1970, 1, 1) if low else datetime(9999, 12, 31, 23, 59, 59),
        c_timestamp_3=datetime(1970, 1, 1, 0, 0, 0, 1000) if low else datetime(9999, 12, 31, 23, 59, 59, 999000),
        c_timestamp_6=datetime(1970, 1, 1, 0, 0, 0, 1) if low else datetime(9999, 12, 31, 23, 59, 59, 999999),
        c_timestamp_9=datetime(1999, 12, 31, 23, 59, 59) if low else datetime(2000, 1, 1),
        c_timestamp_ltz=datetime(2000, 2, 29, 12, 0) if low else datetime(2100, 12, 31, 23, 59, 59, 999000),
        c_array=[] if low else [-(2**31), 2**31 - 1],
        c_map={} if low else {"": 0, "\\N": -1},
        c_row=(None, None) if low else (-(2**31), ""),
        c_nested=[] if low else [(None, None)],
        p="b",
    )


def _hostile(id_: int, text: str) -> tuple[Any, ...]:
    return _row(
        id_,
        c_char=text[:3],
        c_varchar=text,
        c_string=text,
        c_time=text,
        c_bytes=text.encode(),
        c_array=[id_],
        c_map={text: id_},
        c_row=(id_, text),
        c_nested=[(text, [float(id_)])],
        p="a",
    )


#: Every inserted row, in :data:`COLUMNS` order.
ROWS: list[tuple[Any, ...]] = [
    _ordinary(),
    _row(2, p="b"),  # NULL in every column but the key and the partition
    _extremes(3, low=True),
    _extremes(4, low=False),
    *(_hostile(10 + index, text) for index, text in enumerate(HOSTILE_STRINGS)),
]


def is_complex(flink_type: str) -> bool:
    return flink_type.upper().startswith(COMPLEX_PREFIXES)


def columns_for(fmt: str) -> list[tuple[str, str]]:
    """The matrix's columns a format holds (csv: no ARRAY, MAP, ROW; avro: no TIMESTAMP(p > 3), no
    TIMESTAMP_LTZ, as Flink's avro with its default mapping)."""
    if fmt == "avro":
        return [(name, type_) for name, type_ in COLUMNS if not type_.startswith(AVRO_UNSUPPORTED)]
    return [(name, type_) for name, type_ in COLUMNS if fmt != "csv" or not is_complex(type_)]


def rows_for(fmt: str) -> list[tuple[Any, ...]]:
    """:data:`ROWS` with the columns of ``fmt`` (avro: a TIME column holds times of day only, Avro's
    ``time-millis``: the hostile strings are NULL there)."""
    keep = [index for index, column in enumerate(COLUMNS) if column in columns_for(fmt)]
    rows = [tuple(row[i] for i in keep) for row in ROWS]
    if fmt != "avro":
        return rows
    time = [name for name, _ in columns_for(fmt)].index("c_time")
    return [(*row[:time], row[time] if row[0] < 10 else None, *row[time + 1 :]) for row in rows]


def avro_hive_rows() -> list[tuple[Any, ...]]:
    """The avro rows as Hive's AvroSerDe (and Spark through it) reads them: Hive has no TIME, so the
    ``time-millis`` column reads as its milliseconds of the day."""
    time = [name for name, _ in columns_for("avro")].index("c_time")

    def millis(text: str | None) -> int | None:
        if text is None:
            return None
        hours, minutes, seconds = (int(part) for part in text.split(":"))
        return ((hours * 60 + minutes) * 60 + seconds) * 1000

    return [(*row[:time], millis(row[time]), *row[time + 1 :]) for row in expected_rows("avro")]


def add_spark_avro(spark: Any) -> None:
    """Put Spark's Avro data source on a running session's class path (``ADD JAR``; once, it stays)."""
    from sqlext.connectors.filesystem.spark_avro import jar_paths, on_classpath

    if not on_classpath(spark):
        for jar in jar_paths():
            spark.sql(f"ADD JAR '{jar}'")
        assert on_classpath(spark), "ADD JAR did not put Spark's Avro data source on the class path"


def ddl_columns(fmt: str) -> str:
    """The column list of a CREATE TABLE for ``fmt`` (Flink DDL), e.g. ``id INT, c_boolean BOOLEAN, ...``."""
    return ", ".join(f"`{name}` {type_}" for name, type_ in columns_for(fmt))


def expected_rows(fmt: str) -> list[tuple[Any, ...]]:
    """The rows of :data:`ROWS` with the columns of ``fmt``, by id."""
    return sorted(rows_for(fmt), key=lambda row: row[0])


def spark_schema(fmt: str) -> str:
    """The Spark DDL schema of the matrix's columns for ``fmt`` (to build :data:`ROWS` as a DataFrame)."""
    from sqlext.sql.types import spark_type

    return ", ".join(f"`{name}` {spark_type(type_)}" for name, type_ in columns_for(fmt))


def table_options(fmt: str, path: Path, **extra: str) -> str:
    """The body of the WITH clause of a matrix table in ``fmt`` at ``path``."""
    options = {"connector": "filesystem", "path": path.as_uri(), "format": fmt, **FORMAT_OPTIONS[fmt], **extra}
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def create_matrix_sources(spark: Any, database: str, root: Path, files: int = 1) -> None:
    """For every format, parquet files under ``root/landing_<fmt>`` holding :data:`ROWS` (its columns, in
    ``files`` files written one after another) and a sqlext source table ``<database>.src_<fmt>`` over them
    (one file per micro-batch when read as a stream). ``spark`` is extended (``sqlext.extend``)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    for fmt in FORMATS:
        rows = rows_for(fmt)
        landing = root / f"landing_{fmt}"
        for index in range(files):
            part = rows[index::files]
            spark.createDataFrame(part, spark_schema(fmt)).coalesce(1).write.mode("append").parquet(landing.as_uri())
        spark.sql(
            f"CREATE TABLE {database}.src_{fmt} ({ddl_columns(fmt)}) WITH ({table_options('parquet', landing)}, "
            "'source.max-files-per-trigger' = '1')"
        )


def normalize(value: Any) -> Any:
    """A reader's value in comparable Python form: rows as tuples, bytearrays as bytes, maps as dicts."""
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, Mapping):
        return {normalize(k): normalize(v) for k, v in value.items()}
    if isinstance(value, tuple):  # pyspark Row too
        return tuple(normalize(v) for v in value)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def mismatches(
    fmt: str, reader: str, rows: Iterable[Sequence[Any]], expected_as: Sequence[Sequence[Any]] | None = None
) -> list[str]:
    """What differs between ``rows`` (in :func:`columns_for` order) and :func:`expected_rows` (or
    ``expected_as``, the rows a reader with a known difference reads)."""
    names = [name for name, _ in columns_for(fmt)]
    expected = {row[0]: row for row in (expected_as if expected_as is not None else expected_rows(fmt))}
    actual: dict[Any, tuple[Any, ...]] = {}
    problems: list[str] = []
    for row in rows:
        values = tuple(normalize(v) for v in row)
        if values[0] in actual:
            problems.append(f"{fmt}/{reader}: row id={values[0]} read twice")
        actual[values[0]] = values
    for id_ in sorted(set(expected) - set(actual), key=str):
        problems.append(f"{fmt}/{reader}: row id={id_} missing")
    for id_ in sorted(set(actual) - set(expected), key=str):
        problems.append(f"{fmt}/{reader}: unexpected row {actual[id_]!r}")
    for id_ in sorted(set(expected) & set(actual)):
        for name, want, got in zip(names, expected[id_], actual[id_], strict=True):
            if not _equal(want, got):
                problems.append(f"{fmt}/{reader}: row id={id_} column {name}: expected {want!r}, read {got!r}")
    return problems


def assert_rows_equal(
    fmt: str, reader: str, rows: Iterable[Sequence[Any]], expected_as: Sequence[Sequence[Any]] | None = None
) -> None:
    """Fail listing every value ``reader`` read back from a ``fmt`` table that differs from what was written
    (or from ``expected_as``: see :func:`mismatches`)."""
    problems = mismatches(fmt, reader, rows, expected_as)
    assert not problems, f"{len(problems)} mismatch(es):\n" + "\n".join(problems)


def _equal(want: Any, got: Any) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return want == got or (want != want and got != got)
    if isinstance(want, tuple | list) and isinstance(got, tuple | list):
        return len(want) == len(got) and all(_equal(w, g) for w, g in zip(want, got, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_equal(want[k], got[k]) for k in want)
    return bool(type(want) is type(got) and want == got) or (want is None and got is None)
