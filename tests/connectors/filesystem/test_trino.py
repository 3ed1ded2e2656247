"""Trino reads what sqlext commits, through the metastore: a real Trino 476 (``tests.support.trino``, one per
test session) with a Hive catalog on the session's metastore.

- every format sqlext writes (parquet, orc, csv, json, avro) with the interop matrix's types and values
  (:mod:`tests.support.interop`), compared value by value with what was written;
- a partition only once it is committed (a streaming insert with a partition-time trigger), with its
  ``numRows`` as Trino's statistics;
- under Hive 3.1 and 4 metastores too: a committed partition is visible to Trino and Spark, statistics right;
- old partitions after ``ALTER TABLE`` added a column and widened four, by the new columns;
- json's NaN and infinities as ``json.encode.non-finite-number.mode`` writes them: ``STRING`` (Flink's strings)
  fails a query reading such a column on the whole file, ``NULL`` reads as null;
- the edge cases on which readers disagree (dates and timestamps before the Gregorian switch, a timestamp in
  the last second before 1970) in parquet, orc and avro, read by Spark, Hive's SerDes, sqlext's source, Trino
  and pyarrow.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
from sqlext.io.fs import FileSystem
from sqlext.registry import SourceContext
from sqlext.sink import InsertPlan
from sqlext.table import TableDefinition, TableIdentifier
from tests.support.extension import extended_session
from tests.support.interop import FORMATS as MATRIX_FORMATS
from tests.support.interop import (
    ROWS,
    add_spark_avro,
    assert_rows_equal,
    avro_hive_rows,
    columns_for,
    create_matrix_sources,
    ddl_columns,
    expected_rows,
    table_options,
)
from tests.support.non_finite import NULLED, create_json_table, create_source, same
from tests.support.non_finite import ROWS as NON_FINITE_ROWS
from tests.support.services import FETCHED_VERSIONS, BackendMetastore, spark_own_sql
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import assert_partitions_committed, create_in_hms, events_table
from tests.support.trino import TrinoQueryFailed, TrinoServer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.jars, pytest.mark.trino, pytest.mark.slow]

FORMATS = MATRIX_FORMATS
DB = "trino_reads"
START = datetime(2026, 11, 22, 0, 0, 0)
JSON_ISO = {"json.timestamp-format.standard": "ISO-8601"}
HOURLY_OPTIONS = {
    "sink.partition-commit.trigger": "partition-time",
    "sink.partition-commit.delay": "1 h",
    "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
}


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The Spark session, extended, with the database ``trino_reads``; its root directory."""
    root = tmp_path_factory.mktemp("trino_reads")
    with extended_session(spark, root, DB):
        add_spark_avro(spark)
        yield root


@pytest.fixture(scope="module")
def written(spark: Any, session: Path) -> Path:
    """For each format, ``trino_reads.t_<fmt>`` holding the matrix's rows, written by a batch INSERT (and
    ``t_json_iso``: json with ISO-8601 timestamps)."""
    create_matrix_sources(spark, DB, session)
    for fmt, table, extra in [*((f, f"t_{f}", {}) for f in FORMATS), ("json", "t_json_iso", JSON_ISO)]:
        options = table_options(fmt, session / table, **extra)
        spark.sql(f"CREATE TABLE {DB}.{table} ({ddl_columns(fmt)}) PARTITIONED BY (p) WITH ({options})")
        _insert_batch(spark, f"INSERT INTO {DB}.{table} SELECT * FROM {DB}.src_{fmt}")
    return session


def _insert_batch(spark: Any, insert: str) -> None:
    """Run ``insert`` to its end (batch mode: every partition committed when it returns; each test's
    ``SET``s are undone after it, by the ``_fresh_sqlext_options`` fixture)."""
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    [row] = spark.sql(insert).collect()
    assert row.status == "FINISHED", row


#: Binary types: a json file holds them in base64 (Flink's and Spark's json), and Trino, as Hive's JSON SerDe,
#: reads a json string into VARBINARY as its text's bytes: the query decodes them.
BINARY_TYPES = ("BINARY", "VARBINARY", "BYTES")


