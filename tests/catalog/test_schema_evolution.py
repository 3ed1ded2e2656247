"""``ALTER TABLE``'s column changes on tables with committed partitions, on the real metastore.

Per format (parquet, orc, csv, json, avro), a table with two committed partitions gains a column and widens four
(INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL(10, 2) -> DECIMAL(12, 2), VARCHAR(10) -> VARCHAR(20)), then takes a
partition written with the new columns; every reader reads every partition back: Spark (parquet/orc natively, csv
and avro through their Hive SerDes, json through its provider parameters), Hive's SerDes
(``convertMetastoreParquet/Orc = false``) and sqlext's own source. The metastore holds the new columns in the table
and in every partition.
ALTERs a format's readers could not follow, and one the metastore refuses, leave the table and its partitions
as they were (compared whole, before and after). A streaming insert running while its sink gains a column keeps
writing (NULL there) and says so in its log; restarted with a SELECT that fills the column, it resumes its
checkpoint: every input row once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.errors import SqlextError
from sqlext.io.fs import FileSystem
from sqlext.registry import SourceContext
from sqlext.table import TableIdentifier
from tests.support.extension import extended_session
from tests.support.interop import add_spark_avro
from tests.support.services import spark_own_sql
from tests.support.streams import write_hourly_events
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]

DB = "evolve"
FORMATS = ("parquet", "orc", "csv", "json", "avro")
CONVERT = {"parquet": "spark.sql.hive.convertMetastoreParquet", "orc": "spark.sql.hive.convertMetastoreOrc"}
OLD_ROWS = [(1, 1.5, Decimal("12.34"), "a", "2026-01-01"), (2, 2.5, Decimal("56.78"), "b", "2026-01-02")]
NEW_ROW = (3_000_000_000, 3.25, Decimal("1234567890.12"), "a longer name", "late note", "2026-01-03")
COLUMNS = "id, score, amount, name, note, dt"
DAY = datetime(2026, 3, 1)


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Per format, ``evolve.t_<fmt>`` with :data:`OLD_ROWS` committed in two partitions (batch inserts)."""
    root = tmp_path_factory.mktemp("evolve")
    add_spark_avro(spark)
    with extended_session(spark, root, DB):
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        values = ", ".join(f"({i}, CAST({s} AS FLOAT), {a}BD, '{n}', '{d}')" for i, s, a, n, d in OLD_ROWS)
        for fmt in FORMATS:
            spark.sql(
                f"CREATE TABLE {DB}.t_{fmt} (id INT, score FLOAT, amount DECIMAL(10, 2), name VARCHAR(10), "
                f"dt STRING) PARTITIONED BY (dt) WITH ('connector' = 'filesystem', 'path' = "
                f"'{(root / fmt).as_uri()}', 'format' = '{fmt}')"
            )
            spark.sql(f"INSERT INTO {DB}.t_{fmt} SELECT * FROM VALUES {values} AS v(id, score, amount, name, dt)")
        spark.sql("RESET 'execution.runtime-mode'")
        yield root


def _snapshot(hms: MetastoreClient, name: str) -> tuple[Any, list[Any]]:
    """The table and its partitions, whole, as the metastore holds them."""
    table = hms.get_table(DB, name)
    partitions = hms.get_partitions_by_names(DB, name, hms.get_partition_names(DB, name))
    return table, sorted(partitions, key=lambda p: p.values)


def _refused(spark: Any, alter: str) -> str:
    with pytest.raises(SqlextError) as failure:
        spark.sql(alter)
    return failure.value.message


