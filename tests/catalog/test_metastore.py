"""The embedded Hive Metastore launcher and the client wrapper, against real metastore processes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.Thrift import TApplicationException

from sqlext.catalog.metastore import launcher, txn_tables
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.catalog.metastore.launcher import Backend, MetastoreSettings
from sqlext.errors import JavaNotFoundError, MetastoreError, MetastoreUnavailableError
from sqlext.runtime import process
from sqlext.runtime.paths import pyspark_jars_dir
from sqlext.table import Column, TableDefinition, TableIdentifier
from tests.support.hms_locks import assert_locks_are_served, table_lock
from tests.support.services import PostgresServer, spark_own_sql
from tests.support.tables import create_in_hms
from tests.support.waiting import free_port

pytestmark = pytest.mark.hms


def _create_demo_table(client: MetastoreClient, database: str, location: Path) -> None:
    """``database.events (user_id STRING, amount DOUBLE) PARTITIONED BY (dt, hr)``, external parquet."""
    client.create_database(database, location=(location / f"{database}.db").as_uri())
    columns = tuple(
        Column(n, t) for n, t in (("user_id", "STRING"), ("amount", "DOUBLE"), ("dt", "STRING"), ("hr", "STRING"))
    )
    options = {"connector": "filesystem", "path": (location / "events").as_uri(), "format": "parquet"}
    create_in_hms(client, TableDefinition(TableIdentifier(database, "events"), columns, options, ("dt", "hr")))


def test_wrapper_creates_database_and_table_and_reads_them_back(hms: MetastoreClient, tmp_path: Path) -> None:
    _create_demo_table(hms, "wrapper_db", tmp_path)

    assert "wrapper_db" in hms.get_all_databases()
    assert hms.get_all_tables("wrapper_db") == ["events"]
    table = hms.get_table("wrapper_db", "events")
    assert table is not None
    assert [(c.name, c.type) for c in table.sd.cols] == [("user_id", "string"), ("amount", "double")]
    assert [c.name for c in table.partitionKeys] == ["dt", "hr"]
    assert table.tableType == "EXTERNAL_TABLE"
    assert table.sd.location in (
        (tmp_path / "events").as_uri(),
        f"file:{tmp_path / 'events'}",
    )  # HMS writes file:/
    assert hms.get_table("wrapper_db", "missing") is None
    assert hms.create_database("wrapper_db") is False


def test_drop_database_is_answered_at_once_and_the_database_is_gone(
    metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """Hive 2.3's transaction handler runs on every DROP DATABASE; with its default pool (BoneCP, not in pyspark's
    jars) it died, the server closed the connection, and a client retried until its deadline."""
    with MetastoreClient(metastore.uri, RetryPolicy(deadline_s=5.0)) as client:
        _create_demo_table(client, "dropped_db", tmp_path)
        client.drop_database("dropped_db", cascade=True)
        assert "dropped_db" not in client.get_all_databases()
    logs = "".join(path.read_text(errors="replace") for path in (metastore.home / "logs").glob("metastore-*.log"))
    assert "BoneCPConfig" not in logs


def test_partitions_round_trip_through_batched_calls(hms: MetastoreClient, tmp_path: Path) -> None:
    _create_demo_table(hms, "parts_db", tmp_path)
    table = hms.get_table("parts_db", "events")
    assert table is not None
    partitions = []
    for hour in range(150):  # more than one add_partitions_req batch
        sd = ttypes.StorageDescriptor(**{**table.sd.__dict__})
        sd.location = f"{table.sd.location}/dt=2026-11-22/hr={hour:03d}"
        partitions.append(
            ttypes.Partition(
                values=["2026-11-22", f"{hour:03d}"],
                dbName="parts_db",
                tableName="events",
                sd=sd,
                parameters={"numFiles": "1"},
            )
        )
    hms.add_partitions("parts_db", "events", partitions)
    hms.add_partitions("parts_db", "events", partitions[:5])  # already there: skipped, no error

    names = hms.get_partition_names("parts_db", "events")
    assert len(names) == 150
    assert "dt=2026-11-22/hr=007" in names
    fetched = hms.get_partitions_by_names("parts_db", "events", ["dt=2026-11-22/hr=007", "dt=x/hr=y"])
    assert [p.values for p in fetched] == [["2026-11-22", "007"]]
    fetched[0].parameters["numFiles"] = "3"
    hms.alter_partitions("parts_db", "events", fetched)
    again = hms.get_partitions_by_names("parts_db", "events", ["dt=2026-11-22/hr=007"])
    assert again[0].parameters["numFiles"] == "3"


def test_lock_and_transaction_calls_are_served(hms: MetastoreClient, tmp_path: Path) -> None:
    """Hive's transaction tables are created with the database (DataNucleus does not create them): Iceberg's Hive
    catalog takes a table lock on every commit."""
    _create_demo_table(hms, "locks_db", tmp_path)
    assert_locks_are_served(hms, "locks_db", "events")


def test_a_home_made_without_the_transaction_tables_gets_them_at_its_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings = MetastoreSettings(port=free_port(), home=tmp_path / "hms")
    with monkeypatch.context() as earlier_sqlext:  # started as sqlext did before it created them
        earlier_sqlext.setattr(launcher, "_create_txn_tables", lambda settings, java: ())
        launcher.start(settings)
    try:
        with MetastoreClient(settings.uri) as client:
            _create_demo_table(client, "old_home_db", tmp_path)
            with pytest.raises(TApplicationException, match="Internal error processing lock"):
                table_lock(client, "old_home_db", "events", ttypes.LockType.SHARED_READ)
    finally:
        launcher.stop(settings)
    assert "Table/View 'NEXT_LOCK_ID' does not exist" in settings.log_file.read_text()

    caplog.set_level("INFO", logger=txn_tables.__name__)
    launcher.start(settings)
    try:
        with MetastoreClient(settings.uri) as client:
            assert client.get_all_tables("old_home_db") == ["events"]  # the same database, now with them
            assert_locks_are_served(client, "old_home_db", "events")
    finally:
        launcher.stop(settings)
    assert "Created Hive's transaction tables TXNS, TXN_COMPONENTS," in caplog.text
    marker = settings.derby_dir / launcher.TXN_TABLES_MARKER
    assert marker.read_text().strip() == "2.3"  # later starts skip the check
    # A database that has them is left as it is (the check itself, without the marker).
    marker.unlink()
    assert launcher._create_txn_tables(settings, launcher.find_java()) == ()
    assert marker.is_file()


def test_a_failed_transaction_table_leaves_none_created_and_names_the_table(tmp_path: Path) -> None:
    settings = MetastoreSettings(port=free_port(), home=tmp_path / "hms")
    launcher._write_hive_site(settings)
    hive_site, derby_log = settings.conf_dir / "hive-site.xml", tmp_path / "derby.log"
    drivers = [str(jar) for jar in pyspark_jars_dir().glob("derby*.jar")]
    java = launcher.find_java()
    good = "CREATE TABLE NEXT_THING (N bigint NOT NULL);\nINSERT INTO NEXT_THING VALUES(1);\n"
    ddl = tmp_path / "txn.sql"
    ddl.write_text(good + "CREATE TABLE BROKEN (N nosuchtype);\n")

    with pytest.raises(MetastoreError, match=r"transaction table BROKEN .* No transaction table was created"):
        txn_tables.ensure(java, hive_site, ddl, drivers, derby_log)
    ddl.write_text(good)
    assert txn_tables.ensure(java, hive_site, ddl, drivers, derby_log) == ("NEXT_THING",)  # rolled back before


@pytest.mark.spark
def test_spark_sql_sees_the_table_through_the_same_metastore(hms: MetastoreClient, spark, tmp_path: Path) -> None:
    _create_demo_table(hms, "spark_sees_db", tmp_path)

    listed = spark_own_sql(spark)("SHOW TABLES IN spark_sees_db").collect()
    tables = [row.tableName for row in listed if not row.isTemporary]  # other tests' temp views are listed too
    assert tables == ["events"]
    described = {row.col_name: row.data_type for row in spark_own_sql(spark)("DESCRIBE spark_sees_db.events").collect()}
    assert described["user_id"] == "string"
    assert described["amount"] == "double"
    assert described["dt"] == "string"
    names = [row.col_name for row in spark_own_sql(spark)("DESCRIBE spark_sees_db.events").collect()]
    partition_section = names[names.index("# Partition Information") + 2 :]
    assert partition_section == ["dt", "hr"]


def test_second_start_on_the_same_port_is_a_no_op(metastore: MetastoreSettings) -> None:
    before = launcher.status(metastore)
    result = launcher.start(metastore)
    assert result.already_running
    assert result.pid == before.pid
    assert launcher.status(metastore).pid == before.pid


def test_stop_leaves_no_process_behind(tmp_path: Path) -> None:
    settings = MetastoreSettings(port=free_port(), home=tmp_path / "hms")
    started = launcher.start(settings)
    assert started.pid is not None and not started.already_running
    assert launcher.status(settings).answering

    assert launcher.stop(settings) is True
    # Gone, or a zombie on its way out (a loaded machine can take a moment to reap it): not running.
    assert process.wait_for_exit(started.pid, 30)
    assert not settings.pid_file.exists()
    # No metastore answers there any more. Not "nothing listens": the other test worker may have been given
    # the freed port for one of its own listeners (seen in CI with 2 workers).
    assert not launcher.status(settings).answering
    assert launcher.stop(settings) is False


def test_port_taken_by_something_else_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(MetastoreError, match=f"Port {port} .* not a Hive Metastore"):
            launcher.start(MetastoreSettings(port=port, home=tmp_path))


def test_missing_java_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match="Java is required"):
        launcher.start(MetastoreSettings(port=free_port(), home=tmp_path))


def test_server_dying_on_start_shows_its_log(tmp_path: Path) -> None:
    settings = MetastoreSettings(port=free_port(), home=tmp_path, heap="1k")  # the JVM refuses this heap
    with pytest.raises(MetastoreError, match="died on start") as failure:
        launcher.start(settings)
    assert "heap" in failure.value.message.lower()
    assert not settings.pid_file.exists()


def test_client_gives_up_at_its_deadline_with_a_clear_error() -> None:
    client = MetastoreClient(f"thrift://127.0.0.1:{free_port()}", RetryPolicy(deadline_s=1.0))
    with pytest.raises(MetastoreUnavailableError, match="did not answer 'get_all_databases' within 1 s"):
        client.get_all_databases()


@pytest.mark.postgres
def test_postgres_backed_metastore_creates_its_schema_and_serves(postgres: PostgresServer, tmp_path: Path) -> None:
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path / "hms",
        backend=Backend.POSTGRES,
        jdbc_url=postgres.jdbc_url,
        user=postgres.user,
        password=postgres.password,
    )
    launcher.start(settings)
    try:
        with MetastoreClient(settings.uri) as client:
            _create_demo_table(client, "pg_db", tmp_path)
            table = client.get_table("pg_db", "events")
            assert table is not None and [c.name for c in table.partitionKeys] == ["dt", "hr"]
            assert_locks_are_served(client, "pg_db", "events")
        assert not settings.derby_dir.exists()  # nothing went to Derby
    finally:
        launcher.stop(settings)


def test_hadoop_settings_overlay_the_hadoop_conf_dir_in_the_metastores_core_site(tmp_path: Path) -> None:
    conf_dir = tmp_path / "hadoop"
    conf_dir.mkdir()
    (conf_dir / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn</value></property>"
        "<property><name>fs.s3a.endpoint</name><value>old</value></property></configuration>"
    )
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path / "home",
        hadoop=(("fs.s3a.endpoint", "http://minio:9000"), ("fs.viewfs.mounttable.c.link./x", "file:///a&b")),
        hadoop_conf_dir=conf_dir,
    )
    command = launcher._command(settings, "java")

    classpath = command[command.index("-cp") + 1].split(":")
    assert classpath[:2] == [str(settings.conf_dir.resolve()), str(conf_dir.resolve())]
    assert launcher._read_properties(settings.conf_dir / "core-site.xml") == {
        "fs.defaultFS": "hdfs://nn",
        "fs.s3a.endpoint": "http://minio:9000",
        "fs.viewfs.mounttable.c.link./x": "file:///a&b",
    }


def test_metastore_hadoop_keys_come_from_the_sqlext_conf() -> None:
    from sqlext.config import SqlextConfig

    settings = launcher.MetastoreSettings.from_config(
        SqlextConfig(
            {"spark.sqlext.metastore.hadoop.fs.viewfs.mounttable.c.link./x": "file:///d", "spark.sqlext.warehouse": "w"}
        )
    )
    assert settings.hadoop == (("fs.viewfs.mounttable.c.link./x", "file:///d"),)


def test_a_derby_metastore_gets_ids_in_blocks_of_1000_and_a_postgresql_one_keeps_its_own(tmp_path: Path) -> None:
    derby = MetastoreSettings(port=free_port(), home=tmp_path / "derby")
    launcher._command(derby, "java")
    assert launcher._read_properties(derby.conf_dir / "hive-site.xml")["datanucleus.mapping"] == "sqlext"
    mapping = (derby.conf_dir / "package-sqlext.orm").read_text()
    for table, column in (("PARTITIONS", "PART_ID"), ("SDS", "SD_ID"), ("SERDES", "SERDE_ID")):
        assert f'table="{table}">\n      <datastore-identity>\n        <column name="{column}"/>' in mapping
    assert mapping.count('key="key-cache-size" value="1000"') == 3

    driver = tmp_path / "postgresql.jar"
    driver.write_bytes(b"")
    postgres = MetastoreSettings(
        port=free_port(),
        home=tmp_path / "postgres",
        backend=launcher.Backend.POSTGRES,
        jdbc_url="jdbc:postgresql://localhost/hive",
        jdbc_driver_jar=driver,
    )
    launcher._command(postgres, "java")
    assert "datanucleus.mapping" not in launcher._read_properties(postgres.conf_dir / "hive-site.xml")
    assert not (postgres.conf_dir / "package-sqlext.orm").exists()
