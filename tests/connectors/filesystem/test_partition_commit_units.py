"""Escaping, time extraction and triggers: the pure parts of partition commit."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from sqlext.connectors.filesystem.commit import partition_commit
from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.commit.plan import BatchInfo, StagedFile
from sqlext.connectors.filesystem.commit.trigger import PartitionTimeTrigger, ProcessTimeTrigger, TriggerState
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.connectors.filesystem.escaping import (
    escape_path_name,
    parse_partition_path,
    partition_path,
    unescape_path_name,
)
from sqlext.connectors.filesystem.extractor import (
    DefaultPartitionTimeExtractor,
    PartitionTimeExtractor,
    create_extractor,
)
from sqlext.connectors.filesystem.policies import PartitionCommitContext, PartitionCommitPolicy, load_custom_policy
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import CommitError, PartitionTimeError, PolicyError, ValidationError
from sqlext.io.fs import FileSystem
from tests.support.tables import events_table

HIVE_DEFAULT = "__HIVE_DEFAULT_PARTITION__"


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("a/b", "a%2Fb"),
        ("x=y", "x%3Dy"),
        ("50%", "50%25"),
        ("with space", "with space"),
        ("ünïcode", "ünïcode"),
        ("..", ".."),
        ("../../etc", "..%2F..%2Fetc"),
        ("/abs/path", "%2Fabs%2Fpath"),
        ("%2e%2e", "%252e%252e"),
        ("a:b?c*d", "a%3Ab%3Fc%2Ad"),
        ("tab\there", "tab%09here"),
        ("q'\"#{}[]^\\", "q%27%22%23%7B%7D%5B%5D%5E%5C"),
    ],
)
def test_values_are_escaped_like_hive_and_round_trip(value: str, escaped: str) -> None:
    assert escape_path_name(value) == escaped
    assert unescape_path_name(escaped) == value
    path = partition_path(["p"], [value], HIVE_DEFAULT)
    assert path.count("/") == 0, "a value must never add a path segment"
    assert parse_partition_path(path, ["p"]) == [value]


def test_null_and_empty_values_use_the_default_partition_name() -> None:
    assert partition_path(["dt", "hr"], [None, ""], HIVE_DEFAULT) == f"dt={HIVE_DEFAULT}/hr={HIVE_DEFAULT}"
    assert partition_path(["dt"], [None], "__DEFAULT_PARTITION__") == "dt=__DEFAULT_PARTITION__"


def test_nul_and_overlong_values_are_refused() -> None:
    with pytest.raises(ValidationError, match="NUL"):
        partition_path(["p"], ["a\0b"], HIVE_DEFAULT)
    with pytest.raises(ValidationError, match="too long"):
        partition_path(["p"], ["x" * 300], HIVE_DEFAULT)


def test_parse_partition_path_checks_the_keys() -> None:
    assert parse_partition_path("dt=2026-11-22/hr=09", ["dt", "hr"]) == ["2026-11-22", "09"]
    with pytest.raises(ValidationError, match="not 'hr=<value>'"):
        parse_partition_path("dt=2026-11-22/hour=09", ["dt", "hr"])


def test_default_extractor_uses_the_first_value_leniently() -> None:
    extractor = DefaultPartitionTimeExtractor()
    assert extractor.extract(["dt"], ["2026-11-22"]) == datetime(2026, 11, 22)
    assert extractor.extract(["dt"], ["2026-1-2 3:04:05"]) == datetime(2026, 1, 2, 3, 4, 5)


def test_pattern_and_formatter_build_the_time_from_several_values() -> None:
    hourly = DefaultPartitionTimeExtractor("$dt $hour:00:00")
    assert hourly.extract(["dt", "hour"], ["2026-11-22", "09"]) == datetime(2026, 11, 22, 9)
    compact = DefaultPartitionTimeExtractor("$day $h", "yyyyMMdd HH")
    assert compact.extract(["day", "h"], ["20261122", "23"]) == datetime(2026, 11, 22, 23)
    parts = DefaultPartitionTimeExtractor("$year-$month-$day")
    assert parts.extract(["year", "month", "day"], ["2026", "11", "22"]) == datetime(2026, 11, 22)


def test_a_partition_whose_time_cannot_be_extracted_is_named_in_the_error() -> None:
    extractor = DefaultPartitionTimeExtractor("$dt $hr:00:00")
    with pytest.raises(PartitionTimeError, match=r"dt=tomorrow/hr=09.*\$dt \$hr:00:00"):
        extractor.extract(["dt", "hr"], ["tomorrow", "09"])


class FixedExtractor(PartitionTimeExtractor):
    def extract(self, keys, values):  # type: ignore[no-untyped-def]
        return datetime(2000, 1, 1)


def test_custom_extractor_is_loaded_by_class_path_and_checked() -> None:
    extractor = create_extractor("custom", f"{__name__}.FixedExtractor", None, None)
    assert extractor.extract(["a"], ["b"]) == datetime(2000, 1, 1)
    with pytest.raises(PolicyError, match="does not implement"):
        create_extractor("custom", "datetime.datetime", None, None)
    with pytest.raises(PolicyError, match="Cannot import module 'no_such_module'"):
        create_extractor("custom", "no_such_module.Extractor", None, None)


def test_custom_policy_class_errors_name_the_option_and_path() -> None:
    with pytest.raises(PolicyError, match=r"sink\.partition-commit\.policy\.class.*not set"):
        load_custom_policy(None, [])
    with pytest.raises(PolicyError, match="has no class 'Nope'"):
        load_custom_policy("sqlext.connectors.filesystem.policies.Nope", [])
    with pytest.raises(PolicyError, match="does not implement"):
        load_custom_policy("pathlib.Path", [])


def test_process_time_trigger_waits_for_the_delay_and_keeps_first_seen() -> None:
    trigger = ProcessTimeTrigger(timedelta(minutes=10))
    trigger.add([("dt=a", ["a"])], now_ms=1_000)
    trigger.add([("dt=a", ["a"])], now_ms=500_000)  # seen again: first-seen stays
    assert trigger.ready(None, now_ms=601_000) == [], "Flink: ready once the clock is past first-seen + delay"
    assert [p.path for p in trigger.ready(None, now_ms=601_001)] == ["dt=a"]
    trigger.committed(["dt=a"])
    assert trigger.all_pending() == []


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def test_partition_time_trigger_compares_the_watermark_in_its_time_zone() -> None:
    extractor = DefaultPartitionTimeExtractor("$dt $hr:00:00")
    utc = PartitionTimeTrigger(timedelta(hours=1), extractor, ["dt", "hr"], "UTC")
    shanghai = PartitionTimeTrigger(timedelta(hours=1), extractor, ["dt", "hr"], "Asia/Shanghai")
    for trigger in (utc, shanghai):
        trigger.add([("dt=2026-11-22/hr=09", ["2026-11-22", "09"])], now_ms=0)
    # 02:00:01 UTC is 10:00:01 in Shanghai: past 09:00 + 1 h there, not in UTC.
    watermark = _ms(datetime.fromisoformat("2026-11-22T02:00:01+00:00"))
    assert utc.ready(watermark, now_ms=watermark) == []
    assert [p.path for p in shanghai.ready(watermark, now_ms=watermark)] == ["dt=2026-11-22/hr=09"]
    exactly_at_deadline = _ms(datetime.fromisoformat("2026-11-22T10:00:00+00:00"))
    assert utc.ready(exactly_at_deadline, now_ms=0) == [], "the watermark must be past the deadline"
    assert len(utc.ready(exactly_at_deadline + 1, now_ms=0)) == 1


def test_a_tick_without_a_watermark_retries_what_the_last_watermark_made_ready() -> None:
    extractor = DefaultPartitionTimeExtractor("$dt $hr:00:00")
    trigger = PartitionTimeTrigger(timedelta(0), extractor, ["dt", "hr"], "UTC")
    trigger.add([("dt=2026-11-22/hr=09", ["2026-11-22", "09"]), ("dt=2026-11-22/hr=11", ["2026-11-22", "11"])], 0)
    watermark = _ms(datetime.fromisoformat("2026-11-22T10:30:00+00:00"))
    assert [p.path for p in trigger.ready(watermark, now_ms=0)] == ["dt=2026-11-22/hr=09"]
    # Its commit failed (the metastore was away), so hour 09 is still pending; the tick has no watermark.
    assert [p.path for p in trigger.ready(None, now_ms=1)] == ["dt=2026-11-22/hr=09"]
    assert [p.path for p in trigger.ready(watermark - 3_600_000, now_ms=2)] == ["dt=2026-11-22/hr=09"], "never back"


def test_idle_timeout_commits_partitions_behind_the_wall_clock_without_a_watermark() -> None:
    extractor = DefaultPartitionTimeExtractor("$dt $hr:00:00")
    trigger = PartitionTimeTrigger(timedelta(hours=1), extractor, ["dt", "hr"], "UTC", timedelta(minutes=5))
    data_at = _ms(datetime.fromisoformat("2026-11-22T12:00:00+00:00"))
    trigger.add(
        [("dt=2026-11-22/hr=09", ["2026-11-22", "09"]), ("dt=2026-11-22/hr=23", ["2026-11-22", "23"])],
        now_ms=data_at,
    )
    assert trigger.ready(None, now_ms=data_at + 60_000) == [], "not idle yet"
    ready = trigger.ready(None, now_ms=data_at + 5 * 60_000)
    assert [p.path for p in ready] == ["dt=2026-11-22/hr=09"], "hour 23 is still ahead of the wall clock"


def test_a_batch_longer_than_the_idle_timeout_is_not_idle_itself() -> None:
    extractor = DefaultPartitionTimeExtractor("$dt $hr:00:00")
    trigger = PartitionTimeTrigger(timedelta(hours=1), extractor, ["dt", "hr"], "UTC", timedelta(seconds=1))
    started_at = _ms(datetime.fromisoformat("2026-11-22T12:00:00+00:00"))
    arrived_at = started_at + 600_000  # the batch took ten minutes
    trigger.add([("dt=2026-11-22/hr=09", ["2026-11-22", "09"])], now_ms=started_at, arrived_ms=arrived_at)
    assert trigger.state.pending["dt=2026-11-22/hr=09"].first_seen_ms == started_at
    assert trigger.ready(None, now_ms=arrived_at + 500) == [], "its own data just arrived"
    assert [p.path for p in trigger.ready(None, now_ms=arrived_at + 1_000)] == ["dt=2026-11-22/hr=09"]


def test_trigger_state_round_trips_through_json() -> None:
    trigger = ProcessTimeTrigger(timedelta(0))
    trigger.add([("dt=a/hr=1", ["a", "1"])], now_ms=42)
    restored = TriggerState.from_json(trigger.state.to_json())
    assert restored == trigger.state


def test_the_commit_log_keeps_the_latest_batches_and_every_unfinished_one(tmp_path: Path) -> None:
    root = tmp_path.as_uri()
    log = CommitLog(FileSystem(root), root)
    for batch in range(10):
        log.write(LogEntry("q", batch, State.INFLIGHT if batch == 2 else State.COMPLETED))
    log.write(LogEntry("other", 0, State.COMPLETED))

    assert log.expire("q", retained=4, keep=lambda batch: batch == 4) == [0, 1, 3, 5]

    assert [(e.batch, e.state) for e in log.entries("q")] == [
        (2, State.INFLIGHT),
        (4, State.COMPLETED),
        (6, State.COMPLETED),
        (7, State.COMPLETED),
        (8, State.COMPLETED),
        (9, State.COMPLETED),
    ]
    assert log.last_batch("q") == 9 and log.last_batch("other") == 0 and log.last_batch("none") is None
    assert log.expire("q", retained=4, keep=lambda batch: batch == 4) == []


def test_a_reader_of_the_commit_log_sees_a_batch_that_moved_on_since_its_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlext commits`` (or a test) reads the log while an insert writes it: a state file listed a moment
    ago is replaced by the batch's next state, or expired; the reader gets the batch's state now."""
    root = tmp_path.as_uri()
    log = CommitLog(FileSystem(root), root)
    moving, expiring = LogEntry("q", 1, State.REQUESTED), LogEntry("q", 0, State.COMPLETED)
    log.write(expiring)
    log.write(moving)
    listed = log._latest_states("q")
    log.transition(moving, State.INFLIGHT)
    log.expire("q", retained=1)
    monkeypatch.setattr(log, "_latest_states", lambda query: listed)

    assert [(e.batch, e.state) for e in log.entries("q")] == [(1, State.INFLIGHT)]


