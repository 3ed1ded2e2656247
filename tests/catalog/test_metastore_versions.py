"""`sqlext metastore start|status|stop --version 3.1|4`: a standalone Hive metastore of that version, fetched
from Maven Central, on loopback, with its Derby schema (Hive's transaction tables included) created on first start,
serving sqlext's client."""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.metastore import launcher, versions
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.catalog.metastore.launcher import Backend, MetastoreSettings
from sqlext.catalog.metastore.versions import HiveVersion
from sqlext.errors import MetastoreError
from sqlext.runtime import process
from sqlext.table import Column, TableDefinition, TableIdentifier
from tests.support.hms_locks import assert_locks_are_served
from tests.support.services import VERSIONS, BackendMetastore, PostgresServer
from tests.support.sockets import listeners_on, listening
from tests.support.tables import create_in_hms
from tests.support.waiting import free_port

pytestmark = pytest.mark.hms


def _sqlext(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sqlext.cli", *args], capture_output=True, text=True, env=dict(os.environ), timeout=900
    )


@pytest.mark.jars
@pytest.mark.parametrize("version", [HiveVersion.V3_1, HiveVersion.V4], ids=["hive3.1", "hive4"])
def test_start_serves_the_client_on_loopback_and_stop_leaves_nothing_listening(
    version: HiveVersion, tmp_path: Path
) -> None:
    port, home = free_port(), tmp_path / "hms"
    flags = ("--port", str(port), "--home", str(home))  # what finds it; only start takes how it runs

    started = _sqlext("metastore", "start", "--version", version.value, *flags)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert started.stdout.strip() == f"thrift://127.0.0.1:{port}"
        assert f"Hive Metastore {version.value} started" in started.stderr
        settings = MetastoreSettings(port=port, home=home, version=version)
        pid = launcher.status(settings).pid
        assert pid is not None
        assert {address for address, p in listening(pid) if p == port} == {ipaddress.IPv4Address("127.0.0.1")}
        assert "running at" in _sqlext("metastore", "status", *flags).stdout

        with MetastoreClient(settings.uri) as client:
            client.create_database("versioned", location=(tmp_path / "versioned.db").as_uri())
            columns = (Column("id", "BIGINT"), Column("p", "STRING"))
            options = {"connector": "filesystem", "path": (tmp_path / "t").as_uri(), "format": "parquet"}
            create_in_hms(client, TableDefinition(TableIdentifier("versioned", "t"), columns, options, ("p",)))
            assert "versioned" in client.get_all_databases()
            assert client.get_all_tables("versioned") == ["t"]
            table = client.get_table("versioned", "t")
            assert table is not None and table.tableType == "EXTERNAL_TABLE"
            assert [c.name for c in table.partitionKeys] == ["p"]
            assert_locks_are_served(client, "versioned", "t")  # Hive's transaction tables were created
    finally:
        stopped = _sqlext("metastore", "stop", *flags)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert process.wait_for_exit(pid, 30)
    assert listeners_on(port) == set()
    assert (home / "hive-version").read_text().strip() == version.value


@pytest.mark.jars
@pytest.mark.postgres
@pytest.mark.parametrize("version", [HiveVersion.V3_1, HiveVersion.V4], ids=["hive3.1", "hive4"])
def test_postgres_backed_version_serves_lock_calls(
    version: HiveVersion, postgres: PostgresServer, tmp_path: Path
) -> None:
    """Hive's transaction tables on PostgreSQL: unquoted names for 3.1's TxnHandler, quoted ones for 4's."""
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path / "hms",
        backend=Backend.POSTGRES,
        jdbc_url=postgres.new_database(),
        user=postgres.user,
        password=postgres.password,
        version=version,
    )
    launcher.start(settings)
    try:
        with MetastoreClient(settings.uri) as client:
            client.create_database("pg_locks", location=(tmp_path / "pg_locks.db").as_uri())
            options = {"connector": "filesystem", "path": (tmp_path / "t").as_uri(), "format": "parquet"}
            create_in_hms(client, TableDefinition(TableIdentifier("pg_locks", "t"), (Column("id", "BIGINT"),), options))
            assert_locks_are_served(client, "pg_locks", "t")
    finally:
        launcher.stop(settings)
    assert launcher._create_txn_tables(settings, launcher.find_java()) == ()  # a database that has them: as it is


