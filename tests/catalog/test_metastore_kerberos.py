"""A kerberized metastore (SASL GSSAPI, a real MIT KDC on loopback): sqlext's own client logs in with a keytab
or the ticket cache; a client without a ticket, or without SASL, is refused with what to set."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.metastore import kerberos, launcher
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.catalog.metastore.kerberos import KerberosError, MetastoreAuth
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.catalog.metastore.versions import HiveVersion
from sqlext.errors import MetastoreError, MetastoreUnavailableError
from tests.support.kdc import Kdc
from tests.support.streams import write_hourly_events
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.hms, pytest.mark.kerberos]

SERVICE = "hive/_HOST@SQLEXT.TEST"


def _user(kdc: Kdc, name: str = "alice") -> MetastoreAuth:
    principal, keytab = kdc.principal(name)
    return MetastoreAuth(True, SERVICE, principal, str(keytab))


def _partition(table: ttypes.Table, day: str) -> ttypes.Partition:
    sd = ttypes.StorageDescriptor(**{**table.sd.__dict__, "location": f"{table.sd.location}/dt={day}"})
    return ttypes.Partition(values=[day], dbName=table.dbName, tableName=table.tableName, sd=sd, parameters={})


def _table(location: Path) -> ttypes.Table:
    sd = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("id", "bigint", None)],
        location=location.as_uri(),
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=ttypes.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", parameters={}
        ),
        parameters={},
    )
    return ttypes.Table(
        tableName="events",
        dbName="secured",
        sd=sd,
        partitionKeys=[ttypes.FieldSchema("dt", "string", None)],
        parameters={},
        tableType="EXTERNAL_TABLE",
    )


def test_a_keytab_login_creates_a_table_and_registers_partitions(
    kerberized_metastore: MetastoreSettings, kdc: Kdc, tmp_path: Path
) -> None:
    with MetastoreClient(kerberized_metastore.uri, auth=_user(kdc)) as client:
        client.create_database("secured", location=(tmp_path / "db").as_uri())
        table = _table(tmp_path / "events")
        client.create_table(table)
        client.add_partitions("secured", "events", [_partition(table, d) for d in ("2026-12-01", "2026-12-02")])

        assert client.get_partition_names("secured", "events") == ["dt=2026-12-01", "dt=2026-12-02"]

    with MetastoreClient(kerberized_metastore.uri, auth=_user(kdc, "carol")) as other:
        partitions = other.get_partitions_by_names("secured", "events", ["dt=2026-12-02"])
    assert [p.sd.location.removeprefix("file:") for p in partitions] == [f"{tmp_path}/events/dt=2026-12-02"]


def test_the_ticket_cache_login_is_used_without_a_keytab(
    kerberized_metastore: MetastoreSettings, kdc: Kdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    principal, keytab = kdc.principal("bob")
    ccache = kdc.kinit(principal, keytab, tmp_path / "bob.ccache")
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{ccache}")

    with MetastoreClient(kerberized_metastore.uri, auth=MetastoreAuth(True, SERVICE)) as client:
        assert "default" in client.get_all_databases()


def test_a_client_without_a_ticket_is_told_to_kinit_or_set_a_keytab(
    kerberized_metastore: MetastoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'empty.ccache'}")

    with (
        pytest.raises(KerberosError) as raised,
        MetastoreClient(kerberized_metastore.uri, auth=MetastoreAuth(True, SERVICE)) as c,
    ):
        c.get_all_databases()

    message = str(raised.value)
    assert "there is no Kerberos ticket" in message
    assert "kinit" in message and "spark.kerberos.keytab" in message
    assert "TTransportException" not in message


def test_a_client_without_sasl_is_refused_and_told_to_enable_it(kerberized_metastore: MetastoreSettings) -> None:
    retry = RetryPolicy(deadline_s=1.0, initial_backoff_s=0.2)
    with (
        pytest.raises(MetastoreUnavailableError) as raised,
        MetastoreClient(kerberized_metastore.uri, retry, auth=MetastoreAuth()) as client,
    ):
        client.get_all_databases()

    assert kerberos.SASL_ENABLED in str(raised.value)


REPO = Path(__file__).resolve().parents[2]


def _sql(input_dir: Path, sink: Path) -> str:
    return f"""
