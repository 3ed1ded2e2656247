"""``sqlext gateway|thriftserver stop|status`` act on the server alone: started with an explicit metastore,
then stopped and asked about without one, they start no embedded metastore and leave nothing running. Commands
that only read (``commits``, ``compact``) say that no metastore answers rather than starting one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlext.catalog.metastore.launcher import DEFAULT_PORT, MetastoreSettings
from tests.support.sockets import listeners_on
from tests.support.waiting import free_port

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow, pytest.mark.timeout(900)]


def _sqlext(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLEXT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "sqlext.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


def _processes_mentioning(text: str) -> list[int]:
    """Pids whose command line holds ``text`` (the servers started from a sqlext home name it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue  # exited meanwhile
    return found


@pytest.mark.parametrize("server", ["gateway", "thriftserver"])
def test_stop_and_status_without_a_metastore_start_none(
    server: str, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    port = str(free_port())
    embedded_before = listeners_on(DEFAULT_PORT)
    started = _sqlext(
        server, "start", "--port", port, "--conf", f"spark.sqlext.metastore.uris={metastore.uri}", home=home
    )
    assert started.returncode == 0, started.stderr[-3000:]
    assert f"metastore {metastore.uri}" in started.stderr

    status = _sqlext(server, "status", "--port", port, home=home)
    assert status.returncode == 0 and status.stdout.startswith(f"running at jdbc:hive2://127.0.0.1:{port}/default")
    stopped = _sqlext(server, "stop", "--port", port, home=home)
    assert stopped.stdout.strip() == "stopped", stopped.stdout + stopped.stderr
    after = _sqlext(server, "status", "--port", port, home=home)
    assert after.returncode == 3 and after.stdout.strip() == f"not running on port {port}"
    again = _sqlext(server, "stop", "--port", port, home=home)
    assert again.returncode == 0 and "runs on" in again.stdout

    assert not (home / "metastore").exists()  # no embedded metastore was set up under this sqlext home
    assert _processes_mentioning(str(home)) == []  # neither the server nor anything it started still runs
    assert listeners_on(DEFAULT_PORT) == embedded_before
    assert listeners_on(int(port)) == set()


@pytest.mark.parametrize("command", [["commits", "db.events"], ["compact", "db.events", "--quiet"]])
def test_commands_that_only_read_say_no_metastore_instead_of_starting_one(command: list[str], tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()

    result = _sqlext(*command, "--conf", f"spark.sqlext.metastore.port={port}", home=home)

    assert result.returncode == 1
    assert f"No metastore at thrift://127.0.0.1:{port}: spark.sqlext.metastore.uris is not set" in result.stderr
    assert not (home / "metastore").exists()
    assert listeners_on(port) == set()
