"""State written by a release, kept under ``tests/fixtures/state/<release>/`` and resumed by later ones
(tests/jobs/test_resume_fixtures.py).

The state is a streaming insert's, stopped mid-stream: a committed-partitions source ``resume_db.src`` (one
partition an hour) read by ``INSERT INTO resume_db.dst`` (partition-time commit, delay 1 h), whose process was
killed at ``mid-move@1``: batch 0 completed with its partition pending in the trigger state, batch 1 inflight
with its files half moved. A fixture holds the insert's checkpoint (``checkpoints/``: Spark's offsets, commits and
metadata, sqlext's lease, identity and trigger state) and the sink table's files (``table/``: data files, staged
files, commit log, insert record); paths, the metastore and the tables' ids are written as placeholders
(:data:`PLACEHOLDERS`), which :func:`relocate` fills in for the test's own. The source's files are not kept:
:func:`add_source_hour` writes them again, the same to the byte.

Usage (the job the fixture's writer kills): python -m tests.support.state_fixture METASTORE_URI ROOT
"""

from __future__ import annotations

import shutil
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.support.read_job import committed_ids, start_insert

DATABASE = "resume_db"
PIPELINE = "resumed_insert"
ROWS_PER_HOUR = 4
DAY = datetime(2026, 11, 22)
#: Placeholders in a fixture's text files: the root of its dirs, the metastore's URIs (as an identity
#: normalises them) and the ids of the tables.
ROOT, METASTORE, SOURCE_ID, SINK_ID = "@ROOT@", "@METASTORE@", "@SOURCE_ID@", "@SINK_ID@"
PLACEHOLDERS = (ROOT, METASTORE, SOURCE_ID, SINK_ID)
#: What a fixture holds, under its dir (relative to the test's root).
KEPT = ("checkpoints", "table")


def insert(database: str = DATABASE) -> str:
    return f"INSERT INTO {database}.dst SELECT id, ts, dt, hr FROM {database}.src"


def ddl(root: Path, database: str = DATABASE) -> list[str]:
    """The source and sink tables of the fixture's insert, with their files under ``root`` (tables of that
    name dropped first)."""
    return [
        f"CREATE DATABASE IF NOT EXISTS {database}",
        f"DROP TABLE IF EXISTS {database}.src",
        f"DROP TABLE IF EXISTS {database}.dst",
        f"""CREATE TABLE {database}.src (id BIGINT, ts TIMESTAMP(3), dt STRING, `hr` STRING,
              WATERMARK FOR ts AS ts - INTERVAL '0' SECOND) PARTITIONED BY (dt, `hr`)
            WITH ('connector' = 'filesystem', 'path' = '{(root / "src").as_uri()}', 'format' = 'parquet',
                  'streaming-source.enable' = 'true', 'streaming-source.monitor-interval' = '1 s')""",
        f"""CREATE TABLE {database}.dst (id BIGINT, ts TIMESTAMP(3), dt STRING, `hr` STRING)
            PARTITIONED BY (dt, `hr`)
            WITH ('connector' = 'filesystem', 'path' = '{(root / "table").as_uri()}', 'format' = 'parquet',
                  'sink.parallelism' = '2',
                  'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h',
                  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
                  'sink.partition-commit.policy.kind' = 'metastore,success-file')""",
    ]


def hour_name(hour: int) -> str:
    return f"dt={DAY:%Y-%m-%d}/hr={hour:02d}"


def hour_ids(hour: int) -> list[int]:
    return list(range(hour * ROWS_PER_HOUR, (hour + 1) * ROWS_PER_HOUR))


def add_source_hour(spark_sql: Any, root: Path, hour: int, database: str = DATABASE) -> None:
    """Write the source's partition of ``hour`` (the same bytes every time) and add it to the metastore."""
    directory = root / "src" / hour_name(hour)
    directory.mkdir(parents=True, exist_ok=True)
    start = DAY + timedelta(hours=hour)
    ids = hour_ids(hour)
    rows = pa.table(
        {"id": ids, "ts": [start + timedelta(minutes=15 * n) for n in range(len(ids))]},
        schema=pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))]),
    )
    pq.write_table(rows, directory / "part-0.parquet")
    spark_sql(f"ALTER TABLE {database}.src ADD IF NOT EXISTS PARTITION (dt = '{DAY:%Y-%m-%d}', hr = '{hour:02d}')")


def _text_files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(".parquet")]


def capture(root: Path, fixture: Path, values: dict[str, str]) -> None:
    """Keep the state under ``root`` in ``fixture``: Spark's checksum files left out, ``values`` (a
    placeholder's value) written as their placeholders."""
    for name in KEPT:
        shutil.copytree(root / name, fixture / name, ignore=shutil.ignore_patterns("*.crc"))
    for path in _text_files(fixture):
        text = path.read_text()
        for placeholder, value in sorted(values.items(), key=lambda item: -len(item[1])):
            text = text.replace(value, placeholder)
        path.write_text(text)


def relocate(fixture: Path, root: Path, values: dict[str, str]) -> None:
    """Copy a fixture's state under ``root``, its placeholders filled in with ``values``."""
    for name in KEPT:
        shutil.copytree(fixture / name, root / name, dirs_exist_ok=True)  # CREATE TABLE made the table dir
    for path in _text_files(root / KEPT[0]) + _text_files(root / KEPT[1]):
        text = path.read_text()
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        assert not any(p in text for p in PLACEHOLDERS), f"{path}: a placeholder left"
        path.write_text(text)


def main(argv: list[str]) -> int:
    """Run the fixture's insert until the fault point set in ``SQLEXT_FAULT`` kills it: hour 0 is read in
    batch 0; once its rows are in the sink, hour 1 is added (batch 1)."""
    from sqlext.spark.session import extend
    from tests.support.local_spark import local_session

    metastore_uri, root = argv[0], Path(argv[1])
    spark = local_session(
        {"spark.hadoop.hive.metastore.uris": metastore_uri, "spark.sqlext.metastore.uris": metastore_uri}
    )
    own_sql = spark.sql
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (root / "checkpoints").as_uri())
    spark.sql(f"SET 'pipeline.name' = '{PIPELINE}'")
    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    running = start_insert(spark, insert())
    deadline = time.monotonic() + 300
    while committed_ids(root / "table") != hour_ids(0) and time.monotonic() < deadline:
        time.sleep(0.2)
    add_source_hour(own_sql, root, 1)
    running.wait(300)  # the fault point ends the process before
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
