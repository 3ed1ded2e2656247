"""The session extension: statements through spark.sql, as a user types them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.config import SqlextConfig
from sqlext.errors import ConfigError, SqlextError, ValidationError
from sqlext.spark.session import extend
from sqlext.sql.parser import parse_statement
from sqlext.sql.statements import CreateTable
from tests.support.streams import write_hourly_events

pytestmark = [pytest.mark.spark, pytest.mark.hms]


@pytest.fixture
def sql(spark, tmp_path: Path):
    session = extend(spark)
    assert extend(spark) is session, "extend is idempotent"
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS sess_db")
    yield spark.sql
    session.options.clear()


def _sink_ddl(name: str, path: Path, extra: str = "") -> str:
    return f"""CREATE TABLE sess_db.{name} (
        id BIGINT COMMENT 'the id', user_id STRING, ts TIMESTAMP(3), dt STRING, hr STRING,
        id2 AS id * 2
      ) COMMENT 'a sink' PARTITIONED BY (dt, hr) WITH (
        'connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = 'parquet' {extra})"""


def _source_ddl(name: str, path: Path, watermark: bool = True) -> str:
    mark = ", WATERMARK FOR ts AS ts - INTERVAL '5' SECOND" if watermark else ""
    return f"""CREATE TABLE sess_db.{name} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3){mark})
      WITH ('connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = 'parquet')"""


def test_show_create_table_recreates_an_equal_definition_and_describe_shows_it(sql, tmp_path: Path) -> None:
    sql(_sink_ddl("shown", tmp_path / "t", ", 'sink.partition-commit.delay' = '1 h'"))
    ddl = sql("SHOW CREATE TABLE sess_db.shown").first().createtab_stmt
    original = parse_statement(_sink_ddl("shown", tmp_path / "t", ", 'sink.partition-commit.delay' = '1 h'"))
    again = parse_statement(ddl)
    assert isinstance(original, CreateTable) and isinstance(again, CreateTable)
    assert again.table == original.table

    rows = [(r.col_name, r.data_type, r.comment) for r in sql("DESCRIBE sess_db.shown").collect()]
    assert ("id", "BIGINT", "the id") in rows and ("id2", "AS id * 2", None) in rows
    names = [r[0] for r in rows]
    assert names[names.index("# Partition Information") + 1 :][:2] == ["dt", "hr"]
    assert ("sink.partition-commit.delay", "1 h", None) in rows
    assert ("sink.partition-commit.policy.kind", "metastore,success-file", "default") in rows


def test_alter_set_and_reset_options_and_drop_keeps_files(sql, hms: MetastoreClient, tmp_path: Path) -> None:
    sql(_sink_ddl("altered", tmp_path / "t"))
    sql("ALTER TABLE sess_db.altered SET ('sink.partition-commit.delay' = '2 h')")
    assert ("sink.partition-commit.delay", "2 h", None) in [tuple(r) for r in sql("DESCRIBE sess_db.altered").collect()]
    sql("ALTER TABLE sess_db.altered RESET ('sink.partition-commit.delay')")
    assert "sink.partition-commit.delay" not in [r.col_name for r in sql("DESCRIBE sess_db.altered").collect()]
    with pytest.raises(SqlextError, match="Unsupported options found"):
        sql("ALTER TABLE sess_db.altered SET ('sink.nope' = '1')")

    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t" / "keep.parquet").write_bytes(b"x")
    sql("DROP TABLE sess_db.altered")
    assert hms.get_table("sess_db", "altered") is None
    assert (tmp_path / "t" / "keep.parquet").is_file()
    sql("DROP TABLE IF EXISTS sess_db.altered")


def test_set_reset_and_show_tables(sql) -> None:
    assert [tuple(r) for r in sql("SET 'pipeline.name' = 'p1'").collect()] == [("pipeline.name", "p1")]
    assert ("pipeline.name", "p1") in [tuple(r) for r in sql("SET").collect()]
    sql("RESET 'pipeline.name'")
    assert "pipeline.name" not in [r.key for r in sql("SET").collect()]
    sql("CREATE TEMPORARY TABLE sess_db.tmp_gen (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3')")
    assert "tmp_gen" in [r.tableName for r in sql("SHOW TABLES IN sess_db").collect()]
    assert sql("SELECT 1 AS one").first().one == 1  # Spark's own SQL passes through


def test_reset_goes_back_to_the_options_the_spark_conf_gave(spark, sql, monkeypatch: pytest.MonkeyPatch) -> None:
    session = extend(spark)
    configured = {**session.config.values, "spark.sqlext.session.pipeline.name": "from_conf"}
    monkeypatch.setattr(session, "config", SqlextConfig(configured))
    sql("SET 'pipeline.name' = 'p1'")
    sql("SET 'table.exec.source.idle-timeout' = '5 s'")
    sql("RESET 'pipeline.name'")

    def options() -> list[tuple[str, str]]:  # SET lists Spark's settings too
        return [tuple(r) for r in sql("SET").collect() if not r.key.startswith(("spark.", "hive."))]

    assert options() == [("pipeline.name", "from_conf"), ("table.exec.source.idle-timeout", "5 s")]
    sql("RESET")
    assert options() == [("pipeline.name", "from_conf")]


def test_a_metastore_set_after_the_session_started_is_an_error_not_ignored(
    spark, sql, hms: MetastoreClient, tmp_path: Path
) -> None:
    session = extend(spark)
    before = spark.conf.get("spark.sqlext.metastore.uris", None)
    spark.conf.set("spark.sqlext.metastore.uris", "thrift://elsewhere:9083")
    try:
        with pytest.raises(ConfigError) as refused:
            sql(_source_ddl("late_uri", tmp_path / "in"))
        assert refused.value.option == "spark.sqlext.metastore.uris"
        assert "'thrift://elsewhere:9083'" in str(refused.value) and session.metastore_uri in str(refused.value)
        assert "when the session is built" in str(refused.value)
        assert "late_uri" not in hms.get_all_tables("sess_db"), "nothing created in the first metastore"
    finally:
        if before:
            spark.conf.set("spark.sqlext.metastore.uris", before)
        else:
            spark.conf.unset("spark.sqlext.metastore.uris")
    assert [tuple(r) for r in sql("SHOW DATABASES LIKE 'sess_db'").collect()] == [("sess_db",)]


def test_static_partition_insert_in_batch_mode(sql, hms: MetastoreClient, tmp_path: Path) -> None:
    write_hourly_events(tmp_path / "in", datetime(2026, 11, 22), hours=1, rows_per_hour=10)
    sql(_source_ddl("static_src", tmp_path / "in"))
    sql(_sink_ddl("static_dst", tmp_path / "out"))
    sql("SET 'execution.runtime-mode' = 'batch'")
    done = sql(
        "INSERT INTO sess_db.static_dst PARTITION (dt = '2026-01-01', hr = '00') "
        "SELECT id, user_id, ts FROM sess_db.static_src"
    ).first()
    assert done.status == "FINISHED"
    assert hms.get_partition_names("sess_db", "static_dst") == ["dt=2026-01-01/hr=00"]
    assert sql("SELECT count(*) AS n FROM sess_db.static_dst WHERE dt = '2026-01-01'").first().n == 10


def test_overwrite_is_refused_in_streaming_mode_with_flinks_reason(sql, tmp_path: Path) -> None:
    sql(_source_ddl("ow_src", tmp_path / "in"))
    sql(_sink_ddl("ow_dst", tmp_path / "out"))
    with pytest.raises(ValidationError, match="Streaming mode not support overwrite"):
        sql("INSERT OVERWRITE sess_db.ow_dst SELECT id, user_id, ts, 'd', 'h' FROM sess_db.ow_src")


def test_partition_time_without_a_watermark_is_an_error_naming_both_fixes(sql, tmp_path: Path) -> None:
    write_hourly_events(tmp_path / "in", datetime(2026, 11, 22), hours=1, rows_per_hour=5)
    sql(_source_ddl("nowm_src", tmp_path / "in", watermark=False))
    sql(_sink_ddl("nowm_dst", tmp_path / "out", ", 'sink.partition-commit.trigger' = 'partition-time'"))
    with pytest.raises(ValidationError) as failure:
        sql("INSERT INTO sess_db.nowm_dst SELECT id, user_id, ts, 'd', 'h' FROM sess_db.nowm_src")
    assert "WATERMARK FOR" in failure.value.message and "'process-time'" in failure.value.message


def test_create_table_like_merges_with_flinks_default_and_explicit_strategies(sql, tmp_path: Path) -> None:
    sql(_sink_ddl("like_base", tmp_path / "base", ", 'sink.partition-commit.delay' = '1 h'"))
    sql(f"CREATE TABLE sess_db.like_copy WITH ('path' = '{(tmp_path / 'copy').as_uri()}') LIKE sess_db.like_base")
    base = parse_statement(sql("SHOW CREATE TABLE sess_db.like_base").first().createtab_stmt)
    copy = parse_statement(sql("SHOW CREATE TABLE sess_db.like_copy").first().createtab_stmt)
    assert isinstance(base, CreateTable) and isinstance(copy, CreateTable)
    assert copy.table.columns == base.table.columns
    assert copy.table.partition_keys == ("dt", "hr")
    assert copy.table.options == {**base.table.options, "path": (tmp_path / "copy").as_uri()}

    sql(f"""CREATE TABLE sess_db.like_daily (note STRING) PARTITIONED BY (dt)
            WITH ('path' = '{(tmp_path / "daily").as_uri()}')
            LIKE sess_db.like_base (EXCLUDING PARTITIONS EXCLUDING GENERATED)""")
    daily = parse_statement(sql("SHOW CREATE TABLE sess_db.like_daily").first().createtab_stmt)
    assert isinstance(daily, CreateTable)
    assert [c.name for c in daily.table.columns] == ["id", "user_id", "ts", "dt", "hr", "note"]
    assert daily.table.partition_keys == ("dt",)
    with pytest.raises(ValidationError, match="cannot repartition"):
        sql(
            "CREATE TABLE sess_db.like_bad (x INT) PARTITIONED BY (x) WITH ('path' = 'file:///tmp/x') "
            "LIKE sess_db.like_base"
        )


def test_spark_keeps_its_own_tables_and_settings(sql, spark, hms: MetastoreClient) -> None:
    sql("CREATE TABLE sess_db.plain_managed (a INT) USING parquet")
    sql("INSERT INTO sess_db.plain_managed VALUES (1), (2)")
    assert sql("SELECT sum(a) AS s FROM sess_db.plain_managed").first().s == 3
    assert [r.col_name for r in sql("DESCRIBE sess_db.plain_managed").collect()] == ["a"]
    table = hms.get_table("sess_db", "plain_managed")
    assert table is not None and table.tableType == "MANAGED_TABLE"
    data_dir = Path(table.sd.location.removeprefix("file:"))
    assert data_dir.is_dir()
    sql("DROP TABLE sess_db.plain_managed")
    assert hms.get_table("sess_db", "plain_managed") is None
    assert not data_dir.exists(), "Spark dropped its managed table with its data"

    session = extend(spark)
    sql("SET spark.sql.shuffle.partitions=3")
    assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    assert "spark.sql.shuffle.partitions" not in session.options
    spark.conf.set("spark.sql.shuffle.partitions", "4")


def test_databases_use_and_unqualified_names(sql, spark, hms: MetastoreClient, tmp_path: Path) -> None:
    sql("CREATE DATABASE IF NOT EXISTS sess_other COMMENT 'other one' WITH ('owner.team' = 'data')")
    stored = hms.get_database("sess_other")
    assert stored is not None and stored.parameters == {"owner.team": "data"}
    assert "sess_other" in [r[0] for r in sql("SHOW DATABASES").collect()]
    sql("USE sess_other")
    try:
        path = tmp_path.as_uri()
        sql(f"CREATE TABLE unq (a INT) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')")
        assert hms.get_table("sess_other", "unq") is not None
        # Spark's SHOW TABLES also lists the session's temporary views, which other tests leave behind.
        assert [r.tableName for r in sql("SHOW TABLES").collect() if not r.isTemporary] == ["unq"]
        assert "CREATE TABLE `sess_other`.`unq`" in sql("SHOW CREATE TABLE unq").first().createtab_stmt
    finally:
        sql("USE default")


def test_failed_statements_leave_the_metastore_unchanged(sql, hms: MetastoreClient, tmp_path: Path) -> None:
    def state() -> dict[str, list[str]]:
        return {db: sorted(hms.get_all_tables(db)) for db in sorted(hms.get_all_databases())}

    before = state()
    failing = [
        _sink_ddl("bad1", tmp_path, ", 'sink.partition-commit.trigger' = 'sometimes'"),
        _sink_ddl("bad2", tmp_path, ", 'sink.partition-commit.dleay' = '1 h'"),
        "CREATE TABLE sess_db.bad3 (a INT) PARTITIONED BY (b) WITH ('connector' = 'datagen')",
        "CREATE TABLE no_such_db.bad4 (a INT) WITH ('connector' = 'datagen')",
        "CREATE TABLE sess_db.bad5 (a INT, WITH ('connector' = 'datagen')",
        "ALTER TABLE sess_db.no_such_table SET ('a' = 'b')",
    ]
    for statement in failing:
        with pytest.raises(SqlextError) as failure:
            sql(statement)
        assert failure.value.statement is not None, statement
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):  # not sqlext's: Spark's own error
        sql("DROP TABLE sess_db.no_such_table")
    assert state() == before