def _trino_select(fmt: str) -> str:
    """The matrix's columns as Trino selects them: a REAL widened to DOUBLE, which is exact (Trino's client
    protocol prints a REAL as its shortest float text, which parses back as another double); json's binary
    values decoded from base64 (:data:`BINARY_TYPES`)."""

    def column(name: str, type_: str) -> str:
        if type_ == "FLOAT":
            return f'CAST("{name}" AS DOUBLE) AS "{name}"'
        if fmt == "json" and type_.startswith(BINARY_TYPES):
            return f'from_base64(from_utf8("{name}")) AS "{name}"'
        return f'"{name}"'

    return ", ".join(column(name, type_) for name, type_ in columns_for(fmt))


def _as_trino_reads_csv() -> list[tuple[Any, ...]]:
    """The csv rows as Trino 476 reads them: a line feed or carriage return in a string as the letter ``n``
    or ``r``. sqlext writes them as ``\\n`` and ``\\r`` with ``serialization.escape.crlf`` (the only way
    LazySimpleSerDe text holds them: its lines end at a line feed), which Hive reads and Trino ignores (it
    takes the escape character off and keeps the letter). Expected exactly, so nothing else may differ."""
    return [
        tuple(v.replace("\n", "n").replace("\r", "r") if isinstance(v, str) else v for v in row)
        for row in expected_rows("csv")
    ]


@pytest.mark.parametrize(("fmt", "table"), [*((f, f"t_{f}") for f in FORMATS), ("json", "t_json_iso")])
def test_trino_reads_back_every_value_sqlext_wrote(written: Path, trino: TrinoServer, fmt: str, table: str) -> None:
    rows = trino.query(f"SELECT {_trino_select(fmt)} FROM {DB}.{table}")
    # avro: as Hive's AvroSerDe reads it (Trino takes the metastore's columns): a TIME as its milliseconds.
    expected = {"csv": _as_trino_reads_csv, "avro": avro_hive_rows}.get(fmt)
    assert_rows_equal(fmt, f"trino ({table})", rows, expected() if expected else None)


def test_trino_fails_on_flinks_non_finite_strings_in_json_and_reads_the_nulls_of_mode_null(
    spark: Any, session: Path, trino: TrinoServer
) -> None:
    """Mode ``STRING`` writes what Flink's json writes ("NaN", "Infinity", "-Infinity"): Trino fails a query
    reading such a column on the whole file (a finite row's value too); mode ``NULL``: every row, as written."""
    src = create_source(spark, DB, session, "src_non_finite", NON_FINITE_ROWS)
    for mode in ("STRING", "NULL"):
        create_json_table(spark, DB, session, f"t_json_{mode.lower()}", mode)
        _insert_batch(spark, f"INSERT INTO {DB}.t_json_{mode.lower()} SELECT * FROM {src}")
    # Trino decodes the columns a query reads: one holding such a string fails the query on the whole file.
    assert sorted(trino.query(f"SELECT id FROM {DB}.t_json_string")) == [[1], [2], [3], [4]]
    for column in ("d", "f", "a", "r"):
        with pytest.raises(TrinoQueryFailed, match=r"Current token \(VALUE_STRING\) not numeric"):
            trino.query(f"SELECT {column} FROM {DB}.t_json_string WHERE id = 4")
    rows = trino.query(f"SELECT id, d, CAST(f AS DOUBLE), a, r IS NULL, r.x, p FROM {DB}.t_json_null ORDER BY id")
    assert same([(i, d, f, a, None if no_r else (x,), p) for i, d, f, a, no_r, x, p in rows], NULLED)


def test_trino_counts_each_partition_from_the_statistics_sqlext_committed(
    written: Path, trino: TrinoServer, hms: MetastoreClient
) -> None:
    """``numRows`` is Trino's row count (``SHOW STATS``, which reads the partitions' parameters, not the files):
    per partition for one format (Trino reads the same parameters for each), per table for each;
    ``numFiles``/``totalSize`` (which Trino does not show) match the files Trino reads."""
    rows_in = {p: sum(1 for row in ROWS if row[-1] == p) for p in ("a", "b")}
    for value, count in rows_in.items():
        assert trino.stats(f"(SELECT * FROM {DB}.t_parquet WHERE p = '{value}')")[None][3] == count
    for fmt in FORMATS:
        assert trino.stats(f"{DB}.t_{fmt}")[None][3] == len(ROWS), fmt
        expected = {f"p={p}": n for p, n in rows_in.items()}
        assert_partitions_committed(hms, DB, f"t_{fmt}", written / f"t_{fmt}", expected)