CREATE DATABASE IF NOT EXISTS kdb;
CREATE TABLE IF NOT EXISTS kdb.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', 'format' = 'parquet');
CREATE TABLE IF NOT EXISTS kdb.events (id BIGINT, ts TIMESTAMP(3), dt STRING, hr STRING)
PARTITIONED BY (dt, hr)
WITH ('connector' = 'filesystem', 'path' = '{sink.as_uri()}', 'format' = 'parquet',
      'sink.partition-commit.policy.kind' = 'metastore,success-file');
INSERT INTO kdb.events SELECT id, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM kdb.src;
"""


def kerberos_conf(metastore_uri: str, principal: str, keytab: Path) -> list[str]:
    """``sqlext run`` flags for a kerberized metastore with a keytab login."""
    conf = {
        "spark.sqlext.metastore.uris": metastore_uri,
        kerberos.SASL_ENABLED: "true",
        kerberos.SERVER_PRINCIPAL: SERVICE,
        kerberos.CLIENT_PRINCIPAL: principal,
        kerberos.CLIENT_KEYTAB: str(keytab),
    }
    return [flag for key, value in conf.items() for flag in ("--conf", f"{key}={value}")]


@pytest.mark.spark
@pytest.mark.slow
def test_an_insert_commits_partitions_to_a_kerberized_metastore_with_a_keytab(
    kerberized_metastore: MetastoreSettings, kdc: Kdc, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=3, rows_per_hour=10)
    job = tmp_path / "job.sql"
    job.write_text(_sql(tmp_path / "input", tmp_path / "events"))
    principal, keytab = kdc.principal("etl")
    # No ticket cache: the keytab is the only login, for sqlext's client and for Spark's Hive client
    # (CREATE DATABASE and the source's CREATE TABLE metadata are Spark's calls).
    env = {
        **os.environ,
        "SQLEXT_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(REPO),
        "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sqlext.cli",
            "run",
            str(job),
            *kerberos_conf(kerberized_metastore.uri, principal, keytab),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )

    assert done.returncode == 0, done.stderr[-4000:]
    with MetastoreClient(kerberized_metastore.uri, auth=_user(kdc)) as client:
        assert sorted(client.get_partition_names("kdb", "events")) == [
            f"dt=2026-11-22/hr={hour:02d}" for hour in range(3)
        ]
        assert "kdb" in client.get_all_databases()
    assert all((tmp_path / "events" / "dt=2026-11-22" / f"hr={h:02d}" / "_SUCCESS").is_file() for h in range(3))


def _refusal(uri: str, auth: MetastoreAuth) -> str:
    with pytest.raises(KerberosError) as raised, MetastoreClient(uri, RetryPolicy(deadline_s=5.0), auth) as client:
        client.get_all_databases()
    message = str(raised.value)
    assert "TTransportException" not in message and "Traceback" not in message
    return message


def test_a_metastore_principal_the_kdc_does_not_know_names_the_setting(
    kerberized_metastore: MetastoreSettings, kdc: Kdc
) -> None:
    # _HOST becomes "localhost": hive/localhost is no principal of the realm.
    message = _refusal(kerberized_metastore.uri.replace("127.0.0.1", "localhost"), _user(kdc))

    assert "hive/localhost@SQLEXT.TEST" in message
    assert "the server principal is not known to the KDC" in message
    assert f"set {kerberos.SERVER_PRINCIPAL}" in message


def test_the_principal_of_another_service_is_refused_by_the_metastore(
    kerberized_metastore: MetastoreSettings, kdc: Kdc
) -> None:
    other, _ = kdc.principal("spark/127.0.0.1")
    user = _user(kdc)
    auth = MetastoreAuth(True, other, user.client_principal, user.client_keytab)

    message = _refusal(kerberized_metastore.uri, auth)

    assert "the metastore at 127.0.0.1 refused the SASL GSSAPI login" in message
    assert "GSS initiate failed" in message
    assert kerberos.SERVER_PRINCIPAL in message and "hive.metastore.kerberos.principal" in message


def test_a_keytab_without_the_principals_key_says_so(kerberized_metastore: MetastoreSettings, kdc: Kdc) -> None:
    _, alice_keytab = kdc.principal("alice")
    frank, _ = kdc.principal("frank")

    message = _refusal(kerberized_metastore.uri, MetastoreAuth(True, SERVICE, frank, str(alice_keytab)))

    assert f"the keytab holds no key for {frank}" in message
    assert f"klist -kt {alice_keytab}" in message and "spark.kerberos.principal" in message


def test_an_outdated_keytab_is_named_after_the_key_was_rotated(
    kerberized_metastore: MetastoreSettings, kdc: Kdc
) -> None:
    principal, keytab = kdc.principal("rotated")
    kdc.kadmin(f"cpw -randkey {principal}")  # the keytab still holds the old key

    message = _refusal(kerberized_metastore.uri, MetastoreAuth(True, SERVICE, principal, str(keytab)))

    assert "the keytab is outdated" in message
    assert "make a new keytab" in message and "spark.kerberos.keytab" in message


def test_an_expired_principal_is_named(kerberized_metastore: MetastoreSettings, kdc: Kdc) -> None:
    principal, keytab = kdc.principal("expired")
    kdc.kadmin(f'modprinc -expire "2020-01-01" {principal}')

    message = _refusal(kerberized_metastore.uri, MetastoreAuth(True, SERVICE, principal, str(keytab)))

    assert f"principal {principal} with keytab {keytab}" in message
    assert "the client principal has expired in the KDC's database" in message


def test_clock_skew_is_named_with_what_to_do() -> None:
    """The KDC answers a request from a clock more than 5 minutes off with KRB5KRB_AP_ERR_SKEW; this machine's
    clock cannot be moved in a test, so the error is GSSAPI's with that minor code."""
    gssapi = pytest.importorskip("gssapi")

    error = gssapi.raw.misc.GSSError(851968, -1765328347 + 2**32)  # GSS_S_FAILURE, KRB5KRB_AP_ERR_SKEW
    auth = MetastoreAuth(True, SERVICE, "etl@SQLEXT.TEST", "/etc/etl.keytab")

    message = kerberos.explain(error, auth, "log in")

    assert "clock skew: this machine's clock and the KDC's differ by more than 5 minutes" in message
    assert "NTP" in message


