"""The csv source's field split in Python (:mod:`sqlext.connectors.filesystem.csv_fields`) against the Spark SQL
parse it replaces for plain records: the same rows from the same files, for random lines of every kind (plain
and escaped, quoted, with line breaks, NULL forms, empty fields, values that pyarrow and Spark read in other
ways, too few and too many fields, comments), in several forms, batches of all plain records and of mixed ones,
in a UTC session (timestamps converted in pyarrow) and another (in Spark); the same errors where a line does not
parse; and which texts pyarrow converts, in Python alone."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.csv_text import CsvTextForm
from sqlext.connectors.filesystem.csv_fields import SPLIT, FieldSplit, typed_records
from sqlext.connectors.filesystem.csv_records import records

TYPES = (
    ("i", "int"),
    ("b", "bigint"),
    ("t", "tinyint"),
    ("s", "string"),
    ("d", "double"),
    ("day", "date"),
    ("ts", "timestamp"),
    ("flag", "boolean"),
    ("m", "decimal(10,2)"),
)
#: Texts of each type's field: what both read alike, and (after the bar) what one of them might read otherwise.
GOOD = {
    "int": ["0", "-0", "7", "-2147483648", "2147483647", "007", ""],
    "bigint": ["1", "-9223372036854775808", "9223372036854775807", "42", ""],
    "tinyint": ["1", "-128", "127", ""],
    "string": ["plain", "", "with space", "é 漢", "NULL", "null"],
    "double": ["1.5", "-0", "1e5", "1E-5", ".5", "5.", "+2.25", "1e400", "4.9e-324", "NaN", "Infinity", "-inf", ""],
    "date": ["2026-11-27", "1582-10-10", "2026-1-2", ""],
    "timestamp": [
        "2026-11-27 01:02:03",
        "2026-03-08 02:30:00",
        "2026-11-01 01:30:00",
        "2026-11-27 01:02:03.123456",
        "2026-11-27",
        "",
    ],
    "boolean": ["true", "false", "TRUE", "1", "0", ""],
    "decimal(10,2)": ["1.25", "-3", "0.5", ""],
}
BAD = {
    "int": ["2147483648", "+1", " 1", "1.5", "x"],
    "bigint": ["9223372036854775808", "1.0", "x"],
    "tinyint": ["128", "-129"],
    "double": ["-nan", "1d", "0x1p3", "1_0", "e5", "."],
    "date": ["2026-02-30", "0000-01-01", "x"],
    "timestamp": ["2026-11-27T01:02:03", "2026-11-27 01", "2026-11-27 01:02:03.123456789", "2026-11-27 24:00:00", "x"],
    "boolean": ["yes", "t", "x"],
    "decimal(10,2)": ["1e3", "x"],
}
FORMS = {
    "defaults": {},
    "escape declared, NULL": {"escape-character": "\\", "null-literal": "NULL"},
    "semicolon, single quote": {"field-delimiter": ";", "quote-character": "'", "escape-character": "#"},
    "comments, parse errors ignored": {"allow-comments": "true", "ignore-parse-errors": "true"},
    "parse errors ignored": {"ignore-parse-errors": "true"},
}


def _field(rng: random.Random, form: CsvTextForm, kind: str, bad: bool) -> str:
    pool = GOOD[kind] + (BAD.get(kind, []) if bad else [])
    text = rng.choice(pool)
    roll = rng.random()
    if roll < 0.03:
        return form.null_text
    if roll < 0.05 and form.quote and (text or kind == "string"):
        return form.quote + text.replace(form.quote, form.quote * 2) + form.quote
    if roll < 0.06 and kind == "string":
        return f"a{form.escape}{form.delimiter}b"
    if roll < 0.07 and kind == "string" and form.quote:
        return f"{form.quote}two{chr(10)}lines{form.quote}"
    return text


def _lines(seed: int, form: CsvTextForm, count: int, mixed: bool, bad: bool) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        fields = [_field(rng, form, kind, bad) if mixed else rng.choice(GOOD[kind][:2]) for _, kind in TYPES]
        if mixed and bad and rng.random() < 0.03:
            fields = fields[: rng.randint(1, len(fields) - 1)] if rng.random() < 0.5 else [*fields, "extra"]
        line = form.delimiter.join(fields)
        if mixed and form.allow_comments and rng.random() < 0.03:
            line = "# a comment, " + line
        if mixed and rng.random() < 0.02:
            line += "\r"
        lines.append(line)
    return lines


def _read(spark: Any, path: Path, form: CsvTextForm, split: bool) -> Any:
    from pyspark.sql import functions as F

    files = spark.read.format("text").schema("value string").option("lineSep", "\n").load(str(path))
    fields = FieldSplit(form, TYPES, spark.conf.get("spark.sql.session.timeZone")) if split else None
    carried = [F.col("_metadata.file_name").alias("file")]
    found = records(files, carried, form, {}, fields)
    return typed_records(found, form, TYPES, None, [F.col("file")], fields)


def _rows(frame: Any) -> list[str]:
    """The rows as Spark's text (NaN is not equal to itself, Python has no year 0)."""
    from pyspark.sql import functions as F

    return sorted(repr(tuple(row)) for row in frame.select(*(F.col(c).cast("string") for c in frame.columns)).collect())


def _write(path: Path, form: CsvTextForm, seed: int, bad: bool) -> None:
    path.mkdir()
    (path / "plain.csv").write_text("\n".join(_lines(seed, form, 600, False, bad)) + "\n")
    (path / "mixed.csv").write_text("\n".join(_lines(seed + 1, form, 1500, True, bad)) + "\n")


