"""A csv file larger than the JVM's heap reads into a partitioned table in bounded memory: ``sqlext run`` with
``spark.driver.memory=512m`` (a process of its own, so the heap is really that) inserts a ~300 MB csv file, every
row once (count and sum of ids read back from the table's files, every partition in the metastore), and no
process of the run grew past a bound that holding the file would break."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
ROWS = 300_000
PAD = "x" * 1000
#: Peak resident size allowed to any process of the run. The heap is capped at 512 MB by the conf (the
#: whole-file read ran out of it), so this bounds what is outside it: the JVM's direct buffers (up to the heap's
#: size again), metaspace and code, and the Python workers (a batch of lines each).
RSS_BOUND = 2 << 30


def _write_csv(path: Path, rows: int) -> int:
    """``rows`` lines ``id,pad,part`` (and, at the end, records with quoted line breaks); the byte size."""
    with path.open("wb") as out:
        for start in range(0, rows, 100_000):
            ids = pa.array(np.arange(start, min(rows, start + 100_000), dtype=np.int64))
            text = ids.cast(pa.string())
            parts = pc.cast(pc.bit_wise_and(ids, 3), pa.string())
            pads = pa.array(np.full(len(ids), PAD))
            lines = pc.binary_join_element_wise(text, pads, parts, ",")
            out.write(("\n".join(lines.to_pylist()) + "\n").encode())
        for extra in range(rows, rows + 3):  # quoted line breaks, read by the record-joining path
            out.write(f'{extra},"two\nlines, {extra}",{extra & 3}\n'.encode())
    return path.stat().st_size


def test_a_csv_file_larger_than_the_heap_is_inserted_every_row_once(
    metastore, hms: MetastoreClient, tmp_path: Path
) -> None:
    source, table = tmp_path / "in", tmp_path / "t"
    source.mkdir()
    size = _write_csv(source / "big.csv", ROWS)
    assert size > 250 << 20
    job = tmp_path / "job.sql"
    job.write_text(
        f"""CREATE DATABASE IF NOT EXISTS bigcsv;
        CREATE TABLE bigcsv.src (id BIGINT, pad STRING, part INT)
            WITH ('connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'csv');
        CREATE TABLE bigcsv.t (id BIGINT, pad STRING, part INT) PARTITIONED BY (part)
            WITH ('connector' = 'filesystem', 'path' = '{table.as_uri()}', 'format' = 'parquet',
                  'sink.partition-commit.policy.kind' = 'metastore,success-file');
        SET 'execution.runtime-mode' = 'batch';
        INSERT INTO bigcsv.t SELECT id, pad, part FROM bigcsv.src;
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "sqlext.cli", "run", str(job), "--metastore-uri", metastore.uri]
    command += ["--conf", "spark.driver.memory=512m"]

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr[-4000:]
    ids = ds.dataset(table, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table(["id", "pad"])
    total = ROWS + 3
    assert ids.num_rows == total
    assert pc.sum(ids.column("id")).as_py() == total * (total - 1) // 2
    assert pc.count_distinct(ids.column("id")).as_py() == total
    assert pc.count(pc.filter(ids.column("pad"), pc.equal(ids.column("pad"), PAD))).as_py() == ROWS
    assert sorted(hms.get_partition_names("bigcsv", "t")) == [f"part={p}" for p in range(4)]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10
    assert peak < RSS_BOUND, f"a process of the run peaked at {peak >> 20} MB"
