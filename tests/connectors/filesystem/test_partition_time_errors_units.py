"""A partition time extractor that cannot produce a time from the partition values fails, as Flink's job
fails naming the text it could not parse: from the DDL where the pattern names no partition column (at CREATE,
ALTER and INSERT), and at the batch that brings a value the pattern or formatter cannot read, before anything
of that batch is recorded or moved (the batches committed before stay committed)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.commit.plan import BatchInfo, StagedFile
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import OptionError, PartitionTimeError
from sqlext.io.fs import FileSystem, join
from sqlext.registry import validate_table
from tests.support.tables import events_table

PATTERN = "partition.time-extractor.timestamp-pattern"
PARTITION_TIME = {
    "sink.partition-commit.trigger": "partition-time",
    "sink.partition-commit.policy.kind": "success-file",
}


@pytest.mark.parametrize("pattern", ["$day 00:00:00", "$dt $hour:00:00", "$year-$dt"])
def test_a_pattern_naming_no_partition_column_is_refused_naming_the_option_and_the_keys(
    tmp_path: Path, pattern: str
) -> None:
    table = events_table("units", "events", tmp_path / "t", **{**PARTITION_TIME, PATTERN: pattern})
    with pytest.raises(OptionError) as refused:
        validate_table(table)  # CREATE TABLE, ALTER TABLE
    assert refused.value.option == PATTERN and refused.value.value == pattern
    unknown = next(word for word in pattern.replace("-", " ").split() if word not in ("$dt", "00:00:00"))
    assert unknown.split(":")[0] in str(refused.value) and "$dt, $hr" in str(refused.value)
    with pytest.raises(OptionError):  # INSERT into a table created before CREATE checked it
        SinkSettings.from_table(table).commit_extractor()


def test_a_pattern_is_checked_only_where_partition_times_are_extracted(tmp_path: Path) -> None:
    process_time = events_table("units", "events", tmp_path / "t", **{PATTERN: "$day"})
    validate_table(process_time)  # as Flink: the process-time trigger extracts nothing
    assert SinkSettings.from_table(process_time).commit_extractor() is None
    custom = {**PARTITION_TIME, PATTERN: "$day", "partition.time-extractor.kind": "custom"}
    custom["partition.time-extractor.class"] = "tests.connectors.filesystem.test_partition_time_errors_units.Nowhere"
    validate_table(events_table("units", "events", tmp_path / "t", **custom))  # a custom class reads no pattern
    validate_table(events_table("units", "events", tmp_path / "t", **{**PARTITION_TIME, PATTERN: "$dt $hr:00:00"}))
    expiring = {PATTERN: "$day", "partition.expiration-time": "7 d"}  # by values-time, Paimon's default
    with pytest.raises(OptionError, match=r"\$day"):
        validate_table(events_table("units", "events", tmp_path / "t", **expiring))
    validate_table(
        events_table("units", "events", tmp_path / "t", **expiring, **{"partition.expiration-strategy": "update-time"})
    )


QUERY = "insert_units_events"


def _stage(path: str, batch: int, dt: str) -> list[StagedFile]:
    uri = join(CommitLog(FileSystem(path), path).staging_dir(QUERY, batch), f"dt={dt}/hr=00", "part-0.parquet")
    file = Path(uri.removeprefix("file://"))
    file.parent.mkdir(parents=True)
    pq.write_table(pa.table({"id": [batch]}), file)
    return [StagedFile(uri, file.stat().st_size, [dt, "00"], 1)]


def test_a_value_the_formatter_cannot_read_fails_its_batch_before_anything_of_it_is_committed(tmp_path: Path) -> None:
    options = {**PARTITION_TIME, PATTERN: "$dt", "partition.time-extractor.timestamp-formatter": "yyyyMMdd"}
    table = events_table("units", "events", tmp_path / "t", **options)
    validate_table(table)
    settings = SinkSettings.from_table(table)
    committer = BatchCommitter(settings, QUERY, (tmp_path / "checkpoint").as_uri(), None)
    try:
        committer.process(0, BatchInfo(None, 0), lambda: _stage(settings.path, 0, "20260401"))
        with pytest.raises(PartitionTimeError) as failed:
            committer.process(1, BatchInfo(None, 0), lambda: _stage(settings.path, 1, "2026-04-02"))
        message = str(failed.value)
        assert "'dt=2026-04-02/hr=00'" in message and "'2026-04-02'" in message and "'yyyyMMdd'" in message
    finally:
        committer.close()
    log = CommitLog(FileSystem(settings.path), settings.path)
    assert log.states(QUERY) == {0: State.COMPLETED}, "batch 1 is not recorded"
    root = tmp_path / "t"
    assert [p.name for p in (root / "dt=20260401" / "hr=00").iterdir()] == ["part-0.parquet"]
    assert not (root / "dt=2026-04-02").exists(), "nothing of batch 1 is moved into place"
    assert committer.trigger.state.pending.keys() == {"dt=20260401/hr=00"}
