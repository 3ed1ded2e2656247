"""Before a run's first write to an ``s3a://`` table, the uploads an earlier run's killed tasks left (no manifest,
no plan) are aborted (:meth:`BatchUploads.abort_unnamed`), without Spark: the commit log on a local dir, the
bucket's uploads in progress given by a stand-in for S3A's ``CommitOperations``. The real run is the S3 crash
chain in tests/io/test_object_stores.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

from sqlext.connectors.filesystem.commit.plan import BatchPlanner
from sqlext.connectors.filesystem.commit.uploads import BatchUploads
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.compaction.compactor import COMPACTION_WRITER
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.io import s3magic
from sqlext.io.fs import FileSystem
from sqlext.io.pool import io_pool
from tests.support.tables import keyed_table

QUERY = "insert_db_events"
TABLE = "s3a://bkt/warehouse/events"


class FakeOperations:
    """The bucket's uploads in progress; records the aborts."""

    def __init__(self, keys: list[str]) -> None:
        self.uploads = [{"destinationKey": key, "uploadId": f"id-{n}"} for n, key in enumerate(keys)]
        self.aborted: list[str] = []

    def in_progress(self) -> list[dict[str, str]]:
        return list(self.uploads)

    def abort(self, commit: dict[str, Any]) -> None:
        self.aborted.append(commit["destinationKey"])


def _uploads(tmp_path: Path, keys: list[str]) -> tuple[BatchUploads, CommitLog, FakeOperations]:
    settings = dataclasses.replace(SinkSettings.from_table(keyed_table("db", "events", tmp_path)), path=TABLE)
    local = (tmp_path / "table").as_uri()
    log = CommitLog(FileSystem(local), local)
    pool = io_pool("test-uploads")
    planner = cast(BatchPlanner, None)
    uploads = BatchUploads(settings, QUERY, log.fs, log, planner, lambda: pool)
    operations = FakeOperations(keys)
    uploads._uploads = cast(s3magic.Uploads, operations)
    return uploads, log, operations


def _plan(log: CommitLog, batch: int, state: State, keys: list[str]) -> None:
    files = [PlannedFile(f"s3a://bkt/{k}", f"s3a://bkt/{k}", "p=a", 10, None, {"uploadId": k}) for k in keys]
    log.write(LogEntry(QUERY, batch, state, files, {"p=a": ["a"]}))


def test_uploads_no_plan_names_are_aborted_and_planned_hidden_and_other_tables_are_kept(tmp_path: Path) -> None:
    planned = "warehouse/events/p=a/part-00000-planned.parquet"
    killed = "warehouse/events/p=a/part-00001-killed.parquet"
    keys = [
        planned,
        killed,
        "warehouse/events/part-00002-unpartitioned-killed.parquet",
        "warehouse/events/_sqlext/compaction/00000000000000000001/p=a/merged.parquet",
        "warehouse/events/p=a/.hidden-writer.parquet",
        "warehouse/events_other/p=a/part-00003.parquet",
    ]
    uploads, log, operations = _uploads(tmp_path, keys)
    _plan(log, 0, State.COMPLETED, ["warehouse/events/p=a/part-done.parquet"])
    _plan(log, 1, State.INFLIGHT, [planned])

    aborted = uploads.abort_unnamed()

    expected = [killed, "warehouse/events/part-00002-unpartitioned-killed.parquet"]
    assert aborted == expected
    assert sorted(operations.aborted) == sorted(expected)
    assert log.queries() == [QUERY], "the query's log dir is made before anything is written"


def test_with_another_writer_on_the_table_nothing_is_aborted_and_compaction_does_not_count(tmp_path: Path) -> None:
    killed = "warehouse/events/p=a/part-00001-killed.parquet"
    uploads, log, operations = _uploads(tmp_path, [killed])
    log.fs.mkdirs(f"{log.root}/{COMPACTION_WRITER}")
    assert uploads.abort_unnamed() == [killed]

    uploads, log, operations = _uploads(tmp_path, [killed])
    log.fs.mkdirs(f"{log.root}/insert_db_events_backfill")
    assert uploads.abort_unnamed() == []
    assert operations.aborted == []