def _start_hourly_insert(
    spark: Any, table: TableDefinition, metastore_uri: str, input_dir: Path, checkpoint: Path, bounded: bool = False
) -> Any:
    """A streaming insert of the hourly events of ``input_dir`` (one file a micro-batch) into ``table``; with
    ``bounded``, the files there now, every partition committed at the end."""
    catalog = SimpleNamespace(metastore_uri=metastore_uri)
    context = SimpleNamespace(spark=spark, table=table, catalog=catalog, config=None)
    name = f"insert_{table.identifier.name}"
    plan = InsertPlan(query_name=name, checkpoint_location=checkpoint.as_uri(), available_now=bounded)
    return FileSystemSink(context).start_stream(hourly_event_stream(spark, input_dir), plan)


def _completed_batches(table: TableDefinition) -> list[int]:
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    return [e.batch for e in log.entries(f"insert_{table.identifier.name}") if e.state is State.COMPLETED]


def _hours_in_trino(trino: TrinoServer, table: str) -> dict[str, int]:
    return dict(trino.query(f"SELECT hr, count(*) FROM {table} GROUP BY hr"))


def test_trino_sees_a_partition_only_once_sqlext_committed_it(
    spark: Any, trino: TrinoServer, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    table = events_table("trino_stream", "hourly", tmp_path / "table", **HOURLY_OPTIONS)
    create_in_hms(hms, table)
    input_dir = tmp_path / "input"
    next_id = write_hourly_events(input_dir, START, hours=1, rows_per_hour=120)
    query = _start_hourly_insert(spark, table, metastore.uri, input_dir, tmp_path / "checkpoint")
    try:
        wait_for(lambda: 0 in _completed_batches(table), 120, what="batch 0 written and moved")
        # Hour 00's files are in its partition directory, but its commit waits for the watermark to pass
        # 01:00 (partition time + 1 h): the metastore does not list it, and Trino reads nothing.
        pending = tmp_path / "table" / "dt=2026-11-22" / "hr=00"
        assert [f for f in pending.iterdir() if not f.name.startswith(("_", "."))]
        assert hms.get_partition_names("trino_stream", "hourly") == []
        assert trino.query('SELECT * FROM trino_stream."hourly$partitions"') == []
        assert _hours_in_trino(trino, "trino_stream.hourly") == {}

        write_hourly_events(input_dir, START + timedelta(hours=1), hours=2, rows_per_hour=120, first_id=next_id)
        names = ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
        wait_for(lambda: sorted(hms.get_partition_names("trino_stream", "hourly")) == names, 120, what="hr 00, 01")
        # Hours 00 and 01 are committed (the watermark is at 02:59:30); hour 02 is written and pending.
        assert _hours_in_trino(trino, "trino_stream.hourly") == {"00": 120, "01": 120}
        assert sorted(trino.query('SELECT dt, hr FROM trino_stream."hourly$partitions"')) == [
            ["2026-11-22", "00"],
            ["2026-11-22", "01"],
        ]
        assert trino.stats("trino_stream.hourly")[None][3] == 240
        assert [f for f in (tmp_path / "table" / "dt=2026-11-22" / "hr=02").iterdir() if f.suffix == ".parquet"]
    finally:
        query.stop()


@pytest.mark.parametrize("version_metastore", FETCHED_VERSIONS, indirect=True)
def test_a_partition_committed_under_hive_3_1_and_4_is_read_by_trino_and_spark_with_its_statistics(
    spark: Any, trino: TrinoServer, version_metastore: BackendMetastore, version_hms: MetastoreClient, tmp_path: Path
) -> None:
    """Spark's catalog stays on the session's 2.3 metastore, so Spark reads the partition locations the Hive 3.1
    or 4 metastore lists, as a Hive-protocol reader does; Trino reads through a catalog on that metastore."""
    table = events_table("trino_versions", "hourly", tmp_path / "table", **HOURLY_OPTIONS)
    create_in_hms(version_hms, table)
    write_hourly_events(tmp_path / "input", START, hours=2, rows_per_hour=60)
    uri, source, checkpoint = version_metastore.uri, tmp_path / "input", tmp_path / "checkpoint"
    query = _start_hourly_insert(spark, table, uri, source, checkpoint, bounded=True)
    running = running_insert(str(query.id))
    assert running is not None and running.wait(300), "the insert did not finish"
    assert query.exception() is None
    names = [f"dt=2026-11-22/hr={h:02d}" for h in range(2)]
    assert_partitions_committed(version_hms, "trino_versions", "hourly", tmp_path / "table", names, 60)

    catalog = f"hive{version_metastore.settings.version.value.replace('.', '_')}"
    trino.add_catalog(catalog, version_metastore.uri)
    assert _hours_in_trino(trino, f"{catalog}.trino_versions.hourly") == {"00": 60, "01": 60}
    for hour in ("00", "01"):
        stats = trino.stats(f"(SELECT * FROM {catalog}.trino_versions.hourly WHERE hr = '{hour}')")
        assert stats[None][3] == 60

    partitions = version_hms.get_partitions_by_names("trino_versions", "hourly", names)
    read = spark_own_sql(spark)
    by_spark = {p.values[1]: read(f"SELECT * FROM parquet.`{p.sd.location}`").count() for p in partitions}
    assert by_spark == {"00": 60, "01": 60}


#: Rows written before the ALTER (id, score, amount, name, dt) and one after it (with its note).
EVOLVED_OLD = [(1, 1.5, "12.34", "a", "2026-01-01"), (2, 2.5, "56.78", "b", "2026-01-02")]
EVOLVED_NEW = (3_000_000_000, 3.25, "1234567890.12", "a longer name", "late note", "2026-01-03")


@pytest.mark.parametrize("fmt", FORMATS)
def test_trino_reads_old_partitions_by_the_columns_an_alter_added_and_widened(
    session: Path, spark: Any, trino: TrinoServer, fmt: str
) -> None:
    """Schema evolution (docs/schema-evolution.md) as Trino reads it: two partitions committed, then a column
    added last and four widened (INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL(10, 2) -> DECIMAL(12, 2),
    VARCHAR(10) -> VARCHAR(20)) on the table and every partition, then a partition with the new columns."""
    table = f"{DB}.evolved_{fmt}"
    spark.sql(
        f"CREATE TABLE {table} (id INT, score FLOAT, amount DECIMAL(10, 2), name VARCHAR(10), dt STRING) "
        f"PARTITIONED BY (dt) WITH ('connector' = 'filesystem', 'path' = '{(session / table).as_uri()}', "
        f"'format' = '{fmt}')"
    )
    values = ", ".join(f"({i}, CAST({s} AS FLOAT), {a}BD, '{n}', '{d}')" for i, s, a, n, d in EVOLVED_OLD)
    _insert_batch(spark, f"INSERT INTO {table} SELECT * FROM VALUES {values} AS v(id, score, amount, name, dt)")
    spark.sql(f"ALTER TABLE {table} ADD (note STRING AFTER name)")
    spark.sql(f"ALTER TABLE {table} MODIFY (id BIGINT, score DOUBLE, amount DECIMAL(12, 2), name VARCHAR(20))")
    i, s, a, n, note, d = EVOLVED_NEW
    _insert_batch(spark, f"INSERT INTO {table} SELECT {i}, {s}D, {a}BD, '{n}', '{note}', '{d}'")

    rows = trino.query(f"SELECT id, score, amount, name, note, dt, typeof(id), typeof(amount) FROM {table}")
    old = [(i, s, Decimal(a), n, None, d) for i, s, a, n, d in EVOLVED_OLD]
    assert sorted(tuple(row[:6]) for row in rows) == [*old, (i, s, Decimal(a), n, note, d)]
    assert {tuple(row[6:]) for row in rows} == {("bigint", "decimal(12,2)")}
    if fmt != "csv":  # read by name: a column in the middle may go (sqlext refuses it for csv)
        spark.sql(f"ALTER TABLE {table} DROP score")
        rows = trino.query(f"SELECT id, amount, name, note, dt FROM {table}")
        assert sorted(map(tuple, rows)) == [(*row[:1], *row[2:]) for row in [*old, (i, s, Decimal(a), n, note, d)]]


# Edge cases on which readers disagree: dates and timestamps before the Gregorian calendar began (1582-10-15),
# a day of the ten Rome skipped (1582-10-10, which the hybrid calendar has not), and a timestamp in the last
# second before 1970 (UTC). Written by sqlext (Spark's writers, parquet and avro with Spark's CORRECTED
# rebase modes: jobs.calendar_rebase), read by each reader. The session's zone is UTC (the shifts below are
# whole days only there: before 1900 most zones had local mean time offsets).
EDGE_ROWS = [
    (1, date(1582, 10, 4), datetime(1969, 12, 31, 23, 59, 59, 999000)),
    (2, date(1, 1, 1), datetime(1969, 12, 31, 23, 59, 58, 999000)),
    (3, date(1582, 10, 15), datetime(1970, 1, 1, 0, 0, 0, 1000)),
    (4, date(2026, 1, 2), datetime(2026, 1, 2, 3, 4, 5, 123000)),
    (5, date(1000, 1, 1), datetime(1000, 1, 1, 12, 0, 0, 1000)),
    (6, date(1582, 10, 10), datetime(1582, 10, 4, 23, 59, 59, 999000)),
    (7, date(1582, 10, 15), datetime(1582, 10, 15, 0, 0, 0, 1000)),
    (8, date(1, 1, 1), datetime(1, 1, 1, 0, 0, 0, 1000)),
]
WRITTEN = [(i, d.isoformat(), ts.isoformat(" ", "milliseconds")) for i, d, ts in EDGE_ROWS]
#: A proleptic Gregorian day (as parquet and avro hold it) read as a day of the hybrid Julian/Gregorian
#: calendar: by Hive 2.3.10's parquet and Avro SerDes.
AS_HYBRID = {
    "0001-01-01": "0001-01-03",
    "1000-01-01": "0999-12-27",
    "1582-10-04": "1582-09-24",
    "1582-10-10": "1582-09-30",
}
#: A hybrid day (as Spark's ORC writer stores it) read as a proleptic one: by Trino and pyarrow. 1582-10-10 is
#: no hybrid day: Spark's writer stores it as 1582-10-15, which every reader reads.
AS_PROLEPTIC = {
    "0001-01-01": "0000-12-30",
    "1000-01-01": "1000-01-06",
    "1582-10-04": "1582-10-14",
    "1582-10-10": "1582-10-15",
}
SKIPPED_DAY = {"1582-10-10": "1582-10-15"}
#: Per format, the readers of each (``spark``: Spark SQL on the HMS table; ``hive-serde``: Spark with
#: ``convertMetastoreParquet/Orc=false``; ``spark-avro``: Spark's Avro reader by path, as an avro table of
#: Spark's own; ``sqlext``: sqlext's source; ``pyarrow``: by path). Spark reads an avro table in the HMS
#: through Hive's AvroSerDe (Spark has no convertMetastoreAvro).
EDGE_READERS = {
    "parquet": ("spark", "hive-serde", "sqlext", "trino", "pyarrow"),
    "orc": ("spark", "hive-serde", "sqlext", "trino", "pyarrow"),
    "avro": ("spark", "spark-avro", "sqlext", "trino"),
}


def _on_day(text: str | None, days: dict[str, str]) -> str | None:
    return None if text is None else days.get(text[:10], text[:10]) + text[10:]


def _expected(fmt: str, reader: str) -> list[tuple[int, str | None, str | None]]:
    """What ``reader`` (Spark 4.3.0 with Hive 2.3.10's SerDes, Trino 476, pyarrow 26) reads of
    :data:`EDGE_ROWS` written in ``fmt``.

    - parquet and avro hold proleptic Gregorian days and microseconds (Spark's ``CORRECTED``): every reader
      reads them as written, but Hive 2.3.10's SerDes (parquet's, and avro's, which is Spark's own read of
      an avro table through the HMS), which read them as hybrid days (:data:`AS_HYBRID`), the timestamps'
      days too. ``LEGACY`` would serve those and shift the same values for Trino and pyarrow
      (docs/readers.md).
    - ORC's DATE and TIMESTAMP hold hybrid days (Hive's; Spark rebases to it, and the file's footer declares
      it; Spark has no rebase mode for ORC), which Trino and pyarrow read as proleptic days
      (:data:`AS_PROLEPTIC`). pyarrow reads an ORC timestamp only as nanoseconds: a column with one before
      1677-09-21 fails to read (ArrowInvalid), so its values are None here. Every reader, Spark's own reads
      included, reads the timestamp 1969-12-31 23:59:59.999 a second late: ORC's writer stores seconds and
      nanoseconds such that readers take a second off negative seconds, and a time in (-1 s, 0) is stored
      with seconds 0 (ORC-763, ORC-771), so no reader can tell."""
    days: dict[str, str] = {}
    if (fmt, reader) in (("parquet", "hive-serde"), ("avro", "spark")):
        days = AS_HYBRID
    elif fmt == "orc":
        days = AS_PROLEPTIC if reader in ("trino", "pyarrow") else SKIPPED_DAY
    rows = {id_: [_on_day(day, days), _on_day(stamp, days)] for id_, day, stamp in WRITTEN}
    if fmt == "orc":
        rows[1][1] = "1970-01-01 00:00:00.999"
        if reader == "pyarrow":
            for row in rows.values():
                row[1] = None
    return [(id_, day, stamp) for id_, (day, stamp) in sorted(rows.items())]


@pytest.fixture(scope="module")
def edge_source(spark: Any, session: Path) -> str:
    """A sqlext source table over a parquet file (pyarrow's) holding :data:`EDGE_ROWS`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    landing = session / "edge_landing"
    landing.mkdir()
    columns = [list(column) for column in zip(*EDGE_ROWS, strict=True)]
    schema = pa.schema([("id", pa.int32()), ("d", pa.date32()), ("ts", pa.timestamp("ms"))])
    pq.write_table(pa.table(columns, schema=schema), landing / "edge.parquet")
    spark.sql(
        f"CREATE TABLE {DB}.edge_src (id INT, d DATE, ts TIMESTAMP(3)) WITH ('connector' = 'filesystem', "
        f"'path' = '{landing.as_uri()}', 'format' = 'parquet')"
    )
    return f"{DB}.edge_src"


def _data_files(directory: Path) -> list[Path]:
    return [f for f in directory.glob("p=*/*") if not f.name.startswith(("_", "."))]


def _read_by_pyarrow(fmt: str, directory: Path) -> list[tuple[Any, ...]]:
    """parquet's INT96 timestamps at microseconds (as nanoseconds, years before 1677 wrap); an ORC
    timestamp column that pyarrow cannot read (only as nanoseconds) as None."""
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    def read(columns: list[str]) -> Any:
        files = _data_files(directory)
        if fmt == "orc":
            return pa.concat_tables([orc.read_table(f, columns=columns) for f in files])
        return pa.concat_tables([pq.read_table(f, columns=columns, coerce_int96_timestamp_unit="us") for f in files])

    table = read(["id", "d"])
    try:
        stamps = read(["ts"])["ts"].cast(pa.string()).to_pylist()
    except pa.ArrowInvalid:
        assert fmt == "orc"
        stamps = [None] * len(table)
    table = table.append_column("ts", pa.array(stamps, pa.string())).sort_by("id")
    texts = [table[c].cast(pa.string()).to_pylist() for c in ("d", "ts")]
    return list(zip(table["id"].to_pylist(), *texts, strict=True))


def _read_by_sqlext(spark: Any, hms: MetastoreClient, table: str) -> list[tuple[Any, ...]]:
    database, name = table.split(".")
    definition = Catalog(hms).get_table(TableIdentifier(database, name))
    frame = FileSystemTableFactory().create_source(SourceContext(spark, definition, streaming=False))
    return [tuple(row) for row in frame.selectExpr("id", "CAST(d AS STRING)", "CAST(ts AS STRING)").collect()]


def _read_edges(
    spark: Any, trino: TrinoServer, hms: MetastoreClient, fmt: str, table: str, directory: Path
) -> dict[str, list[Any]]:
    """Each reader's (id, date text, timestamp text) rows (:data:`EDGE_READERS`), timestamps cut to
    milliseconds."""
    seen: dict[str, list[Any]] = {}
    select = f"SELECT id, CAST(d AS STRING), CAST(ts AS STRING) FROM {table} ORDER BY id"
    if fmt == "avro":
        seen["spark"] = [tuple(row) for row in spark_own_sql(spark)(select).collect()]
        files = spark.read.format("avro").load(str(directory))
        seen["spark-avro"] = [
            tuple(r) for r in files.selectExpr("id", "CAST(d AS STRING)", "CAST(ts AS STRING)").collect()
        ]
    else:
        convert = f"spark.sql.hive.convertMetastore{fmt.capitalize()}"
        for reader, native in (("spark", "true"), ("hive-serde", "false")):
            spark.conf.set(convert, native)
            try:
                spark.catalog.refreshTable(table)
                seen[reader] = [tuple(row) for row in spark_own_sql(spark)(select).collect()]
            finally:
                spark.conf.unset(convert)
        seen["pyarrow"] = _read_by_pyarrow(fmt, directory)
    seen["sqlext"] = _read_by_sqlext(spark, hms, table)
    seen["trino"] = trino.query(f"SELECT id, CAST(d AS VARCHAR), CAST(ts AS VARCHAR) FROM {table} ORDER BY id")
    return {reader: sorted((i, d, ts and ts[:23]) for i, d, ts in rows) for reader, rows in seen.items()}


def _orc_calendar(spark: Any, file: Path) -> str:
    """The calendar an ORC file's footer declares for its dates and timestamps (Java ORC's reader)."""
    jvm = spark._jvm
    options = jvm.org.apache.orc.OrcFile.readerOptions(spark._jsc.hadoopConfiguration())
    reader = jvm.org.apache.orc.OrcFile.createReader(jvm.org.apache.hadoop.fs.Path(str(file)), options)
    try:
        footer = reader.getFileTail().getFooter()
        return str(footer.getCalendar().name()) if footer.hasCalendar() else "(none)"
    finally:
        reader.close()


@pytest.mark.parametrize("fmt", ["orc", "parquet", "avro"])
def test_each_reader_of_the_date_and_timestamp_edge_cases(
    edge_source: str, spark: Any, trino: TrinoServer, hms: MetastoreClient, tmp_path: Path, fmt: str
) -> None:
    table, path = f"{DB}.edge_{fmt}", tmp_path / "edge"
    spark.sql(
        f"CREATE TABLE {table} (id INT, d DATE, ts TIMESTAMP(3), p STRING) PARTITIONED BY (p) WITH "
        f"('connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = '{fmt}')"
    )
    _insert_batch(spark, f"INSERT INTO {table} SELECT id, d, ts, 'x' FROM {edge_source}")

    seen = _read_edges(spark, trino, hms, fmt, table, path)
    report = "\n".join(f"{reader}: {rows}" for reader, rows in seen.items())
    assert {reader: _expected(fmt, reader) for reader in EDGE_READERS[fmt]} == seen, report
    [file] = _data_files(path)
    if fmt == "orc":
        assert _orc_calendar(spark, file) == "JULIAN_GREGORIAN"
    if fmt == "parquet":  # INT96 (what Hive 2.3's SerDe reads; it fails on TIMESTAMP_MICROS), not rebased
        import pyarrow.parquet as pq

        footer = pq.ParquetFile(file)
        assert footer.schema.column(2).physical_type == "INT96"
        assert not {b"org.apache.spark.legacyDateTime", b"org.apache.spark.legacyINT96"} & set(footer.metadata.metadata)
