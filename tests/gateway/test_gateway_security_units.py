"""The gateway's security without Spark: the users file and its command, the settings and the bind
check, the per-address slow-down, the login inside the SASL negotiation, job isolation, and the real
server (TLS, logins, 200 failed logins) in front of a stand-in for the Spark sessions."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import thrift_sasl
from pyhive import hive
from TCLIService import TCLIService, ttypes
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TSSLSocket, TTransport
from thrift.transport.TTransport import TTransportException

from sqlext.cli.thriftserver import ThriftServerSettings, check, command
from sqlext.errors import ConfigError, SqlextError
from sqlext.gateway.auth import LOGIN_REFUSED, THROTTLED, Authenticator, LoginGuard, load_authenticator
from sqlext.gateway.jobs import JobRegistry
from sqlext.gateway.operations import new_handle
from sqlext.gateway.passwords import FileAuthenticator, hash_password, read_users, set_password, verify_password
from sqlext.gateway.security import AuthMode, GatewaySecurity, is_loopback
from sqlext.gateway.server import GatewayServer
from sqlext.gateway.throttle import MAX_WAITING, LoginThrottle
from sqlext.gateway.transport import PASSWORD_NEEDED, SaslStatus, server_transport
from tests.support import failed_logins
from tests.support.tls import SelfSigned, self_signed

G = "spark.sqlext.gateway."


def _sqlext(*args: str, stdin: str = "", home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLEXT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "sqlext.cli", *args], input=stdin, capture_output=True, text=True, env=env, timeout=120
    )


# -- the users file ---------------------------------------------------------------------------------


def test_password_hashes_are_salted_scrypt_and_verify_only_the_password() -> None:
    first, second = hash_password("s3cret"), hash_password("s3cret")
    assert first != second and first.startswith("scrypt$14$8$1$")
    assert verify_password("s3cret", first) and verify_password("s3cret", second)
    assert not verify_password("s3cret ", first) and not verify_password("", first)
    assert not verify_password("s3cret", "md5$whatever") and not verify_password("s3cret", "garbage")


def test_passwd_adds_and_changes_users_in_a_private_file_the_authenticator_rereads(tmp_path: Path) -> None:
    users = tmp_path / "conf" / "users"
    assert set_password(users, "alice", "one") is True
    authenticator = FileAuthenticator(users)
    assert authenticator.authenticate("alice", "one")
    assert stat.S_IMODE(users.stat().st_mode) == 0o600
    assert "one" not in users.read_text()

    assert set_password(users, "alice", "two") is False
    set_password(users, "bob", "bobs")
    assert sorted(read_users(users)) == ["alice", "bob"]
    # The running authenticator sees the change without a restart.
    assert authenticator.authenticate("alice", "two") and not authenticator.authenticate("alice", "one")
    assert authenticator.authenticate("bob", "bobs")
    assert not authenticator.authenticate("carol", "two"), "unknown user"
    with pytest.raises(ConfigError, match="Invalid user name"):
        set_password(users, "a:b", "x")
    with pytest.raises(ConfigError, match="empty password"):
        set_password(users, "dave", "")


def test_sqlext_gateway_passwd_reads_the_password_from_stdin(tmp_path: Path) -> None:
    users = tmp_path / "users"
    added = _sqlext("gateway", "passwd", "alice", "--users-file", str(users), stdin="pw one\n", home=tmp_path)
    assert added.returncode == 0, added.stderr
    assert f"added alice in {users}" in added.stderr
    changed = _sqlext("gateway", "passwd", "alice", "--users-file", str(users), stdin="pw two\n", home=tmp_path)
    assert "changed the password of alice" in changed.stderr
    assert FileAuthenticator(users).authenticate("alice", "pw two")
    # Without --users-file: spark.sqlext.gateway.authentication.file, else $SQLEXT_HOME/gateway/users.
    _sqlext("gateway", "passwd", "bob", stdin="b\n", home=tmp_path)
    assert FileAuthenticator(tmp_path / "gateway" / "users").authenticate("bob", "b")
    missing = _sqlext("gateway", "passwd", home=tmp_path)
    assert missing.returncode == 1 and "needs the user name" in missing.stderr


# -- settings and the bind check -------------------------------------------------------------------


def test_settings_are_checked_with_the_allowed_values() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("Allowed: NONE, FILE, LDAP, KERBEROS, CUSTOM. Did you mean 'LDAP'")
    ):
        GatewaySecurity.of({G + "authentication": "ldapp"})
    with pytest.raises(ConfigError, match=re.escape("needs 'spark.sqlext.gateway.authentication.class'")):
        GatewaySecurity.of({G + "authentication": "custom"})
    with pytest.raises(ConfigError, match=re.escape("needs 'spark.sqlext.gateway.authentication.ldap.url'")):
        GatewaySecurity.of({G + "authentication": "LDAP"})
    with pytest.raises(ConfigError, match="must contain %s"):
        GatewaySecurity.of(
            {
                G + "authentication": "LDAP",
                G + "authentication.ldap.url": "ldap://x",
                G + "authentication.ldap.user-dn-pattern": "cn=u",
            }
        )
    with pytest.raises(ConfigError, match=re.escape("'spark.sqlext.gateway.authentication.failure-delay': 'soon'")):
        GatewaySecurity.of({G + "authentication.failure-delay": "soon"})
    security = GatewaySecurity.of({G + "admins": " root, ops ,", G + "authentication.failure-delay": "200 ms"})
    assert security.admins == {"root", "ops"} and security.failure_delay_s == 0.2 and security.mode is AuthMode.NONE


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_addresses_need_no_authentication(host: str) -> None:
    assert is_loopback(host)
    GatewaySecurity.of({}).check_bind(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "gateway.example.com"])
def test_other_addresses_without_authentication_are_refused_unless_said_insecure(host: str) -> None:
    with pytest.raises(ConfigError, match=f"Refusing to listen on {host} without authentication") as refused:
        GatewaySecurity.of({}).check_bind(host)
    assert "--insecure-no-auth" in refused.value.message
    GatewaySecurity.of({G + "insecure-no-auth": "true"}).check_bind(host)
    GatewaySecurity.of({G + "authentication": "FILE"}).check_bind(host)


def test_gateway_start_on_a_public_address_without_authentication_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    started = _sqlext("gateway", "start", "--host", "0.0.0.0", "--port", "1", home=tmp_path)
    assert started.returncode == 1
    assert "Refusing to listen on 0.0.0.0 without authentication" in started.stderr
    assert not (tmp_path / "metastore").exists() and not (tmp_path / "gateway").exists(), "nothing was started"
    no_users = _sqlext("gateway", "start", "--host", "0.0.0.0", "--conf", G + "authentication=FILE", home=tmp_path)
    assert no_users.returncode == 1 and "add a user with 'sqlext gateway passwd USER'" in no_users.stderr


def test_thriftserver_passes_hiveserver2_auth_settings_and_refuses_a_public_address_without_the_flag() -> None:
    plain = ThriftServerSettings(metastore_uri="thrift://m:9083", host="0.0.0.0")
    with pytest.raises(
        ConfigError, match=re.escape("Refusing to listen on 0.0.0.0 with hive.server2.authentication=NONE")
    ):
        check(plain)
    check(ThriftServerSettings(metastore_uri="thrift://m:9083", host="0.0.0.0", insecure_no_auth=True))
    ldap = ThriftServerSettings(
        metastore_uri="thrift://m:9083",
        host="0.0.0.0",
        hiveconf={
            "hive.server2.authentication": "LDAP",
            "hive.server2.authentication.ldap.url": "ldap://ldap:389",
            "hive.server2.authentication.ldap.baseDN": "ou=people,dc=example,dc=com",
        },
    )
    with pytest.raises(
        ConfigError, match="Spark's Thrift server has no authorization, so anyone who reaches the port and signs in"
    ):
        check(ldap)  # signed in, anyone still runs any SQL as the server's OS user
    check(replace(ldap, insecure_no_auth=True))
    args = command(ldap)
    pairs = [args[i + 1] for i, arg in enumerate(args) if arg == "--hiveconf"]
    assert pairs == [
        "hive.server2.authentication=LDAP",
        "hive.server2.authentication.ldap.url=ldap://ldap:389",
        "hive.server2.authentication.ldap.baseDN=ou=people,dc=example,dc=com",
        "hive.server2.thrift.port=10000",
        "hive.server2.thrift.bind.host=0.0.0.0",
    ]
    with pytest.raises(ConfigError, match=re.escape("Set hive.server2.thrift.bind.host with --host")):
        check(ThriftServerSettings(metastore_uri="", hiveconf={"hive.server2.thrift.bind.host": "0.0.0.0"}))


# -- authenticators --------------------------------------------------------------------------------


class OnlyOpenSesame(Authenticator):
    """A CUSTOM authenticator: the password is the configured word."""

    def __init__(self, conf: dict[str, str]) -> None:
        self.word = conf["test.word"]

    def authenticate(self, user: str, password: str) -> bool:
        return password == self.word


class NotAnAuthenticator:
    pass


def test_custom_authenticators_are_loaded_by_class_path_with_the_configuration() -> None:
    security = GatewaySecurity.of(
        {G + "authentication": "CUSTOM", G + "authentication.class": f"{__name__}.OnlyOpenSesame"}
    )
    custom = load_authenticator(security, {"test.word": "sesame"})
    assert custom is not None and custom.authenticate("anyone", "sesame") and not custom.authenticate("x", "y")
    for path, message in [
        (f"{__name__}.Missing", "has no class 'Missing'"),
        (f"{__name__}.NotAnAuthenticator", "does not implement sqlext.gateway.authenticator.Authenticator"),
        ("no_such_module.Auth", "Cannot import module 'no_such_module'"),
    ]:
        bad = GatewaySecurity.of({G + "authentication": "CUSTOM", G + "authentication.class": path})
        with pytest.raises(ConfigError, match=message):
            load_authenticator(bad, {})


def test_ldap_without_the_ldap3_package_names_it() -> None:
    """Only what needs no LDAP server: the DN built for a user, or the install hint without ldap3."""
    security = GatewaySecurity.of(
        {
            G + "authentication": "LDAP",
            G + "authentication.ldap.url": "ldap://127.0.0.1:1",
            G + "authentication.ldap.base-dn": "ou=people,dc=x",
        }
    )
    try:
        import ldap3  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"needs the ldap3 package: pip install 'sqlext\[ldap\]'"):
            load_authenticator(security, {})
        return
    authenticator: Any = load_authenticator(security, {})
    assert authenticator.user_dn("a,b") == "uid=a\\,b,ou=people,dc=x"
    assert authenticator.authenticate("alice", "") is False, "an empty password is never an (anonymous) bind"


# -- the slow-down ---------------------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_failures_double_the_delay_of_their_address_only_up_to_the_maximum() -> None:
    time_ = FakeTime()
    throttle = LoginThrottle(1.0, 8.0, clock=time_.clock, sleep=time_.sleep)
    assert throttle.admit("10.0.0.1") and time_.slept == []
    delays = []
    for _ in range(6):
        throttle.finished("10.0.0.1", accepted=False)
        before = time_.now
        assert throttle.admit("10.0.0.1")
        delays.append(time_.now - before)
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert throttle.admit("10.0.0.2") and time_.now == sum(delays), "another address does not wait"
    throttle.finished("10.0.0.2", accepted=True)
    assert throttle.finished("10.0.0.1", accepted=True) == 0
    before = time_.now
    assert throttle.admit("10.0.0.1") and time_.now == before, "a success clears the address"


def test_an_address_checks_one_login_at_a_time_and_too_many_waiting_are_refused_at_once() -> None:
    throttle = LoginThrottle(0.01, 0.01)
    assert throttle.admit("10.0.0.9")  # holds the turn
    admitted: list[bool] = []
    waiting = [threading.Thread(target=lambda: admitted.append(throttle.admit("10.0.0.9"))) for _ in range(MAX_WAITING)]
    for thread in waiting:
        thread.start()
    deadline = time.monotonic() + 10
    while throttle._records["10.0.0.9"].waiting < MAX_WAITING and time.monotonic() < deadline:
        time.sleep(0.01)
    assert admitted == [], "they wait for the turn"
    assert throttle.admit("10.0.0.9") is False, "one more than MAX_WAITING is refused without waiting"
    assert throttle.admit("10.0.0.10") is True, "another address does not wait"
    throttle.finished("10.0.0.9", accepted=False)
    for number in range(MAX_WAITING):
        wait_until = time.monotonic() + 10
        while len(admitted) <= number and time.monotonic() < wait_until:
            time.sleep(0.01)
        assert admitted == [True] * (number + 1), "one after the other"
        throttle.finished("10.0.0.9", accepted=False)
    for thread in waiting:
        thread.join(10)
    assert throttle.failures("10.0.0.9") == 1 + MAX_WAITING


# -- the login in the SASL negotiation -------------------------------------------------------------


def _message(status: int, payload: bytes) -> bytes:
    return struct.pack(">BI", status, len(payload)) + payload


def _read_message(sock: socket.socket) -> tuple[int, bytes]:
    status, length = struct.unpack(">BI", sock.recv(5))
    return status, sock.recv(length) if length else b""


def _guard(users: Path, **delays: float) -> LoginGuard:
    return LoginGuard(FileAuthenticator(users), LoginThrottle(**delays))


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("users") / "users"
    set_password(path, "alice", "alices password")
    set_password(path, "bob", "bobs password")
    return path


@pytest.mark.parametrize(
    ("user", "password", "answer"),
    [
        ("alice", "alices password", (SaslStatus.COMPLETE, b"")),
        ("alice", "wrong", (SaslStatus.BAD, LOGIN_REFUSED.encode())),
        ("mallory", "alices password", (SaslStatus.BAD, LOGIN_REFUSED.encode())),
    ],
    ids=["right", "wrong-password", "unknown-user"],
)
def test_the_plain_login_is_checked_and_a_refusal_is_hiveserver2s_bad_status(
    users: Path, user: str, password: str, answer: tuple[int, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    server, client = socket.socketpair()
    with server, client:
        outcome: dict[str, Any] = {}

        def accept() -> None:
            try:
                outcome["user"] = server_transport(server, lambda u, p: _guard(users).check("10.1.1.1", u, p))[1]
            except TTransportException as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=accept)
        thread.start()
        client.sendall(_message(SaslStatus.START, b"PLAIN") + _message(SaslStatus.OK, f"\0{user}\0{password}".encode()))
        thread.join(10)
        assert _read_message(client) == answer
    if answer[0] == SaslStatus.COMPLETE:
        assert outcome == {"user": user}
    else:
        assert "user" not in outcome and LOGIN_REFUSED in str(outcome["error"])
        assert f"login refused: user '{user}' from 10.1.1.1" in caplog.text
        assert password not in caplog.text


def test_nosasl_clients_are_told_a_password_is_needed(users: Path) -> None:
    server, client = socket.socketpair()
    with server, client:
        refused: list[Exception] = []

        def serve() -> None:
            try:
                server_transport(server, lambda u, p: None)
            except TTransportException as exc:
                refused.append(exc)

        thread = threading.Thread(target=serve)
        thread.start()
        transport = TTransport.TBufferedTransport(_SocketTransport(client))
        tcli = TCLIService.Client(TBinaryProtocol.TBinaryProtocol(transport))
        with pytest.raises(TApplicationException, match="requires a user name and password"):
            tcli.OpenSession(ttypes.TOpenSessionReq(username="alice"))
        thread.join(10)
    assert len(refused) == 1 and "SASL PLAIN" in PASSWORD_NEEDED


class _SocketTransport(TSocket.TSocket):
    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.setHandle(sock)


# -- job isolation ---------------------------------------------------------------------------------


class _Query:
    def __init__(self) -> None:
        self.isActive = True

    def stop(self) -> None:
        self.isActive = False

    def exception(self) -> None:
        return None


def test_users_see_and_stop_their_own_jobs_admins_all() -> None:
    registry = JobRegistry(admins=frozenset({"root"}))
    queries = {"a1": _Query(), "b1": _Query()}
    spark = SimpleNamespace(streams=SimpleNamespace(get=queries.get))
    registry.record(spark, "a1", "alices job", "alice")
    registry.record(spark, "b1", "bobs job", "bob")

    def ids(user: str) -> list[str]:
        return [row[0] for row in registry.execute("SHOW JOBS", user).rows]

    assert ids("alice") == ["a1"] and ids("bob") == ["b1"] and ids("root") == ["a1", "b1"] and ids("eve") == []
    with pytest.raises(SqlextError, match="No job with id 'b1'"):
        registry.execute("STOP JOB 'b1'", "alice")
    assert queries["b1"].isActive, "alice could not stop bob's job"
    registry.execute("STOP JOB 'a1'", "alice")
    registry.execute("STOP JOB 'b1'", "root")
    assert not queries["a1"].isActive and not queries["b1"].isActive
    assert [row[2] for row in registry.execute("SHOW JOBS", "root").rows] == ["CANCELED", "CANCELED"]


# -- the real server, Spark's sessions stood in for ------------------------------------------------


class _Sessions:
    """Stands in for the Spark-backed :class:`~sqlext.gateway.sessions.Gateway`: records who opened a
    session. What is under test is everything before that: TLS, the login, the slow-down."""

    def __init__(self) -> None:
        self.users: list[str] = []

    def open_session(self, user: str, configuration: Any = None) -> Any:
        self.users.append(user)
        handle = new_handle()
        return SimpleNamespace(handle=handle, key=bytes(handle.guid))

    def close_session(self, key: bytes) -> bool:
        return True


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> SelfSigned:
    return self_signed(tmp_path_factory.mktemp("tls"))


@contextlib.contextmanager
def _server(users: Path, certificate: SelfSigned | None, **delays: float) -> Iterator[tuple[GatewayServer, _Sessions]]:
    sessions = _Sessions()
    tls = None
    if certificate is not None:
        security = GatewaySecurity(ssl_certfile=certificate.cert, ssl_keyfile=certificate.key)
        tls = security.ssl_context()
    server = GatewayServer(sessions, "127.0.0.1", 0, _guard(users, **delays), tls)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, sessions
    finally:
        server.shutdown()
        thread.join(10)


def _open_session(port: int, user: str, password: str, certificate: SelfSigned | None, claimed: str = "") -> str:
    """Log in over SASL PLAIN (over TLS with a certificate) and open a session; its user as answered."""
    socket_: Any
    if certificate is not None:
        socket_ = TSSLSocket.TSSLSocket("127.0.0.1", port, ssl_context=certificate.client_context())
    else:
        socket_ = TSocket.TSocket("127.0.0.1", port)
    socket_.setTimeout(10_000)
    sasl = thrift_sasl.TSaslClientTransport(
        lambda: hive.get_installed_sasl(host="127.0.0.1", sasl_auth="PLAIN", username=user, password=password),
        "PLAIN",
        socket_,
    )
    sasl.open()
    try:
        tcli = TCLIService.Client(TBinaryProtocol.TBinaryProtocol(sasl))
        response = tcli.OpenSession(ttypes.TOpenSessionReq(username=claimed or user))
        assert response.status.statusCode == ttypes.TStatusCode.SUCCESS_STATUS, response.status
        return user
    finally:
        sasl.close()


def test_tls_logins_open_sessions_for_the_checked_user_only(users: Path, certificate: SelfSigned) -> None:
    with _server(users, certificate) as (server, sessions):
        _open_session(server.port, "alice", "alices password", certificate, claimed="root")
        assert sessions.users == ["alice"], "the session is the checked user's, not the name OpenSession claims"
        for user, password in [("alice", "bobs password"), ("mallory", "x")]:
            with pytest.raises(TTransportException, match=LOGIN_REFUSED):
                _open_session(server.port, user, password, certificate)
        assert sessions.users == ["alice"], "a refused login opens no session"
        # A client that does not speak TLS gets no answer but a closed connection.
        with pytest.raises(TTransportException):
            _open_session(server.port, "alice", "alices password", None)
        with pytest.raises(TTransportException):
            hive.connect(
                host="127.0.0.1", port=server.port, username="alice", auth="CUSTOM", password="alices password"
            )
        assert sessions.users == ["alice"]


def test_200_failed_logins_slow_down_their_address_while_others_log_in_within_a_second(
    users: Path, certificate: SelfSigned
) -> None:
    with _server(users, certificate, delay_s=0.05, max_delay_s=0.4) as (server, sessions):
        started = time.monotonic()
        attacker = failed_logins.start(server.port, certificate.cert, attempts=200, threads=MAX_WAITING + 2)
        waits = []
        while attacker.poll() is None:
            before = time.monotonic()
            _open_session(server.port, "bob", "bobs password", certificate)
            waits.append(time.monotonic() - before)
        elapsed = time.monotonic() - started
        output, _ = attacker.communicate(timeout=120)
    answers = output.splitlines()
    refused, throttled = f"{SaslStatus.BAD} {LOGIN_REFUSED}", f"{SaslStatus.BAD} {THROTTLED}"
    assert len(answers) == 200 and set(answers) == {refused, throttled}
    checked = answers.count(refused)
    assert elapsed > 0.2 * (checked - 10), f"{checked} checked attempts were slowed down ({elapsed:.1f} s)"
    assert waits and max(waits) < 1.0, f"the legitimate client waited {max(waits):.2f} s: {waits}"
    assert set(sessions.users) == {"bob"}, "no session for the attacker"


def test_every_gateway_key_is_in_the_configuration_table() -> None:
    from sqlext.gateway.security import KEYS

    table = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    for key in KEYS:
        short = "`." + ".".join(key.split(".")[-2:]) + "`"
        assert f"`{key}`" in table or short in table, f"{key} is missing from docs/configuration.md's table"
