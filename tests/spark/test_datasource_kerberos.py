"""``format("sqlext")`` into a table of a kerberized metastore: Spark runs the data source's writer set-up and
each batch's commit in Python workers of its own, which get the session's Kerberos login through the data
source (:mod:`sqlext.catalog.metastore.security`), not from a session of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from sqlext.catalog.metastore import kerberos, security, tls
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.kerberos import MetastoreAuth
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.kdc import Kdc
from tests.support.streams import write_hourly_events
from tests.support.tables import create_in_hms, events_table

REPO = Path(__file__).resolve().parents[2]
SERVICE = "hive/_HOST@SQLEXT.TEST"


@pytest.mark.hms
@pytest.mark.kerberos
@pytest.mark.spark
@pytest.mark.slow
def test_format_sqlext_commits_partitions_to_a_kerberized_metastore(
    kerberized_metastore: MetastoreSettings, kdc: Kdc, tmp_path: Path
) -> None:
    principal, keytab = kdc.principal("etl")
    auth = MetastoreAuth(True, SERVICE, principal, str(keytab))
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=2, rows_per_hour=5)
    table = events_table("ds_krb", "events", tmp_path / "table")
    with MetastoreClient(kerberized_metastore.uri, auth=auth) as client:
        create_in_hms(client, table)
    conf = {
        kerberos.SASL_ENABLED: "true",
        kerberos.SERVER_PRINCIPAL: SERVICE,
        kerberos.CLIENT_PRINCIPAL: principal,
        kerberos.CLIENT_KEYTAB: str(keytab),
        "spark.sqlext.metastore.retry.deadline": "20 s",  # a worker without the login fails in 20 s, not 60
    }
    pairs = [f"{key}={value}" for key, value in conf.items()]
    command = [sys.executable, "-m", "tests.support.datasource_job", kerberized_metastore.uri, "ds_krb.events"]
    command += [str(tmp_path / "input"), str(tmp_path / "checkpoint"), *pairs]
    # No ticket cache: the keytab is the only login the workers can have.
    env = {**os.environ, "PYTHONPATH": str(REPO), "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}"}
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr[-4000:]
    with MetastoreClient(kerberized_metastore.uri, auth=auth) as client:
        assert sorted(client.get_partition_names("ds_krb", "events")) == ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]


def test_the_security_settings_travel_and_are_adopted(tmp_path: Path) -> None:
    keytab = tmp_path / "etl.keytab"
    keytab.write_bytes(b"")
    values = {
        kerberos.SASL_ENABLED: "true",
        kerberos.SERVER_PRINCIPAL: SERVICE,
        kerberos.CLIENT_PRINCIPAL: "etl@SQLEXT.TEST",
        kerberos.CLIENT_KEYTAB: str(keytab),
        tls.USE_SSL: "true",
        "spark.sqlext.metastore.uris": "thrift://h:9083",
    }
    carried = security.settings_of(values)
    assert "spark.sqlext.metastore.uris" not in carried
    before = (kerberos.current(), tls.current())
    try:
        security.adopt(carried)
        assert kerberos.current() == MetastoreAuth(True, SERVICE, "etl@SQLEXT.TEST", str(keytab))
        assert tls.current().enabled
        assert security.settings_of(security.current()) == {**carried, tls.TRUSTSTORE_TYPE: "PKCS12"}
    finally:
        kerberos.configure(before[0])
        tls.configure(before[1])


def test_the_streaming_sources_spec_carries_the_security_settings() -> None:
    from sqlext.connectors.filesystem.streaming.spec import SourceSpec

    carried = {kerberos.SASL_ENABLED: "true", kerberos.SERVER_PRINCIPAL: SERVICE}
    table = events_table("db", "t", Path("/tmp/t"))
    spec = SourceSpec.of_table(table, "thrift://h:9083", {}, carried)
    assert SourceSpec.from_json(spec.to_json()).metastore_security == carried
    older = spec.to_json().replace(
        ', "metastore_security": {"spark.sqlext.metastore.sasl.enabled": "true", '
        f'"spark.sqlext.metastore.kerberos.principal": "{SERVICE}"}}',
        "",
    )
    assert "metastore_security" not in older
    assert SourceSpec.from_json(older).metastore_security == {}
