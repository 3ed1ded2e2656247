"""``sqlext thriftserver``: Spark's own Thrift JDBC/ODBC server (HiveThriftServer2, shipped in pyspark's
jars) on the same Hive Metastore as sqlext, so beeline, PyHive and JDBC/ODBC tools query sqlext tables.

What they see is what the HMS lists: a partition's rows become visible to these queries when the
partition is committed (``metastore`` policy), never before, because Spark plans Hive table scans from
the HMS partition list.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sqlext import process
from sqlext.paths import default_home, packaged_conf_dir

MAIN_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
DEFAULT_PORT = 10000


@dataclass(frozen=True)
class ThriftServerSettings(process.ServerSettings):
    """One Thrift server: its port, the metastore it reads, extra Spark conf."""

    NAME: ClassVar[str] = "thriftserver"

    port: int = DEFAULT_PORT
    home: Path = field(default_factory=lambda: default_home() / "thriftserver")


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def command(settings: ThriftServerSettings) -> list[str]:
    """The spark-submit command line that runs the server."""
    spark_home = _spark_home()
    log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
    conf = {
        "spark.hadoop.hive.metastore.uris": settings.metastore_uri,
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={log4j}",
        "spark.sql.hive.thriftServer.singleSession": "false",
        **settings.conf,
    }
    args = [
        str(spark_home / "bin" / "spark-submit"),
        "--master",
        settings.master,
        "--class",
        MAIN_CLASS,
        "--name",
        f"sqlext-thriftserver-{settings.port}",
    ]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return [
        *args,
        "spark-internal",
        "--hiveconf",
        f"hive.server2.thrift.port={settings.port}",
        "--hiveconf",
        f"hive.server2.thrift.bind.host={settings.host}",
    ]


def status(settings: ThriftServerSettings) -> int | None:
    """The pid of the server this home started on this port, if it runs."""
    return process.live_pid(settings.pid_file, MAIN_CLASS, f"hive.server2.thrift.port={settings.port}")


def start(settings: ThriftServerSettings) -> tuple[int, bool]:
    """Start the server and wait until it accepts connections; return (pid, already running)."""
    running = status(settings)
    if running is not None:
        return running, True
    env = {**os.environ, "SPARK_HOME": str(_spark_home()), "SPARK_LOCAL_IP": settings.host}
    pid = process.start_server("The Thrift server", settings, command(settings), env, lambda: stop(settings))
    return pid, False


def stop(settings: ThriftServerSettings) -> bool:
    """Stop the server this home started on this port; return False if there was none."""
    pid = status(settings)
    if pid is None:
        settings.pid_file.unlink(missing_ok=True)
        return False
    process.stop_group(pid)
    settings.pid_file.unlink(missing_ok=True)
    return True