def test_a_home_keeps_the_version_that_created_its_database(tmp_path: Path) -> None:
    home = tmp_path / "hms"
    (home / "metastore_db").mkdir(parents=True)  # made by an sqlext that only ran Hive 2.3

    with pytest.raises(MetastoreError, match=r"holds a Hive 2\.3 metastore database; Hive 4 cannot use it"):
        launcher.start(MetastoreSettings(port=free_port(), home=home, version=HiveVersion.V4))
    unknown = re.escape("Unknown Hive Metastore version '5'. Supported versions: 2.3, 3.1, 4.")
    with pytest.raises(MetastoreError, match=unknown):
        versions.release("5")


def test_a_home_records_the_hive_release_that_created_it_and_refuses_another_schema(tmp_path: Path) -> None:
    home = tmp_path / "hms"
    versions.check_home(home, HiveVersion.V4)
    assert (home / "hive-version").read_text() == "4\n"
    assert (home / "hive-release").read_text() == "4.0.1\n"
    (home / "hive-release").write_text("4.0.3\n")  # another release of the same schema
    versions.check_home(home, HiveVersion.V4)
    (home / "hive-release").write_text("4.1.0\n")  # written by a sqlext that runs a Hive with another schema
    with pytest.raises(MetastoreError, match=r"holds a database of Hive 4\.1\.0; this sqlext runs Hive 4\.0\.1"):
        versions.check_home(home, HiveVersion.V4)
    assert (home / "hive-release").read_text() == "4.1.0\n"
    (home / "hive-release").unlink()  # a home from before the release was recorded: the release sqlext ran
    versions.check_home(home, HiveVersion.V4)


#: A client that gives up at once: a metastore that drops the connection fails the call, not a minute of retries.
_NO_RETRY = RetryPolicy(deadline_s=0.0)


@pytest.mark.parametrize("version_metastore", VERSIONS, indirect=True)
def test_every_version_answers_the_fields_of_an_avro_table(version_metastore: BackendMetastore, tmp_path: Path) -> None:
    """Trino asks for an AvroSerDe table's columns by ``get_fields``; the metastore answers with the columns it
    stores (Hive 2.3 dropped the connection, 3.1 and 4 failed: they ran the SerDe to read them)."""
    columns = (Column("id", "BIGINT"), Column("amount", "DECIMAL(10, 2)"), Column("at", "TIMESTAMP(3)"))
    options = {"connector": "filesystem", "path": (tmp_path / "t").as_uri(), "format": "avro"}
    with MetastoreClient(version_metastore.uri, _NO_RETRY) as client:
        create_in_hms(client, TableDefinition(TableIdentifier("avro_fields", "t"), columns, options))
        table = client.get_table("avro_fields", "t")
        assert table is not None and table.sd.serdeInfo.serializationLib.endswith(".AvroSerDe")
        stored = [(c.name, c.type) for c in table.sd.cols]
        assert stored == [("id", "bigint"), ("amount", "decimal(10,2)"), ("at", "timestamp")]
        for call in ("get_fields", "get_schema"):
            assert [(c.name, c.type) for c in client.call(call, "avro_fields", "t")] == stored, call


def test_hive_2_3_runs_a_serde_it_does_not_take_the_columns_of(hms: MetastoreClient, tmp_path: Path) -> None:
    """Hive 2.3 answers ``get_fields`` of a table whose SerDe is not among those it takes the stored columns of
    by running the SerDe (Trino asks so for an ``OpenCSVSerde`` table): that runs Hive's ``StringInternUtils``,
    which needs ``java.net`` opened on Java 17 (without, the Thrift worker died and dropped the connection)."""
    sd = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("a", "string", None), ttypes.FieldSchema("b", "string", None)],
        location=(tmp_path / "csv").as_uri(),
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=ttypes.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.OpenCSVSerde", parameters={}),
    )
    hms.create_database("serde_fields", location=(tmp_path / "serde_fields.db").as_uri())
    table = ttypes.Table(tableName="t", dbName="serde_fields", sd=sd, partitionKeys=[], tableType="EXTERNAL_TABLE")
    hms.create_table(table)
    with MetastoreClient(hms.uri, _NO_RETRY) as client:
        fields = client.call("get_fields", "serde_fields", "t")
    # The SerDe's own answer: OpenCSVSerde reads every column as a string, "from deserializer".
    assert [(c.name, c.type, c.comment) for c in fields] == [
        ("a", "string", "from deserializer"),
        ("b", "string", "from deserializer"),
    ]
