"""A secured gateway used as users use it: ``sqlext gateway passwd`` then ``sqlext gateway start`` with
FILE authentication, an admin and TLS (a self-signed certificate made here), then PyHive over a TLS
socket and pyspark's beeline with a truststore. What is asserted is what clients are answered, what
the gateway logs, and which jobs each user sees and stops."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import thrift_sasl
from pyhive import hive
from pyhive.exc import OperationalError
from thrift.transport import TSSLSocket
from thrift.transport.TTransport import TTransportException

from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.gateway.test_gateway import DAILY_INSERT, _daily_sink_ddl, _generated_ddl, _rows
from tests.support import failed_logins
from tests.support.tls import TRUSTSTORE_PASSWORD, SelfSigned, self_signed
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow, pytest.mark.timeout(900)]

PASSWORDS = {
    "alice": "alice-Secret-1",
    "bob": "bob-Secret-2",
    "root": "root-Secret-3",
}  # beeline's script splits on spaces
G = "spark.sqlext.gateway."


@dataclass(frozen=True)
class SecuredGateway:
    port: int
    home: Path
    flags: tuple[str, ...]
    certificate: SelfSigned

    @property
    def log(self) -> str:
        return (self.home / "gateway" / "logs" / f"gateway-{self.port}.log").read_text(errors="replace")


def _sqlext(*args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLEXT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "sqlext.cli", *args], input=stdin, capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def secured(metastore: MetastoreSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredGateway]:
    home = tmp_path_factory.mktemp("secured")
    for user, password in PASSWORDS.items():
        added = _sqlext("gateway", "passwd", user, home=home, stdin=password + "\n")
        assert added.returncode == 0, added.stderr
    certificate = self_signed(home / "tls")
    conf = {
        "spark.sqlext.metastore.uris": metastore.uri,
        "spark.sqlext.warehouse": (home / "warehouse").as_uri(),
        "spark.sqlext.checkpoint.root": (home / "checkpoints").as_uri(),
        "spark.sql.shuffle.partitions": "2",
        G + "authentication": "FILE",
        G + "admins": "root",
        G + "ssl.certfile": str(certificate.cert),
        G + "ssl.keyfile": str(certificate.key),
        G + "authentication.failure-delay": "200 ms",
        G + "authentication.failure-delay.max": "2 s",
        G + "allowed-locations": tmp_path_factory.getbasetemp().as_uri(),  # the tests' tables live in tmp_path
    }
    port = free_port()
    flags = ("--port", str(port), *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")))
    started = _sqlext("gateway", "start", *flags, home=home)
    assert started.returncode == 0, started.stderr[-3000:]
    assert started.stdout.strip() == f"jdbc:hive2://127.0.0.1:{port}/default;ssl=true"
    try:
        yield SecuredGateway(port, home, flags, certificate)
    finally:
        stopped = _sqlext("gateway", "stop", *flags, home=home)
        assert stopped.stdout.strip() == "stopped", stopped.stdout + stopped.stderr


def _transport(gateway: SecuredGateway, user: str, password: str | None = None) -> Any:
    """SASL PLAIN with the user's password (or the one given) over a TLS socket, not yet open."""
    password = PASSWORDS[user] if password is None else password
    tls_socket = TSSLSocket.TSSLSocket("127.0.0.1", gateway.port, ssl_context=gateway.certificate.client_context())
    return thrift_sasl.TSaslClientTransport(
        lambda: hive.get_installed_sasl(host="127.0.0.1", sasl_auth="PLAIN", username=user, password=password),
        "PLAIN",
        tls_socket,
    )


@contextlib.contextmanager
def _connect(gateway: SecuredGateway, user: str, password: str | None = None) -> Iterator[Any]:
    """PyHive over a TLS socket, SASL PLAIN with the user's password (or the one given)."""
    connection = hive.connect(thrift_transport=_transport(gateway, user, password), username=user)
    try:
        yield connection
    finally:
        with contextlib.suppress(Exception):
            connection.close()


def test_the_right_password_over_tls_gets_in(secured: SecuredGateway) -> None:
    with _connect(secured, "alice") as connection:
        assert _rows(connection.cursor(), "SELECT 'in', 1 + 1") == [("in", 2)]
    assert "session " in secured.log and "opened for alice" in secured.log


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-Secret-1")])
def test_a_wrong_password_or_unknown_user_is_refused_with_no_session(
    secured: SecuredGateway, user: str, password: str
) -> None:
    sessions_before = secured.log.count(f"opened for {user}")
    refusals_before = secured.log.count(f"login refused: user '{user}'")
    with pytest.raises(TTransportException, match="Error validating the login"), _connect(secured, user, password):
        pass
    wait_for(lambda: secured.log.count(f"login refused: user '{user}'") > refusals_before, 30, what="refusal logged")
    log = secured.log
    assert log.count(f"opened for {user}") == sessions_before, "no session opened"
    assert password not in log, "the password is never logged"


def test_a_plain_client_on_the_tls_port_is_refused(secured: SecuredGateway) -> None:
    with pytest.raises(TTransportException):
        hive.connect(host="127.0.0.1", port=secured.port, username="alice", auth="CUSTOM", password="alice-Secret-1")
    with pytest.raises(TTransportException):
        hive.connect(host="127.0.0.1", port=secured.port, username="alice", auth="NOSASL")


