"""State that survives upgrades: a streaming insert stopped mid-stream by an earlier release, resumed by this
one to the same rows exactly once; state of a newer release refused with nothing written; and every file a
streaming and a batch insert write beside Spark's own carries its format version (docs/resuming.md).

The fixtures are under ``tests/fixtures/state/<release>/`` (see :mod:`tests.support.state_fixture`). A release
that changes a format writes its own beside the earlier ones:
``SQLEXT_WRITE_STATE_FIXTURES=1 pytest tests/jobs/test_resume_fixtures.py -k write_this``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sqlext
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit.partition_commit import trigger_state_uri
from sqlext.connectors.filesystem.commit.trigger import TriggerState
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.errors import StateVersionError
from sqlext.faults import EXIT_CODE
from sqlext.io.fs import FileSystem
from sqlext.jobs.checkpoint import normalize_metastore
from sqlext.table import TableIdentifier
from tests.support import state_fixture as sf
from tests.support.extension import extended_session
from tests.support.read_job import committed_ids, start_insert
from tests.support.services import spark_own_sql
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "state"
RELEASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []
#: Spark's own files in a checkpoint: Spark's format, not sqlext's.
SPARK_FILES = ("offsets", "commits", "metadata", "sources", "state")


def _values(spark: Any, root: Path, metastore: MetastoreSettings, database: str = sf.DATABASE) -> dict[str, str]:
    catalog = spark._sqlext_session.catalog
    return {
        sf.ROOT: str(root),
        sf.METASTORE: normalize_metastore(metastore.uri),
        sf.SOURCE_ID: catalog.table_id(TableIdentifier(database, "src")),
        sf.SINK_ID: catalog.table_id(TableIdentifier(database, "dst")),
    }


def _checkpoint(root: Path) -> Path:
    return root / "checkpoints" / sf.PIPELINE


def _log_states(root: Path) -> dict[int, State]:
    table = (root / "table").as_uri()
    return CommitLog(FileSystem(table), table).states(sf.PIPELINE)


def _trigger_state(root: Path) -> TriggerState:
    uri = trigger_state_uri(_checkpoint(root).as_uri())
    return TriggerState.from_json(FileSystem(uri).read_json(uri), uri)


def _relocated(spark: Any, root: Path, metastore: MetastoreSettings, release: str) -> None:
    for statement in sf.ddl(root):
        spark.sql(statement)
    sf.relocate(FIXTURES / release, root, _values(spark, root, metastore))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(os.environ.get("SQLEXT_WRITE_STATE_FIXTURES") != "1", reason="writes this release's fixture")
def test_write_this_releases_fixture(spark: Any, metastore: MetastoreSettings, tmp_path: Path) -> None:
    target = FIXTURES / sqlext.__version__
    assert not target.exists(), f"{target} exists: a release's fixture is written once"
    with extended_session(spark, tmp_path):
        for statement in sf.ddl(tmp_path):
            spark.sql(statement)
        sf.add_source_hour(spark_own_sql(spark), tmp_path, 0)
        values = _values(spark, tmp_path, metastore)
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_FAULT": "mid-move@1"}
    command = [sys.executable, "-m", "tests.support.state_fixture", metastore.uri, str(tmp_path)]
    killed = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert killed.returncode == EXIT_CODE, killed.stderr[-3000:]
    assert _log_states(tmp_path) == {0: State.COMPLETED, 1: State.INFLIGHT}
    assert sorted(_trigger_state(tmp_path).pending) == [sf.hour_name(0)]
    sf.capture(tmp_path, target, values)


@pytest.mark.parametrize("release", RELEASES)
def test_a_streaming_insert_stopped_mid_commit_by_a_release_resumes_exactly_once(
    spark: Any, metastore: MetastoreSettings, hms: MetastoreClient, tmp_path: Path, release: str
) -> None:
    with extended_session(spark, tmp_path):
        _relocated(spark, tmp_path, metastore, release)
        own_sql = spark_own_sql(spark)
        for hour in (0, 1):
            sf.add_source_hour(own_sql, tmp_path, hour)
        # As the release left it: batch 1 inflight, its files half moved; hour 0 pending in the trigger state.
        assert _log_states(tmp_path) == {0: State.COMPLETED, 1: State.INFLIGHT}
        assert sorted(_trigger_state(tmp_path).pending) == [sf.hour_name(0)]
        assert committed_ids(tmp_path / "table") != [*sf.hour_ids(0), *sf.hour_ids(1)]
        assert hms.get_partition_names(sf.DATABASE, "dst") == []

        spark.sql(f"SET 'pipeline.name' = '{sf.PIPELINE}'")
        spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
        running = start_insert(spark, sf.insert())
        try:
            both = [*sf.hour_ids(0), *sf.hour_ids(1)]
            wait_for(lambda: committed_ids(tmp_path / "table") == both, 180, what="the inflight batch finished")
            sf.add_source_hour(own_sql, tmp_path, 2)
            every = [*both, *sf.hour_ids(2)]
            wait_for(lambda: committed_ids(tmp_path / "table") == every, 180, what="the next hour copied")
            wait_for(
                lambda: sf.hour_name(0) in hms.get_partition_names(sf.DATABASE, "dst"),
                120,
                what="the pending hour committed",
            )
        finally:
            running.stop()
            running.wait(60)
    assert committed_ids(tmp_path / "table") == every
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if ".replaced-" in p.name], "started fresh"
    states = _log_states(tmp_path)
    assert set(states.values()) == {State.COMPLETED} and max(states) >= 2
    assert hms.get_partition_names(sf.DATABASE, "dst")[0] == sf.hour_name(0)
    [partition] = hms.get_partitions_by_names(sf.DATABASE, "dst", [sf.hour_name(0)])
    assert partition.parameters["numRows"] == str(sf.ROWS_PER_HOUR)
    assert (tmp_path / "table" / sf.hour_name(0) / "_SUCCESS").is_file()
    assert sf.hour_name(0) not in _trigger_state(tmp_path).pending


@pytest.mark.parametrize("newer", ["trigger-state.json", "commit log entry", "lease.json"])
def test_state_of_a_newer_release_is_refused_with_nothing_written(
    spark: Any, metastore: MetastoreSettings, tmp_path: Path, newer: str
) -> None:
    if newer == "commit log entry":
        record = tmp_path / "table" / "_sqlext" / "log" / sf.PIPELINE / f"{1:020d}.inflight"
    else:
        record = _checkpoint(tmp_path) / "sqlext" / newer
    with extended_session(spark, tmp_path):
        _relocated(spark, tmp_path, metastore, RELEASES[-1])
        record.write_text(json.dumps({**json.loads(record.read_text()), "version": 99}))
        before = _snapshot(tmp_path)
        spark.sql(f"SET 'pipeline.name' = '{sf.PIPELINE}'")
        with pytest.raises(StateVersionError) as refused:
            spark.sql(sf.insert())
    message = str(refused.value)
    assert message.startswith(f"{record.as_uri()}: the ")
    assert "format version 99, written by a newer sqlext; this release reads versions 1 to 1" in message
    assert "Upgrade sqlext" in message and "docs/resuming.md" in message
    assert _snapshot(tmp_path) == before


def test_every_file_a_streaming_and_a_batch_insert_write_beside_sparks_carries_its_version(
    spark: Any, tmp_path: Path
) -> None:
    """Fails when a new kind of record is written without a version: every file sqlext writes in the sink
    table's ``_sqlext/`` (staged data files aside) and in the checkpoints but Spark's own."""
    database = "state_walk_db"
    with extended_session(spark, tmp_path):
        for statement in sf.ddl(tmp_path, database):
            spark.sql(statement)
        own_sql = spark_own_sql(spark)
        sf.add_source_hour(own_sql, tmp_path, 0, database)
        spark.sql("SET 'pipeline.name' = 'state_walk'")
        spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
        running = start_insert(spark, sf.insert(database))
        try:
            wait_for(lambda: committed_ids(tmp_path / "table") == sf.hour_ids(0), 180, what="hour 0 copied")
            sf.add_source_hour(own_sql, tmp_path, 1, database)
            sf.add_source_hour(own_sql, tmp_path, 2, database)
            every = [*sf.hour_ids(0), *sf.hour_ids(1), *sf.hour_ids(2)]
            wait_for(lambda: committed_ids(tmp_path / "table") == every, 180, what="hours 1 and 2 copied")
        finally:
            running.stop()
            running.wait(60)
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        try:
            spark.sql(sf.insert(database))
        finally:
            spark.sql("RESET 'execution.runtime-mode'")
    assert committed_ids(tmp_path / "table") == sorted(every * 2)
    records = [
        *[p for p in (tmp_path / "table" / "_sqlext").rglob("*") if p.is_file() and "staging" not in p.parts],
        *[p for p in (tmp_path / "checkpoints").rglob("*") if p.is_file() and not _sparks(p, tmp_path)],
    ]
    kinds = {p.parent.name if p.parent.name != "log" else p.name for p in records}
    assert {"inserts", "sqlext"} <= kinds and any(p.name.endswith(".completed") for p in records)
    assert any(".batch" in p.parent.name for p in records), "the batch insert's log"
    unversioned = [str(p.relative_to(tmp_path)) for p in records if not _versioned(p)]
    assert unversioned == []


def _sparks(path: Path, root: Path) -> bool:
    parts = path.relative_to(root / "checkpoints").parts
    return path.name.endswith(".crc") or any(part in SPARK_FILES for part in parts[1:3])


def _versioned(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("version"), int)