def test_execute_file_runs_a_script_in_order(spark, sql, hms: MetastoreClient, tmp_path: Path) -> None:
    script = tmp_path / "script.sql"
    script.write_text(
        f"""-- a script; with comments
        SET 'pipeline.name' = 'from-file';
        {_sink_ddl("from_file", tmp_path / "t")};
        /* Spark's own statements too */ SELECT 1 AS one;
        """
    )
    results = extend(spark).execute_file(script)
    assert len(results) == 3
    assert results[2].first().one == 1
    assert hms.get_table("sess_db", "from_file") is not None
    assert extend(spark).options["pipeline.name"] == "from-file"


def test_insert_with_a_leading_with_clause_goes_through_the_sink(sql, hms: MetastoreClient, tmp_path: Path) -> None:
    write_hourly_events(tmp_path / "in", datetime(2026, 11, 22), hours=1, rows_per_hour=6)
    sql(_source_ddl("cte_src", tmp_path / "in"))
    sql(_sink_ddl("cte_dst", tmp_path / "out"))
    sql("SET 'execution.runtime-mode' = 'batch'")
    done = sql(
        "WITH firsts AS (SELECT id, user_id, ts FROM sess_db.cte_src WHERE id < 3) "
        "INSERT INTO sess_db.cte_dst PARTITION (dt = '2026-11-22', hr = '00') SELECT * FROM firsts"
    ).first()
    assert done.status == "FINISHED"
    assert hms.get_partition_names("sess_db", "cte_dst") == ["dt=2026-11-22/hr=00"]
    assert sql("SELECT count(*) AS n FROM sess_db.cte_dst").first().n == 3


