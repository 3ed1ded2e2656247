"""The csv source's records from lines (:mod:`sqlext.connectors.filesystem.csv_records`): the same records as
the whole-file record regex (:meth:`CsvTextForm.record_pattern`, what the source matched before it read lines),
with files split into many small ranges (quoted line breaks, escaped line breaks, ``\\r\\n`` and lone ``\\r``,
a quote never closed, records across range boundaries), and the pieces parsed in Python alone."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.csv_text import CsvTextForm
from sqlext.connectors.filesystem.csv_records import Records, records

pytestmark = [pytest.mark.spark]

FORMS = {
    "defaults": CsvTextForm(),
    "escape declared": CsvTextForm(escape_declared=True),
    "semicolon, single quote": CsvTextForm(delimiter=";", quote="'", escape="#"),
}


def _text(seed: int, form: CsvTextForm, records_count: int = 400) -> str:
    """csv text with every kind of record the form's regex knows, in random order."""
    return _shuffled(seed, _pieces(form), records_count)


def _shuffled(seed: int, pieces: list[str], records_count: int) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(records_count):
        lines.append(rng.choice(pieces))
        lines.append(rng.choice(["\n", "\n", "\n", "\r\n", "\r"]))
    return "".join(lines) + "\n"


def _pieces(form: CsvTextForm) -> list[str]:
    d, q, e = form.delimiter, form.quote or '"', form.escape
    return [
        f"1{d}plain{d}x",
        f"2{d}{q}quoted{d} with delimiter{q}{d}x",
        f"3{d}{q}two\nlines{q}{d}x",
        f"4{d}{q}three\r\nlines\rhere{q}{d}x",
        f"5{d}{q}doubled {q}{q} quote\n{q}{d}x",
        f"6{d}escaped{e}\nline break{d}x",
        f"7{d}escaped {e}{d} delimiter{d}{e}{e}",
        f"8{d}{q}closed{q}but more{d}x",
        f"9{d}mid{q}quote{d}x",
        f"10{d}{q}{e}{q}{q} escape inside\n{q}{d}x",
        f"11{d}{q}{q}{d}{q}{q}",
        "",
        f"12{d}é ü 漢{d}{q}é\n漢{q}",
    ]


def _expected(form: CsvTextForm, text: str) -> list[str]:
    """The records of ``text`` by the whole-text regex (Java's ``\\z`` is Python's ``\\Z``)."""
    return [m.group(1) for m in re.finditer(form.python_record_pattern(more_text=False), text)]


@pytest.mark.parametrize("name", list(FORMS))
def test_pieces_give_the_records_of_the_whole_text(name: str) -> None:
    form = FORMS[name]
    for seed in range(20):
        text = _text(seed, form, 60) + ("" if seed % 2 else f"99{form.delimiter}{form.quote}never closed\n1,2\n")
        parsed = Records(form)
        found: list[str] = []
        lines = text.split("\n")[:-1]
        rng = random.Random(seed)
        index = 0
        while index < len(lines):
            step = rng.randint(1, 7)
            found.extend(parsed.feed("".join(line + "\n" for line in lines[index : index + step])))
            index += step
        found.extend(record for record, _ in parsed.finish())
        assert found == _expected(form, text), seed


def _read(spark: Any, path: Path, form: CsvTextForm, on_jvm: bool) -> list[str]:
    from pyspark.sql import functions as F

    files = spark.read.format("text").schema("value string").option("lineSep", "\n").load(str(path))
    joined = records(files, [F.col("_metadata.file_name").alias("file")], form, {}, on_jvm)
    assert ("MapPartitions" if on_jvm else "MapInArrow") in joined._jdf.queryExecution().analyzed().toString()
    rows = joined.collect()
    by_file: dict[str, list[str]] = {}
    for row in rows:
        by_file.setdefault(row.file, []).append(row.value)
    return [value for file in sorted(by_file) for value in by_file[file]]


@pytest.mark.parametrize("on_jvm", [True, False], ids=["jvm", "python"])
@pytest.mark.parametrize("name", list(FORMS))
def test_split_files_read_as_whole_files(spark: Any, tmp_path: Path, name: str, on_jvm: bool) -> None:
    form = FORMS[name]
    expected = []
    for index in range(2):
        # A record of 3,000 lines (longer than the JVM joiner's block of lines) in the second file.
        d, q = form.delimiter, form.quote
        long = f"13{d}{q}" + "a line of a long value\n" * 3000 + f"{q}{d}x\n"
        text = _text(index, form) + (long if index else f"99{form.delimiter}{form.quote}never closed\nafter\n")
        (tmp_path / f"part-{index}.csv").write_bytes(text.encode("utf-8"))
        expected.extend(_expected(form, text))
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    try:
        for split in ("397", "128MB"):
            spark.conf.set("spark.sql.files.maxPartitionBytes", split)
            spark.conf.set("spark.sql.files.openCostInBytes", "0")
            assert _read(spark, tmp_path, form, on_jvm) == expected, split
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)
        spark.conf.unset("spark.sql.files.openCostInBytes")


FIELD_FORMS = {
    **FORMS,
    "ignore parse errors, comments": CsvTextForm(ignore_parse_errors=True, allow_comments=True),
}
FIELD_TYPES = [("id", "int"), ("a", "string"), ("b", "string")]