#: The streaming test's tickets: a few lifetimes pass while its insert runs. Short, as the test lasts 3.5 of
#: them: Hadoop re-logs in at 80% of a ticket's life (24 s; not within 5 s of the last login, as the test sets)
#: and MIT's keytab login at half of it, so each lifetime still sees a login of both.
SHORT_LIFE_S = 30
#: Seconds between the streaming test's input files: over 10 hours of input in the 3.5 lifetimes.
PACE_S = 10


def _partition_names(hms: MetastoreClient) -> list[str]:
    if hms.get_table("kstream", "events") is None:  # not created yet by the run
        return []
    return sorted(hms.get_partition_names("kstream", "events"))


def _as_requests(kdc: Kdc, principal: str) -> int:
    """Initial tickets (TGTs) the KDC issued to ``principal``: each login and each re-login is one."""
    return sum(1 for line in kdc.log_file.read_text().splitlines() if "AS_REQ" in line and f" {principal} for" in line)


@pytest.mark.spark
@pytest.mark.slow
def test_a_streaming_insert_keeps_committing_over_several_ticket_lifetimes(
    kerberized_metastore: MetastoreSettings, kdc: Kdc, tmp_path: Path
) -> None:
    principal, keytab = kdc.principal("streamer", max_life=f"{SHORT_LIFE_S} seconds")
    input_dir, sink = tmp_path / "input", tmp_path / "events"
    next_id = write_hourly_events(input_dir, datetime(2026, 11, 22), hours=1, rows_per_hour=10)
    job = tmp_path / "stream.sql"
    job.write_text(
        _sql(input_dir, sink)
        .replace("'format' = 'parquet');", "'format' = 'parquet', 'source.monitor-interval' = '1 s');", 1)
        .replace("kdb.", "kstream.")
        .replace("DATABASE IF NOT EXISTS kdb", "DATABASE IF NOT EXISTS kstream")
    )
    env = {
        **os.environ,
        "SQLEXT_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(REPO),
        "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}",
    }
    flags = kerberos_conf(kerberized_metastore.uri, principal, keytab)
    # Hadoop re-logs in at 80% of a ticket's life, but not within a minute of the last login unless told.
    flags += ["--conf", "spark.hadoop.hadoop.kerberos.min.seconds.before.relogin=5"]
    log_file = tmp_path / "run.log"
    began = time.monotonic()
    with log_file.open("w") as err, MetastoreClient(kerberized_metastore.uri, auth=_user(kdc)) as hms:
        run = subprocess.Popen([sys.executable, "-m", "sqlext.cli", "run", str(job), *flags], env=env, stderr=err)
        try:
            hours = 0
            committed_at: list[float] = []
            while time.monotonic() - began < 3.5 * SHORT_LIFE_S or hours < 4:
                expected = [f"dt=2026-11-22/hr={h:02d}" for h in range(hours + 1)]
                try:
                    wait_for(
                        lambda names=expected: _partition_names(hms) == names or run.poll() is not None,
                        240,
                        what=f"partition hr={hours:02d}",
                    )
                except AssertionError as timed_out:
                    raise AssertionError(f"{timed_out}; the run's log:\n{log_file.read_text()[-6000:]}") from None
                assert run.poll() is None, f"the insert stopped:\n{log_file.read_text()[-6000:]}"
                committed_at.append(time.monotonic() - began)
                hours += 1
                next_id = write_hourly_events(
                    input_dir, datetime(2026, 11, 22, hours), hours=1, rows_per_hour=10, first_id=next_id
                )
                # The test is about time passing: the next hour comes every PACE_S, whatever the commits' speed.
                next_at = began + hours * PACE_S
                wait_for(lambda at=next_at: time.monotonic() >= at, PACE_S + 5, what="the next hour's time")
        finally:
            run.send_signal(signal.SIGTERM)
            run.wait(timeout=120)

    assert committed_at[-1] > 3 * SHORT_LIFE_S, committed_at
    assert _as_requests(kdc, principal) >= 3, kdc.log_file.read_text()[-3000:]


