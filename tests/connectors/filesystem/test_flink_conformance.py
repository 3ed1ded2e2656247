"""Flink as the reference for sqlext's decisions: partition time extraction, the commit decision of each
trigger, and which option values are accepted, each case run on Flink itself and on sqlext.

Flink's side runs in its own venv (:mod:`tests.support.flink`): Flink's ``DefaultPartTimeExtractor`` and
``PartitionCommitPredicate`` called through PyFlink's JVM, and ``TableEnvironment.explain_sql`` of an
INSERT, which validates every option of its tables without running a job. sqlext's side is the code
its sink and CREATE TABLE run. Cases are data: add a line to add a case. Differences kept on purpose are
listed in docs/partition-commit.md under "Differences from Flink"; their cases say which.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.filesystem.commit.trigger import create_trigger
from sqlext.connectors.filesystem.escaping import parse_partition_path, partition_path
from sqlext.connectors.filesystem.extractor import DefaultPartitionTimeExtractor
from sqlext.connectors.filesystem.options import HIVE_DEFAULT_PARTITION
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import SqlextError
from sqlext.registry import validate_table
from sqlext.sql.parser import parse_statement
from sqlext.sql.statements import CreateTable
from sqlext.table import Column, TableDefinition, TableIdentifier
from tests.support.flink import Flink, FlinkError

DOCS = Path(__file__).resolve().parents[3] / "docs" / "partition-commit.md"
DIFFERENCES = DOCS.read_text().split("## Differences from Flink", 1)[1]

pytestmark = [pytest.mark.flink]

# -- partition time extraction -----------------------------------------------------------------------

#: (timestamp-pattern, timestamp-formatter, keys, values)
EXTRACTIONS: list[tuple[str | None, str | None, list[str], list[str]]] = [
    (None, None, ["dt"], ["2026-01-01"]),
    (None, None, ["dt"], ["2026-1-2 3:04:05"]),
    (None, None, ["dt"], ["2026-01-01 05:00"]),
    (None, None, ["dt"], ["2026-01-01T05:00:00"]),
    (None, None, ["dt"], ["2026-01-01 05:00:00.123456789"]),
    (None, None, ["dt"], ["2026-13-01"]),
    (None, None, ["dt"], ["2026-02-30"]),
    (None, None, ["dt"], [" 2026-01-01"]),
    (None, None, ["dt"], [""]),
    (None, None, ["dt"], ["__DEFAULT_PARTITION__"]),
    (None, None, ["dt", "hr"], ["2026-01-01", "05"]),
    ("$dt", None, ["dt"], ["2026-01-01"]),
    ("$dt $hr:00:00", None, ["dt", "hr"], ["2026-01-01", "05"]),
    ("$dt $hr:00:00", None, ["dt", "hr"], ["2026-01-01", "5"]),
    ("$dt $hr:00:00", None, ["dt", "hr"], ["2026-01-01", "24"]),
    ("$dt $hr:00:00", None, ["dt", "hr"], ["tomorrow", "05"]),
    ("$dt $hr:00:00", None, ["dt", "hr"], ["2026-01-01", ""]),
    ("$year-$month-$day $hour:00:00", None, ["year", "month", "day", "hour"], ["2026", "01", "01", "05"]),
    ("$year-$month-$day $hour:00:00", None, ["year", "month", "day", "hour"], ["2026", "1", "1", "5"]),
    ("$year-$month-$day", None, ["year", "month", "day"], ["2026", "11", "22"]),
    ("$day $hour:00:00", None, ["h", "day", "hour"], ["7", "2026-01-01", "05"]),
    ("$day $hour:00:00", None, ["day", "hour", "h"], ["2026-01-01", "05", "7"]),
    ("$dt", "yyyyMMdd", ["dt"], ["20260101"]),
    ("$dt", "yyyyMMdd", ["dt"], ["2026-01-01"]),
    ("$dt", "yyyyMMdd", ["dt"], ["2026011"]),
    ("$dt $hr", "yyyy-MM-dd HH", ["dt", "hr"], ["2026-01-01", "05"]),
    ("$dt $hr", "yyyy-MM-dd HH", ["dt", "hr"], ["2026-01-01", "5"]),
    ("$dt $hr", "yyyy-MM-dd H", ["dt", "hr"], ["2026-01-01", "5"]),
    ("$dt", "yyyy/MM/dd", ["dt"], ["2026/01/31"]),
    ("$dt", "yyyy-MM-dd", ["dt"], ["2026-02-30"]),
    ("$dt", "yyyy-MM-dd", ["dt"], ["2026-02-32"]),
    ("$dt", "yyyy-MM-dd", ["dt"], ["2026-13-01"]),
    ("$dt", "yyyy-MM-dd", ["dt"], ["2026-1-01"]),
    ("$dt", "yyyy-M-d", ["dt"], ["2026-1-1"]),
    ("$dt", "yyyy-MM", ["dt"], ["2026-01"]),
    ("$dt", "yyyyMMddHH", ["dt"], ["2026010105"]),
    ("$dt", "yy-MM-dd", ["dt"], ["26-01-01"]),
    ("$dt", "yyyy-MM-dd'T'HH:mm:ss", ["dt"], ["2026-01-01T05:06:07"]),
    ("$dt", "yyyy-MM-dd HH:mm:ss.SSS", ["dt"], ["2026-01-01 05:06:07.123"]),
    ("$dt", "yyyy-MM-dd HH:mm", ["dt"], ["2026-01-01 05:06"]),
    ("$dt $hr:00:00", "yyyy-MM-dd HH:mm:ss", ["dt", "hr"], ["2026-01-01", "24"]),
    ("$dt $hr:00:00", "yyyy-MM-dd HH:mm:ss", ["dt", "hr"], ["2026-01-01", "25"]),
    ("$dt", "uuuu-MM-dd", ["dt"], ["2026-01-01"]),
    ("$dt", "yyyy-MM-dd", ["dt"], ["2026-01-01 "]),
]


def _sqlext_extract(pattern: str | None, formatter: str | None, keys: list[str], values: list[str]) -> str:
    try:
        return DefaultPartitionTimeExtractor(pattern, formatter).extract(keys, values).isoformat()
    except SqlextError:
        return "error"


def _flink_extract(flink: Flink, pattern: str | None, formatter: str | None, keys: list[str], values: list[str]) -> str:
    try:
        text = flink.request("extract", pattern=pattern, formatter=formatter, keys=keys, values=values)
    except FlinkError:
        return "error"
    return datetime.fromisoformat(text).isoformat()  # Java prints 2026-01-01T05:00, Python adds :00


@pytest.mark.parametrize(("pattern", "formatter", "keys", "values"), EXTRACTIONS)
def test_partition_time_extraction_matches_flink(
    flink: Flink, pattern: str | None, formatter: str | None, keys: list[str], values: list[str]
) -> None:
    expected = _flink_extract(flink, pattern, formatter, keys, values)
    assert _sqlext_extract(pattern, formatter, keys, values) == expected


# -- commit decisions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """Is ``partition`` ready, with these options, this watermark and these processing times?"""

    options: dict[str, str]
    partition: str
    watermark: str | None = None  # an instant, e.g. '2026-01-01T05:00:00.001Z'; None: no watermark yet
    created_ms: int = 0
    now_ms: int = 0


HOURLY = {
    "sink.partition-commit.trigger": "partition-time",
    "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
}
DAILY = {"sink.partition-commit.trigger": "partition-time"}


def _hourly(delay: str = "0 s", zone: str = "UTC") -> dict[str, str]:
    return {
        **HOURLY,
        "sink.partition-commit.delay": delay,
        "sink.partition-commit.watermark-time-zone": zone,
    }


DECISIONS: list[Decision] = [
    Decision(_hourly(), "dt=2026-01-01/hr=05", "2026-01-01T05:00:00Z"),
    Decision(_hourly(), "dt=2026-01-01/hr=05", "2026-01-01T05:00:00.001Z"),
    Decision(_hourly(), "dt=2026-01-01/hr=05", None),
    Decision(_hourly("1 h"), "dt=2026-01-01/hr=05", "2026-01-01T06:00:00Z"),
    Decision(_hourly("1 h"), "dt=2026-01-01/hr=05", "2026-01-01T06:00:00.001Z"),
    Decision(_hourly("1 h"), "dt=2026-01-01/hr=05", "2026-01-01T05:59:59.999Z"),
    Decision(_hourly("1 d"), "dt=2026-01-01/hr=05", "2026-01-02T05:00:01Z"),
    Decision(_hourly("1 h", "Asia/Shanghai"), "dt=2026-01-02/hr=05", "2026-01-01T22:00:00Z"),
    Decision(_hourly("1 h", "Asia/Shanghai"), "dt=2026-01-02/hr=05", "2026-01-01T22:00:00.001Z"),
    Decision(_hourly("1 h", "Asia/Shanghai"), "dt=2026-01-02/hr=05", "2026-01-02T05:30:00Z"),
    Decision(_hourly("0 s", "GMT+08:00"), "dt=2026-01-02/hr=05", "2026-01-01T21:00:00.001Z"),
    Decision(_hourly("0 s", "GMT-3"), "dt=2026-01-02/hr=05", "2026-01-02T07:59:00Z"),
    # America/Los_Angeles skips 02:00-03:00 on 2026-03-08 and repeats 01:00-02:00 on 2026-11-01.
    Decision(_hourly("0 s", "America/Los_Angeles"), "dt=2026-03-08/hr=02", "2026-03-08T10:00:00Z"),
    Decision(_hourly("0 s", "America/Los_Angeles"), "dt=2026-03-08/hr=02", "2026-03-08T10:00:00.001Z"),
    Decision(_hourly("1 h", "America/Los_Angeles"), "dt=2026-03-08/hr=01", "2026-03-08T10:00:00.001Z"),
    Decision(_hourly("1 h", "America/Los_Angeles"), "dt=2026-11-01/hr=01", "2026-11-01T09:00:00.001Z"),
    Decision(_hourly("1 h", "America/Los_Angeles"), "dt=2026-11-01/hr=01", "2026-11-01T08:30:00Z"),
    Decision(_hourly("1 h", "America/Los_Angeles"), "dt=2026-11-01/hr=02", "2026-11-01T10:00:00.001Z"),
    Decision({**DAILY, "sink.partition-commit.delay": "1 d"}, "dt=2026-01-01", "2026-01-02T00:00:00.001Z"),
    Decision({**DAILY, "sink.partition-commit.delay": "1 d"}, "dt=2026-01-01", "2026-01-01T23:59:59Z"),
    Decision(
        {**DAILY, "partition.time-extractor.timestamp-formatter": "yyyyMMdd", "sink.partition-commit.delay": "1 h"},
        "dt=20260101",
        "2026-01-01T01:00:00.001Z",
    ),
    Decision(
        {
            **HOURLY,
            "partition.time-extractor.timestamp-pattern": "$dt $hr",
            "partition.time-extractor.timestamp-formatter": "yyyy-MM-dd HH",
        },
        "dt=2026-01-01/hr=05",
        "2026-01-01T05:00:00.001Z",
    ),
    Decision(_hourly(), "dt=2026-01-01/hr=xx", "2026-01-01T05:00:00.001Z"),
    Decision(_hourly(), "dt=2026-01-01/hr=__DEFAULT_PARTITION__", "2026-01-01T05:00:00.001Z"),
    Decision({**HOURLY, "partition.time-extractor.kind": "DEFAULT"}, "dt=2026-01-01/hr=05", "2026-01-01T06:00:00Z"),
    Decision({**HOURLY, "partition.time-extractor.kind": "custom"}, "dt=2026-01-01/hr=05", "2026-01-01T06:00:00Z"),
    Decision({}, "dt=2026-01-01/hr=05", created_ms=1000, now_ms=1000),
    Decision({"sink.partition-commit.delay": "1 min"}, "dt=2026-01-01/hr=05", created_ms=1000, now_ms=61_000),
    Decision({"sink.partition-commit.delay": "1 min"}, "dt=2026-01-01/hr=05", created_ms=1000, now_ms=61_001),
    Decision({"sink.partition-commit.trigger": "process-time"}, "dt=2026-01-01/hr=05", "2026-01-01T00:00:00Z"),
]


def _epoch_ms(instant: str | None) -> int | None:
    if instant is None:
        return None
    return round(datetime.fromisoformat(instant).astimezone(UTC).timestamp() * 1000)


def _sqlext_decision(case: Decision) -> str:
    keys = [part.split("=", 1)[0] for part in case.partition.split("/")]
    columns = tuple(Column(key, "STRING") for key in keys)
    options = {"connector": "filesystem", "path": "file:///tmp/t", "format": "csv", **case.options}
    table = TableDefinition(TableIdentifier("d", "t"), columns, options, partition_keys=tuple(keys))
    try:
        validate_table(table)
        settings = SinkSettings.from_table(table)
        trigger = create_trigger(
            settings.trigger, settings.delay, settings.commit_extractor(), settings.keys, settings.time_zone
        )
        trigger.add([(case.partition, parse_partition_path(case.partition, keys))], case.created_ms)
        return "ready" if trigger.ready(_epoch_ms(case.watermark), case.now_ms) else "waits"
    except SqlextError:
        return "error"


def _flink_decision(flink: Flink, case: Decision) -> str:
    keys = [part.split("=", 1)[0] for part in case.partition.split("/")]
    watermark = _epoch_ms(case.watermark)
    try:
        ready = flink.request(
            "predicate",
            options=case.options,
            keys=keys,
            partition=case.partition,
            watermark=-(1 << 63) if watermark is None else watermark,
            create_proc=case.created_ms,
            current_proc=case.now_ms,
        )
    except FlinkError:
        return "error"
    return "ready" if ready else "waits"


@pytest.mark.parametrize("case", DECISIONS, ids=lambda c: f"{c.partition}@{c.watermark or c.now_ms}")
def test_commit_decision_matches_flink(flink: Flink, case: Decision) -> None:
    assert _sqlext_decision(case) == _flink_decision(flink, case)


# -- partition directory names ----------------------------------------------------------------------

#: Every ASCII character, then non-ASCII ones (Latin-1, the BMP, beyond it), as a partition value.
PATH_CHARACTERS = [chr(code) for code in range(0x80)] + ["\u00e9", "\u00a0", "\u2603", "\U0001f600", "\ufeff"]


def _sqlext_partition_path(keys: list[str], values: list[str]) -> str:
    try:
        return partition_path(keys, values, HIVE_DEFAULT_PARTITION) + "/"
    except SqlextError:
        return "error"


@pytest.mark.parametrize("char", PATH_CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_partition_directory_names_escape_as_flink_escapes_them(flink: Flink, char: str) -> None:
    keys, values = ["p"], [f"a{char}b"]
    expected = flink.request("partition_path", keys=keys, values=values)
    if char == "\0":  # Flink writes %00; sqlext refuses it (a PostgreSQL metastore cannot store it)
        assert _sqlext_partition_path(keys, values) == "error" and expected == "p=a%00b/"
        assert "NUL" in DIFFERENCES
        return
    assert _sqlext_partition_path(keys, values) == expected
    assert parse_partition_path(expected, keys) == values


# -- option values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionCase:
    """One option value on the sink (or, with ``source=True``, the source) table."""

    key: str
    value: str
    source: bool = False
    #: Why sqlext answers differently on purpose (the item in "Differences from Flink"), or None.
    deliberate: str | None = None
    #: Other options of the same table (another format, a second option the value goes with).
    extra: tuple[tuple[str, str], ...] = ()


def _opt(key: str, *values: str, source: bool = False, **extra: str) -> list[OptionCase]:
    return [OptionCase(key, value, source, extra=tuple(extra.items())) for value in values]


def _with(
    key: str, value: str, *extra: tuple[str, str], source: bool = False, deliberate: str | None = None
) -> OptionCase:
    return OptionCase(key, value, source, deliberate, tuple(extra))


JSON = ("format", "json")
PARTITION_TIME = ("sink.partition-commit.trigger", "partition-time")
#: The item of "Differences from Flink" that lists what sqlext refuses at CREATE and Flink accepts there.
EARLIER = "refused at CREATE TABLE"


DELAY = "sink.partition-commit.delay"
OPTION_CASES: list[OptionCase] = [
    *_opt(DELAY, "0 s", "1 h", "10min", "10 MIN", " 1 h ", "2 d", "100ms", "1 hours", "5", "30 sec", "1 µs"),
    *_opt(DELAY, "1.5 h", "-1 s", "1 hx", "", "h", "1 week", "1h 30min", "0"),
    OptionCase(DELAY, "36501 d", deliberate="Durations longer than 100 years"),
    OptionCase(DELAY, "99999999999999999999 ms", deliberate="Durations longer than 100 years"),
    *_opt("sink.rolling-policy.file-size", "128MB", "128 mb", "1 gb", "512kb", "1024", "1 mebibytes", "2t"),
    *_opt("sink.rolling-policy.file-size", "1.5mb", "128 MiB", "-1mb", "", "mb", "128 m b"),
    *_opt("sink.rolling-policy.file-size", "0"),
    *_opt("sink.rolling-policy.rollover-interval", "30 min", "1 x", "0 s"),
    *_opt("sink.rolling-policy.check-interval", "1 min", "one minute"),
    *_opt("sink.rolling-policy.inactivity-interval", "10 s"),
    *_opt("sink.shuffle-by-partition.enable", "true", "FALSE", "True", "yes", "1", "", " true"),
    *_opt("auto-compaction", "false", "on"),
    *_opt("compaction.file-size", "64mb", "64"),
    *_opt("sink.parallelism", "2", "+2", "2.0", "two", " 2", "1_0", "99999999999", "0", "-1"),
    *_opt("sink.partition-commit.trigger", "partition-time", "PROCESS-TIME", "Partition-Time", "event-time"),
    *_opt("sink.partition-commit.trigger", " process-time", "process_time"),
    *_opt("sink.partition-commit.watermark-time-zone", "UTC", "Asia/Shanghai", "America/Los_Angeles"),
    *_opt("sink.partition-commit.watermark-time-zone", "GMT+08:00", "GMT-3", "GMT+0800", "GMT"),
    *_opt("sink.partition-commit.watermark-time-zone", "Z", "utc", "+08:00", "UTC+8", "EST", "PST"),
    *_opt("sink.partition-commit.watermark-time-zone", "Mars/Olympus", "asia/shanghai", "", "GMT+19"),
    *_opt("sink.partition-commit.success-file.name", "_DONE", "_SUCCESS"),
    *_opt("partition.default-name", "__DEFAULT_PARTITION__", "none"),
    *_opt("partition.time-extractor.timestamp-pattern", "$dt $hr:00:00"),
    *_opt("partition.time-extractor.timestamp-formatter", "yyyyMMdd"),
    *_opt("sink.partition-commit.dealy", "1 h"),
    *_opt("sink.rolling-policy.file-sise", "1 mb"),
    *_opt("csv.field-delimiter", ";"),
    *_opt("json.ignore-parse-errors", "true"),
    *_opt("source.monitor-interval", "10 s", "1 min", "10 x", "1.5 s", "0 s", source=True),
    *_opt("source.path.regex-pattern", ".*csv", source=True),
    *_opt("source.monitor-intervall", "10 s", source=True),
    # Flink's csv and json format factories (issue #41).
    _with("csv.disable-quote-character", "true", ("csv.quote-character", "|")),
    _with("csv.disable-quote-character", "true", ("csv.quote-character", "|"), source=True),
    _with("csv.disable-quote-character", "false", ("csv.quote-character", "|")),
    _with("csv.disable-quote-character", "TRUE"),
    *_opt("csv.allow-comments", "maybe", " true", "True"),
    *_opt("csv.ignore-parse-errors", "maybe", source=True),
    *_opt("csv.write-bigdecimal-in-scientific-notation", "maybe", "false"),
    _with("json.fail-on-missing-field", "true", JSON, ("json.ignore-parse-errors", "true"), source=True),
    _with("json.fail-on-missing-field", "true", JSON, ("json.ignore-parse-errors", "true")),
    _with("json.fail-on-missing-field", "true", JSON, ("json.ignore-parse-errors", "false"), source=True),
    *_opt("json.fail-on-missing-field", "maybe", source=True, format="json"),
    *_opt("json.ignore-parse-errors", "maybe", source=True, format="json"),
    *_opt("json.encode.ignore-null-fields", "maybe", "TRUE", format="json"),
    *_opt("json.map-null-key.mode", "KEEP", "FAIL", "drop", "Literal", format="json"),
    _with("json.map-null-key.mode", "KEEP", JSON, source=True, deliberate=EARLIER),
    *_opt("json.timestamp-format.standard", "SQL", "ISO-8601", "iso-8601", "sql", "RFC-3339", " SQL", format="json"),
    *_opt("json.timestamp-format.standard", "iso-8601", "RFC-3339", source=True, format="json"),
    # A custom extractor without its class: used only by the partition-time trigger.
    *_opt("partition.time-extractor.kind", "custom"),
    _with("partition.time-extractor.kind", "custom", ("sink.partition-commit.trigger", "process-time")),
    _with("partition.time-extractor.kind", "custom", PARTITION_TIME, deliberate=EARLIER),
    # A pattern naming no partition column: Flink's job fails on the text left at the first partition.
    *_opt("partition.time-extractor.timestamp-pattern", "$day 00:00:00"),
    _with("partition.time-extractor.timestamp-pattern", "$day 00:00:00", PARTITION_TIME, deliberate=EARLIER),
    _with("partition.time-extractor.timestamp-pattern", "$dt", PARTITION_TIME),
    # Values Flink takes at CREATE and at INSERT, and refuses only in the running job (or never).
    _with("sink.partition-commit.policy.kind", "custom", deliberate=EARLIER),
    _with("sink.partition-commit.policy.kind", "nosuch", deliberate=EARLIER),
    _with("csv.quote-character", ",", deliberate=EARLIER),
    _with("csv.escape-character", ",", deliberate=EARLIER),
    _with("compaction.file-size", "0", ("auto-compaction", "true"), deliberate=EARLIER),
    _with("csv.null-literal", "\\n", deliberate=EARLIER),
]


def _ddl(name: str, path: str, options: dict[str, str], partitioned: bool) -> str:
    with_options = {"connector": "filesystem", "path": path, "format": "csv", **options}
    rendered = ", ".join(f"'{k}' = '{v}'" for k, v in with_options.items())
    partition = " PARTITIONED BY (dt)" if partitioned else ""
    return f"CREATE TABLE {name} (id INT, ts TIMESTAMP(3), dt STRING){partition} WITH ({rendered})"


def _statements(case: OptionCase, tmp: str) -> list[str]:
    option = {case.key: case.value, **dict(case.extra)}
    return [
        _ddl("src", f"file://{tmp}/in", option if case.source else {}, partitioned=False),
        _ddl("snk", f"file://{tmp}/out", {} if case.source else option, partitioned=True),
        "INSERT INTO snk SELECT * FROM src",
    ]


def _sqlext_accepts(statements: list[str]) -> tuple[bool, str]:
    try:
        for ddl in statements[:2]:
            statement = parse_statement(ddl)
            assert isinstance(statement, CreateTable)
            validate_table(statement.table)
    except SqlextError as exc:
        return False, str(exc)
    return True, ""


def _case_id(case: OptionCase) -> str:
    extra = "".join(f",{k}={v!r}" for k, v in case.extra)
    return f"{case.key}={case.value!r}{extra}{',source' if case.source else ''}"


@pytest.mark.parametrize("case", OPTION_CASES, ids=_case_id)
def test_option_value_is_accepted_or_refused_as_flink_does(flink: Flink, case: OptionCase, tmp_path: Any) -> None:
    statements = _statements(case, str(tmp_path))
    flink_error = flink.explain(statements)
    accepted, message = _sqlext_accepts(statements)
    if case.deliberate:
        assert accepted != (flink_error is None), "no longer different: drop the case's `deliberate`"
        assert case.deliberate in DIFFERENCES, "a deliberate difference is listed in docs/partition-commit.md"
    else:
        assert accepted == (flink_error is None), flink_error or message
    if not accepted:
        assert case.key in message, "sqlext's error names the option"
