"""Runs of tests/support/sink_job.py, a streaming insert on its own driver, for the crash tests: each run
is killed (at a fault point or at a random moment) and restarted, then the table is checked row by row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit.partition_commit import trigger_state_uri
from sqlext.connectors.filesystem.commit.trigger import TriggerState
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.io.fs import FileSystem
from tests.support.sink_job import QUERY_NAME
from tests.support.tables import assert_partitions_committed

REPO = Path(__file__).resolve().parents[2]
ROWS_PER_HOUR = 40


def job(
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


def run_job(
    metastore: MetastoreSettings,
    tmp_path: Path,
    options: dict[str, str],
    fault: str | None,
    database: str = "crash_db",
    filesystem: str = "auto",
) -> subprocess.CompletedProcess[str]:
    """One run of the job to its end (or its fault point), its output captured."""
    command, env = job(metastore, tmp_path, options, fault, database, filesystem)
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


def assert_table_holds_input_exactly_once(
    hms: MetastoreClient, table_dir: Path, hours: int, database: str = "crash_db", checkpoint: Path | None = None
) -> None:
    """Every input id once in the table's files, each hour committed in the HMS with true statistics, nothing
    staged or hidden left behind; with ``checkpoint``, every batch of the commit log completed and taken in by
    the saved trigger state, which holds nothing pending."""
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
    if checkpoint is not None:
        states = CommitLog(FileSystem(table_dir.as_uri()), table_dir.as_uri()).states(QUERY_NAME)
        assert set(states.values()) == {State.COMPLETED}, f"batches left unfinished: {states}"
        state_uri = trigger_state_uri(checkpoint.as_uri())
        state = TriggerState.from_json(FileSystem(state_uri).read_json(state_uri))
        assert state.pending == {} and state.last_batch == max(states), "the trigger state missed a batch"
