"""``sqlext thriftserver``: Spark's own Thrift JDBC/ODBC server (HiveThriftServer2, shipped in pyspark's
jars) on the same Hive Metastore as sqlext, so beeline, PyHive and JDBC/ODBC tools query sqlext tables.

What they see is what the HMS lists: a partition's rows become visible to these queries when the
partition is committed (``metastore`` policy), never before, because Spark plans Hive table scans from
the HMS partition list.

HiveServer2's own settings pass through as ``--hiveconf key=value``, authentication included:
``hive.server2.authentication`` (``NONE``, ``LDAP``, ``CUSTOM``, ``KERBEROS``, ``PAM``, ``NOSASL``)
with ``hive.server2.authentication.ldap.url`` / ``.ldap.baseDN`` / ``.ldap.userDNPattern``,
``hive.server2.custom.authentication.class`` (its jar through ``--conf spark.jars=...``), and TLS with
``hive.server2.use.SSL``, ``hive.server2.keystore.path`` and ``hive.server2.keystore.password``.

It has no authorization: whoever signs in runs any SQL as the server's OS user (``TRANSFORM ... USING``
runs command lines, ``format.`path``` reads any file, ``reflect`` calls any Java method). So a
non-loopback ``--host`` is refused, whatever the authentication, unless ``--insecure-no-auth`` says that
is meant; ``sqlext gateway`` is the server for other users (docs/authorization.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sqlext.errors import ConfigError
from sqlext.gateway.security import is_loopback
from sqlext.runtime import process
from sqlext.runtime.paths import default_home, packaged_conf_dir

#: ``sqlext thriftserver --help``.
SUMMARY = "Spark's Thrift JDBC/ODBC server on sqlext's metastore (no authorization: for yourself only)"
HELP = """Spark's own HiveThriftServer2 on sqlext's metastore, for beeline, PyHive and JDBC/ODBC tools.

It has NO authorization: whoever connects (and signs in, with --hiveconf hive.server2.authentication=...)
runs any SQL as this server's OS user: shell commands (SELECT TRANSFORM ... USING 'cmd'), any file by path
(SELECT * FROM text.`/path`), Java reflection, ADD JAR. A --host other than loopback is refused unless
--insecure-no-auth says that is meant. For other users run 'sqlext gateway', which checks every statement
(docs/authorization.md)."""

MAIN_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
DEFAULT_PORT = 10000
AUTHENTICATION = "hive.server2.authentication"
#: Modes in which HiveServer2 checks who connects.
AUTHENTICATING_MODES = ("LDAP", "CUSTOM", "KERBEROS", "PAM")
#: Set by sqlext from --port and --host, so not accepted as --hiveconf.
OWN_KEYS = {"hive.server2.thrift.port": "--port", "hive.server2.thrift.bind.host": "--host"}


@dataclass(frozen=True)
class ThriftServerSettings(process.ServerSettings):
    """One Thrift server: its port, the metastore it reads, extra Spark conf and HiveServer2 settings."""

    NAME: ClassVar[str] = "thriftserver"

    port: int = DEFAULT_PORT
    home: Path = field(default_factory=lambda: default_home() / "thriftserver")
    hiveconf: Mapping[str, str] = field(default_factory=dict)
    insecure_no_auth: bool = False

    @property
    def authentication(self) -> str:
        return self.hiveconf.get(AUTHENTICATION, "NONE").strip().upper()


def check(settings: ThriftServerSettings) -> None:
    """Refuse --hiveconf keys sqlext sets itself, and a non-loopback bind without authentication."""
    for key, flag in OWN_KEYS.items():
        if key in settings.hiveconf:
            raise ConfigError(f"Set {key} with {flag}, not --hiveconf.", option=key, value=settings.hiveconf[key])
    if settings.insecure_no_auth or is_loopback(settings.host):
        return
    raise ConfigError(
        f"Refusing to listen on {settings.host} with {AUTHENTICATION}={settings.authentication}: Spark's Thrift "
        "server has no authorization, so anyone who reaches the port"
        + (" and signs in" if settings.authentication in AUTHENTICATING_MODES else "")
        + " could run any SQL there as the server's OS user: shell commands (SELECT TRANSFORM ... USING), any "
        "file by path, Java reflection, ADD JAR. For other users, run 'sqlext gateway' (authentication and "
        "authorization, see docs/authorization.md); or, if everyone who can reach the port may do all that, "
        "pass --insecure-no-auth.",
        option=AUTHENTICATION,
        value=settings.authentication,
    )


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
    hiveconf = {
        **settings.hiveconf,
        "hive.server2.thrift.port": str(settings.port),
        "hive.server2.thrift.bind.host": settings.host,
    }
    return [
        *args,
        "spark-internal",
        *(arg for key, value in hiveconf.items() for arg in ("--hiveconf", f"{key}={value}")),
    ]


def status(settings: ThriftServerSettings) -> int | None:
    """The pid of the server this home started on this port, if it runs."""
    return process.live_pid(settings.pid_file, MAIN_CLASS, f"hive.server2.thrift.port={settings.port}")


def start(settings: ThriftServerSettings) -> tuple[int, bool]:
    """Start the server and wait until it accepts connections; return (pid, already running)."""
    running = status(settings)
    if running is not None:
        return running, True
    check(settings)
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
