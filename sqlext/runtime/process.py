"""Background server processes that sqlext starts and stops: pid files, liveness, log tails."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sqlext.errors import SqlextError
from sqlext.runtime.paths import default_home

LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class ServerSettings:
    """A local server sqlext runs in the background (the Thrift server, the gateway): its address, the
    metastore it uses, its Spark master and extra conf, and its pid file and log under ``home``, one
    per port. Subclasses name the server (``NAME``) and give their own default port and home."""

    NAME: ClassVar[str] = "server"

    metastore_uri: str
    port: int = 0
    host: str = "127.0.0.1"
    home: Path = field(default_factory=default_home)
    conf: Mapping[str, str] = field(default_factory=dict)
    master: str = "local[2]"
    startup_timeout_s: float = 180.0

    @property
    def pid_file(self) -> Path:
        return self.home / f"{self.NAME}-{self.port}.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / f"{self.NAME}-{self.port}.log"

    @property
    def url(self) -> str:
        return f"jdbc:hive2://{self.host}:{self.port}/default"


def start_server(
    label: str,
    settings: ServerSettings,
    command: Sequence[str],
    env: dict[str, str],
    stop: Callable[[], object],
) -> int:
    """Spawn ``command`` as the server ``settings`` describe, record its pid, and return it once the
    port answers; ``label`` ("The gateway") names it in errors. Refuses a port something else holds;
    if the server dies first, or does not listen in time (then ``stop`` ends it), raises with its log."""
    if port_open(settings.host, settings.port):
        raise SqlextError(f"Port {settings.port} on {settings.host} is taken; choose another with --port.")
    settings.home.mkdir(parents=True, exist_ok=True)
    pid = spawn(command, settings.log_file, settings.home, env)
    settings.pid_file.write_text(str(pid))
    deadline = time.monotonic() + settings.startup_timeout_s
    while time.monotonic() < deadline:
        if not alive(pid):
            settings.pid_file.unlink(missing_ok=True)
            raise SqlextError(f"{label} died on start (see {settings.log_file}):\n{log_tail(settings.log_file)}")
        if port_open(settings.host, settings.port):
            return pid
        time.sleep(0.25)
    stop()
    raise SqlextError(f"{label} did not listen on {settings.port} within {settings.startup_timeout_s:g} s.")


def spawn(command: Sequence[str], log_file: Path, cwd: Path, env: dict[str, str] | None = None) -> int:
    """Start a detached process (own session, so it outlives the CLI) logging to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    return process.pid


def port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as dead, and is reaped when it is our child)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            return False
    return True


def live_pid(pid_file: Path, *markers: str) -> int | None:
    """The pid in ``pid_file`` if that process is alive and its command line holds every marker."""
    try:
        pid = int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    if not alive(pid):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return pid  # no /proc (not Linux): trust the pid file
    return pid if all(marker.encode() in cmdline for marker in markers) else None


def stop_group(pid: int, timeout_s: float = 30.0) -> None:
    """SIGTERM the process group of ``pid``, SIGKILL it if it has not exited after ``timeout_s``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    if not wait_for_exit(pid, timeout_s):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        wait_for_exit(pid, 10.0)


def wait_for_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return not alive(pid)


def log_tail(log_file: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(log_file.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log written)"
