"""Kill the driver at every named fault point of the commit path, restart from the same checkpoint,
and check the table row by row: every row exactly once, every partition committed once in the HMS.

The fault-point test runs on a Derby-backed and on a PostgreSQL-backed metastore. On PostgreSQL it kills
at the points around the batch's partition commit, the step that writes to the metastore (``HMS_POINTS``):
a kill at an earlier point leaves nothing half-done in the metastore, so the backend cannot change what
the restart does, and each kill costs a Spark start. The random-kill loop runs on both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from functools import partial
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import Backend, MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.faults import COMMIT_POINTS, EXIT_CODE
from sqlext.io.fs import FileSystem
from tests.support.services import BackendMetastore
from tests.support.streams import write_hourly_events
from tests.support.tables import assert_partitions_committed, create_in_hms, events_table
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ROWS_PER_HOUR = 40
RANDOM_DB = "random_kill_db"
#: The fault points just before, inside and just after a batch's partition commit (metastore add/alter).
HMS_POINTS = ("after-log", "between-policies", "after-policies")
#: The commit path's filesystem per backend and test (``SQLEXT_FS``): each kind of crash runs once with the
#: Hadoop FileSystem (what every non-``file:`` path uses) and once with pyarrow (``file:``'s default).
FAULT_POINT_FS = {Backend.DERBY: "hadoop", Backend.POSTGRES: "pyarrow"}
RANDOM_KILL_FS = {Backend.DERBY: "pyarrow", Backend.POSTGRES: "hadoop"}


def _job(
    metastore: MetastoreSettings,
    tmp_path: Path,
    options: dict[str, str],
    fault: str | None,
    database: str,
    filesystem: str = "auto",
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of one run of tests/support/sink_job.py."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_FS": filesystem}
    env.pop("SQLEXT_FAULT", None)
    if fault:
        env["SQLEXT_FAULT"] = fault
    directories = [str(tmp_path / name) for name in ("table", "input", "checkpoint")]
    command = [sys.executable, "-m", "tests.support.sink_job", metastore.uri, *directories, json.dumps(options)]
    return [*command, database], env


def _run_job(
    metastore: MetastoreSettings,
    tmp_path: Path,
    options: dict[str, str],
    fault: str | None,
    database: str = "crash_db",
    filesystem: str = "auto",
) -> subprocess.CompletedProcess[str]:
    command, env = _job(metastore, tmp_path, options, fault, database, filesystem)
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


def _assert_table_holds_input_exactly_once(
    hms: MetastoreClient, table_dir: Path, hours: int, database: str = "crash_db"
) -> None:
    rows = (
        ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True)
        .to_table(columns=["id", "hr"])
        .to_pylist()
    )
    ids = sorted(row["id"] for row in rows)
    assert ids == list(range(hours * ROWS_PER_HOUR)), "rows lost or duplicated"
    names = [f"dt=2026-11-22/hr={h:02d}" for h in range(hours)]
    assert_partitions_committed(hms, database, "events", table_dir, names, ROWS_PER_HOUR)
    leftovers = [p for p in (table_dir / "_sqlext" / "staging").rglob("*") if p.is_file()]
    assert leftovers == [], "in-progress files left behind"
    hidden_in_partitions = [p for p in table_dir.glob("dt=*/hr=*/.*")]
    assert hidden_in_partitions == []


def test_a_crash_at_every_fault_point_then_restart_gives_every_row_exactly_once(
    backend_metastore: BackendMetastore, backend_hms: MetastoreClient, tmp_path: Path
) -> None:
    commit_points = list(COMMIT_POINTS if backend_metastore.backend is Backend.DERBY else HMS_POINTS)
    hours = len(commit_points) + 2
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours, ROWS_PER_HOUR)
    options = {"sink.parallelism": "2"}  # two files per partition, so a crash can fall between moves
    create_in_hms(backend_hms, events_table("crash_db", "events", tmp_path / "table", **options))

    filesystem = FAULT_POINT_FS[backend_metastore.backend]
    for batch, point in enumerate(commit_points):
        crashed = _run_job(backend_metastore.settings, tmp_path, options, f"{point}@{batch}", filesystem=filesystem)
        assert crashed.returncode == EXIT_CODE, f"{point}@{batch} was not reached:\n{crashed.stderr[-3000:]}"
        assert f"fault point '{point}' reached" in crashed.stderr
        assert f"commit path filesystem: {filesystem}" in crashed.stderr
    finished = _run_job(backend_metastore.settings, tmp_path, options, None, filesystem=filesystem)
    assert finished.returncode == 0, finished.stderr[-3000:]

    _assert_table_holds_input_exactly_once(backend_hms, tmp_path / "table", hours)


def _reached(log: CommitLog, batches: int, process: subprocess.Popen[bytes]) -> bool:
    return len(list(log.entries())) >= batches or process.poll() is not None


def test_killed_at_random_moments_then_finished_gives_every_row_exactly_once(
    backend_metastore: BackendMetastore, backend_hms: MetastoreClient, tmp_path: Path
) -> None:
    import random
    import signal
    import time

    hms, metastore = backend_hms, backend_metastore.settings
    hours = 10
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours, ROWS_PER_HOUR)
    options = {"sink.parallelism": "2"}
    create_in_hms(hms, events_table(RANDOM_DB, "events", tmp_path / "table", **options))
    log = CommitLog(FileSystem((tmp_path / "table").as_uri()), (tmp_path / "table").as_uri())
    chance = random.Random(20261122)  # fixed seed: the same kill moments on every run
    filesystem = RANDOM_KILL_FS[backend_metastore.backend]
    command, env = _job(metastore, tmp_path, options, None, RANDOM_DB, filesystem)
    for run in range(3):
        # Kill once the log has seen a random number of new batches, a random fraction of a second later:
        # somewhere inside the write, the moves or the partition commit of the next batch.
        target = len(list(log.entries())) + chance.randint(1, 2)
        process = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(partial(_reached, log, target, process), 240, what=f"run {run} to reach batch {target}")
            time.sleep(chance.uniform(0.0, 1.5))  # the random moment itself, not synchronisation
            assert process.poll() is None, f"run {run} finished before it could be killed"
            process.send_signal(signal.SIGKILL)
        finally:
            process.wait(timeout=60)
    finished = _run_job(metastore, tmp_path, options, None, RANDOM_DB, filesystem)
    assert finished.returncode == 0, finished.stderr[-3000:]

    _assert_table_holds_input_exactly_once(hms, tmp_path / "table", hours, RANDOM_DB)
