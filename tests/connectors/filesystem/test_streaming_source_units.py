"""The streaming source's options and offsets, without Spark: what each micro-batch reads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sqlext.connectors.filesystem.streaming.offsets import (
    BatchProgress,
    batch_progress,
    files_to_read,
    initial_offset,
    latest_report,
    next_offset,
)
from sqlext.connectors.filesystem.streaming.partitions import PartitionSnapshot, data_file_names, order_key
from sqlext.connectors.filesystem.streaming.settings import StreamingSourceSettings
from sqlext.connectors.filesystem.streaming.spec import SourceSpec
from sqlext.errors import OptionError, ParseError
from sqlext.registry import validate_table
from sqlext.sql.hints import options_hint, parse_pairs, with_hint
from sqlext.table import Column, TableDefinition, TableIdentifier


def _table(**options: str) -> TableDefinition:
    return TableDefinition(
        TableIdentifier("db", "t"),
        (Column("id", "BIGINT"), Column("dt", "STRING"), Column("hr", "STRING")),
        {"connector": "filesystem", "path": "file:///tmp/t", "format": "parquet", **options},
        ("dt", "hr"),
    )


def _settings(**options: str) -> StreamingSourceSettings:
    return StreamingSourceSettings.from_table(_table(**options))


def _partition(dt: str, hr: str, created_s: int = 0, signature: str = "s1") -> PartitionSnapshot:
    return PartitionSnapshot(
        f"dt={dt}/hr={hr}", (dt, hr), f"file:///tmp/t/dt={dt}/hr={hr}", created_s * 1000, signature
    )


class Listing:
    """The files of each partition directory, as a test sets them."""

    def __init__(self) -> None:
        self.files: dict[str, list[str]] = {}

    def __call__(self, partition: PartitionSnapshot) -> list[str]:
        return list(self.files.get(partition.name, []))


def _advance(
    start: dict[str, Any],
    partitions: list[PartitionSnapshot],
    settings: StreamingSourceSettings,
    listing: Listing,
) -> tuple[dict[str, Any], list[str]]:
    def key_of(partition: PartitionSnapshot) -> Any:
        return order_key(partition, settings.order, lambda v: datetime.fromisoformat(f"{v[0]} {v[1]}:00"))

    end = next_offset(start, partitions, settings, key_of, listing)
    read = [] if end == start else [f.uri.rsplit("/t/", 1)[1] for f in files_to_read(end)]
    return end, read


def test_flink_defaults_and_values() -> None:
    settings = _settings()
    assert (settings.enabled, settings.include, settings.order, settings.start_offset) == (
        False,
        "all",
        "partition-name",
        None,
    )
    assert settings.monitor_interval.total_seconds() == 60 and settings.read_recommits
    assert _settings(**{"streaming-source.consume-order": "create-time"}).order == "create-time"
    assert (
        _settings(
            **{"streaming-source.partition-order": "partition-time", "streaming-source.consume-order": "create-time"}
        ).order
        == "partition-time"
    )
    offset = {
        "streaming-source.partition-order": "create-time",
        "streaming-source.consume-start-offset": "2026-11-22 8:00:00",
    }
    assert _settings(**offset).start_key() == int(datetime(2026, 11, 22, 8, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"streaming-source.partition-order": "name"}, "'partition-name'"),
        ({"streaming-source.enable": "yes"}, "'true' or 'false'"),
        ({"streaming-source.monitor-interval": "0 s"}, "greater than 0"),
        ({"streaming-source.partition.include": "newest"}, "'all', 'latest'"),
        (
            {"streaming-source.partition-order": "partition-time", "streaming-source.consume-start-offset": "dt=1"},
            "yyyy-[m]m-[d]d [hh:mm:ss]",
        ),
        ({"streaming-source.enabled": "true"}, "streaming-source.enable"),
    ],
)
def test_bad_options_are_refused_naming_option_and_what_is_allowed(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError) as raised:
        validate_table(_table(**options))
    assert message in str(raised.value)


def test_the_options_hint_is_parsed_and_checked() -> None:
    import sqlglot
    from sqlglot import expressions as exp

    query = sqlglot.parse_one(
        "SELECT id FROM db.t /*+ OPTIONS('streaming-source.enable'='true', 'x.y' = 'it''s') */ AS a", read="spark"
    )
    [node] = list(query.find_all(exp.Table))
    assert options_hint(node) == {"streaming-source.enable": "true", "x.y": "it's"}
    assert with_hint(_table(), {"streaming-source.enable": "true"}).options["streaming-source.enable"] == "true"
    with pytest.raises(OptionError, match=r"streaming-source\.partition-order"):
        with_hint(_table(), {"streaming-source.partition-order": "random"})
    with pytest.raises(ParseError, match="'key' = 'value'"):
        parse_pairs("'a' 'b'", " OPTIONS('a' 'b') ")


def test_each_partition_is_read_once_in_order_from_the_start_offset() -> None:
    settings = _settings(**{"streaming-source.consume-start-offset": "dt=2026-11-22/hr=01"})
    listing = Listing()
    listing.files = {f"dt=2026-11-22/hr={h}": [f"part-{h}.parquet"] for h in ("00", "01", "02", "03")}
    start = initial_offset(settings)
    p = [_partition("2026-11-22", h) for h in ("02", "00", "01")]
    first, read = _advance(start, p, settings, listing)
    assert read == ["dt=2026-11-22/hr=01/part-01.parquet", "dt=2026-11-22/hr=02/part-02.parquet"]
    again, read = _advance(first, p, settings, listing)
    assert again == first and read == []
    _, read = _advance(first, [*p, _partition("2026-11-22", "03")], settings, listing)
    assert read == ["dt=2026-11-22/hr=03/part-03.parquet"]


def test_a_partition_behind_the_newest_read_is_skipped_as_in_flink() -> None:
    settings = _settings(**{"streaming-source.partition-order": "create-time"})
    listing = Listing()
    listing.files = {"dt=a/hr=1": ["f1"], "dt=a/hr=2": ["f2"], "dt=a/hr=3": ["f3"]}
    first, read = _advance(initial_offset(settings), [_partition("a", "2", created_s=100)], settings, listing)
    assert read == ["dt=a/hr=2/f2"]
    late = [
        _partition("a", "2", created_s=100),
        _partition("a", "1", created_s=99),
        _partition("a", "3", created_s=100),
    ]
    second, read = _advance(first, late, settings, listing)
    assert read == ["dt=a/hr=3/f3"]  # hr=1 came too late for the order; hr=3 shares the newest time
    assert second["seen"] == ["dt=a/hr=2", "dt=a/hr=3"]


def test_a_recommit_reads_only_the_files_it_added_and_only_once() -> None:
    settings = _settings()
    listing = Listing()
    listing.files = {"dt=a/hr=1": ["f1"]}
    first, read = _advance(initial_offset(settings), [_partition("a", "1", signature="s1")], settings, listing)
    assert read == ["dt=a/hr=1/f1"]
    listing.files["dt=a/hr=1"] = ["f1", "late"]  # moved in, not committed yet: not read
    same, read = _advance(first, [_partition("a", "1", signature="s1")], settings, listing)
    assert same == first and read == []
    second, read = _advance(first, [_partition("a", "1", signature="s2")], settings, listing)
    assert read == ["dt=a/hr=1/late"]
    third, read = _advance(second, [_partition("a", "1", signature="s2")], settings, listing)
    assert third == second and read == []


def test_without_read_recommits_a_read_partition_is_never_read_again_and_the_offset_stays_small() -> None:
    settings = _settings(**{"streaming-source.read-recommits": "false"})
    listing = Listing()
    listing.files = {"dt=a/hr=1": ["f1"]}
    first, _ = _advance(initial_offset(settings), [_partition("a", "1")], settings, listing)
    listing.files["dt=a/hr=1"] = ["f1", "late"]
    second, read = _advance(first, [_partition("a", "1", signature="s2")], settings, listing)
    assert second == first and read == [] and "read" not in first


def test_the_offset_keeps_the_read_files_of_the_partitions_read_last_only() -> None:
    settings = _settings(**{"streaming-source.read-recommits.retained-partitions": "2"})
    listing = Listing()
    listing.files = {f"dt=a/hr={hr}": [f"f{hr}"] for hr in "123"}
    offset, _ = _advance(initial_offset(settings), [_partition("a", "1")], settings, listing)
    offset, _ = _advance(offset, [_partition("a", "1"), _partition("a", "2")], settings, listing)
    # hr=1 re-committed: read, and moved to the newest end of what the offset keeps
    listing.files["dt=a/hr=1"] = ["f1", "late1"]
    offset, read = _advance(offset, [_partition("a", "1", signature="s2"), _partition("a", "2")], settings, listing)
    assert read == ["dt=a/hr=1/late1"] and list(offset["read"]) == ["dt=a/hr=2", "dt=a/hr=1"]
    everything = [_partition("a", "1", signature="s2"), _partition("a", "2"), _partition("a", "3")]
    offset, read = _advance(offset, everything, settings, listing)
    assert read == ["dt=a/hr=3/f3"] and list(offset["read"]) == ["dt=a/hr=1", "dt=a/hr=3"]
    # hr=2 left the offset: its re-commit is not read (as in Flink); hr=1's still is
    listing.files["dt=a/hr=2"] = ["f2", "late2"]
    listing.files["dt=a/hr=1"] = ["f1", "late1", "later1"]
    recommitted = [_partition("a", "1", signature="s3"), _partition("a", "2", signature="s2"), _partition("a", "3")]
    offset, read = _advance(offset, recommitted, settings, listing)
    assert read == ["dt=a/hr=1/later1"] and len(offset["read"]) == 2


def test_retained_partitions_below_one_is_refused() -> None:
    with pytest.raises(OptionError, match=r"read-recommits\.retained-partitions"):
        _settings(**{"streaming-source.read-recommits.retained-partitions": "0"})


def test_a_checkpoint_of_another_order_is_refused() -> None:
    start = initial_offset(_settings())
    with pytest.raises(OptionError, match="partition-order"):
        _advance(start, [], _settings(**{"streaming-source.partition-order": "create-time"}), Listing())


def test_hidden_and_success_files_are_never_data() -> None:
    names = ["_SUCCESS", ".part-1.crc", "part-0.parquet", "_committed", "done.flag"]
    assert data_file_names(names, "done.flag") == ["part-0.parquet"]


def test_compaction_of_read_files_is_not_read_again_and_a_switched_partition_waits() -> None:
    settings = _settings()
    listing = Listing()
    listing.files = {"dt=a/hr=1": ["f1", "f2"]}
    first, _ = _advance(initial_offset(settings), [_partition("a", "1")], settings, listing)
    switched = PartitionSnapshot("dt=a/hr=1", ("a", "1"), "file:///tmp/t/_sqlext/compaction/7/dt=a/hr=1", 0, "s2")
    same = next_offset(first, [switched], settings, lambda p: p.name, listing)
    assert same == first
    listing.files["dt=a/hr=1"] = ["compacted-7-0-f1", "late"]
    merges = {"compacted-7-0-f1": ["f1", "f2"]}
    end = next_offset(
        first, [_partition("a", "1", signature="s3")], settings, lambda p: p.name, listing, lambda p: merges
    )
    assert [f.uri.rsplit("/", 1)[1] for f in files_to_read(end)] == ["late"]


def test_a_file_is_read_in_the_source_schema_with_its_partition_values(tmp_path: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    from sqlext.connectors.filesystem.streaming.partition_stream import read_file

    path = tmp_path / "part-0.parquet"
    rows = pa.table({"ID": [1, 2], "ts": pa.array([datetime(2026, 11, 22, 1), None], pa.timestamp("ns"))})
    pq.write_table(rows, path, use_deprecated_int96_timestamps=True)
    spec = SourceSpec(
        "db",
        "t",
        "thrift://unused:9083",
        ("dt", "hr"),
        (("id", "BIGINT"), ("ts", "TIMESTAMP(3)"), ("note", "STRING")),
        {"format": "parquet", "path": tmp_path.as_uri()},
        {},
    )
    types = [("id", LongType()), ("ts", TimestampType()), ("note", StringType()), ("dt", StringType())]
    schema = StructType([StructField(name, kind) for name, kind in [*types, ("hr", StringType())]])
    [batch] = list(read_file(spec, schema, path.as_uri(), ("2026-11-22", "01")))
    assert batch.to_pylist() == [
        {"id": 1, "ts": datetime(2026, 11, 22, 1, tzinfo=UTC), "note": None, "dt": "2026-11-22", "hr": "01"},
        {"id": 2, "ts": None, "note": None, "dt": "2026-11-22", "hr": "01"},
    ]


def test_each_batch_reports_its_partitions_files_and_lag_behind_the_newest_commit() -> None:
    settings = _settings()
    listing = Listing()
    listing.files = {"dt=a/hr=1": ["f1", "f2"], "dt=a/hr=2": ["f3"], "dt=a/hr=3": ["f4"]}
    first, _ = _advance(
        initial_offset(settings),
        [_partition("a", "1", created_s=100), _partition("a", "2", created_s=130)],
        settings,
        listing,
    )
    progress = batch_progress(first)
    assert progress == BatchProgress(("dt=a/hr=1", "dt=a/hr=2"), 3, 30_000)  # behind since the oldest read
    assert "2 partition(s) [dt=a/hr=1, dt=a/hr=2], 3 file(s); 30.0 s behind" in progress.describe()
    later = [_partition("a", "1", created_s=100), _partition("a", "2", created_s=130)]
    later.append(_partition("a", "3", created_s=190))
    assert latest_report(first, later) == {
        "partitions": 3,
        "newest_commit_ms": 190_000,
        "lag_ms": 60_000,
        "unread_commits": 1,
    }
    second, _ = _advance(first, later, settings, listing)
    assert batch_progress(second) == BatchProgress(("dt=a/hr=3",), 1, 60_000)
    assert latest_report(second, later)["unread_commits"] == 0
    assert batch_progress(initial_offset(settings)) is None


def test_a_recommit_counts_from_its_alter_time() -> None:
    settings = _settings()
    listing = Listing()
    listing.files = {"dt=a/hr=1": ["f1"]}
    first, _ = _advance(initial_offset(settings), [_partition("a", "1", created_s=100)], settings, listing)
    listing.files["dt=a/hr=1"] = ["f1", "late"]
    recommitted = PartitionSnapshot("dt=a/hr=1", ("a", "1"), "file:///tmp/t/dt=a/hr=1", 100_000, "s2", 160_000)
    second, read = _advance(first, [recommitted], settings, listing)
    assert read == ["dt=a/hr=1/late"]
    assert batch_progress(second) == BatchProgress(("dt=a/hr=1",), 1, 60_000)
    assert second["commit_ms"] == 160_000
