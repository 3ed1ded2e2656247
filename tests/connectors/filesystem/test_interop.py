"""Every reader reads back exactly what sqlext wrote: type x format x reader, for a batch insert, a
streaming insert (several batches, so several files per partition) and that streaming table after
``sqlext compact``. The rows and the comparison are in :mod:`tests.support.interop`.

Readers:
- ``spark``: Spark SQL on the HMS table (parquet/orc: Spark's native readers; json: Spark's json reader
  through the table's provider parameters; csv: Spark reads a Hive text table through its SerDe);
- ``hive-serde``: Hive's SerDe as Hive-protocol engines read (``spark.sql.hive.convertMetastoreParquet/Orc
  = false``); for csv and avro (Hive's AvroSerDe) the same path as ``spark``; json: not runnable here
  (pyspark ships no JSON SerDe);
- ``sqlext``: sqlext's own filesystem source over the table's path, with the table's definition.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.connectors.filesystem.compaction.command import compact_table
from sqlext.connectors.filesystem.files import count_all_rows, readers_see
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.io.fs import FileSystem
from sqlext.registry import SourceContext
from sqlext.table import TableIdentifier
from tests.support.extension import extended_session
from tests.support.interop import (
    FORMATS,
    add_spark_avro,
    assert_rows_equal,
    avro_hive_rows,
    columns_for,
    create_matrix_sources,
    ddl_columns,
    expected_rows,
    spark_schema,
    table_options,
)
from tests.support.services import spark_own_sql

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

DB = "interop"
#: Spark's setting that makes it read a metastore table of the format through Hive's SerDe.
CONVERT = {"parquet": "spark.sql.hive.convertMetastoreParquet", "orc": "spark.sql.hive.convertMetastoreOrc"}
#: Files the streaming insert reads, one per batch.
STREAM_FILES = 3


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The Spark session, extended, with a parquet landing dir per format holding :data:`ROWS` in
    ``STREAM_FILES`` files, and a sqlext source table over each."""
    root = tmp_path_factory.mktemp("interop")
    with extended_session(spark, root):
        add_spark_avro(spark)
        create_matrix_sources(spark, DB, root, STREAM_FILES)
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        yield root
        spark.sql("RESET 'execution.runtime-mode'")


def _create_sink(spark: Any, root: Path, fmt: str, mode: str) -> str:
    name = f"{DB}.t_{fmt}_{mode}"
    spark.sql(f"CREATE TABLE {name} ({ddl_columns(fmt)}) PARTITIONED BY (p) WITH ({table_options(fmt, root / name)})")
    return name


def _insert(spark: Any, sink: str, fmt: str, mode: str) -> None:
    spark.sql(f"SET 'execution.runtime-mode' = '{mode}'")
    try:
        [row] = spark.sql(f"INSERT INTO {sink} SELECT * FROM {DB}.src_{fmt}").collect()
    finally:
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
    if mode == "streaming":
        running = running_insert(row.job_id)
        assert running is not None and running.wait(300), f"the streaming insert into {sink} did not finish"
        assert running.query.exception() is None


def _select(fmt: str) -> str:
    return ", ".join(f"`{name}`" for name, _ in columns_for(fmt))


def _read_hms(spark: Any, table: str, fmt: str, hive_serde: bool) -> list[Any]:
    key = CONVERT.get(fmt)
    if key:
        spark.conf.set(key, str(not hive_serde).lower())
    try:
        spark.catalog.refreshTable(table)
        return spark_own_sql(spark)(f"SELECT {_select(fmt)} FROM {table}").collect()
    finally:
        if key:
            spark.conf.unset(key)


def _read_sqlext(spark: Any, hms: MetastoreClient, table: str) -> list[Any]:
    database, name = table.split(".")
    definition = Catalog(hms).get_table(TableIdentifier(database, name))
    frame = FileSystemTableFactory().create_source(SourceContext(spark, definition, streaming=False))
    return frame.collect()


READERS = ("spark", "hive-serde", "sqlext")


