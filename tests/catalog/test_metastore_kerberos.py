"""A kerberized metastore (SASL GSSAPI, a real MIT KDC on loopback): sqlext's own client logs in with a keytab
or the ticket cache; a client without a ticket, or without SASL, is refused with what to set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.metastore import kerberos, launcher
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.catalog.metastore.kerberos import KerberosError, MetastoreAuth
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.errors import MetastoreUnavailableError
from tests.support.kdc import Kdc
from tests.support.waiting import free_port

pytestmark = [pytest.mark.hms, pytest.mark.kerberos]

SERVICE = "hive/_HOST@SQLEXT.TEST"


@pytest.fixture(scope="module")
def kerberized(kdc: Kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetastoreSettings]:
    """The embedded Hive 2.3 metastore taking Kerberos logins only, as hive/127.0.0.1."""
    principal, keytab = kdc.principal("hive/127.0.0.1")
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path_factory.mktemp("kerberized-hms"),
        kerberos_principal=principal,
        kerberos_keytab=keytab,
    )
    launcher.start(settings)
    yield settings
    launcher.stop(settings)


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
    kerberized: MetastoreSettings, kdc: Kdc, tmp_path: Path
) -> None:
    with MetastoreClient(kerberized.uri, auth=_user(kdc)) as client:
        client.create_database("secured", location=(tmp_path / "db").as_uri())
        table = _table(tmp_path / "events")
        client.create_table(table)
        client.add_partitions("secured", "events", [_partition(table, d) for d in ("2026-12-01", "2026-12-02")])

        assert client.get_partition_names("secured", "events") == ["dt=2026-12-01", "dt=2026-12-02"]

    with MetastoreClient(kerberized.uri, auth=_user(kdc, "carol")) as other:
        partitions = other.get_partitions_by_names("secured", "events", ["dt=2026-12-02"])
    assert [p.sd.location.removeprefix("file:") for p in partitions] == [f"{tmp_path}/events/dt=2026-12-02"]


def test_the_ticket_cache_login_is_used_without_a_keytab(
    kerberized: MetastoreSettings, kdc: Kdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    principal, keytab = kdc.principal("bob")
    ccache = kdc.kinit(principal, keytab, tmp_path / "bob.ccache")
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{ccache}")

    with MetastoreClient(kerberized.uri, auth=MetastoreAuth(True, SERVICE)) as client:
        assert "default" in client.get_all_databases()


def test_a_client_without_a_ticket_is_told_to_kinit_or_set_a_keytab(
    kerberized: MetastoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'empty.ccache'}")

    with (
        pytest.raises(KerberosError) as raised,
        MetastoreClient(kerberized.uri, auth=MetastoreAuth(True, SERVICE)) as c,
    ):
        c.get_all_databases()

    message = str(raised.value)
    assert "there is no Kerberos ticket" in message
    assert "kinit" in message and "spark.kerberos.keytab" in message
    assert "TTransportException" not in message


def test_a_client_without_sasl_is_refused_and_told_to_enable_it(kerberized: MetastoreSettings) -> None:
    retry = RetryPolicy(deadline_s=1.0, initial_backoff_s=0.2)
    with (
        pytest.raises(MetastoreUnavailableError) as raised,
        MetastoreClient(kerberized.uri, retry, auth=MetastoreAuth()) as client,
    ):
        client.get_all_databases()

    assert kerberos.SASL_ENABLED in str(raised.value)
