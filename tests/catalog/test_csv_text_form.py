"""The csv text form's Spark expressions against their Python twins, on generated fields full of the
characters the form treats specially: the unescaping (runs of escape characters before ``n``/``r``,
doubled quotes), the parse of a line (the split of a plain line and the regex of a line with escapes or
quotes must give the same values), and the writer's escapes, skipped for types that cannot hold a special
character. Files are checked end to end in tests/connectors/filesystem/test_interop.py and
tests/connectors/filesystem/test_flink_files.py."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sqlext.catalog.csv_text import CsvTextForm

pytestmark = [pytest.mark.spark, pytest.mark.hms]

ALPHABET = ["\\", "#", "n", "r", '"', "'", ",", "|", ".", "a", "\n", "\r", "N", "1"]
FORMS = {
    "default": {},
    "declared escape": {"escape-character": "\\"},
    "metacharacter delimiter": {"field-delimiter": "|", "quote-character": "'", "escape-character": "#"},
    "dot delimiter": {"field-delimiter": ".", "null-literal": "NULL"},
    "no quote": {"disable-quote-character": "true"},
}


def _strings(seed: int, count: int = 1500) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 10))) for _ in range(count)]


def _unquoted_twin(form: CsvTextForm, raw: str) -> str:
    return form.hive_unescape(raw)


def _quoted_twin(form: CsvTextForm, raw: str) -> str:
    """The inside of a quoted field read left to right: a doubled quote is one, an escape pair is its
    second character (``n``/``r``: line breaks)."""
    out, index, e, q = [], 0, form.escape, form.quote
    while index < len(raw):
        pair = raw[index : index + 2]
        if pair == q * 2:
            out.append(q)
        elif raw[index] == e and len(pair) == 2:
            out.append({"n": "\n", "r": "\r"}.get(pair[1], pair[1]))
        else:
            out.append(raw[index])
            index += 1
            continue
        index += 2
    return "".join(out)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_unescaping_agrees_with_the_python_reading(spark: Any, name: str) -> None:
    from pyspark.sql import functions as F

    form = CsvTextForm.from_options(FORMS[name])
    raws = _strings(seed=len(name))
    frame = spark.createDataFrame([(raw,) for raw in raws], "raw string")
    columns = [form.unescape(F.col("raw")).alias("unquoted")]
    if form.quote is not None:
        columns.append(form.unescape(F.col("raw"), quoted=True).alias("quoted"))
    read = {row["raw"]: row.asDict() for row in frame.select("raw", *columns).collect()}
    for raw in raws:
        assert read[raw]["unquoted"] == _unquoted_twin(form, raw), repr(raw)
        if form.quote is not None:
            assert read[raw]["quoted"] == _quoted_twin(form, raw), repr(raw)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_lines_written_by_the_python_writer_parse_back(spark: Any, name: str) -> None:
    """Lines mixing plain fields (split at the delimiter) and escaped ones (the field regex): every value
    reads back, NULLs included."""
    form = CsvTextForm.from_options(FORMS[name])
    rnd = random.Random(3)
    strings = _strings(seed=11)
    rows = [
        (index, rnd.choice([None, *strings, "plain", "x" * 40]), rnd.choice([None, -index, index * 1000]))
        for index in range(len(strings))
    ]
    lines = [
        form.delimiter.join((form.encode_value(i), form.encode_value(text), form.encode_value(number)))
        for i, text, number in rows
    ]
    frame = spark.createDataFrame([(line,) for line in lines], "value string")
    fields, _ = form.parse(frame["value"], [("i", "int"), ("text", "string"), ("number", "bigint")])
    assert sorted(tuple(row) for row in frame.select(*fields).collect()) == rows


@pytest.mark.parametrize("delimiter", [" ", "-", ":", ".", "1", "e"])
def test_numbers_dates_and_timestamps_are_escaped_when_the_delimiter_is_one_of_their_characters(
    spark: Any, delimiter: str
) -> None:
    """The writer skips the escapes of a type whose text holds no special character of the form; a
    delimiter among those characters (a space in a timestamp, a digit) escapes them again."""
    from pyspark.sql import functions as F

    form = CsvTextForm.from_options({"field-delimiter": delimiter, "escape-character": "\\"})
    rows = spark.sql(
        "SELECT CAST(id AS INT) AS i, CAST(id * 1.5e10 AS DOUBLE) AS d, CAST(id / 3 AS DECIMAL(12, 4)) AS m, "
        "DATE_ADD(DATE'2026-11-01', CAST(id AS INT)) AS day, "
        "TIMESTAMP'2026-11-22 10:11:12.5' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts, id % 2 = 0 AS flag "
        "FROM range(-3, 12)"
    )
    types = [(name, kind) for name, kind in rows.dtypes]
    lines = rows.select(form.line(rows, rows.columns).alias("value"))
    fields, _ = form.parse(F.col("value"), types)
    assert sorted(lines.select(*fields).collect()) == sorted(rows.collect())
