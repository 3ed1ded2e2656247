"""A run whose JVM runs out of memory says so and what to set, keeps what it committed, and a rerun with more
memory resumes: ``sqlext run`` of a streaming insert from a csv directory commits a first file; a second file
holds one record of 60 MB, which a 512 MB heap cannot take through; the rerun with 6 GB reads only that file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
#: One record of this size: more than 512 MB of heap holds (a record costs many times its size on its way
#: through the text reader, Arrow, the parse and the parquet writer: 150 MB failed with 3 GB).
BIG = 60 << 20


def _rows(table: Path) -> list[tuple[int, int]]:
    """(id, length of pad) of every row of the table's files."""
    rows = ds.dataset(table, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    return sorted(zip(rows.column("id").to_pylist(), [len(p) for p in rows.column("pad").to_pylist()], strict=True))


def test_a_run_out_of_memory_says_what_to_set_and_a_rerun_with_more_resumes(
    metastore, hms: MetastoreClient, tmp_path: Path
) -> None:
    source, table = tmp_path / "in", tmp_path / "t"
    source.mkdir()
    (source / "a.csv").write_text("".join(f"{i},pad-{i},{i % 2}\n" for i in range(10)))
    job = tmp_path / "job.sql"
    job.write_text(
        f"""CREATE DATABASE IF NOT EXISTS oom;
        CREATE TABLE IF NOT EXISTS oom.src (id BIGINT, pad STRING, part INT)
            WITH ('connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'csv');
        CREATE TABLE IF NOT EXISTS oom.t (id BIGINT, pad STRING, part INT) PARTITIONED BY (part)
            WITH ('connector' = 'filesystem', 'path' = '{table.as_uri()}', 'format' = 'parquet',
                  'sink.partition-commit.policy.kind' = 'metastore,success-file');
        INSERT INTO oom.t SELECT id, pad, part FROM oom.src;
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "sqlext.cli", "run", str(job), "--metastore-uri", metastore.uri]

    def run(memory: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--conf", f"spark.driver.memory={memory}"], env=env, capture_output=True, text=True, timeout=900
        )

    first = run("1g")
    assert first.returncode == 0, first.stderr[-3000:]
    assert _rows(table) == [(i, len(f"pad-{i}")) for i in range(10)]
    with (source / "b.csv").open("wb") as out:
        out.write(b"10,")
        out.write(b"x" * BIG)
        out.write(b",0\n")

    starved = run("512m")

    assert starved.returncode == 1
    last = starved.stderr.strip().splitlines()[-1]
    assert "ran out of memory" in last and "spark.driver.memory" in last and "spark.executor.memory" in last, (
        starved.stderr[-4000:]
    )
    assert _rows(table) == [(i, len(f"pad-{i}")) for i in range(10)], "committed rows lost"
    assert sorted(hms.get_partition_names("oom", "t")) == ["part=0", "part=1"]

    rerun = run("6g")

    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert _rows(table) == [*((i, len(f"pad-{i}")) for i in range(10)), (10, BIG)]
