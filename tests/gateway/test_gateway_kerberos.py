"""The gateway's KERBEROS authentication, as HiveServer2's: SASL GSSAPI on the Thrift transport against a real
MIT KDC on loopback. PyHive's auth='KERBEROS' logs in with the user's ticket; the session is the principal's
short name, whatever OpenSession claims; no ticket, or a password login, is refused. The server is the real one in
front of a stand-in for the Spark sessions (what is under test is the login)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyhive import hive
from pyhive.exc import OperationalError
from thrift.transport.TTransport import TTransportException

from sqlext.errors import ConfigError
from sqlext.gateway.kerberos import GssapiAcceptor, short_name
from sqlext.gateway.operations import new_handle
from sqlext.gateway.security import KERBEROS_KEYTAB, AuthMode, GatewaySecurity
from sqlext.gateway.server import GatewayServer
from tests.support.kdc import Kdc

pytestmark = pytest.mark.kerberos

G = "spark.sqlext.gateway."
#: The stand-in's answer to PyHive's first statement (USE `default`), which comes once the session is open.
NO_STATEMENTS = "the stand-in runs no statements"


class _Sessions:
    """Records who opened a session (the Spark-backed Gateway's place)."""

    def __init__(self) -> None:
        self.users: list[str] = []

    def open_session(self, user: str, configuration: Any = None) -> Any:
        self.users.append(user)
        handle = new_handle()
        return SimpleNamespace(handle=handle, key=bytes(handle.guid))

    def close_session(self, key: bytes) -> bool:
        return True

    def session(self, handle: Any) -> Any:
        raise RuntimeError(NO_STATEMENTS)


@pytest.fixture(scope="module")
def gateway(kdc: Kdc) -> Iterator[tuple[GatewayServer, _Sessions]]:
    principal, keytab = kdc.principal("hive/127.0.0.1")
    security = GatewaySecurity.of(
        {
            G + "authentication": "KERBEROS",
            G + "authentication.kerberos.principal": principal,
            G + "authentication.kerberos.keytab": str(keytab),
        }
    )
    sessions = _Sessions()
    server = GatewayServer(sessions, "127.0.0.1", 0, kerberos=security.kerberos_acceptor())  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, sessions
    server.shutdown()
    thread.join(10)


def test_pyhive_kerberos_logs_in_as_the_ticket_s_principal(
    gateway: tuple[GatewayServer, _Sessions], kdc: Kdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, sessions = gateway
    principal, keytab = kdc.principal("dana")
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{kdc.kinit(principal, keytab, tmp_path / 'dana.ccache')}")
    before = len(sessions.users)

    with pytest.raises(OperationalError, match=NO_STATEMENTS):
        hive.connect(host="127.0.0.1", port=server.port, auth="KERBEROS", kerberos_service_name="hive", username="root")

    assert sessions.users[before:] == ["dana"], "the session is the principal's, not the name the client claims"


def test_a_client_without_a_ticket_gets_no_session(
    gateway: tuple[GatewayServer, _Sessions], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, sessions = gateway
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'none.ccache'}")
    before = list(sessions.users)

    with pytest.raises(Exception, match=r"(?i)credentials|ticket"):
        hive.connect(host="127.0.0.1", port=server.port, auth="KERBEROS", kerberos_service_name="hive")

    assert sessions.users == before


def test_a_password_login_is_told_to_use_kerberos(gateway: tuple[GatewayServer, _Sessions]) -> None:
    server, sessions = gateway
    before = list(sessions.users)

    with pytest.raises(TTransportException, match="use GSSAPI"):
        hive.connect(host="127.0.0.1", port=server.port, username="alice", auth="CUSTOM", password="x")

    assert sessions.users == before


def test_kerberos_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"KERBEROS needs 'spark\.sqlext\.gateway\.authentication\.kerberos\.principal'"
    ):
        GatewaySecurity.of({G + "authentication": "KERBEROS"})
    security = GatewaySecurity.of(
        {
            G + "authentication": "kerberos",
            G + "authentication.kerberos.principal": "hive/_HOST@R",
            G + "authentication.kerberos.keytab": str(tmp_path / "missing.keytab"),
        }
    )
    assert security.mode is AuthMode.KERBEROS and security.authenticates
    with pytest.raises(ConfigError, match=f"missing.keytab \\({KERBEROS_KEYTAB}\\) does not exist"):
        security.kerberos_acceptor()
    assert GssapiAcceptor("hive/_HOST@R", tmp_path).own_principal.startswith("hive/")
    assert [short_name(p) for p in ("alice@R", "alice/admin@R", "bob")] == ["alice", "alice", "bob"]
