"""Kill the driver of a streaming insert at random moments (a fixed seed: the same moments on every run), three
times, then let it finish: every row exactly once, every partition committed once in the HMS, nothing hidden
left in a partition, every batch of the commit log completed and in the trigger state. The commit is
overlapped (the default ``sink.partition-commit.async``): a kill lands in the background committer's moves or
partition commit of a batch Spark recorded as done, or in the next batch's write while that commit runs. Runs
on a Derby-backed and on a PostgreSQL-backed metastore; kills at each named fault point are in
test_crash_recovery.py.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from datetime import datetime
from functools import partial
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import Backend
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.io.fs import FileSystem
from tests.support.crash_jobs import REPO, ROWS_PER_HOUR, assert_table_holds_input_exactly_once, job, run_job
from tests.support.services import BackendMetastore
from tests.support.streams import write_hourly_events
from tests.support.tables import create_in_hms, events_table
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

RANDOM_DB = "random_kill_db"
#: The commit path's filesystem per backend (``SQLEXT_FS``), the other way round from the fault-point test.
RANDOM_KILL_FS = {Backend.DERBY: "pyarrow", Backend.POSTGRES: "hadoop"}


def _reached(log: CommitLog, batches: int, process: subprocess.Popen[bytes]) -> bool:
    return len(list(log.entries())) >= batches or process.poll() is not None


def test_killed_at_random_moments_then_finished_gives_every_row_exactly_once(
    backend_metastore: BackendMetastore, backend_hms: MetastoreClient, tmp_path: Path
) -> None:
    hms, metastore = backend_hms, backend_metastore.settings
    hours = 10
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours, ROWS_PER_HOUR)
    options = {"sink.parallelism": "2"}
    create_in_hms(hms, events_table(RANDOM_DB, "events", tmp_path / "table", **options))
    log = CommitLog(FileSystem((tmp_path / "table").as_uri()), (tmp_path / "table").as_uri())
    chance = random.Random(20261122)  # fixed seed: the same kill moments on every run
    filesystem = RANDOM_KILL_FS[backend_metastore.backend]
    command, env = job(metastore, tmp_path, options, None, RANDOM_DB, filesystem)
    for run in range(3):
        # Kill once the log has seen a random number of new batches (a batch enters it once planned), a random
        # fraction of a second later: somewhere inside its moves or partition commit, or the next batch's write.
        target = len(list(log.entries())) + chance.randint(1, 2)
        process = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(partial(_reached, log, target, process), 240, what=f"run {run} to reach batch {target}")
            time.sleep(chance.uniform(0.0, 1.5))  # the random moment itself, not synchronisation
            assert process.poll() is None, f"run {run} finished before it could be killed"
            process.send_signal(signal.SIGKILL)
        finally:
            process.wait(timeout=60)
    finished = run_job(metastore, tmp_path, options, None, RANDOM_DB, filesystem)
    assert finished.returncode == 0, finished.stderr[-3000:]

    assert_table_holds_input_exactly_once(hms, tmp_path / "table", hours, RANDOM_DB, tmp_path / "checkpoint")
