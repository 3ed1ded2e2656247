"""Streaming reads of committed partitions (``streaming-source.*``): options, the offset logic, and the
whole path on a real metastore and real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.connectors.filesystem.sink import running_insert
from sqlext.metastore.client import MetastoreClient
from sqlext.session import extend
from tests.support.services import spark_own_sql
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]


def _write_partition(root: Path, dt: str, hr: str, ids: range, name: str = "part-0.parquet") -> None:
    directory = root / f"dt={dt}" / f"hr={hr}"
    directory.mkdir(parents=True, exist_ok=True)
    rows = pa.table({"id": list(ids), "note": [f"n{i}" for i in ids]})
    pq.write_table(rows, directory / name)


def _sink_ids(spark: Any, path: Path) -> list[int]:
    files = [p for p in path.rglob("*.parquet") if not any(part.startswith(("_", ".")) for part in p.parts[-3:])]
    if not files:
        return []
    return sorted(i for f in files for i in pq.read_table(f).column("id").to_pylist())


def test_a_plain_table_fed_by_alter_table_add_partition_streams_each_partition_once(
    spark: Any, hms: MetastoreClient, tmp_path: Path
) -> None:
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS sread")
    source, sink = tmp_path / "plain", tmp_path / "copy"
    spark.sql(f"""
        CREATE TABLE sread.plain (id BIGINT, note STRING, dt STRING, `hr` STRING) PARTITIONED BY (dt, `hr`) WITH (
          'connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'parquet',
          'streaming-source.enable' = 'true', 'streaming-source.monitor-interval' = '1 s'
        )""")
    spark.sql(f"""
        CREATE TABLE sread.plain_copy (id BIGINT, note STRING, dt STRING, `hr` STRING) WITH (
          'connector' = 'filesystem', 'path' = '{sink.as_uri()}', 'format' = 'parquet'
        )""")
    _write_partition(source, "2026-11-22", "00", range(0, 10))
    spark_own_sql(spark)("ALTER TABLE sread.plain ADD PARTITION (dt = '2026-11-22', hr = '00')")
    _write_partition(source, "2026-11-22", "01", range(10, 20))  # on disk, not in the metastore: not read

    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    [job] = spark.sql("INSERT INTO sread.plain_copy SELECT id, note, dt, hr FROM sread.plain").collect()
    running = running_insert(job.job_id)
    assert running is not None
    try:
        wait_for(lambda: _sink_ids(spark, sink) == list(range(10)), 120, what="the first partition copied")
        spark_own_sql(spark)("ALTER TABLE sread.plain ADD PARTITION (dt = '2026-11-22', hr = '01')")
        wait_for(lambda: _sink_ids(spark, sink) == list(range(20)), 120, what="the second partition copied")
    finally:
        running.stop()
        running.wait(60)
