"""Change-event files (debezium-json, canal-json, maxwell-json) through sqlext's filesystem source and sink:
rows and row kinds as Flink 2.3 read them from the same files (:mod:`.events`), bad messages failing naming
table and file (or skipped), the debezium-json, canal-json and maxwell-json sinks writing what Flink's write,
and the inserts Flink refuses refused before anything runs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.changelog_formats import ROW_KIND
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.errors import OptionError, SqlextError, ValidationError
from sqlext.registry import SourceContext
from sqlext.table import TableIdentifier
from tests.connectors.changelog import events
from tests.support.extension import extended_session

pytestmark = [pytest.mark.spark, pytest.mark.hms]

DB = "changelog_files"


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("changelog")
    with extended_session(spark, root, DB):
        yield root


def _read(spark: Any, hms: MetastoreClient, name: str) -> list[tuple[Any, ...]]:
    definition = Catalog(hms).get_table(TableIdentifier(DB, name))
    frame = FileSystemTableFactory().create_source(SourceContext(spark, definition, streaming=False))
    assert frame.columns[-1] == ROW_KIND
    return [(row[ROW_KIND], *row[:-1]) for row in frame.collect()]


def _create(spark: Any, name: str, fmt: str, path: Path, options: str = "") -> None:
    spark.sql(f"DROP TABLE IF EXISTS {DB}.{name}")
    spark.sql(events.ddl(f"{DB}.{name}", fmt, path, options=options))


@pytest.mark.parametrize("fmt", sorted(events.MESSAGES))
def test_each_format_reads_the_rows_and_row_kinds_flink_reads(
    spark: Any, hms: MetastoreClient, session: Path, fmt: str
) -> None:
    path = events.write(session / fmt, events.MESSAGES[fmt])
    name = fmt.replace("-", "_")
    _create(spark, name, fmt, path)
    assert _read(spark, hms, name) == events.FLINK_READ[fmt]


def test_canal_include_options_keep_the_matching_messages(spark: Any, hms: MetastoreClient, session: Path) -> None:
    path = events.write(session / "canal_incl", events.CANAL)
    options = ", 'canal-json.database.include' = 'inv', 'canal-json.table.include' = 'prod.*'"
    _create(spark, "canal_incl", "canal-json", path, options)
    assert _read(spark, hms, "canal_incl") == events.FLINK_READ["canal-json"][:-1]


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (events.UNKNOWN_OP, 'Unknown "op" value "x". The Debezium JSON message is \'{"before":null'),
        (events.MALFORMED, 'Corrupt Debezium JSON message \'{"before":null,"after":{"id":3,\'.'),
        (events.BAD_FIELD, "(field 'id' is not a INT)"),
    ],
    ids=["unknown-op", "malformed", "bad-field"],
)
def test_a_bad_message_fails_naming_table_and_file_or_is_skipped(
    spark: Any, hms: MetastoreClient, session: Path, lines: list[str], says: str
) -> None:
    path = events.write(session / f"bad_{len(says)}", lines)
    _create(spark, "bad", "debezium-json", path)
    with pytest.raises(Exception) as failure:
        _read(spark, hms, "bad")
    message = str(failure.value)
    assert f"Table {DB}.bad, file {(path / 'part-0.json').as_uri().replace('file:///', 'file:/')}" in message
    assert says in message and "'debezium-json.ignore-parse-errors' = 'true'" in message
    _create(spark, "bad", "debezium-json", path, ", 'debezium-json.ignore-parse-errors' = 'true'")
    assert _read(spark, hms, "bad") == [("+I", 1, "a", 1.5)]


def test_options_are_checked_as_flink_checks_them(spark: Any, session: Path) -> None:
    with pytest.raises(OptionError, match=re.escape("'debezium-json.schema-include': 'yes'")):
        _create(spark, "opts", "debezium-json", session, ", 'debezium-json.schema-include' = 'yes'")
    with pytest.raises(OptionError, match=re.escape("Supported options: debezium-json.schema-include")):
        _create(spark, "opts", "debezium-json", session, ", 'debezium-json.database.include' = 'x'")


def _insert(spark: Any, sql: str) -> None:
    [row] = spark.sql(sql).collect()
    running = running_insert(row.job_id)
    assert running is not None and running.finished.wait(180), "the insert did not end"
    assert running.error is None, running.error


def _written(target: Path) -> list[str]:
    return [line for f in sorted(target.glob("part-*")) for line in f.read_text().splitlines()]


@pytest.mark.parametrize("sink_format", sorted(events.FLINK_SINK))
def test_a_change_event_sink_writes_what_flinks_writes(spark: Any, session: Path, sink_format: str) -> None:
    name = sink_format.replace("-", "_")
    source = events.write(session / "sink_src", events.DEBEZIUM)
    _create(spark, "sink_src", "debezium-json", source)
    target = session / f"sink_out_{name}"
    _create(spark, "sink_out", sink_format, target)
    _insert(spark, f"INSERT INTO {DB}.sink_out SELECT * FROM {DB}.sink_src")
    assert _written(target) == events.FLINK_SINK[sink_format]
    projected = session / f"sink_projected_{name}"
    _create(spark, "sink_projected", sink_format, projected)
    _insert(spark, f"INSERT INTO {DB}.sink_projected SELECT id, name, price FROM {DB}.sink_src WHERE id = 2")
    assert _written(projected) == [events.FLINK_SINK[sink_format][1], events.FLINK_SINK[sink_format][4]]


@pytest.mark.parametrize("sink_format", ["json", "csv", "parquet"])
def test_an_insert_only_sink_refuses_a_changelog_with_flinks_reason(
    spark: Any, session: Path, sink_format: str
) -> None:
    source = events.write(session / "refuse_src", events.DEBEZIUM)
    _create(spark, "refuse_src", "debezium-json", source)
    target = session / f"refuse_{sink_format}"
    spark.sql(f"DROP TABLE IF EXISTS {DB}.refuse_out")
    spark.sql(
        f"CREATE TABLE {DB}.refuse_out (id INT, name STRING, price DOUBLE) WITH ('connector' = 'filesystem', "
        f"'path' = '{target.as_uri()}', 'format' = '{sink_format}')"
    )
    with pytest.raises(ValidationError, match="doesn't support consuming update and delete changes which is produced"):
        spark.sql(f"INSERT INTO {DB}.refuse_out SELECT * FROM {DB}.refuse_src WHERE id > 0")
    assert not target.exists() or not any(p for p in target.rglob("*") if p.is_file() and "_sqlext" not in p.parts)


def test_batch_mode_refuses_a_changelog_source_with_flinks_reason(spark: Any, session: Path) -> None:
    source = events.write(session / "batch_src", events.DEBEZIUM)
    _create(spark, "batch_src", "debezium-json", source)
    _create(spark, "batch_out", "debezium-json", session / "batch_out")
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    try:
        with pytest.raises(
            SqlextError,
            match=re.escape(
                "Querying a table in batch mode is currently only possible for INSERT-only table sources. But the "
                "source for table 'changelog_files.batch_src' produces"
            ),
        ):
            spark.sql(f"INSERT INTO {DB}.batch_out SELECT * FROM {DB}.batch_src")
    finally:
        spark.sql("RESET 'execution.runtime-mode'")
    assert not (session / "batch_out").exists() or not list((session / "batch_out").glob("*.json"))


def test_spark_sql_shows_the_row_kind_column(spark: Any, session: Path) -> None:
    source = events.write(session / "shown", events.DEBEZIUM)
    _create(spark, "shown", "debezium-json", source)
    rows = spark.sql(f"SELECT * FROM {DB}.shown").collect()
    assert [(r[ROW_KIND], r.id, r.name) for r in rows] == [
        (k, i, n) for k, i, n, _ in events.FLINK_READ["debezium-json"]
    ]


def test_an_insert_reading_a_bad_message_fails_and_commits_nothing(spark: Any, session: Path) -> None:
    source = events.write(session / "bad_insert_src", events.UNKNOWN_OP)
    _create(spark, "bad_insert_src", "debezium-json", source)
    target = session / "bad_insert_out"
    _create(spark, "bad_insert_out", "debezium-json", target)
    [row] = spark.sql(f"INSERT INTO {DB}.bad_insert_out SELECT * FROM {DB}.bad_insert_src").collect()
    running = running_insert(row.job_id)
    assert running is not None and running.finished.wait(180), "the insert did not end"
    failure = running.query.exception()  # the query's own failure (running.error holds commit failures)
    assert failure is not None and 'Unknown "op" value "x"' in str(failure)
    assert f"Table {DB}.bad_insert_src, file " in str(failure)
    assert not list(target.glob("part-*"))  # not even the good first event: the batch failed whole