def _check_all_readers(spark: Any, hms: MetastoreClient, table: str, fmt: str, when: str) -> None:
    problems: list[str] = []
    for reader in READERS:
        if reader == "hive-serde" and fmt == "json":
            continue  # Hive 2.3's jars in pyspark carry no JSON SerDe; see docs/connectors.md
        try:
            if reader == "sqlext":
                rows = _read_sqlext(spark, hms, table)
            else:
                rows = _read_hms(spark, table, fmt, hive_serde=reader == "hive-serde")
        except Exception as exc:  # one reader failing must not hide what the others read
            causes = [line.strip() for line in str(exc).splitlines() if "Exception" in line][-3:]
            problems.append(f"{fmt}/{reader} ({when}): the read failed: {' / '.join(causes)[:1500]}")
            continue
        try:
            # Hive has no TIME: through the AvroSerDe it is Avro's time-millis, an int (docs/connectors.md).
            hive_view = avro_hive_rows() if fmt == "avro" and reader != "sqlext" else None
            assert_rows_equal(fmt, f"{reader} ({when})", rows, hive_view)
        except AssertionError as exc:
            problems.append(str(exc))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("fmt", FORMATS)
def test_batch_insert_reads_back_exactly_in_every_reader(session: Path, spark: Any, hms: MetastoreClient, fmt: str):
    sink = _create_sink(spark, session, fmt, "batch")
    _insert(spark, sink, fmt, "batch")
    _check_all_readers(spark, hms, sink, fmt, "batch insert")
    # What the partitions' numRows are counted from (avro: its blocks' headers).
    fs = FileSystem(str(session / sink))
    written = [f for f in fs.list_files(str(session / sink)) if readers_see(f.relative)]
    assert written and count_all_rows(fs, written, fmt) == len(expected_rows(fmt))


@pytest.mark.parametrize("fmt", FORMATS)
def test_streaming_insert_and_compaction_read_back_exactly_in_every_reader(
    session: Path, spark: Any, hms: MetastoreClient, metastore: MetastoreSettings, fmt: str
):
    sink = _create_sink(spark, session, fmt, "streaming")
    _insert(spark, sink, fmt, "streaming")
    _check_all_readers(spark, hms, sink, fmt, "streaming insert")

    if fmt == "avro":
        return  # sqlext compact merges parquet, orc, csv and json files, not avro
    database, name = sink.split(".")
    definition = Catalog(hms).get_table(TableIdentifier(database, name))
    summary = compact_table(definition, hms, reader_grace=timedelta(0), show_progress=False)
    # pyarrow reads ORC timestamps as nanoseconds only: p=b holds year 9999 and is left as it is.
    merged = 1 if fmt == "orc" else 2
    assert summary.compacted == merged and summary.files_after == merged, summary
    _check_all_readers(spark, hms, sink, fmt, "after sqlext compact")


@pytest.mark.parametrize("fmt", ["parquet", "orc", "csv"])
def test_format_sqlext_writer_reads_back_exactly_in_every_reader(
    session: Path, spark: Any, hms: MetastoreClient, fmt: str
):
    """``format("sqlext")`` writes with pyarrow on the executors: the same forms as the INSERT path."""
    import sqlext

    sink = _create_sink(spark, session, fmt, "datasource")
    sqlext.register(spark)
    query = (
        spark.readStream.schema(spark_schema(fmt))
        .parquet((session / f"landing_{fmt}").as_uri())
        .writeStream.format("sqlext")
        .option("table", sink)
        .option("checkpointLocation", (session / "checkpoints" / f"datasource_{fmt}").as_uri())
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    _check_all_readers(spark, hms, sink, fmt, "format('sqlext')")


def test_sqlext_source_reads_csv_quoted_as_flink_and_older_sqlext_wrote_it(
    session: Path, spark: Any, hms: MetastoreClient
) -> None:
    """Landing zones written by Flink's csv (quoted fields) and csv tables sqlext wrote before it wrote
    Hive's form (Spark's csv writer: quoted fields, ISO timestamps, NULL as an empty field)."""
    path = session / "quoted_csv"
    path.mkdir()
    (path / "part-0.csv").write_text(
        '1,"say ""hi"", a,b","2026-01-01 01:00:00",2.5\n2,,2026-01-01T01:00:00.000Z,\n3,"",,\n'
    )
    columns = "id INT, s STRING, ts TIMESTAMP(3), d DOUBLE"
    spark.sql(f"CREATE TABLE {DB}.quoted_csv ({columns}) WITH ({table_options('csv', path)})")
    iso = spark_own_sql(spark)("SELECT CAST('2026-01-01T01:00:00.000Z' AS TIMESTAMP) AS ts").first().ts
    rows = sorted(tuple(row) for row in _read_sqlext(spark, hms, f"{DB}.quoted_csv"))
    assert rows == [
        (1, 'say "hi", a,b', datetime(2026, 1, 1, 1), 2.5),
        (2, "", iso, None),
        (3, "", None, None),
    ]