@pytest.mark.parametrize(
    ("class_path", "message"),
    [
        ("no_such_module.Policy", "Cannot import module 'no_such_module'"),
        ("sqlext.connectors.filesystem.policies.Nope", "has no class 'Nope'"),
        ("pathlib.Path", "does not implement"),
    ],
)
def test_an_insert_into_a_table_with_a_bad_policy_class_fails_at_start_and_writes_nothing(
    sql, spark, tmp_path: Path, class_path: str, message: str
) -> None:
    write_hourly_events(tmp_path / "in", datetime(2026, 11, 22), hours=1, rows_per_hour=5)
    sql(_source_ddl("badpol_src", tmp_path / "in"))
    policy = f", 'sink.partition-commit.policy.kind' = 'custom', 'sink.partition-commit.policy.class' = '{class_path}'"
    sql(_sink_ddl("badpol_dst", tmp_path / "out", policy))
    active_before = len(spark.streams.active)

    def files() -> list[Path]:  # CREATE TABLE marked the directory the metastore made (sqlext.catalog.locations)
        return sorted(p for p in (tmp_path / "out").rglob("*") if p.is_file()) if (tmp_path / "out").exists() else []

    created = files()
    try:
        with pytest.raises(SqlextError) as failure:
            sql("INSERT INTO sess_db.badpol_dst SELECT id, user_id, ts, 'd', 'h' FROM sess_db.badpol_src")
        assert message in failure.value.message
        assert "sink.partition-commit.policy.class" in failure.value.message and class_path in failure.value.message
        assert len(spark.streams.active) == active_before, "a query was left running"
        assert files() == created, "the insert wrote something"
    finally:
        sql("DROP TABLE IF EXISTS sess_db.badpol_dst")
        sql("DROP TABLE IF EXISTS sess_db.badpol_src")


