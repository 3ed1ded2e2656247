"""Authorization through the secured gateway, as users meet it: PyHive over TLS with FILE logins
(tests/gateway/test_gateway_security.py's gateway), alice and bob as users, root as the admin.

Each vector is tried as a user (denied, with the rule, the object and the user named, and nothing
done: the marker file a command would write is absent, the file a path would read is not answered,
the directory an overwrite would empty still holds its file) and as the admin where it is allowed
(the marker is there, the rows come back). Grants are checked by what bob can read and write right
after alice grants or revokes, and by what the metastore lists."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyhive import hive
from pyhive.exc import OperationalError

from sqlext.catalog.metastore.client import MetastoreClient
from tests.gateway.test_gateway import DAILY_INSERT, _daily_sink_ddl, _generated_ddl, _rows
from tests.gateway.test_gateway_security import SecuredGateway, _transport, secured
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow, pytest.mark.timeout(900)]
__all__ = ["secured"]  # the module's own gateway, started as tests/gateway/test_gateway_security.py starts one

DB = "gw_authz"


@pytest.fixture(scope="module")
def outside() -> Iterator[Path]:
    """A directory outside the allowed locations (the tests' temp root), holding a file to protect."""
    directory = Path(tempfile.mkdtemp(prefix="sqlext-authz-outside-"))
    (directory / "precious.txt").write_text("do not delete\n")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def cursors(secured: SecuredGateway) -> Iterator[dict[str, Any]]:
    """One open session per user, shared by the module's tests (as a client keeps its connection)."""
    connections = {
        user: hive.connect(thrift_transport=_transport(secured, user), username=user)
        for user in ("alice", "bob", "root")
    }
    try:
        cursors = {user: connection.cursor() for user, connection in connections.items()}
        cursors["root"].execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
        yield cursors
    finally:
        for connection in connections.values():
            connection.close()


def _denied(cursor: Any, statement: str, rule: str, user: str) -> str:
    """Run ``statement``, expect a denial naming ``rule`` and ``user``; return the message."""
    with pytest.raises(OperationalError) as failure:
        cursor.execute(statement)
    status = failure.value.args[0].status
    message = status.errorMessage
    assert f"Permission denied: user '{user}'" in message and f"rule '{rule}'" in message, message
    assert status.sqlState == "42501"
    return str(message)


def test_script_transformation_runs_nothing_for_a_user_and_runs_for_the_admin(
    cursors: dict[str, Any], secured: SecuredGateway, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    statement = f"SELECT TRANSFORM('x') USING 'touch {marker}' AS (o STRING)"
    message = _denied(cursors["alice"], statement, "script-transformation", "alice")
    assert "TRANSFORM ... USING" in message
    assert not marker.exists(), "the command did not run"
    _rows(cursors["root"], statement)
    assert marker.exists(), "the admin's command ran"
    assert "denied: user 'alice', rule 'script-transformation'" in secured.log


def test_files_are_not_read_by_path_the_users_file_and_tls_key_least_of_all(
    cursors: dict[str, Any], secured: SecuredGateway, tmp_path: Path
) -> None:
    users_file = secured.home / "gateway" / "users"
    key = secured.certificate.key
    for statement in (
        f"SELECT * FROM text.`{users_file}`",
        f"SELECT * FROM `org.apache.spark.sql.execution.datasources.text.TextFileFormat`.`{key}`",
        f"WITH c AS (SELECT * FROM text.`{users_file}`) SELECT * FROM c",
        f"SELECT count(*) FROM range(1) WHERE id IN (SELECT length(value) FROM text.`{key}`)",
    ):
        message = _denied(cursors["alice"], statement, "path-read", "alice")
        assert "scrypt" not in message and "PRIVATE KEY" not in message
    _denied(
        cursors["alice"], f"CREATE TEMPORARY VIEW leak USING text OPTIONS (path '{users_file}')", "path-read", "alice"
    )
    _denied(cursors["bob"], f"LOAD DATA LOCAL INPATH '{users_file}' INTO TABLE {DB}.nothing", "path-read", "bob")
    plain = tmp_path / "plain.txt"
    plain.write_text("one\ntwo\n")
    assert sorted(_rows(cursors["root"], f"SELECT value FROM text.`{plain}`")) == [("one",), ("two",)]


def test_reflection_is_for_admins(cursors: dict[str, Any]) -> None:
    for statement in (
        "SELECT java_method('java.lang.System', 'getProperty', 'user.name')",
        "SELECT reflect('java.lang.System', 'getProperty', 'user.name')",
        "SELECT * FROM range(1) WHERE id IN (SELECT length(try_reflect('java.lang.System', 'lineSeparator')))",
    ):
        _denied(cursors["alice"], statement, "reflection", "alice")
    import getpass

    ((name,),) = _rows(cursors["root"], "SELECT java_method('java.lang.System', 'getProperty', 'user.name')")
    assert name == getpass.getuser()


def test_resources_and_functions_are_for_admins(cursors: dict[str, Any], tmp_path: Path) -> None:
    resource = tmp_path / "resource.txt"
    resource.write_text("x")
    _denied(cursors["bob"], f"ADD JAR {tmp_path / 'evil.jar'}", "add-resource", "bob")
    _denied(cursors["bob"], f"ADD FILE {resource}", "add-resource", "bob")
    _denied(cursors["bob"], f"ADD ARCHIVE {tmp_path / 'a.zip'}", "add-resource", "bob")
    _denied(
        cursors["bob"],
        f"CREATE TEMPORARY FUNCTION evil AS 'x.Evil' USING JAR '{tmp_path / 'evil.jar'}'",
        "function-ddl",
        "bob",
    )
    _denied(
        cursors["bob"],
        "CREATE TEMPORARY FUNCTION hive_reflect AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFReflect'",
        "function-ddl",
        "bob",
    )
    _denied(cursors["bob"], "EXECUTE IMMEDIATE 'SELECT 1'", "dynamic-sql", "bob")
    assert str(resource) not in str(_rows(cursors["bob"], "LIST FILES"))
    _rows(cursors["root"], f"ADD FILE {resource}")
    assert any(str(resource) in row[0] for row in _rows(cursors["root"], "LIST FILES"))


def test_directories_are_neither_overwritten_nor_loaded_from(cursors: dict[str, Any], outside: Path) -> None:
    for statement in (
        f"INSERT OVERWRITE DIRECTORY '{outside}' SELECT 1",
        f"INSERT OVERWRITE LOCAL DIRECTORY '{outside}' STORED AS PARQUET SELECT 1",
    ):
        _denied(cursors["alice"], statement, "path-write", "alice")
    assert (outside / "precious.txt").read_text() == "do not delete\n"
    written = outside.parent / (outside.name + "-by-admin")
    try:
        _rows(cursors["root"], f"INSERT OVERWRITE LOCAL DIRECTORY '{written}' SELECT 'admin' AS who")
        assert "admin" in "".join(path.read_text() for path in written.glob("part-*"))
    finally:
        shutil.rmtree(written, ignore_errors=True)


def test_settings_that_change_what_the_server_may_do_are_denied(
    cursors: dict[str, Any], secured: SecuredGateway
) -> None:
    secret = "not-for-the-log-7731"
    _denied(cursors["alice"], f"SET spark.sqlext.gateway.admins=alice,{secret}", "denied-setting", "alice")
    _denied(cursors["alice"], "SET spark.sqlext.gateway.authentication", "denied-setting", "alice")
    _denied(
        cursors["alice"],
        f"SET spark.sql.catalog.evil=org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog{secret}",
        "denied-setting",
        "alice",
    )
    _denied(cursors["alice"], "SET spark.sql.runSQLOnFiles=true", "denied-setting", "alice")
    _denied(cursors["alice"], f"SET 'spark.sqlext.gateway.admins' = '{secret}'", "denied-setting", "alice")
    assert _rows(cursors["alice"], "SET spark.sql.shuffle.partitions=3") == [("spark.sql.shuffle.partitions", "3")]
    # Settings given when a session opens are judged the same way.
    with pytest.raises(OperationalError) as refused:
        hive.connect(
            thrift_transport=_transport(secured, "alice"),
            username="alice",
            configuration={"spark.sql.catalog.evil": "x"},
        )
    assert "rule 'denied-setting' on 'spark.sql.catalog.evil'" in refused.value.args[0].status.errorMessage
    assert _rows(cursors["root"], "SET spark.sql.runSQLOnFiles=true") == [("spark.sql.runSQLOnFiles", "true")]
    assert secret not in secured.log, "no value of a denied statement is logged"
    assert "denied: user 'alice', rule 'denied-setting', object 'spark.sqlext.gateway.admins'" in secured.log


def test_tables_live_only_under_the_allowed_locations_never_in_the_servers_files(
    cursors: dict[str, Any], secured: SecuredGateway, outside: Path, hms: MetastoreClient, tmp_path: Path
) -> None:
    flink = "CREATE TABLE {db}.{name} (a STRING) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"
    _denied(cursors["alice"], flink.format(db=DB, name="anywhere", path=outside.as_uri()), "location", "alice")
    _denied(
        cursors["alice"],
        f"CREATE TABLE {DB}.anywhere (a STRING) STORED AS TEXTFILE LOCATION '{outside}'",
        "location",
        "alice",
    )
    _denied(
        cursors["alice"],
        f"CREATE TABLE {DB}.anywhere USING csv OPTIONS (path '{outside}') AS SELECT 'x' AS a",
        "location",
        "alice",
    )
    assert hms.get_table(DB, "anywhere") is None
    assert (outside / "precious.txt").read_text() == "do not delete\n", "nothing overwritten there"

    gateway_home = secured.home / "gateway"
    message = _denied(cursors["root"], flink.format(db=DB, name="home", path=gateway_home.as_uri()), "location", "root")
    assert "server's own files" in message
    assert hms.get_table(DB, "home") is None

    mine = tmp_path / "alices"
    _rows(cursors["alice"], flink.format(db=DB, name="alices", path=mine.as_uri()))
    assert hms.get_table(DB, "alices").owner == "alice", "the creator owns the table"
    message = _denied(
        cursors["bob"], f"CREATE TABLE {DB}.over (a STRING) STORED AS TEXTFILE LOCATION '{mine}'", "location", "bob"
    )
    assert f"overlaps the location of table {DB}.alices of 'alice'" in message
    assert hms.get_table(DB, "over") is None
    _rows(cursors["root"], f"CREATE TABLE {DB}.roots (a STRING) STORED AS TEXTFILE LOCATION '{outside / 'r'}'")
    assert hms.get_table(DB, "roots").owner == "root", "an admin's table may be anywhere but the server's files"


def test_grants_and_revokes_change_what_a_user_may_read_and_write_at_once(
    cursors: dict[str, Any], hms: MetastoreClient
) -> None:
    alice, bob, root = cursors["alice"], cursors["bob"], cursors["root"]
    _rows(alice, f"CREATE TABLE {DB}.sales (item STRING, n INT) USING parquet")
    _rows(alice, f"INSERT INTO {DB}.sales VALUES ('apple', 1)")
    assert hms.get_table(DB, "sales").owner == "alice"

    _denied(bob, f"SELECT * FROM {DB}.sales", "select", "bob")
    _denied(bob, f"INSERT INTO {DB}.sales VALUES ('pear', 2)", "insert", "bob")
    _denied(bob, f"GRANT SELECT ON TABLE {DB}.sales TO USER bob", "ownership", "bob")

    assert _rows(alice, f"GRANT SELECT ON TABLE {DB}.sales TO USER bob") == [("OK",)]
    assert _rows(bob, f"SELECT * FROM {DB}.sales") == [("apple", 1)]
    _denied(bob, f"INSERT INTO {DB}.sales VALUES ('pear', 2)", "insert", "bob")

    assert _rows(alice, f"GRANT INSERT ON {DB}.sales TO USER bob") == [("OK",)]
    _rows(bob, f"INSERT INTO {DB}.sales VALUES ('pear', 2)")
    assert sorted(_rows(alice, f"SELECT * FROM {DB}.sales")) == [("apple", 1), ("pear", 2)]
    for statement in (
        f"INSERT OVERWRITE TABLE {DB}.sales VALUES ('gone', 0)",
        f"ALTER TABLE {DB}.sales SET TBLPROPERTIES ('x' = 'y')",
        f"TRUNCATE TABLE {DB}.sales",
        f"DROP TABLE {DB}.sales",
    ):
        _denied(bob, statement, "ownership", "bob")

    shown = _rows(bob, f"SHOW GRANT USER bob ON TABLE {DB}.sales")
    assert [(row[0], row[1], row[4], row[6], row[9]) for row in shown] == [
        (DB, "sales", "bob", "SELECT", "alice"),
        (DB, "sales", "bob", "INSERT", "alice"),
    ]
    listed = {(grant.principalName, grant.grantInfo.privilege) for grant in _hms_grants(hms, "sales")}
    assert listed == {("bob", "SELECT"), ("bob", "INSERT")}, "kept in the metastore as Hive keeps grants"

    assert _rows(alice, f"REVOKE SELECT ON TABLE {DB}.sales FROM USER bob") == [("OK",)]
    _denied(bob, f"SELECT * FROM {DB}.sales", "select", "bob")
    assert _rows(root, f"SELECT count(*) FROM {DB}.sales") == [(2,)], "an admin reads anything"
    _rows(root, f"CREATE VIEW {DB}.sales_view AS SELECT item FROM {DB}.sales")
    _rows(root, f"GRANT SELECT ON TABLE {DB}.sales_view TO USER bob")
    message = _denied(bob, f"SELECT * FROM {DB}.sales_view", "select", "bob")
    assert f"'{DB}.sales'" in message, "a view is read with its reader's privileges on what it reads"
    _rows(root, f"DROP VIEW {DB}.sales_view")
    _rows(alice, f"DROP TABLE {DB}.sales")
    assert hms.get_table(DB, "sales") is None


def _hms_grants(hms: MetastoreClient, table: str) -> list[Any]:
    from hmsclient.genthrift.hive_metastore import ttypes

    ref = ttypes.HiveObjectRef(objectType=ttypes.HiveObjectType.TABLE, dbName=DB, objectName=table)
    return list(hms.call("list_privileges", None, None, ref))


def test_a_running_insert_keeps_its_starters_privileges_and_the_table_owner_may_stop_it(
    cursors: dict[str, Any], tmp_path: Path
) -> None:
    """Hive authorizes a statement when it is compiled; a query that runs is not checked again. So bob's
    streaming insert goes on after alice revokes INSERT, bob cannot start another, and alice, who owns
    the table, sees the job and stops it."""
    alice, bob = cursors["alice"], cursors["bob"]
    _rows(alice, _daily_sink_ddl(DB, "daily", tmp_path / "daily"))
    _rows(bob, _generated_ddl(DB, "bobs_events"))
    _rows(alice, f"GRANT INSERT ON TABLE {DB}.daily TO USER bob")
    _rows(bob, "SET 'pipeline.name' = 'bobs_stream'")
    _rows(bob, "SET 'execution.checkpointing.interval' = '1 s'")
    ((job_id, _, _),) = _rows(bob, DAILY_INSERT.format(db=DB, sink="daily", source="bobs_events"))

    _rows(alice, f"REVOKE INSERT ON TABLE {DB}.daily FROM USER bob")
    _denied(bob, DAILY_INSERT.format(db=DB, sink="daily", source="bobs_events"), "insert", "bob")
    # Committed files only: a recursive walk would also enter the staging directories the stream is
    # creating and removing under it.
    written = len(list((tmp_path / "daily").glob("dt=*/*.parquet")))
    wait_for(
        lambda: len(list((tmp_path / "daily").glob("dt=*/*.parquet"))) > written, 120, what="bob's insert commits on"
    )
    assert (job_id, "bobs_stream", "RUNNING") in [row[:3] for row in _rows(bob, "SHOW JOBS")]

    assert (job_id, "bobs_stream", "RUNNING") in [row[:3] for row in _rows(alice, "SHOW JOBS")]
    assert _rows(alice, f"STOP JOB '{job_id}'") == [("OK",)]
    assert (job_id, "bobs_stream", "CANCELED") in [row[:3] for row in _rows(bob, "SHOW JOBS")]


def test_a_query_of_metadata_columns_is_judged_as_the_query_of_the_tables_it_reads(
    cursors: dict[str, Any], tmp_path: Path
) -> None:
    alice, bob = cursors["alice"], cursors["bob"]
    path = tmp_path / "with_metadata"
    path.mkdir()
    data = path / "part-0.csv"
    data.write_text("1\n2\n")
    _rows(
        alice,
        f"CREATE TABLE {DB}.files (id INT, `file.path` STRING NOT NULL METADATA) "
        f"WITH ('connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = 'csv')",
    )
    query = f"SELECT `file.path`, id FROM {DB}.files"

    read = sorted(_rows(alice, query))
    assert [row[1] for row in read] == [1, 2]
    assert all(row[0].endswith(str(data)) for row in read), read
    message = _denied(bob, query, "select", "bob")
    assert f"'{DB}.files'" in message
    _denied(bob, f"SELECT * FROM (SELECT id, `file.path` AS f FROM {DB}.files)", "select", "bob")

    assert _rows(alice, f"GRANT SELECT ON TABLE {DB}.files TO USER bob") == [("OK",)]
    assert sorted(_rows(bob, query)) == read
    _rows(alice, f"DROP TABLE {DB}.files")
