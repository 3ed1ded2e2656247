"""``sqlext gateway start|stop|status``: the gateway as a background process with a pid file and a log.

``start`` spawns ``python -m sqlext.gateway`` in a session of its own (it outlives the CLI), with the
metastore URI and the ``--conf`` flags as Spark conf, and returns once the port answers, which the
gateway opens only when its Spark session is up. Pid file and log live under ``--home`` (default
``$SQLEXT_HOME/gateway``), one per port; ``stop`` stops only the process that home started there.
The security settings (``spark.sqlext.gateway.*``) are checked before anything starts.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sqlext.config import METASTORE_URIS, SqlextConfig
from sqlext.gateway.security import GatewaySecurity
from sqlext.runtime import process
from sqlext.runtime.paths import default_home, packaged_conf_dir

MODULE = "sqlext.gateway"
DEFAULT_PORT = 10010
LOOPBACK = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class GatewaySettings(process.ServerSettings):
    """One gateway: its address, the metastore its sessions use, Spark's master and extra conf."""

    NAME: ClassVar[str] = "gateway"

    port: int = DEFAULT_PORT
    home: Path = field(default_factory=lambda: default_home() / "gateway")
    stop_timeout_s: float = 60.0

    @property
    def port_marker(self) -> str:
        """The argument that names this gateway's port on its command line."""
        return f"--port={self.port}"

    @property
    def security(self) -> GatewaySecurity:
        return GatewaySecurity.of(SqlextConfig.load(self.conf).values)

    @property
    def url(self) -> str:
        return super().url + (";ssl=true" if self.security.tls else "")


def check(settings: GatewaySettings) -> GatewaySecurity:
    """Check the security settings as the gateway will (bind address, authenticator, certificate)."""
    from sqlext.gateway.auth import load_authenticator
    from sqlext.gateway.authz.settings import AuthorizationSettings

    security = settings.security
    security.check_bind(settings.host)
    values = SqlextConfig.load(settings.conf).values
    load_authenticator(security, values)
    AuthorizationSettings.of(values, security)
    security.ssl_context()
    return security


def command(settings: GatewaySettings) -> list[str]:
    """The command line that runs the gateway in the foreground."""
    conf = {"spark.ui.enabled": "false", **settings.conf, METASTORE_URIS: settings.metastore_uri}
    master = conf.pop("spark.master", settings.master)
    args = [sys.executable, "-m", MODULE, settings.port_marker, f"--host={settings.host}", f"--master={master}"]
    return args + [f"--conf={key}={value}" for key, value in conf.items()]


def environment(settings: GatewaySettings) -> dict[str, str]:
    """The gateway's environment: quiet Spark logging, unbuffered Python output, a local driver address."""
    log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYSPARK_PYTHON": sys.executable}
    # The JVM starts before any conf is read: its options travel in PYSPARK_SUBMIT_ARGS.
    java_options = shlex.quote(f"-Dlog4j2.configurationFile={log4j}")
    env.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-java-options {java_options} pyspark-shell")
    if settings.host in LOOPBACK:
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def status(settings: GatewaySettings) -> int | None:
    """The pid of the gateway this home started on this port, if it runs."""
    return process.live_pid(settings.pid_file, MODULE, settings.port_marker)


def start(settings: GatewaySettings) -> tuple[int, bool]:
    """Start the gateway and wait until it accepts connections; return (pid, already running)."""
    running = status(settings)
    if running is not None:
        return running, True
    check(settings)
    pid = process.start_server(
        "The gateway", settings, command(settings), environment(settings), lambda: stop(settings)
    )
    return pid, False


def stop(settings: GatewaySettings) -> bool:
    """Stop the gateway this home started on this port (its jobs stop after their current batch);
    False if there was none."""
    pid = status(settings)
    if pid is None:
        settings.pid_file.unlink(missing_ok=True)
        return False
    # SIGTERM to the gateway alone: it stops its jobs and Spark's JVM itself. The group (the JVM
    # included) is ended only if that takes too long.
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    process.wait_for_exit(pid, settings.stop_timeout_s)
    process.stop_group(pid)
    settings.pid_file.unlink(missing_ok=True)
    return True