REFUSED = [
    ("MODIFY name INT", "Column `name` cannot change type from VARCHAR(10) to INT"),
    ("MODIFY id SMALLINT", "Column `id` cannot change type from INT to SMALLINT"),
    ("MODIFY dt INT", "The column `dt` is used as the partition keys"),
    ("DROP dt", "The column `dt` is used as the partition keys."),
    ("RENAME dt TO d", "The column `dt` is used as the partition keys."),
    ("ADD id BIGINT", "Column `id` already exists in the table."),
    ("ADD COLUMNS (x INT) RESTRICT", "RESTRICT is not supported"),
]
REFUSED_BY_FORMAT = {
    "csv": [
        ("ADD x INT FIRST", "column `x` cannot be placed before column `id`: format 'csv' is read by position"),
        ("DROP score", "column `score` cannot be dropped: format 'csv' is read by position"),
    ],
    **{
        fmt: [("RENAME name TO label", f"column `name` cannot be renamed to `label`: format '{fmt}' is read by name")]
        for fmt in ("parquet", "orc", "json", "avro")
    },
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_refused_alters_leave_the_table_and_its_partitions_as_they_were(
    tables: Path, spark: Any, hms: MetastoreClient, fmt: str
) -> None:
    name = f"t_{fmt}"
    before = _snapshot(hms, name)
    assert len(before[1]) >= 2
    for alter, message in [*REFUSED, *REFUSED_BY_FORMAT[fmt]]:
        assert message in _refused(spark, f"ALTER TABLE {DB}.{name} {alter}"), alter
    if fmt == "parquet":
        spark.sql(f"ALTER TABLE IF EXISTS {DB}.no_such_table ADD (x INT)")  # Flink's IF EXISTS: nothing to do
        assert "Table evolve.no_such_table does not exist" in _refused(
            spark, f"ALTER TABLE {DB}.no_such_table ADD (x INT)"
        )
    if fmt == "parquet":  # once: the metastore retries its database's error for 20 s before it answers
        # A change sqlext allows and the metastore refuses (Hive 2.3's Derby schema keeps a column comment in
        # 256 characters): one transaction, so nothing of it stays.
        message = _refused(spark, f"ALTER TABLE {DB}.{name} ADD x INT COMMENT '{'c' * 300}'")
        assert f"refused ALTER TABLE {DB}.{name} ADD (`x` INT)" in message and "Nothing changed" in message
    assert _snapshot(hms, name) == before


def _read(spark: Any, table: str, fmt: str, reader: str, columns: str = COLUMNS) -> list[tuple[Any, ...]]:
    if reader == "sqlext":
        definition = Catalog(spark._sqlext_session.catalog.client).get_table(TableIdentifier(*table.split(".")))
        frame = FileSystemTableFactory().create_source(SourceContext(spark, definition, streaming=False))
        return sorted(tuple(row) for row in frame.select(*columns.split(", ")).collect())
    key = CONVERT.get(fmt)
    if key:
        spark.conf.set(key, str(reader == "spark").lower())
    try:
        spark.catalog.refreshTable(table)
        return sorted(tuple(row) for row in spark_own_sql(spark)(f"SELECT {columns} FROM {table}").collect())
    finally:
        if key:
            spark.conf.unset(key)


def _readers(fmt: str) -> list[str]:
    # pyspark's Hive 2.3 jars hold no JSON SerDe; csv's Hive SerDe is what Spark reads it with already.
    return ["spark", "hive-serde", "sqlext"] if fmt in CONVERT else ["spark", "sqlext"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_old_partitions_read_by_the_new_columns_in_every_reader(
    tables: Path, spark: Any, hms: MetastoreClient, fmt: str
) -> None:
    table = f"{DB}.t_{fmt}"
    if fmt == "orc":  # Hive's form
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS (note STRING COMMENT 'added later') CASCADE")
    else:
        spark.sql(f"ALTER TABLE {table} ADD (note STRING COMMENT 'added later' AFTER name)")
    spark.sql(f"ALTER TABLE {table} MODIFY (id BIGINT, score DOUBLE, amount DECIMAL(12, 2), name VARCHAR(20))")
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    i, s, a, n, note, d = NEW_ROW
    # Values go to the columns by position; Hive's form adds a column last, after the partition key.
    last = f"'{d}', '{note}'" if fmt == "orc" else f"'{note}', '{d}'"
    spark.sql(f"INSERT INTO {table} SELECT {i}, {s}D, {a}BD, '{n}', {last}")

    stored, partitions = _snapshot(hms, f"t_{fmt}")
    assert [(c.name, c.type, c.comment) for c in stored.sd.cols] == [
        ("id", "bigint", None),
        ("score", "double", None),
        ("amount", "decimal(12,2)", None),
        ("name", "string", None),
        ("note", "string", "added later"),
    ]
    assert len(partitions) == 3
    assert all(p.sd.cols == stored.sd.cols for p in partitions), "every partition follows the table (CASCADE)"
    expected = sorted([*((i, s, a, n, None, d) for i, s, a, n, d in OLD_ROWS), NEW_ROW])
    problems = []
    for reader in _readers(fmt):
        try:
            rows = _read(spark, table, fmt, reader)
        except Exception as exc:  # one reader failing must not hide what the others read
            problems.append(f"{fmt}/{reader}: the read failed: {str(exc).splitlines()[0][:500]}")
            continue
        if rows != expected:
            problems.append(f"{fmt}/{reader}: read {rows}, expected {expected}")
    assert not problems, "\n".join(problems)

    # The last column goes again (in every format); its name is not given to another column afterwards.
    spark.sql(f"ALTER TABLE {table} DROP note")
    assert [c.name for c in hms.get_table(DB, f"t_{fmt}").sd.cols] == ["id", "score", "amount", "name"]
    for reader in ("spark", "sqlext"):  # csv: the new partition's lines hold a field past the last column
        assert _read(spark, table, fmt, reader, "id, score, amount, name, dt") == sorted(
            (*row[:4], row[5]) for row in expected
        ), reader
    before = _snapshot(hms, f"t_{fmt}")
    retired = "was dropped before" if fmt != "csv" else "still hold its values"
    assert retired in _refused(spark, f"ALTER TABLE {table} ADD note STRING")
    assert _snapshot(hms, f"t_{fmt}") == before
    if fmt == "csv":
        return
    # Read by name: a column in the middle goes too, and every reader still finds the others in every file.
    spark.sql(f"ALTER TABLE {table} DROP score")
    kept = sorted((*row[:1], *row[2:4], row[5]) for row in expected)
    for reader in _readers(fmt):
        assert _read(spark, table, fmt, reader, "id, amount, name, dt") == kept, f"{fmt}/{reader}"


def _committed_ids(spark: Any, table: str) -> list[int]:
    spark.catalog.refreshTable(table)
    return sorted(row.id for row in spark_own_sql(spark)(f"SELECT id FROM {table}").collect())


def test_a_running_insert_survives_an_added_column_and_a_restarted_one_fills_it(
    tables: Path, spark: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The sink gains ``amount`` while the insert runs: it goes on (NULL there) and its log says so. Stopped
    and started again with a SELECT that fills ``amount``, it resumes its checkpoint: each event once."""
    source, sink, landing = f"{DB}.events_src", f"{DB}.events", tables / "events_input"
    spark.sql(
        f"CREATE TABLE {source} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)) WITH ('connector' = "
        f"'filesystem', 'path' = '{landing.as_uri()}', 'format' = 'parquet', 'source.monitor-interval' = '1 s')"
    )
    spark.sql(
        f"CREATE TABLE {sink} (id BIGINT, user_id STRING, dt STRING) PARTITIONED BY (dt) WITH ('connector' = "
        f"'filesystem', 'path' = '{(tables / 'events').as_uri()}', 'format' = 'parquet')"
    )
    log = CommitLog(FileSystem((tables / "events").as_uri()), (tables / "events").as_uri())
    day = "DATE_FORMAT(ts, 'yyyy-MM-dd')"
    caplog.set_level(logging.INFO, logger="sqlext")
    next_id = write_hourly_events(landing, DAY, hours=1, rows_per_hour=10)
    [first] = spark.sql(f"INSERT INTO {sink} SELECT id, user_id, {day} FROM {source}").collect()
    try:
        wait_for(lambda: sum(e.rows for e in log.entries()) >= 10, 120, what="the first hour's rows")
        spark.sql(f"ALTER TABLE {sink} ADD (amount DOUBLE COMMENT 'filled from now on' AFTER user_id)")
        next_id = write_hourly_events(landing, DAY.replace(hour=1), hours=1, rows_per_hour=10, first_id=next_id)
        wait_for(lambda: sum(e.rows for e in log.entries()) >= 20, 120, what="rows written after the ALTER")
        warning = "sink table evolve.events changed (ALTER TABLE) since this insert started: it gained `amount` DOUBLE"
        wait_for(lambda: warning in caplog.text, 60, what="the insert's log to name the new column")
        assert running_insert(first.job_id).query.isActive
    finally:
        running = running_insert(first.job_id)
        assert running is not None
        running.stop()
    assert spark_own_sql(spark)(f"SELECT count(*) FROM {sink} WHERE amount IS NOT NULL").first()[0] == 0

    next_id = write_hourly_events(landing, DAY.replace(hour=2), hours=1, rows_per_hour=10, first_id=next_id)
    [second] = spark.sql(f"INSERT INTO {sink} SELECT id, user_id, amount, {day} FROM {source}").collect()
    try:
        assert "resuming although the query changed: the sink's columns changed since the checkpoint" in caplog.text
        wait_for(lambda: len(_committed_ids(spark, sink)) >= 30, 120, what="the restarted insert's rows")
    finally:
        running = running_insert(second.job_id)
        assert running is not None
        running.stop()
    assert _committed_ids(spark, sink) == list(range(next_id)), "every event once: the checkpoint was resumed"
    filled = spark_own_sql(spark)(f"SELECT id, amount FROM {sink} WHERE amount IS NOT NULL ORDER BY id").collect()
    assert [(row.id, row.amount) for row in filled] == [(i, i / 10) for i in range(20, 30)]


def test_a_commit_that_read_the_table_before_an_alter_gives_its_partitions_the_new_columns(
    tables: Path, spark: Any, hms: MetastoreClient
) -> None:
    """The race of a commit and an ALTER, played in order: the metastore policy read the table, the ALTER
    cascaded to the partitions there were, then the policy commits late data of one of them and adds a new
    partition with the columns it read before: every partition ends with the table's new columns."""
    from sqlext.connectors.filesystem.policies import MetastorePolicy, PartitionCommitContext

    name = "raced"
    path = tables / name
    spark.sql(
        f"CREATE TABLE {DB}.{name} (id INT, dt STRING) PARTITIONED BY (dt) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = 'parquet')"
    )
    definition = Catalog(hms).get_table(TableIdentifier(DB, name))
    read_before = hms.get_table(DB, name)

    def context(day: str) -> PartitionCommitContext:
        (path / f"dt={day}").mkdir(parents=True, exist_ok=True)
        return PartitionCommitContext(
            table=definition,
            keys=["dt"],
            values=[day],
            path=f"{path.as_uri()}/dt={day}",
            relative_path=f"dt={day}",
            files=[],
            fs=FileSystem(path.as_uri()),
            metastore=hms,
            hms_table=read_before,
            row_count=0,
        )

    MetastorePolicy().commit_all([context("2026-01-01")])
    spark.sql(f"ALTER TABLE {DB}.{name} ADD (note STRING)")
    MetastorePolicy().commit_all([context("2026-01-01"), context("2026-01-02")])  # late data, and a new one
    table, partitions = _snapshot(hms, name)
    assert [c.name for c in table.sd.cols] == ["id", "note"]
    assert [p.values for p in partitions] == [["2026-01-01"], ["2026-01-02"]]
    assert all(p.sd.cols == table.sd.cols for p in partitions)
