"""Incremental reads without Spark: which files (or rows of merged files) a window of commits reads, from a
commit log and table directory written here as the sink, compaction and expiration write them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.factory import FileSystemTableFactory
from sqlext.connectors.filesystem.incremental.plan import WindowNotCovered, WindowRead, plan_window
from sqlext.connectors.filesystem.incremental.window import Window, parse_window
from sqlext.errors import OptionError, ValidationError
from sqlext.io.fs import FileSystem
from sqlext.jobs.audit import render
from sqlext.registry import SourceContext, validate_table
from sqlext.table import Column, TableDefinition, TableIdentifier

HR0, HR1 = "dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"
NOW = 10_000_000


class Table:
    """A table directory and its commit log, written as the sink, compaction and expiration write them."""

    def __init__(self, root: Path, partitioned: bool = True, fmt: str = "parquet") -> None:
        self.root = root
        self.uri = root.as_uri()
        columns = [Column("id", "BIGINT")] + ([Column("dt", "STRING"), Column("hr", "STRING")] if partitioned else [])
        options = {"connector": "filesystem", "path": self.uri, "format": fmt}
        keys = ("dt", "hr") if partitioned else ()
        self.definition = TableDefinition(TableIdentifier("db", "t"), tuple(columns), options, keys)
        self.log = CommitLog(FileSystem(self.uri), self.uri)

    def file(self, partition: str, name: str) -> str:
        return f"{self.uri}/{partition}/{name}" if partition else f"{self.uri}/{name}"

    def land(
        self,
        batch: int,
        files: dict[str, Sequence[str]],
        completed_ms: int,
        committed: dict[str, int] | None = None,
        later: dict[str, int] | None = None,
        query: str = "insert_t",
        operation: str = "append",
        pending: Sequence[str] | None = (),
        replaced: Sequence[str] = (),
        rows: int = 10,
    ) -> list[str]:
        """A batch whose files are in place; ``committed``: partitions it committed and when."""
        planned = []
        for partition, names in files.items():
            for name in names:
                final = self.file(partition, name)
                self._touch(final)
                planned.append(PlannedFile(final + ".staged", final, partition, 1, rows))
        self.log.write(
            LogEntry(
                query,
                batch,
                State.COMPLETED,
                planned,
                {p: p.split("/") for p in files},
                completed_ms=completed_ms,
                batch_time_ms=completed_ms - 1,
                committed_partitions=sorted(committed or {}),
                committed_at=dict(committed or {}),
                committed_later=dict(later or {}),
                operation=operation,
                pending_partitions=None if pending is None else list(pending),
                replaced_files=list(replaced),
            )
        )
        return [p.final for p in planned]

    def compact(
        self, compaction: int, partition: str, merged: str, sources: Sequence[str], state: State = State.COMPLETED
    ) -> str:
        """A compaction of ``sources`` (files) into ``merged`` (a name in the partition): sources gone."""
        final = self.file(partition, merged)
        rows = {source: 10 for source in sources}
        if state is State.COMPLETED:
            for source in sources:
                self._remove(source)
            self._touch(final)
        self.log.write(
            LogEntry(
                "_compaction",
                compaction,
                state,
                [PlannedFile(final + ".work", final, partition, 1, 10 * len(sources))],
                {partition: partition.split("/")},
                batch_time_ms=compaction // 1000,
                committed_partitions=[partition],
                replaced_files=list(sources),
                operation="compact",
                merged_from={final: list(sources)},
                merged_rows=rows,
                completed_ms=compaction // 1000,
            )
        )
        return final

    def expire(self, batch: int, partition: str, files: Sequence[str], at_ms: int) -> None:
        for uri in files:
            self._remove(uri)
        self.log.write(
            LogEntry(
                "_expiration",
                batch,
                State.COMPLETED,
                partitions={partition: partition.split("/")},
                batch_time_ms=at_ms,
                operation="expire",
                replaced_files=list(files),
                merged_from={partition: [f"{self.uri}/{partition}"]},
                completed_ms=at_ms,
            )
        )

    def plan(self, start: int, end: int, now: int = NOW) -> WindowRead:
        return plan_window(self.definition, Window(start, end), now_ms=now)

    def _touch(self, uri: str) -> None:
        path = Path(uri.removeprefix("file://"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")

    @staticmethod
    def _remove(uri: str) -> None:
        Path(uri.removeprefix("file://")).unlink()


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return Table(tmp_path / "t")


def _files(read: WindowRead) -> list[str]:
    return sorted(uri.rsplit("/", 1)[1] for uri in read.whole)


def test_a_file_counts_from_the_first_commit_of_its_partition_after_it_landed(table: Table) -> None:
    table.land(0, {HR0: ["a"]}, 1000, committed={HR0: 1005})
    table.land(1, {HR0: ["b"]}, 2000, committed={HR0: 2003})  # late data: the partition committed again
    table.land(2, {HR1: ["c"]}, 3000)  # written, its partition not committed yet
    table.land(3, {HR1: ["d"]}, 4000, committed={HR1: 4002})

    assert _files(table.plan(0, 1004)) == []
    assert _files(table.plan(1004, 1005)) == ["a"]  # START exclusive, END inclusive
    assert _files(table.plan(1005, 2003)) == ["b"]
    assert _files(table.plan(2003, 4001)) == []  # c landed, but nothing committed it yet
    assert _files(table.plan(4001, 5000)) == ["c", "d"]
    consecutive = [table.plan(a, b) for a, b in ((0, 1500), (1500, 3500), (3500, 9000))]
    assert sorted(name for read in consecutive for name in _files(read)) == ["a", "b", "c", "d"]
    assert table.plan(5, 5) == WindowRead()  # START = END: empty, as in Paimon


def test_commits_recorded_by_no_batch_and_by_entries_without_commit_times(table: Table) -> None:
    entry_without_times = table.land(0, {HR0: ["a"]}, 1000)
    raw = table.log.get("insert_t", 0)
    assert raw is not None and entry_without_times
    raw.committed_partitions = [HR0]  # an entry of an earlier sqlext: no committed_at, completed_ms stands in
    table.log.write(raw)
    table.land(1, {HR1: ["b"]}, 2000, later={HR1: 2500})  # a tick committed it after the batch

    assert _files(table.plan(0, 1000)) == ["a"]
    assert _files(table.plan(1000, 2499)) == []
    assert _files(table.plan(2499, 2500)) == ["b"]


def test_a_table_without_partitions_counts_each_file_from_its_batch(tmp_path: Path) -> None:
    table = Table(tmp_path / "flat", partitioned=False)
    table.land(0, {"": ["a"]}, 1000)
    table.land(1, {"": ["b", "c"]}, 2000)

    assert _files(table.plan(0, 1000)) == ["a"]
    assert _files(table.plan(1000, 2000)) == ["b", "c"]


def test_files_merged_by_compaction_are_read_from_the_merged_file_by_row_ranges(table: Table) -> None:
    a, b = table.land(0, {HR0: ["a", "b"]}, 1000, committed={HR0: 1001})
    (c,) = table.land(1, {HR0: ["c"]}, 2000, committed={HR0: 2001})
    merged = table.compact(3_000_000, HR0, "compacted-3000000-00000.parquet", [a, c, b])  # rows in that order

    assert table.plan(0, 1500) == WindowRead(parts=((merged, ((0, 10), (20, 30))),))
    assert table.plan(1500, 2500) == WindowRead(parts=((merged, ((10, 20),)),))
    assert table.plan(0, 2500) == WindowRead(whole=(merged,))  # every file merged into it is in the window
    assert table.plan(2500, 4000) == WindowRead()  # the compaction added no rows


def test_a_file_merged_twice_is_found_through_both_compactions(table: Table) -> None:
    (a,) = table.land(0, {HR0: ["a"]}, 1000, committed={HR0: 1001})
    (b,) = table.land(1, {HR0: ["b"]}, 2000, committed={HR0: 2001})
    first = table.compact(2_500_000, HR0, "compacted-2500000-00000.parquet", [a, b])
    (c,) = table.land(2, {HR0: ["c"]}, 3000, committed={HR0: 3001})
    second = table.compact(3_500_000, HR0, "compacted-3500000-00000.parquet", [first, c])

    assert table.plan(1500, 2500) == WindowRead(parts=((second, ((10, 20),)),))
    assert table.plan(2500, 3500) == WindowRead(parts=((second, ((20, 30),)),))
    assert table.plan(0, 3500) == WindowRead(whole=(second,))


def test_part_of_a_merged_file_of_another_format_is_refused_naming_the_commits(tmp_path: Path) -> None:
    table = Table(tmp_path / "csv", fmt="csv")
    (a,) = table.land(0, {HR0: ["a.csv"]}, 1000, committed={HR0: 1001})
    (b,) = table.land(1, {HR0: ["b.csv"]}, 2000, committed={HR0: 2001})
    merged = table.compact(3_000_000, HR0, "compacted-3000000-00000.csv", [a, b])

    assert table.plan(0, 2500) == WindowRead(whole=(merged,))
    with pytest.raises(ValidationError, match=r"only parquet files can be read in part") as error:
        table.plan(0, 1500)
    assert "1001 (1970-01-01 00:00:01.001 UTC), 2001 (1970-01-01 00:00:02.001 UTC)" in str(error.value)
    assert error.value.option == "incremental-between-timestamp" and error.value.value == "0,1500"


def test_a_compaction_swapping_files_asks_for_the_read_again(table: Table) -> None:
    (a,) = table.land(0, {HR0: ["a"]}, 1000, committed={HR0: 1001})
    table.compact(3_000_000, HR0, "compacted-3000000-00000.parquet", [a], state=State.INFLIGHT)
    Table._remove(a)  # the swap moved it to the trash; the merged file is not in place yet

    with pytest.raises(ValidationError, match="is replacing files committed in the window; run the read again"):
        table.plan(0, 1500)


def test_files_replaced_by_an_overwrite_expired_or_deleted_are_not_read(table: Table) -> None:
    (a,) = table.land(0, {HR0: ["a"]}, 1000, committed={HR0: 1001})
    (b,) = table.land(1, {HR1: ["b"]}, 2000, committed={HR1: 2001})
    Table._remove(a)  # INSERT OVERWRITE moved the partition dir to the trash and put its own in place
    table.land(0, {HR0: ["new"]}, 3000, later={HR0: 3001}, query="insert_t.batch", operation="overwrite", replaced=[a])
    table.expire(4_000_000, HR1, [b], at_ms=4000)
    (c,) = table.land(2, {"dt=2026-11-23/hr=00": ["c"]}, 5000, committed={"dt=2026-11-23/hr=00": 5001})
    Path(c.removeprefix("file://")).parent.parent.joinpath("hr=00", "c").unlink()
    Path(c.removeprefix("file://")).parent.rmdir()  # the partition deleted by hand

    assert table.plan(0, 2500) == WindowRead(gone=(a, b))
    assert _files(table.plan(2500, 3500)) == ["new"]
    assert table.plan(4500, 6000) == WindowRead(gone=(c,))


def test_a_window_before_the_oldest_batch_the_log_keeps_is_refused_naming_the_oldest_start(table: Table) -> None:
    table.land(3, {HR0: ["d"]}, 4000, committed={HR0: 4001})  # batches 0-2 expired
    table.land(4, {HR0: ["e"]}, 5000, committed={HR0: 5001})

    with pytest.raises(WindowNotCovered) as error:
        table.plan(1000, 6000)
    assert error.value.oldest_start_ms == 3999
    message = str(error.value)
    assert "'insert_t' lost its batches before batch 3 (completed at 4000 (1970-01-01 00:00:04.000 UTC))" in message
    assert "'sink.commit-log.retained-batches' = 100" in message
    assert "The oldest START it can answer (with this END) is 3999 (1970-01-01 00:00:03.999 UTC)" in message
    assert error.value.option == "incremental-between-timestamp" and error.value.value == "1000,6000"
    assert _files(table.plan(3999, 6000)) == ["d", "e"]


def test_a_partition_pending_when_the_log_starts_holds_files_the_log_cannot_date(table: Table) -> None:
    Table._touch(table, table.file(HR1, "old"))  # written by batch 2, which the log lost; pending then
    table.land(3, {HR0: ["d"]}, 4000, committed={HR0: 4001}, pending=[HR1])
    table.land(4, {HR1: ["e"]}, 5000, committed={HR1: 5001}, pending=[HR1])

    with pytest.raises(WindowNotCovered, match=r"partition dt=2026-11-22/hr=01, committed at 5001 .* holds") as error:
        table.plan(4500, 6000)
    assert error.value.oldest_start_ms == 5001
    assert _files(table.plan(3999, 4500)) == ["d"]

    not_pending = Table(table.root.parent / "other")
    Table._touch(not_pending, not_pending.file(HR1, "old"))  # committed before the log's first batch
    not_pending.land(3, {HR1: ["e"]}, 5000, committed={HR1: 5001}, pending=[])
    assert _files(not_pending.plan(4999, 6000)) == ["e"]

    unknown = Table(table.root.parent / "unknown")  # an older log: which partitions were pending is not known
    Table._touch(unknown, unknown.file(HR1, "old"))
    unknown.land(3, {HR1: ["e"]}, 5000, committed={HR1: 5001}, pending=None)
    with pytest.raises(WindowNotCovered, match="holds files the log does not list"):
        unknown.plan(4999, 6000)


def test_a_file_merged_by_a_compaction_the_log_no_longer_keeps_is_refused(table: Table) -> None:
    (a,) = table.land(0, {HR0: ["a"]}, 1000, committed={HR0: 1001})
    Table._remove(a)
    Table._touch(table, table.file(HR0, "compacted-2000000-00000.parquet"))  # its log entry expired

    with pytest.raises(WindowNotCovered, match="was merged by a compaction the log no longer keeps") as error:
        table.plan(0, 1500)
    assert error.value.oldest_start_ms == 1001


def test_a_log_without_batches_answers_only_for_a_table_without_data(table: Table) -> None:
    assert table.plan(0, 1500) == WindowRead()
    Table._touch(table, table.file(HR0, "a"))
    with pytest.raises(WindowNotCovered, match="holds no batch of any writing query") as error:
        table.plan(0, 1500)
    assert error.value.oldest_start_ms == NOW


def test_a_window_ending_after_now_is_refused(table: Table) -> None:
    with pytest.raises(ValidationError, match=r"END 10000001 \(.*\) is later than now") as error:
        table.plan(0, NOW + 1)
    assert error.value.option == "incremental-between-timestamp"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", r"'abc'. Expected 'START,END': two times in epoch milliseconds"),
        ("1767225600000", r"'1767225600000'. Expected 'START,END'"),
        ("1,2,3", r"'1,2,3'. Expected 'START,END'"),
        ("2026-01-01,2026-01-02", r"Expected 'START,END'"),
        ("5,3", r"'5,3'. START 5 is after END 3; expected 'START,END'"),
    ],
)
def test_bad_windows_are_refused_naming_the_option_the_value_and_the_form(value: str, expected: str) -> None:
    table = Table(Path("/tmp/never-written")).definition
    with pytest.raises(OptionError, match=expected) as error:
        validate_table(table.with_options({**table.options, "incremental-between-timestamp": value}))
    assert error.value.option == "incremental-between-timestamp" and error.value.value == value
    assert "Invalid value for option 'incremental-between-timestamp'" in str(error.value)


def test_windows_parse_as_paimon_writes_them() -> None:
    assert parse_window("1767225600000,1767312000000") == Window(1767225600000, 1767312000000)
    assert parse_window(" 0 , 5 ") == Window(0, 5)
    assert 5 in Window(0, 5) and 0 not in Window(0, 5)


def test_snapshot_id_windows_and_streaming_reads_are_refused_naming_the_option(tmp_path: Path) -> None:
    table = Table(tmp_path / "t").definition
    with pytest.raises(OptionError, match=r"'incremental-between' .* not supported.*'incremental-between-timestamp'"):
        validate_table(table.with_options({**table.options, "incremental-between": "5,10"}))
    windowed = table.with_options({**table.options, "incremental-between-timestamp": "0,5"})
    with pytest.raises(OptionError, match="Run the statement in batch mode") as error:
        FileSystemTableFactory().create_source(SourceContext(spark=None, table=windowed, streaming=True))  # type: ignore[arg-type]
    assert error.value.option == "incremental-between-timestamp"


def test_sqlext_commits_shows_when_each_batch_completed_in_epoch_ms_and_utc(table: Table) -> None:
    table.land(0, {HR0: ["a"]}, 1767225600123, committed={HR0: 1767225600200})
    lines = render(table.log.entries()).splitlines()
    assert lines[0].split()[6:8] == ["completed_ms", "completed"]
    assert lines[1].split()[6:9] == ["1767225600123", "2026-01-01T00:00:00.123Z", HR0]
