"""Spark's Thrift server on sqlext's metastore, queried with PyHive as a user would: committed
partitions are visible with their rows, written-but-uncommitted ones are not."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyhive import hive
from thrift.transport.TTransport import TTransportException

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.connectors.filesystem.sink import FileSystemSink
from sqlext.io.fs import FileSystem
from sqlext.sink import InsertPlan
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]


def _sqlext(*args: str, env_home: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "SQLEXT_HOME": str(env_home)}
    return subprocess.run(
        [sys.executable, "-m", "sqlext.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_thrift_server_queries_see_committed_partitions_only(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    write_hourly_events(input_dir, datetime(2026, 11, 22), hours=3, rows_per_hour=50)
    table = events_table(
        "ts_db",
        "events",
        tmp_path / "table",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        },
    )
    create_in_hms(hms, table)
    rows = hourly_event_stream(spark, input_dir, "0 seconds")
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None
    )
    query = FileSystemSink(context).start_stream(rows, InsertPlan("ts_insert", (tmp_path / "cp").as_uri()))
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    port = free_port()
    try:
        wait_for(lambda: len(list(log.entries("ts_insert"))) == 3, 120, what="three batches committed")
        # delay 1 h: the watermark after hour 02's rows has passed hour 01's end + 1 h, not hour 02's
        committed = ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
        wait_for(lambda: hms.get_partition_names("ts_db", "events") == committed, 60, what="hours 00 and 01 committed")
        assert (tmp_path / "table" / "dt=2026-11-22" / "hr=02").is_dir(), "hour 02 is written, not committed"

        started = _sqlext(
            "thriftserver",
            "start",
            "--port",
            str(port),
            "--conf",
            f"spark.sqlext.metastore.uris={metastore.uri}",
            env_home=tmp_path / "home",
        )
        assert started.returncode == 0, started.stderr[-2000:]
        assert started.stdout.strip() == f"jdbc:hive2://127.0.0.1:{port}/default"

        cursor = hive.connect(host="127.0.0.1", port=port, username="tester").cursor()
        cursor.execute("SELECT hr, count(*), count(DISTINCT id) FROM ts_db.events GROUP BY hr ORDER BY hr")
        assert cursor.fetchall() == [("00", 50, 50), ("01", 50, 50)]
        cursor.execute("SHOW PARTITIONS ts_db.events")
        assert cursor.fetchall() == [(name,) for name in committed]
    finally:
        query.stop()
        stopped = _sqlext(
            "thriftserver",
            "stop",
            "--port",
            str(port),
            "--conf",
            f"spark.sqlext.metastore.uris={metastore.uri}",
            env_home=tmp_path / "home",
        )
    assert stopped.stdout.strip() == "stopped"


JAVA_AUTHENTICATOR = """
package sqlexttest;

import javax.security.sasl.AuthenticationException;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

public class OnePassword implements PasswdAuthenticationProvider {
    @Override
    public void Authenticate(String user, String password) throws AuthenticationException {
        if (!"alice".equals(user) || !"open-sesame".equals(password)) {
            throw new AuthenticationException("wrong user or password");
        }
    }
}
"""


def _authenticator_jar(directory: Path) -> Path:
    """HiveServer2's CUSTOM authentication class (alice / open-sesame), compiled against pyspark's jars."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    source = directory / "sqlexttest" / "OnePassword.java"
    source.parent.mkdir(parents=True)
    source.write_text(JAVA_AUTHENTICATOR)
    subprocess.run(["javac", "-cp", f"{jars}/*", "-d", str(directory / "classes"), str(source)], check=True)
    jar = directory / "one-password.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(directory / "classes"), "."], check=True)
    return jar


def test_hiveserver2_custom_authentication_passes_through_hiveconf(
    metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """--hiveconf reaches Spark's HiveThriftServer2: its CUSTOM mode checks passwords with our class."""
    jar = _authenticator_jar(tmp_path / "auth")
    port = free_port()
    flags = ["--port", str(port), "--conf", f"spark.sqlext.metastore.uris={metastore.uri}"]
    started = _sqlext(
        "thriftserver",
        "start",
        *flags,
        "--conf",
        f"spark.driver.extraClassPath={jar}",
        "--hiveconf",
        "hive.server2.authentication=CUSTOM",
        "--hiveconf",
        "hive.server2.custom.authentication.class=sqlexttest.OnePassword",
        env_home=tmp_path / "home",
    )
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        connection = hive.connect(host="127.0.0.1", port=port, username="alice", auth="CUSTOM", password="open-sesame")
        cursor = connection.cursor()
        cursor.execute("SELECT 'checked'")
        assert cursor.fetchall() == [("checked",)]
        connection.close()
        with pytest.raises(TTransportException, match="Error validating the login"):
            hive.connect(host="127.0.0.1", port=port, username="alice", auth="CUSTOM", password="guess")
    finally:
        stopped = _sqlext("thriftserver", "stop", *flags, env_home=tmp_path / "home")
    assert stopped.stdout.strip() == "stopped"
