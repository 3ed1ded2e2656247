"""Where the embedded Hive Metastore listens, read from the OS: loopback unless told otherwise, and another
address only with --insecure-no-auth (refused before anything starts without it)."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.errors import MetastoreError
from sqlext.runtime import process
from tests.support.sockets import listeners_on, listening
from tests.support.waiting import free_port

pytestmark = pytest.mark.hms


def _sqlext(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLEXT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "sqlext.cli", *args], capture_output=True, text=True, env=env, timeout=600
    )


def test_the_embedded_metastore_listens_on_loopback_only(metastore: MetastoreSettings) -> None:
    pid = launcher.status(metastore).pid
    assert pid is not None

    addresses = {address for address, port in listening(pid) if port == metastore.port}
    assert addresses == {ipaddress.IPv4Address("127.0.0.1")}
    assert metastore.uri == f"thrift://127.0.0.1:{metastore.port}"
    with MetastoreClient(metastore.uri) as client:
        assert "default" in client.get_all_databases()


def test_a_non_loopback_host_is_refused_without_insecure_no_auth_and_nothing_starts(tmp_path: Path) -> None:
    port = free_port()
    home = tmp_path / "hms"

    flags = ("--host", "0.0.0.0", "--port", str(port), "--home", str(home))

    refused = _sqlext("metastore", "start", *flags, home=tmp_path)

    assert refused.returncode == 1
    assert "Refusing to start the Hive Metastore on 0.0.0.0" in refused.stderr
    assert "--insecure-no-auth" in refused.stderr
    assert listeners_on(port) == set()
    assert not home.exists()  # no config, database, pid file or log written
    with pytest.raises(MetastoreError, match="Refusing"):
        launcher.start(MetastoreSettings(port=port, home=home, host="0.0.0.0"))
    assert not home.exists()


def test_insecure_no_auth_listens_on_the_address_given_and_warns(tmp_path: Path) -> None:
    port = free_port()
    home = tmp_path / "hms"
    flags = ("--host", "0.0.0.0", "--port", str(port), "--home", str(home))

    started = _sqlext("metastore", "start", *flags, "--insecure-no-auth", home=tmp_path)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert f"listens on 0.0.0.0:{port} without authentication" in started.stderr
        assert "drop every database, table and partition" in started.stderr
        uri = started.stdout.strip()
        assert uri == f"thrift://127.0.0.1:{port}"
        pid = launcher.status(MetastoreSettings(port=port, home=home)).pid
        assert pid is not None
        assert {address for address, p in listening(pid) if p == port} <= {
            ipaddress.IPv4Address("0.0.0.0"),
            ipaddress.IPv6Address("::"),
        }
        with MetastoreClient(uri) as client:
            assert "default" in client.get_all_databases()
    finally:
        stopped = _sqlext("metastore", "stop", *flags, home=tmp_path)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert pid is not None and process.wait_for_exit(pid, 30)
