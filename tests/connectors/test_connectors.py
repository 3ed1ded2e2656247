"""The built-in connectors: their validation messages, and real rows read or written through the real
Spark session (filesystem bounded and streaming, datagen bounded, streaming and unbounded, print, blackhole)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.filesystem.source import reader_options
from sqlext.connectors.print import format_row
from sqlext.errors import OptionError
from sqlext.jobs.checkpoint import checkpoint_root as session_checkpoint_root
from sqlext.registry import SinkContext, SourceContext, find_factory, validate_table
from sqlext.sink import InsertPlan
from sqlext.table import Column, TableDefinition, TableIdentifier
from tests.support.waiting import wait_for


def _table(name: str, columns: str, partition_keys: tuple[str, ...] = (), **options: str) -> TableDefinition:
    """``columns``: ``"a INT, b STRING, f STRING METADATA file.name"``."""
    parsed = []
    for spec in columns.split(","):
        parts = spec.split()
        metadata = parts[3] if len(parts) > 3 and parts[2] == "METADATA" else None
        parsed.append(Column(parts[0], parts[1], metadata_key=metadata))
    return TableDefinition(TableIdentifier("conn_db", name), tuple(parsed), options, partition_keys=partition_keys)


def _fs(path: Path, columns: str = "a INT, b STRING", fmt: str = "csv", **options: str) -> TableDefinition:
    return _table("fs", columns, connector="filesystem", path=path.as_uri(), format=fmt, **options)


# --- validation --------------------------------------------------------------------------------------------

FS_INVALID = [
    ({"sink.partition-commit.policy.kind": "metastore,custom"}, "'sink.partition-commit.policy.class' is required"),
    (
        {"partition.time-extractor.kind": "custom", "sink.partition-commit.trigger": "partition-time"},
        "'partition.time-extractor.class' is required",
    ),
    ({"json.ignore-parse-errors": "true"}, "Option 'json.ignore-parse-errors' is for format 'json', but the table's"),
    ({"parquet.compression": "zstd"}, "is for format 'parquet', but the table's format is 'csv'"),
    ({"source.monitor-interval": "soon"}, "Invalid value for option 'source.monitor-interval': 'soon'."),
    ({"source.bogus": "1"}, "Unsupported options found for 'filesystem'."),
]


@pytest.mark.parametrize(("options", "message"), FS_INVALID)
def test_filesystem_cross_option_checks(tmp_path: Path, options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError) as failure:
        validate_table(_fs(tmp_path, **options))
    assert message in failure.value.message


def test_filesystem_accepts_its_own_format_options_and_custom_classes(tmp_path: Path) -> None:
    validate_table(
        _fs(
            tmp_path,
            **{
                "csv.field-delimiter": ";",
                "sink.partition-commit.policy.kind": "metastore,custom",
                "sink.partition-commit.policy.class": "my.Policy",
                "partition.time-extractor.kind": "custom",
                "partition.time-extractor.class": "my.Extractor",
            },
        )
    )
    with pytest.raises(OptionError, match=r"unknown metadata 'file\.owner'\. The filesystem connector offers"):
        validate_table(_fs(tmp_path, "a INT, o STRING METADATA file.owner"))


def test_filesystem_is_bounded_without_a_monitor_interval(tmp_path: Path) -> None:
    factory = find_factory("filesystem")
    assert factory.is_bounded(_fs(tmp_path))
    assert not factory.is_bounded(_fs(tmp_path, **{"source.monitor-interval": "1 s"}))


def test_csv_and_json_options_take_sparks_names() -> None:
    flink = {
        "field-delimiter": "|",
        "quote-character": "'",
        "escape-character": "\\",
        "null-literal": "n/a",
        "allow-comments": "true",
        "ignore-parse-errors": "true",
        "header": "true",
    }
    assert reader_options("csv", flink) == {
        "sep": "|",
        "quote": "'",
        "escape": "\\",
        "nullValue": "n/a",
        "comment": "#",
        "mode": "DROPMALFORMED",
        "header": "true",
    }
    assert reader_options("csv", {"allow-comments": "false", "disable-quote-character": "true"}) == {
        "mode": "FAILFAST",
        "quote": "",
    }
    assert reader_options("json", {"timestamp-format.standard": "ISO-8601", "ignore-parse-errors": "false"}) == {
        "mode": "FAILFAST",
        "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss[.SSSSSSSSS][XXX]",
    }
    assert reader_options("parquet", {"mergeSchema": "true"}) == {"mergeSchema": "true"}


DATAGEN_INVALID = [
    ({"fields.nope.kind": "random"}, "Option 'fields.nope.kind' names field 'nope', which is not a column"),
    ({"fields.a.kind": "sometimes"}, "Invalid value for option 'fields.a.kind': 'sometimes'. Expected one of"),
    ({"fields.a.kind": "sequence"}, "'fields.a.start' and 'fields.a.end' are required"),
    (
        {"fields.a.kind": "sequence", "fields.a.start": "9", "fields.a.end": "1"},
        "'fields.a.start' (9) is greater than 'fields.a.end' (1)",
    ),
    ({"fields.a.min": "ten"}, "Invalid value for option 'fields.a.min': 'ten'. Expected an integer."),
    ({"fields.a.min": "9", "fields.a.max": "1"}, "'fields.a.min' is greater than 'fields.a.max'"),
    ({"fields.a.length": "5"}, "Unsupported option 'fields.a.length' for 'datagen': a random field of type INT"),
    ({"fields.a.start": "5"}, "Unsupported option 'fields.a.start'"),
    ({"fields.s.length": "0"}, "Invalid value for option 'fields.s.length': '0'. Expected an integer greater than 0"),
    ({"fields.s.max-past": "1 h"}, "Unsupported option 'fields.s.max-past'"),
    ({"fields.ts.max-past": "a while"}, "Invalid value for option 'fields.ts.max-past': 'a while'. Expected a dur"),
    ({"fields.a.null-rate": "2"}, "Invalid value for option 'fields.a.null-rate': '2'. Expected a number from 0 to 1"),
    ({"fields.ts.kind": "sequence"}, "cannot generate field 'ts' of type TIMESTAMP(3) as a sequence field"),
    ({"rows-per-second": "fast"}, "Invalid value for option 'rows-per-second': 'fast'. Expected an integer."),
    ({"number-of-rows": "-1"}, "Invalid value for option 'number-of-rows': '-1'. It must be greater than 0."),
    ({"row-count": "1"}, "Unsupported options found for 'datagen'."),
]


@pytest.mark.parametrize(("options", "message"), DATAGEN_INVALID)
def test_datagen_field_options_are_checked(options: dict[str, str], message: str) -> None:
    table = _table("gen", "a INT, s STRING, ts TIMESTAMP(3)", connector="datagen", **options)
    with pytest.raises(OptionError) as failure:
        validate_table(table)
    assert message in failure.value.message


def test_datagen_offers_no_metadata_columns() -> None:
    with pytest.raises(OptionError, match=r"reads metadata 'file\.path', but the datagen connector offers no metadata"):
        validate_table(_table("gen", "a INT, f STRING METADATA file.path", connector="datagen"))


def test_datagen_rejects_types_it_cannot_generate() -> None:
    with pytest.raises(OptionError, match=r"cannot generate field 'm' of type MAP<STRING,INT>"):
        validate_table(
            TableDefinition(
                TableIdentifier("conn_db", "gen"), (Column("m", "MAP<STRING,INT>"),), {"connector": "datagen"}
            )
        )


def test_datagen_is_bounded_by_number_of_rows_or_the_shortest_sequence() -> None:
    factory = find_factory("datagen")
    sequences = {"fields.a.kind": "sequence", "fields.a.start": "1", "fields.a.end": "50"}
    assert factory.row_count(_table("g", "a INT", connector="datagen")) is None  # type: ignore[attr-defined]
    assert not factory.is_bounded(_table("g", "a INT", connector="datagen"))
    assert factory.row_count(_table("g", "a INT", connector="datagen", **sequences)) == 50  # type: ignore[attr-defined]
    capped = _table("g", "a INT", connector="datagen", **sequences, **{"number-of-rows": "20"})
    assert factory.row_count(capped) == 20  # type: ignore[attr-defined]
    assert factory.is_bounded(capped)


def test_print_formats_rows_as_flink() -> None:
    row = [1, None, True, "x", datetime(2026, 1, 2, 3, 4), datetime(2026, 1, 2, 3, 4, 5, 120000), [1, 2], b"\x01\xff"]
    assert format_row(row, None) == "+I[1, null, true, x, 2026-01-02T03:04, 2026-01-02T03:04:05.120, [1, 2], [1, -1]]"
    assert format_row([{"k": 1}], "out") == "out> +I[{k=1}]"


# --- real rows through Spark -------------------------------------------------------------------------------


@pytest.fixture
def checkpoint_root(spark: Any, tmp_path: Path) -> Iterator[Path]:
    """``spark.sqlext.checkpoint.root`` set to a temp dir for the test (bounded datagen streams live there)."""
    root = tmp_path / "checkpoints"
    spark.conf.set("spark.sqlext.checkpoint.root", root.as_uri())
    yield root
    spark.conf.unset("spark.sqlext.checkpoint.root")


def _source(spark: Any, table: TableDefinition, streaming: bool) -> Any:
    factory = find_factory(table.connector or "")
    factory.validate(table)
    return factory.create_source(
        SourceContext(spark, table, streaming=streaming, state_root=session_checkpoint_root(spark, None))
    )


def _write_csv(path: Path, lines: list[str]) -> None:
    """Write a file atomically (a stream must never see it half written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    hidden = path.parent / f".{path.name}.tmp"
    hidden.write_text("".join(line + "\n" for line in lines))
    hidden.rename(path)


def _collecting(frame: Any, tmp_path: Path, name: str, available_now: bool = False) -> tuple[Any, list[Any]]:
    """Start a stream collecting its rows (``foreachBatch``) into a list."""
    collected: list[Any] = []
    writer = (
        frame.writeStream.foreachBatch(lambda batch, _id: collected.extend(batch.collect()))
        .queryName(name)
        .option("checkpointLocation", (tmp_path / f"cp_{name}").as_uri())
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start(), collected


@pytest.mark.spark
def test_filesystem_bounded_read_with_partitions_metadata_and_csv_options(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write_csv(data / "p=x" / "part-0.csv", ["# a comment", "1;a", "2;NULL"])
    _write_csv(data / "p=y" / "part-0.csv", ["3;c", "oops;d"])
    _write_csv(data / "p=__HIVE_DEFAULT_PARTITION__" / "part-0.csv", ["4;e"])
    _write_csv(data / "p=none" / "part-0.csv", ["5;f"])
    table = _table(
        "csv_src",
        "id INT, name STRING, p STRING, fname STRING METADATA file.name, fpath STRING METADATA file.path, "
        "fsize BIGINT METADATA file.size, mtime TIMESTAMP_LTZ(3) METADATA file.modification-time",
        partition_keys=("p",),
        connector="filesystem",
        path=data.as_uri(),
        format="csv",
        **{
            "csv.field-delimiter": ";",
            "csv.null-literal": "NULL",
            "csv.allow-comments": "true",
            "csv.ignore-parse-errors": "true",
            "partition.default-name": "none",
        },
    )
    rows = _source(spark, table, streaming=False).collect()
    assert sorted((r.id, r.name, r.p) for r in rows) == [
        (1, "a", "x"),
        (2, None, "x"),
        (3, "c", "y"),
        (4, "e", None),
        (5, "f", None),
    ]
    first = next(r for r in rows if r.id == 1)
    assert first.fname == "part-0.csv"
    assert first.fpath == str(data / "p=x" / "part-0.csv")  # Flink's Path.getPath(): no scheme
    assert first.fsize == (data / "p=x" / "part-0.csv").stat().st_size
    assert abs(first.mtime.timestamp() - (data / "p=x" / "part-0.csv").stat().st_mtime) < 2


@pytest.mark.spark
def test_filesystem_regex_pattern_must_match_the_whole_path(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for part, name, value in (("p=x", "keep_1.csv", 1), ("p=x", "skip_1.csv", 2), ("p=y", "keep_2.csv", 3)):
        _write_csv(data / part / name, [str(value)])
    options = {"partition.default-name": "__HIVE_DEFAULT_PARTITION__"}

    def ids(pattern: str) -> list[int]:
        table = _fs(data, "a INT, p STRING", **options, **{"source.path.regex-pattern": pattern})
        return sorted(r.a for r in _source(spark, table, streaming=False).collect())

    assert ids(".*/keep_[0-9]+\\.csv") == [1, 3]
    assert ids(f"{data}/p=y/.*") == [3]  # the path, without the scheme
    assert ids("keep") == []  # a full match, not a search


@pytest.mark.spark
def test_filesystem_reads_parquet_orc_and_json(spark: Any, tmp_path: Path) -> None:
    rows = spark.createDataFrame([(1, "a", datetime(2026, 1, 1, 10))], "a INT, b STRING, ts TIMESTAMP")
    for fmt in ("parquet", "orc", "json"):
        rows.write.format(fmt).save((tmp_path / fmt).as_uri())
        table = _fs(tmp_path / fmt, "a INT, b STRING, ts TIMESTAMP(3)", fmt=fmt)
        assert [tuple(r) for r in _source(spark, table, streaming=False).collect()] == [
            (1, "a", datetime(2026, 1, 1, 10))
        ], fmt


@pytest.mark.spark
def test_filesystem_stream_picks_up_new_files_and_partitions(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write_csv(data / "dt=2026-01-01" / "f1.csv", ["1", "2"])
    table = _table(
        "stream_src",
        "a INT, dt DATE",
        partition_keys=("dt",),
        connector="filesystem",
        path=data.as_uri(),
        format="csv",
        **{"source.monitor-interval": "1 s", "source.max-files-per-trigger": "1"},
    )
    frame = _source(spark, table, streaming=True)
    assert frame.isStreaming
    query, collected = _collecting(frame, tmp_path, "fs_stream")
    try:
        wait_for(lambda: len(collected) == 2, 60, what="the first file's rows")
        _write_csv(data / "dt=2026-01-01" / "f2.csv", ["3"])
        _write_csv(data / "dt=2026-01-02" / "f1.csv", ["4", "5"])
        wait_for(lambda: len(collected) == 5, 60, what="rows of the new file and the new partition")
    finally:
        query.stop()
    assert sorted((r.a, r.dt.isoformat()) for r in collected) == [
        (1, "2026-01-01"),
        (2, "2026-01-01"),
        (3, "2026-01-01"),
        (4, "2026-01-02"),
        (5, "2026-01-02"),
    ]
    assert max(p["numInputRows"] for p in query.recentProgress) <= 2  # one file per micro-batch


@pytest.mark.spark
def test_a_bounded_filesystem_stream_ends_with_available_now(spark: Any, tmp_path: Path) -> None:
    for index in range(3):
        _write_csv(tmp_path / "data" / f"f{index}.csv", [str(index)])
    table = _fs(tmp_path / "data", "a INT", **{"source.max-files-per-trigger": "1"})
    query, collected = _collecting(_source(spark, table, streaming=True), tmp_path, "fs_bounded", available_now=True)
    assert query.awaitTermination(120)
    assert sorted(r.a for r in collected) == [0, 1, 2]
    assert len([p for p in query.recentProgress if p["numInputRows"]]) == 3


DATAGEN_OPTIONS = {
    "connector": "datagen",
    "number-of-rows": "500",
    "fields.id.kind": "sequence",
    "fields.id.start": "10",
    "fields.id.end": "10000",
    "fields.score.min": "5",
    "fields.score.max": "7",
    "fields.ratio.min": "0.5",
    "fields.ratio.max": "0.75",
    "fields.name.length": "12",
    "fields.code.length": "70",
    "fields.code.var-len": "true",
    "fields.ts.max-past": "1 h",
    "fields.maybe.null-rate": "0.5",
}
DATAGEN_COLUMNS = (
    "id BIGINT, score INT, ratio DOUBLE, name STRING, code VARCHAR(100), ts TIMESTAMP(3), maybe INT, "
    "big BIGINT, flag BOOLEAN, day DATE"
)


@pytest.mark.spark
def test_datagen_generates_bounded_rows_within_their_ranges(spark: Any) -> None:
    table = _table("gen", DATAGEN_COLUMNS, **DATAGEN_OPTIONS)
    before = datetime.now()
    rows = _source(spark, table, streaming=False).collect()
    after = datetime.now()
    assert sorted(r.id for r in rows) == list(range(10, 510))
    assert {r.score for r in rows} == {5, 6, 7}
    assert all(0.5 <= r.ratio <= 0.75 for r in rows)
    assert {len(r.name) for r in rows} == {12}
    assert all(c in "0123456789abcdef" for r in rows for c in r.name)
    assert 1 <= min(len(r.code) for r in rows) < max(len(r.code) for r in rows) <= 70
    assert all(before - timedelta(hours=1, seconds=5) <= r.ts <= after + timedelta(seconds=5) for r in rows)
    assert max(r.ts for r in rows) - min(r.ts for r in rows) > timedelta(minutes=30)
    assert 150 < sum(r.maybe is None for r in rows) < 350
    assert min(r.big for r in rows) < -(2**60) and max(r.big for r in rows) > 2**60  # BIGINT's whole range
    assert {r.flag for r in rows} == {True, False}
    assert {r.day for r in rows} <= {before.date(), after.date()}
    assert len({r.name for r in rows}) == 500


@pytest.mark.spark
def test_a_bounded_datagen_stream_ends_after_its_rows(spark: Any, tmp_path: Path, checkpoint_root: Path) -> None:
    table = _table(
        "gen_stream",
        "id INT, v INT",
        connector="datagen",
        **{"number-of-rows": "25", "rows-per-second": "10", "fields.id.kind": "sequence"},
        **{"fields.id.start": "1", "fields.id.end": "100"},
    )
    frame = _source(spark, table, streaming=True)
    assert frame.isStreaming
    query, collected = _collecting(frame, tmp_path, "gen_bounded", available_now=True)
    assert query.awaitTermination(120)
    assert sorted(r.id for r in collected) == list(range(1, 26))
    assert sorted(p["numInputRows"] for p in query.recentProgress if p["numInputRows"]) == [5, 10, 10]
    assert any(checkpoint_root.glob("_datagen/conn_db.gen_stream-*/_SUCCESS"))
    # built again (a restarted insert), the source reads the same rows
    again, collected_again = _collecting(_source(spark, table, streaming=True), tmp_path, "gen_again", True)
    assert again.awaitTermination(120)
    assert sorted((r.id, r.v) for r in collected_again) == sorted((r.id, r.v) for r in collected)


@pytest.mark.spark
def test_an_unbounded_datagen_stream_keeps_producing(spark: Any, tmp_path: Path) -> None:
    table = _table("gen_rate", "id BIGINT, ts TIMESTAMP_LTZ(3)", connector="datagen", **{"rows-per-second": "50"})
    with pytest.raises(OptionError, match="is unbounded: set 'number-of-rows'"):
        _source(spark, table, streaming=False)
    query, collected = _collecting(_source(spark, table, streaming=True), tmp_path, "gen_rate")
    try:
        wait_for(lambda: len(collected) >= 100, 60, what="100 generated rows")
    finally:
        query.stop()
    assert len({r.id for r in collected}) == len(collected)  # random per row, not repeated per batch
    assert all(abs(r.ts - datetime.now()) < timedelta(minutes=5) for r in collected)


@pytest.mark.spark
def test_print_sink_prints_rows_in_flinks_format(spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    table = _table("out", "a INT, b STRING", connector="print", **{"print-identifier": "sink"})
    sink = find_factory("print").create_sink(SinkContext(spark, table, None, None))
    rows = spark.createDataFrame([(1, "x"), (2, None)], "a INT, b STRING").coalesce(1)
    sink.write_batch(rows, InsertPlan("print_batch", (tmp_path / "cp1").as_uri()))
    assert capfd.readouterr().out.splitlines() == ["sink> +I[1, x]", "sink> +I[2, null]"]

    for index in range(2):
        _write_csv(tmp_path / "in" / f"f{index}.csv", [f"{index},v{index}"])
    stream = _source(spark, _fs(tmp_path / "in"), streaming=True)
    plan = InsertPlan("print_stream", (tmp_path / "cp2").as_uri(), available_now=True)
    query = sink.start_stream(stream, plan)
    assert query.awaitTermination(120)
    assert query.name == "print_stream"
    assert sorted(capfd.readouterr().out.splitlines()) == ["sink> +I[0, v0]", "sink> +I[1, v1]"]
    assert (tmp_path / "cp2" / "offsets").is_dir()

    to_stderr = _table("err", "a INT", connector="print", **{"standard-error": "true"})
    find_factory("print").create_sink(SinkContext(spark, to_stderr, None, None)).write_batch(
        spark.range(1).selectExpr("CAST(id AS INT) AS a"), plan
    )
    captured = capfd.readouterr()
    assert (captured.out, captured.err.splitlines()) == ("", ["+I[0]"])


@pytest.mark.spark
def test_blackhole_consumes_every_row(spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    table = _table("void", "a INT", connector="blackhole")
    sink = find_factory("blackhole").create_sink(SinkContext(spark, table, None, None))
    sink.write_batch(spark.range(1000).selectExpr("CAST(id AS INT) AS a"), InsertPlan("bh", "unused"))
    for index in range(3):
        _write_csv(tmp_path / "in" / f"f{index}.csv", [str(index), str(index + 10)])
    # Line by line: with a quote character a csv file is read whole, and Spark counts it as one input row.
    stream = _source(spark, _fs(tmp_path / "in", "a INT", **{"csv.disable-quote-character": "true"}), streaming=True)
    query = sink.start_stream(stream, InsertPlan("bh_stream", (tmp_path / "cp").as_uri(), available_now=True))
    assert query.awaitTermination(120)
    assert sum(p["numInputRows"] for p in query.recentProgress) == 6
    assert capfd.readouterr().out == ""
