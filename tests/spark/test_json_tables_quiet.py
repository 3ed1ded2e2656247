"""A json table through ``sqlext run``: its insert and Spark's reads of it log no ``JsonSerDe not found`` ERROR
(Spark's Hive client takes the table's columns from the metastore instead of loading the SerDe class, which
pyspark's Hive 2.3 jars lack)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_a_json_tables_insert_and_query_log_no_missing_serde_error(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    job = tmp_path / "json.sql"
    job.write_text(
        f"""CREATE DATABASE IF NOT EXISTS quiet_db;
CREATE TABLE quiet_db.j (a INT, dt STRING) PARTITIONED BY (dt) WITH (
  'connector' = 'filesystem', 'path' = '{(tmp_path / "j").as_uri()}', 'format' = 'json',
  'sink.partition-commit.policy.kind' = 'metastore,success-file');
CREATE TABLE quiet_db.g (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '5');
SET execution.runtime-mode=batch;
INSERT INTO quiet_db.j SELECT a, 'x' FROM quiet_db.g;
SELECT count(*) AS n FROM quiet_db.j WHERE dt = 'x';
"""
    )
    done = subprocess.run(
        [sys.executable, "-m", "sqlext.cli", "run", str(job), "--conf", f"spark.sqlext.metastore.uris={metastore.uri}"],
        env={**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-2:] == ["n", "5"]
    assert hms.get_partition_names("quiet_db", "j") == ["dt=x"]
    assert "JsonSerDe" not in done.stderr, done.stderr[:3000]
    assert " ERROR " not in done.stderr, done.stderr[:3000]
