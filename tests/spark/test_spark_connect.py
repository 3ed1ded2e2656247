"""``sqlext.register(spark)`` on a Spark Connect session outside SDP: a Spark Connect server (pyspark's own
``SparkConnectServer``, run by spark-submit) and a separate client process that registers the data source
twice and streams into a sqlext table through it. The client is told only the server's address: the metastore
comes from the server's ``spark.sqlext.metastore.uris``, read through the Connect session. Partitions land in the
HMS with ``_SUCCESS``, statistics and exact rows."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.runtime import process
from sqlext.runtime.paths import packaged_conf_dir, pyspark_jars_dir
from tests.support.services import spark_own_sql
from tests.support.streams import write_hourly_events
from tests.support.tables import assert_partitions_committed, create_in_hms, events_table
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]
pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark's 'connect' extra")

REPO = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@pytest.fixture
def connect_url(metastore: MetastoreSettings, tmp_path: Path) -> Iterator[str]:
    """A Spark Connect server with Hive support on the session's metastore, on a free port."""
    spark_home = pyspark_jars_dir().parent
    port = free_port()
    log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
    conf = {
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": metastore.uri,
        "spark.sqlext.metastore.uris": metastore.uri,
        "spark.pyspark.python": sys.executable,
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={log4j}",
    }
    flags = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
    command = [str(spark_home / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS]
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    log = tmp_path / "connect-server.log"
    pid = process.spawn([*command, *flags, "spark-internal"], log, tmp_path, env)
    try:
        wait_for(
            lambda: process.port_open("127.0.0.1", port) or not process.alive(pid),
            180,
            what="the Spark Connect server to listen",
        )
        assert process.alive(pid), f"the Spark Connect server died on start:\n{process.log_tail(log)}"
        yield f"sc://127.0.0.1:{port}"
    finally:
        process.stop_group(pid)


def test_register_twice_on_a_spark_connect_session_then_stream_through_format_sqlext(
    connect_url: str, spark, hms: MetastoreClient, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=3, rows_per_hour=20)
    create_in_hms(hms, events_table("connect_db", "events", tmp_path / "table"))  # process-time, delay 0
    directories = [str(tmp_path / "input"), str(tmp_path / "checkpoint")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    done = subprocess.run(
        [sys.executable, "-m", "tests.support.connect_job", connect_url, "connect_db.events", *directories],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote through format('sqlext')" in done.stdout
    names = [f"dt=2026-11-22/hr={h:02d}" for h in range(3)]
    assert_partitions_committed(hms, "connect_db", "events", tmp_path / "table", names, 20)
    spark.catalog.refreshTable("connect_db.events")
    ids = spark_own_sql(spark)("SELECT id FROM connect_db.events ORDER BY id").collect()
    assert [row.id for row in ids] == list(range(60)), "a row was lost or written twice"
