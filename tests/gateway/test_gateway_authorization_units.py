"""Authorization's parts without Spark: locations, denied settings, the grant statements' grammar,
what sqlext statements are judged on, and the rules against owners and grants in a real metastore."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.errors import ConfigError, ParseError
from sqlext.gateway.authz.access import Access, Action, AuthorizationError
from sqlext.gateway.authz.grants import GrantStatement, ShowGrant, parse
from sqlext.gateway.authz.privileges import ALL, PrivilegeStore
from sqlext.gateway.authz.rules import Rules
from sqlext.gateway.authz.settings import AuthorizationSettings, normalize
from sqlext.gateway.authz.statements import statement_accesses
from sqlext.sql.parser import parse_statement
from sqlext.table import TableIdentifier

G = "spark.sqlext.gateway."


def _settings(tmp_path: Path, **extra: str) -> AuthorizationSettings:
    values = {
        "spark.sqlext.warehouse": (tmp_path / "home" / "warehouse").as_uri(),
        G + "admins": "root",
        G + "authentication.file": str(tmp_path / "home" / "gateway" / "users"),
        **extra,
    }
    return AuthorizationSettings.of(values)


def test_locations_compare_as_normalized_uris_by_whole_segments() -> None:
    assert normalize("/data/x/../y/") == "file:///data/y"
    assert normalize("file:/data/y") == "file:///data/y"
    assert normalize("hdfs://nn:8020/a/./b") == "hdfs://nn:8020/a/b"
    settings = AuthorizationSettings(allowed_locations=(normalize("/data"), normalize("s3a://bucket/tables")))
    assert settings.location_allowed("file:///data/sales")
    assert not settings.location_allowed("/database")
    assert not settings.location_allowed("/data/../etc")
    assert settings.location_allowed("s3a://bucket/tables/t1")
    assert not settings.location_allowed("s3a://other/tables/t1")


def test_the_servers_own_files_are_protected_but_not_its_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLEXT_HOME", str(tmp_path / "home"))
    settings = _settings(tmp_path, **{G + "allowed-locations": "/"})
    assert settings.protected_path(str(tmp_path / "home" / "gateway")) is not None
    assert settings.protected_path((tmp_path / "home" / "gateway" / "users").as_uri()) is not None
    assert settings.protected_path(str(tmp_path / "home" / "warehouse" / "../gateway")) is not None
    assert settings.protected_path(str(tmp_path / "home" / "warehouse" / "db" / "t")) is None
    assert settings.protected_path(str(tmp_path / "elsewhere")) is None


def test_default_allowed_location_is_the_warehouse(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert settings.location_allowed(str(tmp_path / "home" / "warehouse" / "t"))
    assert not settings.location_allowed(str(tmp_path / "t"))


def test_denied_settings_cover_prefixes_and_extra_keys(tmp_path: Path) -> None:
    settings = _settings(tmp_path, **{G + "denied-settings": "spark.sql.shuffle.partitions, my.prefix."})
    for key in (
        "spark.sqlext.gateway.admins",
        "SPARK.SQL.CATALOG.x",
        "spark.sql.runSQLOnFiles",
        "fs.file.impl",
        "spark.sql.shuffle.partitions",
        "my.prefix.key",
    ):
        assert settings.setting_denied(key), key
    for key in ("spark.sql.ansi.enabled", "hive.exec.dynamic.partition.mode", "spark.sql.runSQLOnFilesX"):
        assert not settings.setting_denied(key), key


def test_authorization_flag_is_checked() -> None:
    assert not AuthorizationSettings.of({G + "authorization": "false"}).enabled
    with pytest.raises(ConfigError, match=f"Invalid value for '{G}authorization': 'maybe'"):
        AuthorizationSettings.of({G + "authorization": "maybe"})


def test_grant_statements_parse_as_hive_writes_them() -> None:
    assert parse("GRANT SELECT, INSERT ON TABLE db.t TO USER bob", "default") == GrantStatement(
        True, ("SELECT", "INSERT"), TableIdentifier("db", "t"), ("bob",)
    )
    assert parse("grant all privileges on `t` to user bob, user `carol`", "sales") == GrantStatement(
        True, ALL, TableIdentifier("sales", "t"), ("bob", "carol")
    )
    assert parse("REVOKE INSERT ON spark_catalog.db.t FROM USER bob;", "default") == GrantStatement(
        False, ("INSERT",), TableIdentifier("db", "t"), ("bob",)
    )
    assert parse("SHOW GRANT", "default") == ShowGrant(None, None)
    assert parse("SHOW GRANT USER bob ON TABLE t", "db") == ShowGrant("bob", TableIdentifier("db", "t"))
    with pytest.raises(ParseError, match=r"Unknown privilege ALTER.*Allowed: SELECT, INSERT, UPDATE, DELETE, ALL"):
        parse("GRANT ALTER ON t TO USER bob", "default")
    with pytest.raises(ParseError, match="Expected GRANT"):
        parse("GRANT SELECT ON t TO bob", "default")


def _sqlext_accesses(sql: str, settings: AuthorizationSettings) -> list[Access]:
    return statement_accesses(
        parse_statement(sql),
        settings,
        lambda ident: ident if ident.database else TableIdentifier("cur", ident.name),
        lambda ident: ident.name == "temp",
        lambda query: [Access(Action.SCRIPT, "TRANSFORM ... USING")] if "TRANSFORM" in query.upper() else [],
    )


def test_sqlext_statements_are_judged_on_their_tables_options_and_query(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    created = _sqlext_accesses(
        "CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'path' = '/x', 'format' = 'csv', "
        "'sink.partition-commit.policy.class' = 'evil.Policy')",
        settings,
    )
    assert created == [
        Access(Action.LOCATION, "/x"),
        Access(Action.CUSTOM_CLASS, "option 'sink.partition-commit.policy.class'"),
        Access(Action.CREATE, table=TableIdentifier("cur", "t")),
    ]
    assert _sqlext_accesses("INSERT OVERWRITE db.t SELECT a FROM src JOIN temp USING (a)", settings) == [
        Access(Action.OWNERSHIP, table=TableIdentifier("db", "t")),
        Access(Action.SELECT, table=TableIdentifier("cur", "src")),
    ]
    assert Access(Action.SCRIPT, "TRANSFORM ... USING") in _sqlext_accesses(
        "INSERT INTO t SELECT TRANSFORM(a) USING 'id' AS (o STRING) FROM src", settings
    )
    assert _sqlext_accesses("DROP TABLE db.t", settings) == [Access(Action.OWNERSHIP, table=TableIdentifier("db", "t"))]
    assert _sqlext_accesses("DROP TEMPORARY TABLE temp", settings) == []
    for alter in ("ALTER TABLE db.t ADD (c INT)", "ALTER TABLE db.t DROP c", "ALTER TABLE db.t ADD COLUMNS (c INT)"):
        assert _sqlext_accesses(alter, settings) == [Access(Action.OWNERSHIP, table=TableIdentifier("db", "t"))]
    assert _sqlext_accesses("SET 'spark.sqlext.gateway.admins' = 'me'", settings) == [
        Access(Action.SETTING, "spark.sqlext.gateway.admins")
    ]
    assert _sqlext_accesses("SET 'pipeline.name' = 'x'", settings) == []
    hinted = "SELECT * FROM db.t /*+ OPTIONS('path' = '/etc', 'incremental-between-timestamp' = '0,1') */ JOIN u"
    assert _sqlext_accesses(hinted, settings) == [
        Access(Action.LOCATION, "/etc"),  # a hint's options are judged as the DDL's
        Access(Action.SELECT, table=TableIdentifier("db", "t")),
        Access(Action.SELECT, table=TableIdentifier("cur", "u")),
    ]


def test_rules_follow_owners_and_grants_in_the_metastore(tmp_path: Path, hms: MetastoreClient) -> None:
    from sqlext.catalog import Catalog
    from sqlext.table import Column, TableDefinition

    catalog = Catalog(hms)
    if not catalog.database_exists("authz_units"):
        catalog.create_database("authz_units", True, (tmp_path / "authz_units.db").as_uri(), None, {})
    table = TableIdentifier("authz_units", "t")
    catalog.drop_table(table, if_exists=True)
    options = {"connector": "filesystem", "path": (tmp_path / "t").as_uri(), "format": "csv"}
    catalog.create_table(TableDefinition(table, (Column("a", "INT"),), options))
    store = PrivilegeStore(hms)
    store.set_owner(table, "alice")
    rules = Rules(_settings(tmp_path), store)

    rules.check("alice", [Access(Action.OWNERSHIP, table=table)])
    rules.check("root", [Access(Action.OWNERSHIP, table=table), Access(Action.SCRIPT, "x")])
    with pytest.raises(AuthorizationError, match=r"user 'bob'.*rule 'select' on 'authz_units.t'.*GRANT SELECT"):
        rules.check("bob", [Access(Action.SELECT, table=table)])
    store.grant(table, "bob", ("SELECT",), "alice")
    rules.check("bob", [Access(Action.SELECT, table=table)])
    with pytest.raises(AuthorizationError, match="rule 'insert'"):
        rules.check("bob", [Access(Action.INSERT, table=table)])
    with pytest.raises(AuthorizationError, match="only its owner \\('alice'\\)"):
        rules.check("bob", [Access(Action.OWNERSHIP, table=table)])
    assert store.revoke(table, "bob", ALL) == ["SELECT"]
    with pytest.raises(AuthorizationError, match="rule 'select'"):
        rules.check("bob", [Access(Action.SELECT, table=table)])
    with pytest.raises(AuthorizationError, match=r"rule 'location'.*allowed-locations"):
        rules.check("bob", [Access(Action.LOCATION, str(tmp_path / "elsewhere"))])
    catalog.drop_table(table)


KRB5 = "com.sun.security.auth.module.Krb5LoginModule"


class _NoTables(PrivilegeStore):
    """A metastore without tables (no location overlaps one)."""

    def __init__(self) -> None:
        pass

    def tables_overlapping(self, location: str) -> list[tuple[TableIdentifier, str]]:
        return []


def _kafka_table(jaas_config: str, **more: str) -> str:
    extra = "".join(f", '{key}' = '{value}'" for key, value in more.items())
    return (
        "CREATE TEMPORARY TABLE k (v STRING) WITH ('connector' = 'kafka', 'topic' = 't', "
        f"'properties.bootstrap.servers' = 'b:9092', 'format' = 'raw', 'properties.sasl.jaas.config' = "
        f"'{jaas_config}'{extra})"
    )


def test_a_users_kafka_login_may_be_kerberos_with_its_own_keytab_judged_as_a_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLEXT_HOME", str(tmp_path / "home"))
    keytab = tmp_path / "home" / "warehouse" / "keytabs" / "alice.keytab"
    settings = _settings(tmp_path)
    rules = Rules(settings, _NoTables())
    accesses = _sqlext_accesses(
        _kafka_table(f'{KRB5} required useKeyTab=true storeKey=true keyTab="{keytab}" principal="alice@R";'),
        settings,
    )
    assert accesses == [Access(Action.LOCATION, str(keytab))]
    rules.check("alice", accesses)  # under the allowed locations (the warehouse): taken
    elsewhere = _sqlext_accesses(
        _kafka_table(f'{KRB5} required useKeyTab=true keyTab="/etc/security/keytabs/hive.keytab" principal="h@R";'),
        settings,
    )
    with pytest.raises(AuthorizationError, match=re.escape("rule 'location' on '/etc/security/keytabs/hive.keytab'")):
        rules.check("alice", elsewhere)
    plain = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="p";'
    assert _sqlext_accesses(_kafka_table(plain), settings) == []


@pytest.mark.parametrize(
    ("jaas_config", "named"),
    [
        ("evil.LoginModule required;", "login module evil.LoginModule is not one of"),
        (f'{KRB5} required useTicketCache=true principal="alice@R";', "the server's own tickets"),
        (f'{KRB5} required useKeyTab=true principal="alice@R";', "needs useKeyTab=true and keyTab"),
        (f"{KRB5} required useKeyTab=true keyTab=/k principal=a", "does not end with ';'"),
    ],
)
def test_a_users_other_kafka_logins_are_custom_classes_only_admins_may_name(
    tmp_path: Path, jaas_config: str, named: str
) -> None:
    settings = _settings(tmp_path)
    accesses = _sqlext_accesses(_kafka_table(jaas_config), settings)
    assert [a.action for a in accesses] == [Action.CUSTOM_CLASS]
    assert named in accesses[0].target
    rules = Rules(settings, _NoTables())
    with pytest.raises(
        AuthorizationError, match=re.escape("rule 'custom-class' on 'option 'properties.sasl.jaas.config'")
    ):
        rules.check("alice", accesses)
    rules.check("root", accesses)  # an admin may


def test_librdkafkas_kinit_command_is_a_command_line_and_its_keytab_a_location(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    accesses = _sqlext_accesses(
        _kafka_table(
            f'{KRB5} required useKeyTab=true keyTab="/k" principal="a";',
            **{"properties.sasl.kerberos.kinit.cmd": "rm -rf /", "properties.sasl.kerberos.keytab": "/k2"},
        ),
        settings,
    )
    assert Access(Action.SCRIPT, "option 'properties.sasl.kerberos.kinit.cmd'") in accesses
    assert Access(Action.LOCATION, "/k2") in accesses


def test_the_servers_own_keytabs_are_protected(tmp_path: Path) -> None:
    keytab = tmp_path / "warehouse-too" / "etl.keytab"
    settings = _settings(
        tmp_path,
        **{"spark.kerberos.keytab": str(keytab), G + "allowed-locations": str(tmp_path)},
    )
    assert settings.protected_path(str(keytab)) is not None
    assert settings.protected_path(str(tmp_path / "warehouse-too" / "alice.keytab")) is None
