"""INSERT OVERWRITE's step 3 (:mod:`sqlext.connectors.filesystem.commit.overwrite`) crashed at each of its
fault points and restarted, without Spark: on a local table, with the batch's files staged (renamed into
place) or written as pending uploads (published by a stand-in for S3A's upload completion that checks, at each
completion, that no replaced file is left beside it). Each run resumes from the commit log the one before left.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.connectors.filesystem.commit import moves as batch_moves
from sqlext.connectors.filesystem.commit import overwrite as overwrite_module
from sqlext.connectors.filesystem.commit.moves import BatchMover
from sqlext.connectors.filesystem.commit.uploads import BatchUploads
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.io.fs import FileSystem, join
from sqlext.io.pool import io_pool
from tests.support.tables import keyed_table

QUERY = "insert_db_events.batch"
OLD_IDS = list(range(10))
UNTOUCHED_IDS = list(range(100, 110))
NEW_IDS = list(range(1000, 1006))


class SimulatedCrash(BaseException):
    """What a fault point raises here instead of ending the process."""


def _crash_at(point: str | None):
    def fault_point(name: str, batch: int | None = None) -> None:
        if name == point:
            raise SimulatedCrash(point)

    return fault_point


def _write(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)


def _data_files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir() if p.is_file() and not p.name.startswith(("_", "."))}


def _ids(directory: Path) -> list[int]:
    return sorted(i for name in _data_files(directory) for i in pq.read_table(directory / name)["id"].to_pylist())


class FakeUploads:
    """Publishes a batch's "pending uploads" (files kept outside the table) as S3A's completion would: each
    file appears whole at its final key; one already there was completed before a crash."""

    def __init__(self, pending: Path, replaced: set[str]) -> None:
        self.pending = pending
        self.replaced = replaced
        self.completed: list[str] = []

    def publish(self, entry: LogEntry, row_counts: dict[str, int], resumed: bool) -> None:
        for planned in entry.files:
            final = Path(planned.final.removeprefix("file://"))
            if final.exists():
                continue
            beside = _data_files(final.parent) & self.replaced
            assert not beside, f"an upload completed beside files it replaces: {sorted(beside)}"
            shutil.copy(self.pending / final.name, final)
            self.completed.append(final.name)
            batch_moves.fault_point("mid-move", entry.batch)

    def clean(self, entry: LogEntry) -> None:
        pass


def _setup(tmp_path: Path, partitioned: bool, uploaded: bool) -> tuple[SinkSettings, CommitLog, Path, FakeUploads]:
    """A table whose overwritten dir (``p=a``, or the table's own) holds two files of OLD_IDS (and ``p=b``
    UNTOUCHED_IDS), and a batch planned ``requested`` to replace them with two files of NEW_IDS."""
    table = keyed_table("db", "events", tmp_path / "table")
    if not partitioned:
        table = dataclasses.replace(table, partition_keys=())
    settings = SinkSettings.from_table(table)
    fs = FileSystem(settings.path)
    log = CommitLog(fs, settings.path)
    relative = "p=a" if partitioned else ""
    target = tmp_path / "table" / relative if partitioned else tmp_path / "table"
    for index in range(2):
        _write(target / f"part-old-{index}.parquet", OLD_IDS[index * 5 : index * 5 + 5])
    if partitioned:
        _write(tmp_path / "table" / "p=b" / "part-old-0.parquet", UNTOUCHED_IDS)
    staging_uri = log.staging_dir(QUERY, 0)
    staging = Path(staging_uri.removeprefix("file://"))
    files = []
    for index in range(2):
        name = f"part-new-{index}.parquet"
        written = (tmp_path / "pending" if uploaded else staging / relative) / name
        _write(written, NEW_IDS[index * 3 : index * 3 + 3])
        final = join(settings.path, relative, name) if partitioned else join(settings.path, name)
        staged = final if uploaded else (join(staging_uri, relative, name) if partitioned else join(staging_uri, name))
        upload: dict[str, Any] | None = {"key": name} if uploaded else None
        files.append(PlannedFile(staged, final, relative, written.stat().st_size, 3, upload))
    partitions = {"p=a": ["a"]} if partitioned else {}
    entry = LogEntry(QUERY, 0, State.REQUESTED, files, partitions, operation="overwrite", final=True)
    log.write(entry)
    return settings, log, target, FakeUploads(tmp_path / "pending", _data_files(target))


@pytest.mark.parametrize("uploaded", [True, False], ids=["pending-uploads", "staged"])
@pytest.mark.parametrize("partitioned", [True, False], ids=["partition", "no-partitions"])
def test_an_overwrite_crashed_at_each_step_and_restarted_holds_exactly_the_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partitioned: bool, uploaded: bool
) -> None:
    settings, log, target, uploads = _setup(tmp_path, partitioned, uploaded)
    old = _data_files(target)
    pool = io_pool("test-overwrite")
    mover = BatchMover(settings, QUERY, log.fs, log, lambda: pool, {}, cast(BatchUploads, uploads))

    files_after_each_run = []
    for fault in ("mid-replace", "mid-move", "after-move", None):
        with monkeypatch.context() as patched:
            for module in (batch_moves, overwrite_module):
                patched.setattr(module, "fault_point", _crash_at(fault))
            entry = log.get(QUERY, 0)
            assert entry is not None
            if fault is None:
                mover.move(entry)
            else:
                with pytest.raises(SimulatedCrash):
                    mover.move(entry)
        names = _data_files(target) if target.is_dir() else set()
        assert not (names & old and names - old), f"old and new files together: {sorted(names)}"
        if partitioned:
            assert _ids(tmp_path / "table" / "p=b") == UNTOUCHED_IDS, "a partition the batch does not write changed"
        files_after_each_run.append(len(names))
    pool.shutdown()

    # Pending uploads and a table without partitions: one old file deleted when the first crash came; staged
    # files of a partition: the old partition dir renamed aside.
    assert files_after_each_run[0] == (0 if partitioned and not uploaded else 1)
    assert files_after_each_run[1:] in ([1, 2, 2], [2, 2, 2])
    assert _ids(target) == NEW_IDS
    entry = log.get(QUERY, 0)
    assert entry is not None and entry.state is State.COMPLETED
    if partitioned and not uploaded:
        assert entry.replaced_files == [join(settings.path, "p=a")]
    else:
        assert sorted(uri.rsplit("/", 1)[1] for uri in entry.replaced_files) == sorted(old)
    if uploaded:
        assert sorted(uploads.completed) == ["part-new-0.parquet", "part-new-1.parquet"], "each completed once"
    hidden = [p for p in (tmp_path / "table").rglob("*") if ".sqlext-" in p.name or "trash" in p.parts]
    assert hidden == [], "old files set aside and left"
    assert not Path(log.staging_dir(QUERY, 0).removeprefix("file://")).exists()


def test_an_overwrite_an_earlier_version_left_between_its_renames_is_finished_and_its_trash_removed(
    tmp_path: Path,
) -> None:
    """Earlier versions moved the old partition dir into ``_sqlext/trash/<query>/<batch>/`` first."""
    settings, log, target, uploads = _setup(tmp_path, partitioned=True, uploaded=False)
    entry = log.get(QUERY, 0)
    assert entry is not None
    log.transition(entry, State.INFLIGHT)
    trash = tmp_path / "table" / "_sqlext" / "trash" / QUERY / f"{0:020d}" / "p=a"
    trash.parent.mkdir(parents=True)
    target.rename(trash)
    pool = io_pool("test-overwrite")

    BatchMover(settings, QUERY, log.fs, log, lambda: pool, {}, cast(BatchUploads, uploads)).move(entry)
    pool.shutdown()

    assert _ids(target) == NEW_IDS
    assert _ids(tmp_path / "table" / "p=b") == UNTOUCHED_IDS
    assert not (tmp_path / "table" / "_sqlext" / "trash" / QUERY / f"{0:020d}").exists()
