"""Kill the driver at every named fault point of the commit path, restart from the same checkpoint,
and check the table row by row: every row exactly once, every partition committed once in the HMS.

The test runs on a Derby-backed and on a PostgreSQL-backed metastore. On Derby the commit is overlapped
(``sink.partition-commit.async``, the default) and the kills cover every point, ``after-handoff`` included:
from there on a batch's steps run on the background committer after Spark recorded the batch, so each such
kill is of a batch Spark will not replay, and the last one falls on the input's last batch, so that the
finishing run has no batch at all and recovers it before its end of input. On PostgreSQL the commit is not
overlapped (each batch committed before ``foreachBatch`` returns, so Spark replays it) and the kills are at
the points around the batch's partition commit, the step that writes to the metastore (``HMS_POINTS``): a
kill at an earlier point leaves nothing half-done in the metastore, so the backend cannot change what the
restart does, and each kill costs a Spark start. Kills at random moments are in test_random_kills.py.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import Backend
from sqlext.faults import EXIT_CODE, OVERLAPPED_POINTS
from tests.support.crash_jobs import ROWS_PER_HOUR, assert_table_holds_input_exactly_once, run_job
from tests.support.services import BackendMetastore
from tests.support.streams import write_hourly_events
from tests.support.tables import create_in_hms, events_table

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

#: The fault points just before, inside and just after a batch's partition commit (metastore add/alter).
HMS_POINTS = ("after-log", "between-policies", "after-policies")
#: The commit path's filesystem per backend (``SQLEXT_FS``): each kind of crash runs once with the Hadoop
#: FileSystem (what every non-``file:`` path uses) and once with pyarrow (``file:``'s default).
FAULT_POINT_FS = {Backend.DERBY: "hadoop", Backend.POSTGRES: "pyarrow"}


@pytest.mark.timeout(1500)  # nine Spark driver starts, each bounded by run_job's own timeout
def test_a_crash_at_every_fault_point_then_restart_gives_every_row_exactly_once(
    backend_metastore: BackendMetastore, backend_hms: MetastoreClient, tmp_path: Path
) -> None:
    overlapped = backend_metastore.backend is Backend.DERBY
    commit_points = list(OVERLAPPED_POINTS if overlapped else HMS_POINTS)
    hours = len(commit_points) if overlapped else len(commit_points) + 2
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours, ROWS_PER_HOUR)
    options = {
        "sink.parallelism": "2",  # two files per partition, so a crash can fall between moves
        "sink.partition-commit.async": str(overlapped).lower(),
        # The log keeps one batch and archives the rest (merged past 100): each restart recovers from it.
        "sink.commit-log.retained-batches": "1",
    }
    create_in_hms(backend_hms, events_table("crash_db", "events", tmp_path / "table", **options))

    filesystem = FAULT_POINT_FS[backend_metastore.backend]
    for batch, point in enumerate(commit_points):
        crashed = run_job(backend_metastore.settings, tmp_path, options, f"{point}@{batch}", filesystem=filesystem)
        assert crashed.returncode == EXIT_CODE, f"{point}@{batch} was not reached:\n{crashed.stderr[-3000:]}"
        assert f"fault point '{point}' reached" in crashed.stderr
        assert f"commit path filesystem: {filesystem}" in crashed.stderr
    finished = run_job(backend_metastore.settings, tmp_path, options, None, filesystem=filesystem)
    assert finished.returncode == 0, finished.stderr[-3000:]

    assert_table_holds_input_exactly_once(backend_hms, tmp_path / "table", hours, checkpoint=tmp_path / "checkpoint")