@pytest.fixture
def small_batches(spark: Any) -> Any:
    """Arrow batches of 64 rows: batches of plain records only, and mixed ones."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    previous = spark.conf.get(key)
    spark.conf.set(key, "64")
    yield spark
    spark.conf.set(key, previous)


@pytest.mark.spark
@pytest.mark.parametrize("name", list(FORMS))
def test_split_in_python_reads_the_rows_of_the_spark_parse(small_batches: Any, tmp_path: Path, name: str) -> None:
    spark = small_batches
    form = CsvTextForm.from_options(FORMS[name])
    bad = form.ignore_parse_errors
    previous = spark.conf.get("spark.sql.session.timeZone")
    for zone in ("UTC", "America/New_York"):
        spark.conf.set("spark.sql.session.timeZone", zone)
        try:
            path = tmp_path / zone.replace("/", "_")
            _write(path, form, len(name), bad)
            new = _read(spark, path, form, split=True)
            expected = _rows(_read(spark, path, form, split=False))
            assert _rows(new) == expected, zone
            assert len(expected) == 2100 if not bad else len(expected) > 600
        finally:
            spark.conf.set("spark.sql.session.timeZone", previous)


@pytest.mark.spark
def test_most_plain_records_are_split_in_python(spark: Any, tmp_path: Path) -> None:
    """The rows that the Python pass splits: every plain record of the right count (so the test above
    compares the two ways, not one with itself)."""
    from pyspark.sql import functions as F

    form = CsvTextForm()
    _write(tmp_path / "files", form, 1, bad=False)
    files = spark.read.format("text").schema("value string").option("lineSep", "\n").load(str(tmp_path / "files"))
    fields = FieldSplit(form, TYPES, "UTC")
    found = records(files, [F.col("_metadata.file_name").alias("file")], form, {}, fields)
    counts = {
        row["file"]: row["n"]
        for row in found.where(F.col(SPLIT)).groupBy("file").agg(F.count("*").alias("n")).collect()
    }
    assert counts["plain.csv"] == 600
    assert 500 < counts["mixed.csv"] < 1500


@pytest.mark.spark
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1,2,3", "csv line without 9 fields: 1,2,3"),
        ("x,1,1,s,1.5,2026-11-27,2026-11-27 01:02:03,true,1.25", "'x'"),
        ("1,1,1,s,-nan,2026-11-27,2026-11-27 01:02:03,true,1.25", "'-nan'"),
        ("1,1,1,s,1.5,2026-11-27,2026-11-27 01:02:03,true,1.25,x", "csv line without 9 fields"),
    ],
)
def test_a_line_that_does_not_parse_fails_as_before(spark: Any, tmp_path: Path, line: str, message: str) -> None:
    form = CsvTextForm()
    good = "1,1,1,s,1.5,2026-11-27,2026-11-27 01:02:03,true,1.25"
    (tmp_path / "part.csv").write_text("\n".join([good] * 5 + [line] + [good] * 5) + "\n")
    errors = []
    for split in (True, False):
        with pytest.raises(Exception) as caught:
            _read(spark, tmp_path, form, split).collect()
        errors.append(str(caught.value))
        assert message in str(caught.value)
    first_line = [error.splitlines()[0] for error in errors]
    assert first_line[0] == first_line[1]


def test_pyarrow_converts_only_what_spark_reads_alike() -> None:
    """In Python alone: which texts come back typed (the rest as text, for Spark's cast)."""
    import pyarrow as pa

    form = CsvTextForm()
    fields = FieldSplit(form, (("b", "bigint"), ("d", "double"), ("ts", "timestamp"), ("day", "date")), "UTC")
    cases = {
        "bigint": (["1", "-0", "007", ""], ["+1", " 1", "1.0", "9223372036854775808"]),
        "double": (["1.5", "1e5", ".5", "5.", "+2", "1e400", ""], ["NaN", "-nan", "inf", "1d", "0x1p3"]),
        "timestamp": (["2026-11-27 01:02:03", "2026-11-27 01:02:03.5", ""], ["2026-11-27", "2026-11-27T01:02:03"]),
        "date": (["2026-11-27", ""], ["2026-11-27 01:02:03", "2026-2-3", "2026-02-30"]),
    }
    for kind, (taken, refused) in cases.items():
        assert fields._typed(pa.array(taken), kind) is not None, kind
        for text in refused:
            assert fields._typed(pa.array([*taken, text]), kind) is None, (kind, text)
    assert FieldSplit(form, (("ts", "timestamp"),), "America/New_York").typed_kinds() == {}


def test_mixed_batch_splits_only_its_plain_records() -> None:
    import pyarrow as pa

    form = CsvTextForm()
    fields = FieldSplit(form, (("b", "bigint"), ("s", "string")), "UTC")
    lines = ["1,a", "2,\\N", '3,"q"', "4,b,c", "5,", "6"]
    batch = fields.split(pa.RecordBatch.from_pydict({"value": lines, "file": ["f"] * len(lines)}))
    found = batch.to_pydict()
    assert found["value"] == [None, "2,\\N", '3,"q"', "4,b,c", None, "6"]
    assert found[SPLIT] == [True, None, None, None, True, None]
    assert found["file"] == ["f"] * len(lines)
    assert [found[fields.typed_name(0)][i] for i in (0, 4)] == [1, 5]
    assert [found[fields.text_name(1)][i] for i in (0, 4)] == ["a", ""]
