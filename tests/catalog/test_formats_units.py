"""csv text form units (no Spark): how NULL, a string equal to the null literal and a TIMESTAMP_LTZ are
written, and the SerDe parameters the HMS gets for them. Readers are checked end to end in
tests/connectors/filesystem/test_interop.py and tests/connectors/filesystem/test_flink_files.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from sqlext.catalog.csv_text import CsvTextForm
from sqlext.errors import OptionError


def test_default_form_writes_hives_null_literal_as_it_is() -> None:
    form = CsvTextForm.from_options({})
    assert form.encode_value(None) == "\\N"
    assert form.encode_value("\\N") == "\\\\N"
    assert form.serde()["serialization.null.format"] == "\\N"


def test_a_declared_escape_character_writes_null_escaped_as_flinks_reader_compares_it() -> None:
    """Flink unescapes a field before comparing it with the null literal, so NULL is written escaped and
    the HMS gets that text; the string equal to the literal gets one more escape (Hive reads it back)."""
    form = CsvTextForm.from_options({"escape-character": "\\", "null-literal": "\\N"})
    assert form.encode_value(None) == "\\\\N"
    assert form.serde()["serialization.null.format"] == "\\\\N"
    assert form.encode_value("\\N") == "\\\\\\N"
    assert form.hive_unescape(form.encode_value("\\N")) == "\\N"
    assert form.null_forms == ("\\\\N", "\\N")


def test_a_string_equal_to_a_plain_null_literal_is_escaped() -> None:
    form = CsvTextForm.from_options({"null-literal": "NULL"})
    assert (form.encode_value(None), form.encode_value("NULL"), form.encode_value("NULLS")) == (
        "NULL",
        "\\NULL",
        "NULLS",
    )
    assert form.hive_unescape("\\NULL") == "NULL"


def test_a_null_literal_no_string_can_be_told_apart_from_is_refused() -> None:
    with pytest.raises(OptionError, match=r"csv\.null-literal"):
        CsvTextForm.from_options({"escape-character": "\\", "null-literal": "\\n"})


def test_timestamp_ltz_is_written_in_utc_with_z() -> None:
    form = CsvTextForm.from_options({})
    value = datetime(2026, 1, 2, 4, 4, 5, 500000, tzinfo=timezone(timedelta(hours=1)))
    assert form.encode_value(value, ltz=True) == "2026-01-02 03:04:05.5Z"
    assert form.encode_value(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02 03:04:05"
    assert "timestamp.formats" in form.serde()


@pytest.mark.parametrize(
    ("written", "delimiter"), [("\\t", "\t"), ("\\\\", "\\"), ("\\", "\\"), (";", ";"), ("\\u0001", "\x01")]
)
def test_the_field_delimiter_is_unescaped_as_flinks_csv_format_does(written: str, delimiter: str) -> None:
    assert CsvTextForm.from_options({"field-delimiter": written, "escape-character": "#"}).delimiter == delimiter


@pytest.mark.parametrize(
    ("standard", "patterns"),
    [
        ({}, ["yyyy-MM-dd HH:mm:ss.SSSSSSSSSZ", "yyyy-MM-dd HH:mm:ssZ"]),
        ({"timestamp-format.standard": "iso-8601"}, ["yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSSZ", "yyyy-MM-dd'T'HH:mm:ssZ"]),
    ],
)
def test_a_json_table_tells_hive_readers_the_timestamp_forms_it_writes(standard: dict[str, str], patterns: list[str]):
    from sqlext.catalog.hive_storage import hive_storage

    formats = hive_storage("json", standard).parameters["timestamp.formats"].split(",")
    assert formats[: len(patterns)] == patterns