def test_a_log_that_caches_reads_reads_again_only_the_state_files_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status page reloads every few seconds: it reads a state file again only once the file changed."""
    root = tmp_path.as_uri()
    writer, reader = CommitLog(FileSystem(root), root), CommitLog(FileSystem(root), root, cache_reads=True)
    moving = LogEntry("q", 2, State.INFLIGHT)
    for entry in (LogEntry("q", 0, State.COMPLETED), LogEntry("q", 1, State.COMPLETED), moving):
        writer.write(entry)
    read: list[str] = []
    read_json = reader.fs.read_json
    monkeypatch.setattr(reader.fs, "read_json", lambda uri: read.append(uri.rsplit("/", 1)[-1]) or read_json(uri))

    assert [e.batch for e in reader.entries("q")] == [0, 1, 2] and len(read) == 3
    assert [e.batch for e in reader.entries("q")] == [0, 1, 2] and len(read) == 3, "unchanged files read again"
    writer.transition(moving, State.COMPLETED)
    writer.expire("q", retained=2)

    assert [(e.batch, e.state) for e in reader.entries("q")] == [(1, State.COMPLETED), (2, State.COMPLETED)]
    assert read[3:] == [f"{2:020d}.completed"]
    assert set(reader._read_cache["q"]) == {s.uri for _, s in writer._latest_states("q").values()}


def test_the_commit_log_counts_retained_entries_not_id_distance(tmp_path: Path) -> None:
    root = tmp_path.as_uri()
    log = CommitLog(FileSystem(root), root)
    compaction_ids = [1_795_000_000_000_000 + step * 7_000_123 for step in range(5)]  # timestamps in µs
    for compaction_id in compaction_ids:
        log.write(LogEntry("_compaction", compaction_id, State.COMPLETED))

    assert log.expire("_compaction", retained=3) == compaction_ids[:2]
    assert [e.batch for e in log.entries("_compaction")] == compaction_ids[2:]


def test_a_streaming_batch_never_passes_a_batch_inserts_log_entry_for_its_own_replay(tmp_path: Path) -> None:
    """Logs written before batch inserts logged under ``<pipeline>.batch`` can hold a batch insert's entry at
    the id a resumed stream runs next: skipping it as committed would lose the stream's rows."""
    table = events_table("units", "events", tmp_path / "events")
    path = table.options["path"]
    batch_insert = LogEntry("insert_units_events", 3, State.COMPLETED)
    batch_insert.final = True
    CommitLog(FileSystem(path), path).write(batch_insert)
    committer = BatchCommitter(SinkSettings.from_table(table), "insert_units_events", (tmp_path / "cp").as_uri(), None)

    def stage() -> list[StagedFile]:
        raise AssertionError("the batch was planned, not refused")

    with pytest.raises(CommitError, match=r"Batch 3 of 'insert_units_events' .* written by a batch-mode INSERT"):
        committer.process(3, BatchInfo(None, 0), stage)
    assert committer.process(3, BatchInfo(None, 0), stage, final=True).batch == 3, "a batch insert's own replay"
    committer.close()


