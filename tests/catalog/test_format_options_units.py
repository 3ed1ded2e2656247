"""Flink's csv and json format checks, made at CREATE TABLE (checked against Flink itself in
tests/connectors/filesystem/test_flink_conformance.py; these cases run without Flink)."""

from __future__ import annotations

import pytest

from sqlext.catalog.format_options import check_format_options
from sqlext.errors import OptionError


@pytest.mark.parametrize(
    ("fmt", "options", "named"),
    [
        ("csv", {"disable-quote-character": "true", "quote-character": "|"}, "csv.quote-character"),
        ("csv", {"allow-comments": "maybe"}, "csv.allow-comments"),
        ("csv", {"ignore-parse-errors": " true"}, "csv.ignore-parse-errors"),
        ("json", {"timestamp-format.standard": "iso-8601"}, "json.timestamp-format.standard"),
        ("json", {"timestamp-format.standard": "RFC-3339"}, "json.timestamp-format.standard"),
        ("json", {"map-null-key.mode": "KEEP"}, "json.map-null-key.mode"),
        ("json", {"fail-on-missing-field": "true", "ignore-parse-errors": "TRUE"}, "json.fail-on-missing-field"),
        ("json", {"encode.non-finite-number.mode": "ZERO"}, "json.encode.non-finite-number.mode"),
        ("json", {"encode.non-finite-number.mode": " NULL"}, "json.encode.non-finite-number.mode"),
    ],
)
def test_what_flink_refuses_is_refused_naming_the_option(fmt: str, options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError) as refused:
        check_format_options(fmt, options)
    assert refused.value.option == named and named in str(refused.value)


@pytest.mark.parametrize(
    ("fmt", "options"),
    [
        ("csv", {"disable-quote-character": "false", "quote-character": "|"}),
        ("csv", {"disable-quote-character": "TRUE", "allow-comments": "False"}),
        ("json", {"timestamp-format.standard": "ISO-8601", "map-null-key.mode": "literal"}),
        ("json", {"fail-on-missing-field": "true", "ignore-parse-errors": "false"}),
        ("json", {"encode.non-finite-number.mode": "string"}),
        ("json", {"encode.non-finite-number.mode": "Null"}),
        ("json", {"encode.non-finite-number.mode": "FAIL"}),
        ("parquet", {"compression": "snappy"}),
    ],
)
def test_what_flink_takes_is_taken(fmt: str, options: dict[str, str]) -> None:
    check_format_options(fmt, options)


def test_a_kafka_key_format_names_its_prefix() -> None:
    with pytest.raises(OptionError) as refused:
        check_format_options("json", {"map-null-key.mode": "KEEP"}, "key.")
    assert refused.value.option == "key.json.map-null-key.mode"


def test_sqlexts_non_finite_mode_lists_the_modes_and_suggests_the_closest() -> None:
    with pytest.raises(OptionError) as refused:
        check_format_options("json", {"encode.non-finite-number.mode": "STRINGS"})
    assert str(refused.value) == (
        "Invalid value for option 'json.encode.non-finite-number.mode': 'STRINGS'. Expected one of 'FAIL', "
        "'STRING', 'NULL'. Did you mean 'STRING'?"
    )
