"""Typed option declarations: parsing of each value type and every failure of ``validate`` with its message."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sqlext.errors import OptionError
from sqlext.options import (
    BOOLEAN,
    DURATION,
    INT,
    LIST,
    MEMORY_SIZE,
    STRING,
    ConfigOption,
    Options,
    enum_list_type,
    enum_type,
    format_duration,
    format_memory_size,
    non_negative,
    parse_duration,
    parse_memory_size,
    positive,
    validate,
)

PATH = ConfigOption("path", STRING, None, "where")
FORMAT = ConfigOption("format", enum_type("parquet", "csv"), None, "what")
DELAY = ConfigOption("sink.delay", DURATION, timedelta(0), "wait", check=non_negative)
SIZE = ConfigOption("sink.file-size", MEMORY_SIZE, 128 << 20, "size")
COUNT = ConfigOption("sink.parallelism", INT, None, "tasks", check=positive)
SHUFFLE = ConfigOption("sink.shuffle", BOOLEAN, False, "shuffle")
KINDS = ConfigOption("policy.kind", enum_list_type("metastore", "success-file"), None, "policies")
CSV = ConfigOption("csv.", STRING, None, "csv options", prefix=True)
REQUIRED = (PATH, FORMAT)
OPTIONAL = (DELAY, SIZE, COUNT, SHUFFLE, KINDS, CSV)


def _validate(**options: str) -> None:
    validate("demo", {"connector": "demo", "path": "file:///t", "format": "csv", **options}, REQUIRED, OPTIONAL)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10 s", timedelta(seconds=10)),
        ("10s", timedelta(seconds=10)),
        ("1 min", timedelta(minutes=1)),
        ("1m", timedelta(minutes=1)),
        ("1 h", timedelta(hours=1)),
        ("2 d", timedelta(days=2)),
        ("100ms", timedelta(milliseconds=100)),
        ("250", timedelta(milliseconds=250)),
        (" 3 HOURS ", timedelta(hours=3)),
    ],
)
def test_durations_parse_as_flink_writes_them(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "ten s", "1 fortnight", "-1 h", "1 h 2 min", "1.5 h"])
def test_bad_durations_say_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match="a duration such as '100ms', '10 s'"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("128MB", 128 << 20), ("1 gb", 1 << 30), ("512kb", 512 << 10), ("100", 100), ("2t", 2 << 40)],
)
def test_memory_sizes_parse_to_bytes(text: str, expected: int) -> None:
    assert parse_memory_size(text) == expected


def test_durations_and_sizes_print_back_in_their_shortest_form() -> None:
    assert [format_duration(parse_duration(t)) for t in ("60 min", "90 s", "100ms", "0 s")] == [
        "1 h",
        "90 s",
        "100 ms",
        "0 ms",
    ]
    assert [format_memory_size(parse_memory_size(t)) for t in ("1024 mb", "3kb", "100")] == ["1gb", "3kb", "100b"]


def test_valid_options_pass_and_read_back_typed() -> None:
    raw = {
        "connector": "demo",
        "path": "file:///t",
        "format": "CSV",
        "sink.delay": "1 h",
        "sink.file-size": "64MB",
        "sink.parallelism": "4",
        "sink.shuffle": "TRUE",
        "policy.kind": "metastore, success-file",
        "csv.field-delimiter": ";",
    }
    validate("demo", raw, REQUIRED, OPTIONAL)
    options = Options(raw)
    assert options.get(FORMAT) == "csv"
    assert options.get(DELAY) == timedelta(hours=1)
    assert options.get(SIZE) == 64 << 20
    assert options.get(COUNT) == 4
    assert options.get(SHUFFLE) is True
    assert options.get(KINDS) == ["metastore", "success-file"]
    assert options.with_prefix("csv.") == {"field-delimiter": ";"}
    assert Options({}).get(DELAY) == timedelta(0)
    assert Options({}).get(COUNT) is None


def test_require_names_a_missing_option() -> None:
    with pytest.raises(OptionError, match=r"Missing required option 'path'\.") as failure:
        Options({}).require(PATH)
    assert failure.value.option == "path"


def test_missing_required_options_are_listed_as_flink_does() -> None:
    with pytest.raises(OptionError) as failure:
        validate("demo", {"connector": "demo"}, REQUIRED, OPTIONAL)
    assert failure.value.message == (
        "One or more required options are missing.\n\nMissing required options are:\n\nformat\npath"
    )
    assert failure.value.option == "format"


def test_unsupported_options_list_every_supported_one_and_the_closest_match() -> None:
    with pytest.raises(OptionError) as failure:
        _validate(**{"sink.dealy": "1 h", "color": "red"})
    assert failure.value.message == (
        "Unsupported options found for 'demo'.\n"
        "'sink.dealy': Did you mean 'sink.delay'?\n\n"  # first: the fix, before the lists
        "Unsupported options:\n\ncolor\nsink.dealy\n\n"
        "Supported options:\n\n"
        "connector\ncsv.*\nformat\npath\npolicy.kind\nsink.delay\nsink.file-size\nsink.parallelism\nsink.shuffle"
    )
    assert (failure.value.option, failure.value.value) == ("color", "red")


def test_an_unsupported_option_without_a_close_match_gets_no_hint() -> None:
    with pytest.raises(OptionError) as failure:
        _validate(zzz="1")
    assert failure.value.message.endswith("sink.shuffle")
    assert "Did you mean" not in failure.value.message


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sink.delay", "1 fortnight", "Invalid value for option 'sink.delay': '1 fortnight'. Expected a duration"),
        ("sink.file-size", "big", "Invalid value for option 'sink.file-size': 'big'. Expected a memory size such as"),
        ("sink.file-size", "0 mb", "Expected a memory size such as '512kb', '128MB' or '1 gb'"),
        ("sink.parallelism", "many", "Invalid value for option 'sink.parallelism': 'many'. Expected an integer."),
        ("sink.parallelism", "0", "Invalid value for option 'sink.parallelism': '0'. It must be greater than 0."),
        ("sink.parallelism", "-3", "Invalid value for option 'sink.parallelism': '-3'. It must be greater than 0."),
        ("sink.parallelism", "9" * 12, "Expected an integer from -2147483648 to 2147483647"),
        ("sink.delay", "-1 h", "Expected a duration such as"),
        ("sink.delay", "36501 d", "at most 36500 d (100 years)"),
        ("sink.delay", "9" * 400 + " ms", "at most 36500 d (100 years)"),
        ("sink.file-size", "99999999 tb", "less than 8 EiB (a 64-bit number of bytes)"),
        ("sink.file-size", "9" * 400, "less than 8 EiB"),
        ("sink.shuffle", "yes", "Invalid value for option 'sink.shuffle': 'yes'. Expected 'true' or 'false'."),
        ("format", "avro", "Invalid value for option 'format': 'avro'. Expected one of 'parquet', 'csv'."),
        ("format", "parket", "Expected one of 'parquet', 'csv'. Did you mean 'parquet'?"),
        ("policy.kind", "metastore,email", "Expected one of 'metastore', 'success-file'."),
    ],
)
def test_unparsable_values_name_option_value_and_accepted_form(key: str, value: str, message: str) -> None:
    with pytest.raises(OptionError) as failure:
        _validate(**{key: value})
    assert message in failure.value.message
    assert (failure.value.option, failure.value.value) == (key, value)


@pytest.mark.parametrize(
    ("value", "ending"),
    [
        ("avro", "Expected one of 'parquet', 'csv'."),
        ("parket", "Expected one of 'parquet', 'csv'. Did you mean 'parquet'?"),
    ],
)
def test_an_enum_value_error_ends_in_one_full_stop_or_the_hint(value: str, ending: str) -> None:
    with pytest.raises(OptionError) as failure:
        _validate(format=value)
    assert failure.value.message.endswith(ending), failure.value.message
    assert ".." not in failure.value.message and "?." not in failure.value.message


def test_missing_options_are_reported_before_bad_values_and_bad_values_before_unknown_keys() -> None:
    with pytest.raises(OptionError, match="required options are missing"):
        validate("demo", {"sink.delay": "soon", "color": "red"}, REQUIRED, OPTIONAL)
    with pytest.raises(OptionError, match=r"Invalid value for option 'sink\.delay'"):
        _validate(**{"sink.delay": "soon", "color": "red"})


def test_prefix_options_match_their_family_only() -> None:
    assert CSV.matches("csv.field-delimiter")
    assert not CSV.matches("json.fail-on-missing-field")
    assert not PATH.matches("path.extra")


def test_list_type_splits_on_commas() -> None:
    assert LIST.parse("a, b,,c") == ["a", "b", "c"]
    assert LIST.render(["a", "b"]) == "a,b"


def test_defaults_render_as_written_in_ddl() -> None:
    assert [o.default_text for o in (PATH, DELAY, SIZE, SHUFFLE)] == ["(none)", "0 ms", "128mb", "false"]


RENAMED = ConfigOption("sink.report.url", STRING, None, "where", fallback_keys=("report.http.url",))
TIMEOUT = ConfigOption("sink.report.timeout", DURATION, None, "how long", fallback_keys=("report.http.timeout",))


def test_an_option_is_read_by_its_fallback_key_when_its_key_is_not_set() -> None:
    validate("t", {"path": "/x", "format": "csv", "report.http.url": "http://a"}, REQUIRED, (RENAMED,))
    assert Options({"report.http.url": "http://a"}).get(RENAMED) == "http://a"
    # Its own key wins, as in Flink.
    assert Options({"report.http.url": "http://a", "sink.report.url": "http://b"}).get(RENAMED) == "http://b"
    assert Options({}).get(RENAMED) is None


def test_a_required_option_given_by_its_fallback_key_is_not_missing() -> None:
    required = (ConfigOption("path", STRING, None, "where", fallback_keys=("location",)), FORMAT)
    validate("t", {"location": "/x", "format": "csv"}, required, ())


def test_a_bad_value_under_a_fallback_key_names_that_key() -> None:
    with pytest.raises(OptionError) as failure:
        validate("t", {"path": "/x", "format": "csv", "report.http.timeout": "soon"}, REQUIRED, (TIMEOUT,))
    assert failure.value.option == "report.http.timeout"
    assert "Invalid value for option 'report.http.timeout': 'soon'" in failure.value.message