class ChunkRecorder(PartitionCommitPolicy):
    """Records the partitions of each ``commit_all`` call, and which thread made it."""

    calls: list[tuple[list[str], str]] = []  # noqa: RUF012 - shared with the test on purpose

    def commit_all(self, contexts: Sequence[PartitionCommitContext]) -> None:
        ChunkRecorder.calls.append(([c.relative_path for c in contexts], threading.current_thread().name))


def _recorded_commit(tmp_path: Path, hours: int) -> list[tuple[list[str], str]]:
    """Commit ``hours`` empty partitions with the recording policy alone (no metastore)."""
    policies = {
        "sink.partition-commit.policy.kind": "custom",
        "sink.partition-commit.policy.class": f"{__name__}.ChunkRecorder",
    }
    table = events_table("units", "chunks", tmp_path / "chunks", **policies)
    names = [f"dt=2026-11-22/hr={hour:03d}" for hour in range(hours)]
    for name in names:
        (tmp_path / "chunks" / name).mkdir(parents=True, exist_ok=True)
    ChunkRecorder.calls = []
    committer = BatchCommitter(SinkSettings.from_table(table), "chunks", (tmp_path / f"state-{hours}").as_uri(), None)
    try:
        committer.trigger.add(((name, ["2026-11-22", name[-3:]]) for name in names), now_ms=0)
        assert committer.end_of_input() == names
    finally:
        committer.close()
    return ChunkRecorder.calls


def test_many_ready_partitions_are_committed_in_growing_chunks_in_order_and_a_few_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partition_commit, "COMMIT_CHUNK", 10)
    monkeypatch.setattr(partition_commit, "COMMIT_CHUNK_MAX", 40)
    calls = _recorded_commit(tmp_path, 150)
    assert [len(paths) for paths, _ in calls] == [10, 20, 40, 40, 40]
    assert [path for paths, _ in calls for path in paths] == [f"dt=2026-11-22/hr={h:03d}" for h in range(150)]
    assert {thread for _, thread in calls} == {threading.current_thread().name}, "policies ran off the caller"

    # One chunk: read and committed as before, nothing submitted to be waited for later.
    monkeypatch.setattr(partition_commit, "submit_in_chunks", None)
    assert [len(paths) for paths, _ in _recorded_commit(tmp_path, 10)] == [10]