@pytest.mark.jars
@pytest.mark.parametrize("version", [HiveVersion.V3_1, HiveVersion.V4], ids=["hive3.1", "hive4"])
def test_a_kerberized_metastore_of_another_version_registers_partitions(
    version: HiveVersion, kdc: Kdc, tmp_path: Path
) -> None:
    principal, keytab = kdc.principal("hive/127.0.0.1")
    settings = MetastoreSettings(
        port=free_port(), home=tmp_path / "hms", version=version, kerberos_principal=principal, kerberos_keytab=keytab
    )
    launcher.start(settings)
    try:
        with MetastoreClient(settings.uri, auth=_user(kdc)) as client:
            client.create_database("secured", location=(tmp_path / "db").as_uri())
            table = _table(tmp_path / "events")
            client.create_table(table)
            client.add_partitions("secured", "events", [_partition(table, "2026-12-01")])
            assert client.get_partition_names("secured", "events") == ["dt=2026-12-01"]
        retry = RetryPolicy(deadline_s=1.0)
        with pytest.raises(MetastoreUnavailableError), MetastoreClient(settings.uri, retry, MetastoreAuth()) as plain:
            plain.get_all_databases()
    finally:
        launcher.stop(settings)


def test_sqlext_metastore_start_with_a_principal_and_keytab_takes_kerberos_logins_only(
    kdc: Kdc, tmp_path: Path
) -> None:
    principal, keytab = kdc.principal("hive/127.0.0.1")
    port, home = free_port(), tmp_path / "hms"
    flags = ["--port", str(port), "--home", str(home)]
    env = {**os.environ, "SQLEXT_HOME": str(tmp_path), "PYTHONPATH": str(REPO)}

    def sqlext(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "sqlext.cli", "metastore", *args, *flags]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)

    started = sqlext("start", "--kerberos-principal", principal, "--kerberos-keytab", str(keytab))
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert f"thrift://127.0.0.1:{port}" in started.stdout
        site = (home / "conf" / "hive-site.xml").read_text()
        assert "<name>hive.metastore.sasl.enabled</name><value>true</value>" in site
        assert f"<name>hive.metastore.kerberos.principal</name><value>{principal}</value>" in site
        assert (
            "<name>hadoop.security.authentication</name><value>kerberos</value>"
            in (home / "conf" / "core-site.xml").read_text()
        )
        status = sqlext("status", "--kerberos-principal", principal, "--kerberos-keytab", str(keytab))
        assert status.returncode == 0 and "running at" in status.stdout, status.stdout + status.stderr
        with MetastoreClient(f"thrift://127.0.0.1:{port}", auth=_user(kdc)) as client:
            assert "default" in client.get_all_databases()
        with (
            pytest.raises(MetastoreUnavailableError),
            MetastoreClient(f"thrift://127.0.0.1:{port}", RetryPolicy(deadline_s=1.0), MetastoreAuth()) as plain,
        ):
            plain.get_all_databases()
    finally:
        stopped = sqlext("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert not launcher.status(MetastoreSettings(port=port, home=home)).answering


def test_a_principal_without_a_keytab_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(MetastoreError, match="needs both its principal and its keytab"):
        MetastoreSettings(port=free_port(), home=tmp_path, kerberos_principal="hive/_HOST@R")
    with pytest.raises(MetastoreError, match=r"keytab .*missing\.keytab does not exist"):
        MetastoreSettings(
            port=free_port(),
            home=tmp_path,
            kerberos_principal="hive/_HOST@R",
            kerberos_keytab=tmp_path / "missing.keytab",
        )


@pytest.mark.spark
@pytest.mark.slow
def test_a_streaming_read_of_committed_partitions_lists_them_in_the_kerberized_metastore(
    kerberized_metastore: MetastoreSettings, kdc: Kdc, tmp_path: Path
) -> None:
    """The streaming source asks the metastore for the table's partitions from Spark's Python workers, which
    have no ticket cache: they log in with the session's keytab (carried in the source's spec)."""
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=3, rows_per_hour=10)
    principal, keytab = kdc.principal("etl")
    pairs = kerberos_conf(kerberized_metastore.uri, principal, keytab)[1::2]  # the KEY=VALUE of each --conf
    result = tmp_path / "result.json"
    command = [sys.executable, "-m", "tests.support.kerberized_read_job", kerberized_metastore.uri, str(tmp_path)]
    command += [str(tmp_path / "input"), str(result), *pairs]
    env = {**os.environ, "PYTHONPATH": str(REPO), "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}"}
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0 and result.is_file(), done.stderr[-4000:]
    outcome = json.loads(result.read_text())
    assert outcome["error"] is None, outcome["error"]
    assert outcome["expected"] == 30
    assert outcome["ids"] == list(range(30)), "every committed row read once"
    with MetastoreClient(kerberized_metastore.uri, auth=_user(kdc)) as client:
        assert sorted(client.get_partition_names("kread", "events")) == [f"dt=2026-11-22/hr={h:02d}" for h in range(3)]
