"""A kerberized HDFS (the mini cluster with Kerberos, block tokens and SASL data transfer, a real MIT KDC on
loopback): a streaming insert logged in with ``spark.kerberos.principal``/``spark.kerberos.keytab`` writes its
table and checkpoint there and commits partitions to a kerberized metastore; a job without a ticket, or without
Kerberos, is told what to set."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore import kerberos
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.kerberos import MetastoreAuth
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.kdc import Kdc
from tests.support.kerberized_hdfs import METASTORE_PRINCIPAL, WAREHOUSE, KerberizedHdfs
from tests.support.streams import write_hourly_events

pytestmark = [pytest.mark.hdfs, pytest.mark.kerberos, pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HOURS = 3
ROWS_PER_HOUR = 10


def _sql(database: str, input_dir: Path, table_uri: str) -> str:
    return f"""
CREATE DATABASE IF NOT EXISTS {database};
CREATE TABLE IF NOT EXISTS {database}.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', 'format' = 'parquet');
CREATE TABLE IF NOT EXISTS {database}.events (id BIGINT, ts TIMESTAMP(3), dt STRING, hr STRING)
PARTITIONED BY (dt, hr)
WITH ('connector' = 'filesystem', 'path' = '{table_uri}', 'format' = 'parquet',
      'sink.partition-commit.policy.kind' = 'metastore,success-file');
INSERT INTO {database}.events SELECT id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM {database}.src;
"""


def _run(tmp_path: Path, database: str, table_uri: str, conf: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``sqlext run`` of the hourly job, with no ticket cache: the conf's keytab is the only login."""
    if not (tmp_path / "input").is_dir():
        write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=HOURS, rows_per_hour=ROWS_PER_HOUR)
    job = tmp_path / "job.sql"
    job.write_text(_sql(database, tmp_path / "input", table_uri))
    conf = {"spark.master": "local[2]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", **conf}
    flags = [flag for key, value in conf.items() for flag in ("--conf", f"{key}={value}")]
    env = {
        **os.environ,
        "SQLEXT_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(REPO),
        "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}",
    }
    command = [sys.executable, "-m", "sqlext.cli", "run", str(job), *flags]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)


def _metastore_conf(metastore: MetastoreSettings) -> dict[str, str]:
    return {
        "spark.sqlext.metastore.uris": metastore.uri,
        kerberos.SASL_ENABLED: "true",
        kerberos.SERVER_PRINCIPAL: METASTORE_PRINCIPAL,
    }


def test_a_streaming_insert_with_a_keytab_commits_partitions_on_a_kerberized_hdfs(
    kerberized_hdfs: KerberizedHdfs, kerberized_hdfs_metastore: MetastoreSettings, kdc: Kdc, tmp_path: Path
) -> None:
    principal, keytab = kdc.principal("etl")
    table = f"{kerberized_hdfs.uri}{WAREHOUSE}/kdb/events"
    conf = {
        **_metastore_conf(kerberized_hdfs_metastore),
        **kerberized_hdfs.client_conf(),
        kerberos.CLIENT_PRINCIPAL: principal,
        kerberos.CLIENT_KEYTAB: str(keytab),
        "spark.sqlext.checkpoint.root": f"{kerberized_hdfs.uri}{WAREHOUSE}/checkpoints",
    }

    done = _run(tmp_path, "kdb", table, conf)

    assert done.returncode == 0, done.stderr[-4000:]
    expected = [f"dt=2026-11-22/hr={hour:02d}" for hour in range(HOURS)]
    with MetastoreClient(
        kerberized_hdfs_metastore.uri, auth=MetastoreAuth(True, METASTORE_PRINCIPAL, principal, str(keytab))
    ) as hms:
        assert sorted(hms.get_partition_names("kdb", "events")) == expected
        locations = [p.sd.location for p in hms.get_partitions_by_names("kdb", "events", expected)]
    assert locations == [f"{table}/{partition}" for partition in expected]
    # On HDFS, as HDFS itself lists them: data files and a _SUCCESS per partition, all owned by the job's user.
    owners = kerberized_hdfs.owners(principal, keytab, f"{WAREHOUSE}/kdb/events")
    for partition in expected:
        names = {path.rsplit("/", 1)[1] for path in owners if f"/{partition}/" in path}
        assert "_SUCCESS" in names and any(name.startswith("part-") for name in names), partition
    assert set(owners.values()) == {"etl"}
    checkpoint = kerberized_hdfs.owners(principal, keytab, f"{WAREHOUSE}/checkpoints")
    assert any("/offsets/" in path for path in checkpoint) and set(checkpoint.values()) == {"etl"}
    # The rows read back: the table's files fetched from HDFS, read as the table's partitions.
    local = tmp_path / "events"
    kerberized_hdfs.shell(principal, keytab, "-copyToLocal", f"{WAREHOUSE}/kdb/events", str(local))
    rows = ds.dataset(local, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    assert rows.num_rows == HOURS * ROWS_PER_HOUR
    assert sorted(rows.column("id").to_pylist()) == list(range(HOURS * ROWS_PER_HOUR))


def test_a_job_without_a_ticket_for_a_kerberized_hdfs_is_told_to_kinit_or_set_a_keytab(
    kerberized_hdfs: KerberizedHdfs, tmp_path: Path
) -> None:
    conf = {**kerberized_hdfs.client_conf(), "spark.sqlext.checkpoint.root": f"{kerberized_hdfs.uri}/checkpoints"}

    done = _run(tmp_path, "nticket", f"{kerberized_hdfs.uri}{WAREHOUSE}/nticket/events", conf)

    assert done.returncode != 0
    # Said before the SparkContext exists (sqlext's login), not by the first HDFS call.
    assert "there is no Kerberos ticket for Hadoop's login" in done.stderr
    assert "kinit" in done.stderr and "spark.kerberos.keytab" in done.stderr
    assert "Traceback" not in done.stderr