def test_metadata_columns_read_in_any_query_of_a_sqlext_table(sql, tmp_path: Path) -> None:
    """``file.path`` of Flink's "Available Metadata" example, read by a plain SELECT, ``SELECT *``, a join and a
    subquery (Spark's view of the table has no such column: sqlext runs those queries)."""
    data = tmp_path / "with_path"
    data.mkdir()
    (data / "part-0.json").write_text(
        '{"column_name1": 1, "column_name2": "a"}\n{"column_name1": 2, "column_name2": "b"}\n'
    )
    (data / "part-1.json").write_text('{"column_name1": 3, "column_name2": "c"}\n')
    sql(f"""CREATE TABLE sess_db.with_path (column_name1 INT, column_name2 STRING, `file.path` STRING NOT NULL METADATA)
        WITH ('connector' = 'filesystem', 'path' = '{data.as_uri()}', 'format' = 'json')""")
    by_id = {1: data / "part-0.json", 2: data / "part-0.json", 3: data / "part-1.json"}
    expected = sorted((i, str(path)) for i, path in by_id.items())  # Flink's value: the path, no scheme

    rows = sql("SELECT column_name1, `file.path` FROM sess_db.with_path").collect()
    assert sorted((r[0], r[1]) for r in rows) == expected
    star = sql("SELECT * FROM sess_db.with_path")
    assert star.columns == ["column_name1", "column_name2", "file.path"]
    assert sorted((r[0], r[2]) for r in star.collect()) == expected
    joined = sql(
        "SELECT w.column_name2, w.`file.path` FROM sess_db.with_path w JOIN (SELECT 3 AS id) q ON w.column_name1 = q.id"
    ).collect()
    assert [tuple(r) for r in joined] == [("c", str(data / "part-1.json"))]
    counted = sql(
        "SELECT p, count(*) AS n FROM (SELECT `file.path` AS p FROM sess_db.with_path) GROUP BY p ORDER BY p"
    ).collect()
    assert [(r.p, r.n) for r in counted] == [(str(data / "part-0.json"), 2), (str(data / "part-1.json"), 1)]
    assert sql("SELECT count(*) AS n FROM sess_db.with_path").first().n == 3


