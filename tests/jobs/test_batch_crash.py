"""A batch-mode INSERT that crashes at any point of the commit path, then runs again, leaves every row exactly
once: an unfinished append is rolled back and written again, an unfinished overwrite is finished and done
again, and partitions written but not committed are committed by the rerun.

In process, on the shared Spark session: each fault point raises instead of killing the driver, so the
committer's state on disk is what a killed process leaves (the ``sqlext run`` test kills a real one)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext import faults
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.commit import committer, partition_commit
from sqlext.connectors.filesystem.commit import moves as batch_moves
from sqlext.connectors.filesystem.commit import overwrite as batch_overwrite
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.faults import COMMIT_POINTS, EXIT_CODE
from sqlext.spark.session import extend
from tests.support.streams import write_hourly_events
from tests.support.tables import assert_partitions_committed

pytestmark = [pytest.mark.spark, pytest.mark.hms]

REPO = Path(__file__).resolve().parents[2]
DAY = datetime(2026, 11, 22)
ROWS_PER_HOUR = 20
#: The points a batch insert passes (``between-policies`` needs two policies: metastore and success-file).
OVERWRITE_POINTS = ("after-plan", *faults.OVERWRITE_POINTS, "mid-move", "after-move", "after-log")


class SimulatedCrash(BaseException):
    """What a fault point raises here instead of ending the process."""


def _crash_at(point: str):
    def fault_point(name: str, batch: int | None = None) -> None:
        if name == point:
            raise SimulatedCrash(point)

    return fault_point


def _ddl(database: str, table_dir: Path, inputs: Path) -> list[str]:
    sources = [
        f"""CREATE TABLE {database}.src_{name} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3))
            WITH ('connector' = 'filesystem', 'path' = '{(inputs / name).as_uri()}', 'format' = 'parquet')"""
        for name in ("a", "b")
    ]
    sink = f"""CREATE TABLE {database}.events (id BIGINT, ts TIMESTAMP(3), dt STRING, hr STRING) PARTITIONED BY (dt, hr)
        WITH ('connector' = 'filesystem', 'path' = '{table_dir.as_uri()}', 'format' = 'parquet',
              'sink.parallelism' = '2', 'sink.partition-commit.policy.kind' = 'metastore,success-file')"""
    return [f"CREATE DATABASE IF NOT EXISTS {database}", *sources, sink]


def _insert(database: str, source: str, overwrite: bool = False) -> str:
    verb = "INSERT OVERWRITE" if overwrite else "INSERT INTO"
    return f"""{verb} {database}.events
        SELECT id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM {database}.src_{source}"""


def _ids(table_dir: Path) -> list[int]:
    dataset = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True)
    return sorted(dataset.to_table(columns=["id"]).column("id").to_pylist())


def _assert_exactly_once(hms: MetastoreClient, database: str, table_dir: Path) -> None:
    assert _ids(table_dir) == list(range(6 * ROWS_PER_HOUR)), "rows lost or duplicated"
    names = [f"dt=2026-11-22/hr={hour:02d}" for hour in range(6)]
    assert_partitions_committed(hms, database, "events", table_dir, names, ROWS_PER_HOUR)
    assert [p for p in (table_dir / "_sqlext" / "staging").rglob("*") if p.is_file()] == []
    assert list(table_dir.glob("dt=*/hr=*/.*")) == [], "hidden leftovers in a partition"
    assert list(table_dir.glob("dt=*/.*")) == [], "an old or new partition dir left beside the partitions"
    assert not (table_dir / "_sqlext" / "trash").exists(), "replaced files moved aside rather than deleted"


def _crash_then_run_again(batch_sql, monkeypatch: pytest.MonkeyPatch, point: str, statement: str) -> None:
    """Run ``statement`` crashing at the fault point ``point``, then run it again to its end."""
    with monkeypatch.context() as patched:
        for module in (committer, batch_moves, batch_overwrite, partition_commit):  # those with commit fault points
            patched.setattr(module, "fault_point", _crash_at(point))
        with pytest.raises(SimulatedCrash):
            batch_sql(statement)
    batch_sql(statement)


@pytest.fixture
def batch_sql(spark, tmp_path: Path):
    """``spark.sql`` in batch mode, with src_a (hours 0-2) and src_b (hours 3-5) as inputs."""
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    next_id = write_hourly_events(tmp_path / "in" / "a", DAY, hours=3, rows_per_hour=ROWS_PER_HOUR)
    write_hourly_events(tmp_path / "in" / "b", DAY.replace(hour=3), 3, ROWS_PER_HOUR, first_id=next_id)
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    return spark.sql


@pytest.mark.parametrize("point", COMMIT_POINTS)
def test_a_batch_insert_crashed_at_any_point_then_run_again_writes_every_row_once(
    batch_sql, hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    database, table_dir = f"bcrash_{point.replace('-', '_')}", tmp_path / "events"
    for statement in _ddl(database, table_dir, tmp_path / "in"):
        batch_sql(statement)
    batch_sql(_insert(database, "a"))

    _crash_then_run_again(batch_sql, monkeypatch, point, _insert(database, "b"))

    _assert_exactly_once(hms, database, table_dir)


@pytest.mark.parametrize("point", OVERWRITE_POINTS)
def test_an_overwrite_crashed_at_any_point_then_run_again_replaces_its_partitions_once(
    batch_sql, hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    database, table_dir = f"bover_{point.replace('-', '_')}", tmp_path / "events"
    for statement in _ddl(database, table_dir, tmp_path / "in"):
        batch_sql(statement)
    batch_sql(_insert(database, "a"))
    batch_sql(_insert(database, "b"))

    _crash_then_run_again(batch_sql, monkeypatch, point, _insert(database, "b", overwrite=True))

    _assert_exactly_once(hms, database, table_dir)


@pytest.mark.slow
def test_sqlext_run_killed_mid_move_of_a_batch_insert_then_run_again_writes_every_row_once(
    metastore, hms: MetastoreClient, tmp_path: Path
) -> None:
    database, table_dir = "bcrash_run", tmp_path / "events"
    next_id = write_hourly_events(tmp_path / "in" / "a", DAY, hours=3, rows_per_hour=ROWS_PER_HOUR)
    write_hourly_events(tmp_path / "in" / "b", DAY.replace(hour=3), 3, ROWS_PER_HOUR, first_id=next_id)
    job = tmp_path / "job.sql"
    statements = [*_ddl(database, table_dir, tmp_path / "in"), "SET 'execution.runtime-mode' = 'batch'"]
    job.write_text(";\n".join([*statements, _insert(database, "a"), _insert(database, "b")]) + ";\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "sqlext.cli", "run", str(job), "--metastore-uri", metastore.uri]

    # The first insert (batch 0) completes; the second dies after moving its first file.
    crashed = subprocess.run(command, env={**env, "SQLEXT_FAULT": "mid-move@1"}, capture_output=True, text=True)
    assert crashed.returncode == EXIT_CODE, crashed.stderr[-3000:]
    assert 0 < len(_ids(table_dir)) < 6 * ROWS_PER_HOUR

    job.write_text(f"SET 'execution.runtime-mode' = 'batch';\n{_insert(database, 'b')};\n")
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "rolled back batch 1 that a crashed run left inflight" in rerun.stderr
    _assert_exactly_once(hms, database, table_dir)


def test_a_streaming_insert_resumed_after_a_batch_insert_into_its_table_writes_every_row(
    batch_sql, hms: MetastoreClient, tmp_path: Path
) -> None:
    """Both inserts have the same default ``pipeline.name``; the batch one must not take the streaming
    one's next batch id in the sink's commit log, or the resumed stream skips that batch as committed."""
    database, table_dir, inputs = "bmixed", tmp_path / "events", tmp_path / "in"
    for statement in _ddl(database, table_dir, inputs):
        batch_sql(statement)
    next_id = write_hourly_events(inputs / "s", DAY.replace(hour=6), 2, ROWS_PER_HOUR, first_id=6 * ROWS_PER_HOUR)
    batch_sql(f"""CREATE TABLE {database}.src_s (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3))
        WITH ('connector' = 'filesystem', 'path' = '{(inputs / "s").as_uri()}', 'format' = 'parquet')""")

    def stream_once() -> None:
        batch_sql("SET 'execution.runtime-mode' = 'streaming'")
        [row] = batch_sql(_insert(database, "s")).collect()
        running = running_insert(row.job_id)
        assert running is not None and running.wait(300), "the streaming insert did not finish"

    stream_once()
    batch_sql("SET 'execution.runtime-mode' = 'batch'")
    batch_sql(_insert(database, "a"))
    write_hourly_events(inputs / "s", DAY.replace(hour=8), 1, ROWS_PER_HOUR, first_id=next_id)
    stream_once()  # resumes its checkpoint: reads only hour 8's new file

    expected = [*range(3 * ROWS_PER_HOUR), *range(6 * ROWS_PER_HOUR, 9 * ROWS_PER_HOUR)]
    assert _ids(table_dir) == expected, "rows lost or duplicated"
    names = [f"dt=2026-11-22/hr={hour:02d}" for hour in (0, 1, 2, 6, 7, 8)]
    assert_partitions_committed(hms, database, "events", table_dir, names, ROWS_PER_HOUR)
