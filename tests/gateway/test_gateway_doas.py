"""The gateway's impersonation (``spark.sqlext.gateway.enable.doAs``, HiveServer2's ``hive.server2.enable.doAs``)
on a kerberized HDFS: ``sqlext gateway start`` logged in as its own principal (``sqlext``, a proxy user on the
NameNode), two users signed in with FILE logins through PyHive; each user's files on HDFS are that user's, and
HDFS refuses a user who may not write a directory, with a message naming the user, the access and the owner."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyhive import hive
from pyhive.exc import OperationalError

from sqlext.catalog.metastore import kerberos
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.kerberos import MetastoreAuth
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.kdc import Kdc
from tests.support.kerberized_hdfs import METASTORE_PRINCIPAL, WAREHOUSE, KerberizedHdfs
from tests.support.streams import write_hourly_events
from tests.support.waiting import free_port, wait_for

pytestmark = [
    pytest.mark.hdfs,
    pytest.mark.kerberos,
    pytest.mark.spark,
    pytest.mark.hms,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

PASSWORDS = {"alice": "alice-Secret-1", "bob": "bob-Secret-2"}
G = "spark.sqlext.gateway."
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class DoAsGateway:
    port: int
    home: Path
    flags: tuple[str, ...]


def _sqlext(*args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SQLEXT_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "KRB5CCNAME": f"FILE:{home / 'no-ticket'}",  # the gateway's keytab is its only login
    }
    command = [sys.executable, "-m", "sqlext.cli", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def doas_gateway(
    kdc: Kdc,
    kerberized_hdfs: KerberizedHdfs,
    kerberized_hdfs_metastore: MetastoreSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DoAsGateway]:
    home = tmp_path_factory.mktemp("doas-gateway")
    for user, password in PASSWORDS.items():
        added = _sqlext("gateway", "passwd", user, home=home, stdin=password + "\n")
        assert added.returncode == 0, added.stderr
        # Each user's own directory, as /user/<name> on a cluster (the metastore creates none as the user).
        principal, keytab = kdc.principal(user)
        kerberized_hdfs.shell(principal, keytab, "-mkdir", "-p", f"{WAREHOUSE}/{user}/t", f"{WAREHOUSE}/{user}/events")
    principal, keytab = kdc.principal("sqlext")
    conf = {
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.sqlext.metastore.uris": kerberized_hdfs_metastore.uri,
        kerberos.SASL_ENABLED: "true",
        kerberos.SERVER_PRINCIPAL: METASTORE_PRINCIPAL,
        kerberos.CLIENT_PRINCIPAL: principal,
        kerberos.CLIENT_KEYTAB: str(keytab),
        **kerberized_hdfs.client_conf(),
        G + "authentication": "FILE",
        G + "authorization": "false",  # HDFS's permissions are what is under test
        G + "enable.doAs": "true",
    }
    port = free_port()
    flags = ("--port", str(port), *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")))
    started = _sqlext("gateway", "start", *flags, home=home)
    assert started.returncode == 0, started.stderr[-3000:]
    try:
        yield DoAsGateway(port, home, flags)
    finally:
        stopped = _sqlext("gateway", "stop", *flags, home=home)
        assert stopped.stdout.strip() == "stopped", stopped.stdout + stopped.stderr


@contextlib.contextmanager
def _cursor(gateway: DoAsGateway, user: str) -> Iterator[Any]:
    connection = hive.connect(
        host="127.0.0.1", port=gateway.port, username=user, password=PASSWORDS[user], auth="CUSTOM"
    )
    try:
        yield connection.cursor()
    finally:
        with contextlib.suppress(Exception):
            connection.close()


def _rows(cursor: Any, statement: str) -> list[tuple[Any, ...]]:
    cursor.execute(statement)
    return [tuple(row) for row in cursor.fetchall()] if cursor.description else []


def test_each_user_s_files_on_hdfs_are_owned_by_that_user_and_hdfs_refuses_another(
    doas_gateway: DoAsGateway, kerberized_hdfs: KerberizedHdfs, kdc: Kdc
) -> None:
    for user in PASSWORDS:
        with _cursor(doas_gateway, user) as cursor:
            _rows(cursor, "CREATE DATABASE IF NOT EXISTS doas")
            location = f"{kerberized_hdfs.uri}{WAREHOUSE}/{user}/t"
            _rows(cursor, f"CREATE TABLE doas.{user}_t (item STRING, n INT) USING parquet LOCATION '{location}'")
            _rows(cursor, f"INSERT INTO doas.{user}_t VALUES ('{user}-1', 1), ('{user}-2', 2)")
            assert _rows(cursor, f"SELECT item, n FROM doas.{user}_t ORDER BY n") == [
                (f"{user}-1", 1),
                (f"{user}-2", 2),
            ]

    hdfs_principal, hdfs_keytab = kerberized_hdfs.namenode_principal, kerberized_hdfs.superuser_keytab
    for user in PASSWORDS:
        owners = kerberized_hdfs.owners(hdfs_principal, hdfs_keytab, f"{WAREHOUSE}/{user}/t")
        assert any("/part-" in path for path in owners) and "_SUCCESS" in {p.rsplit("/", 1)[1] for p in owners}
        assert set(owners.values()) == {user}, owners

    with _cursor(doas_gateway, "bob") as bob, pytest.raises(OperationalError) as refused:
        _rows(bob, "INSERT INTO doas.alice_t VALUES ('bob-1', 1)")
    message = str(refused.value)
    assert f"HDFS refused WRITE access on {WAREHOUSE}/alice/t (owner alice" in message and "to user bob" in message
    with _cursor(doas_gateway, "alice") as alice:
        assert _rows(alice, "SELECT count(*) FROM doas.alice_t") == [(2,)], "nothing of bob's landed"


def test_a_streaming_insert_commits_partitions_whose_files_are_the_user_s(
    doas_gateway: DoAsGateway,
    kerberized_hdfs: KerberizedHdfs,
    kerberized_hdfs_metastore: MetastoreSettings,
    kdc: Kdc,
    tmp_path: Path,
) -> None:
    write_hourly_events(tmp_path / "in", datetime(2026, 11, 22), hours=2, rows_per_hour=10)
    table = f"{kerberized_hdfs.uri}{WAREHOUSE}/alice/events"
    with _cursor(doas_gateway, "alice") as cursor:
        _rows(cursor, "CREATE DATABASE IF NOT EXISTS doas")
        _rows(
            cursor,
            "CREATE TABLE doas.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)) WITH ("
            f"'connector' = 'filesystem', 'path' = '{(tmp_path / 'in').as_uri()}', 'format' = 'parquet')",
        )
        _rows(
            cursor,
            "CREATE TABLE doas.events (id BIGINT, dt STRING, hr STRING) PARTITIONED BY (dt, hr) WITH ("
            f"'connector' = 'filesystem', 'path' = '{table}', 'format' = 'parquet', "
            "'sink.partition-commit.policy.kind' = 'metastore,success-file')",
        )
        _rows(
            cursor,
            "INSERT INTO doas.events SELECT id, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM doas.src",
        )

    expected = ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
    principal, keytab = kdc.principal("alice")
    with MetastoreClient(
        kerberized_hdfs_metastore.uri, auth=MetastoreAuth(True, METASTORE_PRINCIPAL, principal, str(keytab))
    ) as hms:
        wait_for(lambda: sorted(hms.get_partition_names("doas", "events")) == expected, 300, what="two hours committed")
    owners = kerberized_hdfs.owners(principal, keytab, f"{WAREHOUSE}/alice/events")
    for partition in expected:
        names = {path.rsplit("/", 1)[1] for path in owners if f"/{partition}/" in path}
        assert "_SUCCESS" in names and any(name.startswith("part-") for name in names), (partition, owners)
    assert set(owners.values()) == {"alice"}, owners