def _beeline(gateway: SecuredGateway, user: str, password: str, statements: str) -> subprocess.CompletedProcess[str]:
    import pyspark

    beeline = Path(pyspark.__file__).resolve().parent / "bin" / "beeline"
    store = gateway.certificate.truststore()
    url = (
        f"jdbc:hive2://127.0.0.1:{gateway.port}/default;ssl=true;sslTrustStore={store};"
        f"trustStorePassword={TRUSTSTORE_PASSWORD}"
    )
    command = [str(beeline), "-u", url, "-n", user, "-p", password, "--silent=true", "--outputformat=csv2"]
    return subprocess.run([*command, "-e", statements], capture_output=True, text=True, timeout=300)


def test_beeline_over_tls_with_a_truststore(secured: SecuredGateway) -> None:
    ran = _beeline(secured, "bob", PASSWORDS["bob"], "SELECT 'over tls' AS result;")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["result", "over", "tls"] or ran.stdout.splitlines()[-1] == "over tls"
    refused = _beeline(secured, "bob", "not-bobs", "SELECT 1;")
    assert refused.returncode != 0
    assert "Peer indicated failure: Error validating the login" in refused.stderr


def test_users_see_and_stop_only_their_own_jobs_an_admin_all(secured: SecuredGateway, tmp_path: Path) -> None:
    with _connect(secured, "alice") as connection:
        cursor = connection.cursor()
        cursor.execute("CREATE DATABASE IF NOT EXISTS gw_sec")
        cursor.execute(_generated_ddl("gw_sec", "generated"))
        cursor.execute(_daily_sink_ddl("gw_sec", "daily", tmp_path / "daily"))
        cursor.execute("SET 'pipeline.name' = 'alices_stream'")
        cursor.execute("SET 'execution.checkpointing.interval' = '1 s'")
        ((job_id, _, _),) = _rows(cursor, DAILY_INSERT.format(db="gw_sec", sink="daily", source="generated"))
        assert (job_id, "alices_stream", "RUNNING") in [row[:3] for row in _rows(cursor, "SHOW JOBS")]

    with _connect(secured, "bob") as connection:
        cursor = connection.cursor()
        assert job_id not in [row[0] for row in _rows(cursor, "SHOW JOBS")]
        with pytest.raises(OperationalError) as refused:
            cursor.execute(f"STOP JOB '{job_id}'")
        assert f"No job with id '{job_id}'" in refused.value.args[0].status.errorMessage

    with _connect(secured, "root") as connection:
        cursor = connection.cursor()
        assert (job_id, "alices_stream", "RUNNING") in [row[:3] for row in _rows(cursor, "SHOW JOBS")]
        assert _rows(cursor, f"STOP JOB '{job_id}'") == [("OK",)]

    with _connect(secured, "alice") as connection:
        cursor = connection.cursor()
        assert (job_id, "alices_stream", "CANCELED") in [row[:3] for row in _rows(cursor, "SHOW JOBS")]


def _login_s(gateway: SecuredGateway, user: str) -> float:
    """Seconds from connecting to a completed login (TLS handshake, password checked), no session opened."""
    before = time.monotonic()
    transport = _transport(gateway, user)
    transport.open()
    elapsed = time.monotonic() - before
    transport.close()
    return elapsed


def _query_s(cursor: Any) -> float:
    before = time.monotonic()
    assert _rows(cursor, "SELECT 1") == [(1,)]
    return time.monotonic() - before


def test_200_failed_logins_leave_the_gateway_answering_a_legitimate_client_within_a_second(
    secured: SecuredGateway,
) -> None:
    """The attack's logins come from 127.0.0.2, the legitimate client's from 127.0.0.1. Logins are
    answered within a second (the median; the slowest no slower than before the attack) and an open
    session's queries keep their pace (their median). Single samples on two shared, loaded cores took over
    a second with no attack at all, so login outliers are held to the pace measured before the attack; the
    strict bound on every login is asserted without Spark in tests/gateway/test_gateway_security_units.py."""
    with _connect(secured, "bob") as connection:
        cursor = connection.cursor()
        logins_before = [_login_s(secured, "alice") for _ in range(3)]
        queries_before = [_query_s(cursor) for _ in range(3)]
        attacker = failed_logins.start(secured.port, secured.certificate.cert, attempts=200, threads=6)
        logins, queries = [], []
        while attacker.poll() is None:
            logins.append(_login_s(secured, "alice"))
            queries.append(_query_s(cursor))
        answers = attacker.communicate(timeout=120)[0].splitlines()
    assert len(answers) == 200 and all(answer.startswith("3 ") for answer in answers), set(answers)
    assert logins and statistics.median(logins) < 1.0, f"logins took {logins} during the attack"
    assert max(logins) < max(1.0, 2 * max(logins_before)), f"logins: {logins} during, {logins_before} before"
    # The session's pace: the median (a single query took 1.7 s on CI while the other worker's tests loaded
    # both cores; the logins above are the attack's target).
    pace_before = statistics.median(queries_before)
    assert statistics.median(queries) < max(1.0, 2 * pace_before), f"queries: {queries} during, {queries_before} before"