@pytest.mark.parametrize("policies", ["success-file", "metastore,success-file"])
def test_a_partitioned_temporary_sink_commits_its_directories_and_reads_back(
    sql, hms: MetastoreClient, tmp_path: Path, policies: str
) -> None:
    """A temporary table is in no metastore: its partitions are its committed directories (Flink's ``metastore``
    policy does nothing outside a Hive catalog), and a query of it is read through its connector."""
    out, sink, rows = tmp_path / "tmp_out", f"tmp_sink_{len(policies)}", f"tmp_rows_{len(policies)}"
    sql(f"""CREATE TEMPORARY TABLE sess_db.{sink} (a INT, dt STRING) PARTITIONED BY (dt) WITH (
        'connector' = 'filesystem', 'path' = '{out.as_uri()}', 'format' = 'json',
        'sink.partition-commit.policy.kind' = '{policies}')""")
    sql(f"CREATE TEMPORARY TABLE sess_db.{rows} (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '7')")
    sql("SET 'execution.runtime-mode' = 'batch'")
    done = sql(f"INSERT INTO sess_db.{sink} SELECT a, '2026-01-01' FROM sess_db.{rows}").first()
    assert done.status == "FINISHED"
    assert (out / "dt=2026-01-01" / "_SUCCESS").is_file()
    assert sql(f"SELECT count(*) AS n, min(dt) AS dt FROM sess_db.{sink}").collect() == [(7, "2026-01-01")]
    assert hms.get_table("sess_db", sink) is None