def _field_text(form: CsvTextForm) -> str:
    """The records of :func:`_text`, and records of NULLs, empty fields, short records and (for a form that skips
    them) bad ones."""
    d, q, e, n = form.delimiter, form.quote, form.escape, form.null_literal
    # Record 10 of the pieces reads, where the escape is declared, as a record whose first field is a quote.
    pieces = [piece for piece in _pieces(form) if not piece.startswith("10")]
    if form.escape_declared:
        pieces.append(f"10{d}{q}{e}{q} escaped quote, {e}{e}, {e}n{q}{d}x")
    extra = [f"14{d}{n}{d}{q}{n}{q}", f"{d}{d}", f"15{d}only two", "16", f"{q}17{q}{d}{q}{q}{d}{n}"]
    if form.ignore_parse_errors:
        extra += [f"not a number{d}a{d}b", f"18{d}a{d}b{d}one too many", "#19,a comment,line"]
    return _shuffled(3, pieces, 200) + "\n".join(extra) + "\n"


def _typed_rows(spark: Any, path: Path, form: CsvTextForm, on_jvm: bool) -> list[tuple[Any, ...]]:
    """The typed rows of ``path`` (one file) through the source's JVM fields or its Python records and split."""
    from pyspark.sql import functions as F

    from sqlext.connectors.filesystem.csv_records import record_fields
    from sqlext.connectors.filesystem.csv_records_jvm import field_column

    files = spark.read.format("text").schema("value string").option("lineSep", "\n").load(str(path))
    carried = [F.col("_metadata.file_name").alias("file")]
    accepted = (1, 3)
    if on_jvm:
        fields = record_fields(files, carried, form, {}, FIELD_TYPES, accepted)
        assert fields is not None
        assert "MapPartitions" in fields._jdf.queryExecution().analyzed().toString()
        texts = [F.col(field_column(index)) for index in range(len(FIELD_TYPES))]
        columns, parsed = form.typed_texts(texts, FIELD_TYPES)
    else:
        lines = records(files, carried, form, {}, on_jvm=False)
        if form.allow_comments:
            lines = lines.where(~F.startswith(F.col("value"), F.lit("#")))
        plain, split = form.split(F.col("value"), len(FIELD_TYPES), accepted)
        fields = lines.select(plain.alias("plain"), split.alias("fields"))
        columns, parsed = form.typed(F.col("plain"), F.col("fields"), FIELD_TYPES, accepted)
    typed = fields.select(*columns, *([parsed.alias("parsed")] if parsed is not None else []))
    if parsed is not None:
        typed = typed.where("parsed").drop("parsed")
    return [tuple(row) for row in typed.collect()]


@pytest.mark.parametrize("name", list(FIELD_FORMS))
def test_fields_split_on_the_jvm_are_the_values_the_sql_split_reads(spark: Any, tmp_path: Path, name: str) -> None:
    """``CsvFields.java`` against :meth:`CsvTextForm.split` and :meth:`CsvTextForm.typed` on the same records:
    quoted, escaped and doubled quotes, NULL unquoted and quoted, empty fields of an int and of strings, short
    records, and with ``ignore-parse-errors`` bad values and too many fields skipped, comments too."""
    form = FIELD_FORMS[name]
    path = tmp_path / "part-0.csv"
    path.write_bytes(_field_text(form).encode("utf-8"))

    on_jvm = _typed_rows(spark, path, form, on_jvm=True)

    assert on_jvm == _typed_rows(spark, path, form, on_jvm=False)
    quoted_null = form.hive_unescape(form.null_literal) if form.escape_declared else form.null_literal
    assert (14, None, quoted_null) in on_jvm and (None, "", "") in on_jvm and (15, "only two", None) in on_jvm
    assert (17, "", None) in on_jvm, "a quoted number read, a quoted empty string kept, the null literal NULL"
    if form.ignore_parse_errors:
        assert (None, "a", "b") not in on_jvm, "a bad number skips its record"
        assert not [row for row in on_jvm if row[0] in (18, 19)], "too many fields, a comment: skipped"


@pytest.mark.parametrize("on_jvm", [True, False], ids=["jvm", "python"])
def test_a_record_with_too_many_fields_fails_the_read_naming_the_record(
    spark: Any, tmp_path: Path, on_jvm: bool
) -> None:
    path = tmp_path / "part-0.csv"
    path.write_text("1,a,b\n18,a,b,one too many\n")

    with pytest.raises(Exception, match="csv line without 1 to 3 fields: 18,a,b,one too many"):
        _typed_rows(spark, path, CsvTextForm(), on_jvm)


def test_records_of_a_file_with_bytes_that_are_not_utf8_are_each_read_once_from_small_ranges(
    spark: Any, tmp_path: Path
) -> None:
    """Such bytes before a range's start are counted as the file holds them (one byte each, not the three of a
    replacement character), so every range starts at the record Hadoop's line reader would; each reads as U+FFFD."""
    lines = []
    for index in range(600):
        lines.append(
            [
                f"{index},plain ".encode() + b"\xff\xfe" + b",x",
                f'{index},"two '.encode() + b"\xe9" + b'\nlines",x',
                f'{index},"cut at the end '.encode() + b"\xe6\xbc" + b'",x',
                f"{index},valid é 漢,x".encode(),
            ][index % 4]
        )
    path = tmp_path / "part-0.csv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    try:
        spark.conf.set("spark.sql.files.maxPartitionBytes", "397")
        spark.conf.set("spark.sql.files.openCostInBytes", "0")
        read = _read(spark, tmp_path, CsvTextForm(), on_jvm=True)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)
        spark.conf.unset("spark.sql.files.openCostInBytes")

    assert sorted(int(record.split(",", 1)[0]) for record in read) == list(range(600))
    assert read[0] == "0,plain \ufffd\ufffd,x"
    assert read[1] == '1,"two \ufffd\nlines",x'
    assert read[2] == '2,"cut at the end \ufffd\ufffd",x'
    assert read[3] == "3,valid é 漢,x"
