"""Hostile files in a filesystem source: garbage named .parquet, a truncated parquet file, a column of another
type, columns missing or extra, an empty file. An unreadable file stops the insert with an error naming it and
commits nothing of its batch; 'source.ignore-corrupt-files' skips it on the rerun; committed partitions stay
exact throughout and nothing is written outside the table's location."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.spark.runner import failure_hint
from sqlext.spark.session import extend
from tests.support.services import spark_own_sql
from tests.support.streams import write_hourly_events
from tests.support.tables import assert_partitions_committed

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

START = datetime(2026, 11, 22)
ROWS_PER_HOUR = 10


def _garbage(path: Path, good: Path) -> None:
    path.write_bytes(b"not a parquet file " * 50)


def _truncated(path: Path, good: Path) -> None:
    data = good.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _wrong_type(path: Path, good: Path) -> None:
    rows = {"id": [10_000], "user_id": ["x"], "amount": ["not a double"], "ts": [START]}
    pq.write_table(pa.table(rows), path)


HOSTILE: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "garbage": (_garbage, "[FAILED_READ_FILE.NO_HINT]"),
    "truncated": (_truncated, "[FAILED_READ_FILE.NO_HINT]"),
    "wrong-type": (_wrong_type, "Data type mismatches when reading Parquet column [amount]"),
}


def _input_between_hours(input_dir: Path, make: Callable[[Path, Path], None]) -> Path:
    """Hour 00, then the hostile file, then hour 01, one file per batch in that order."""
    write_hourly_events(input_dir, START, hours=1, rows_per_hour=ROWS_PER_HOUR)
    good = next(input_dir.iterdir())
    hostile = input_dir / "events-hostile.parquet"
    make(hostile, good)
    write_hourly_events(input_dir, datetime(2026, 11, 22, 1), 1, ROWS_PER_HOUR, first_id=ROWS_PER_HOUR)
    stamp = os.stat(good).st_mtime + 0.5  # Spark takes files oldest first: between the two hours
    os.utime(hostile, (stamp, stamp))
    return hostile


@pytest.fixture
def sql(spark: Any, tmp_path: Path) -> Any:
    session = extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS hostile_db")
    yield spark.sql
    session.options.clear()


def _create_tables(sql: Any, tmp_path: Path, name: str) -> None:
    sql(f"""CREATE TABLE hostile_db.{name}_src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)) WITH (
          'connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'parquet',
          'source.max-files-per-trigger' = '1')""")
    sql(f"""CREATE TABLE hostile_db.{name} (
          id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING
        ) PARTITIONED BY (dt, hr) WITH (
          'connector' = 'filesystem', 'path' = '{(tmp_path / "table").as_uri()}', 'format' = 'parquet')""")


def _insert(sql: Any, name: str) -> Any:
    """Run the streaming INSERT from the source to the end of its files; return its (ended) query."""
    job = sql(
        f"INSERT INTO hostile_db.{name} SELECT id, user_id, amount, ts, "
        f"DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM hostile_db.{name}_src"
    ).first()
    running = running_insert(job.job_id)  # spark.streams forgets a query that already ended
    assert running is not None and running.wait(300)
    return running.query


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def _assert_committed_exactly(spark: Any, hms: MetastoreClient, name: str, table_dir: Path, ids: list[int]) -> None:
    """The HMS lists one committed partition per hour of ``ids`` and no other (nor does the table dir), and
    Spark SQL on the HMS table reads exactly ``ids``, each once."""
    hours = sorted({f"{i // ROWS_PER_HOUR:02d}" for i in ids})
    names = [f"dt=2026-11-22/hr={h}" for h in hours]
    assert_partitions_committed(hms, "hostile_db", name, table_dir, names, ROWS_PER_HOUR)
    assert sorted(p.name for p in (table_dir / "dt=2026-11-22").iterdir()) == [f"hr={h}" for h in hours]
    spark.catalog.refreshTable(f"hostile_db.{name}")
    rows = spark_own_sql(spark)(f"SELECT id FROM hostile_db.{name} ORDER BY id").collect()
    assert [row.id for row in rows] == ids


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_an_unreadable_source_file_stops_the_insert_naming_it_then_a_rerun_skips_it(
    sql: Any, spark: Any, hms: MetastoreClient, tmp_path: Path, kind: str
) -> None:
    make, error = HOSTILE[kind]
    name = f"t_{kind.replace('-', '_')}"
    hostile = _input_between_hours(tmp_path / "input", make)
    input_before = _files(tmp_path / "input")
    _create_tables(sql, tmp_path, name)

    failed = _insert(sql, name)

    failure = str(failed.exception())
    assert hostile.as_uri() in failure and error in failure
    hint = failure_hint(failure)  # what `sqlext run` adds to the error
    assert f"source file {hostile.as_uri()} could not be read" in hint and "source.ignore-corrupt-files" in hint
    _assert_committed_exactly(spark, hms, name, tmp_path / "table", list(range(ROWS_PER_HOUR)))

    sql(f"ALTER TABLE hostile_db.{name}_src SET ('source.ignore-corrupt-files' = 'true')")
    finished = _insert(sql, name)

    assert finished.exception() is None
    _assert_committed_exactly(spark, hms, name, tmp_path / "table", list(range(2 * ROWS_PER_HOUR)))
    assert _files(tmp_path / "input") == input_before, "the source files were changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints", "input", "table"]


def test_columns_missing_from_a_source_file_read_as_null_extra_ones_are_not_read_empty_files_are_skipped(
    sql: Any, spark: Any, hms: MetastoreClient, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", START, hours=1, rows_per_hour=ROWS_PER_HOUR)
    narrow = {"id": [100], "user_id": ["narrow"], "ts": [datetime(2026, 11, 22, 0, 30)], "note": ["extra"]}
    pq.write_table(pa.table(narrow), tmp_path / "input" / "events-narrow.parquet")
    (tmp_path / "input" / "events-empty.parquet").write_bytes(b"")  # e.g. a writer that died after creating it
    _create_tables(sql, tmp_path, "t_narrow")

    query = _insert(sql, "t_narrow")

    assert query.exception() is None
    row = spark_own_sql(spark)("SELECT * FROM hostile_db.t_narrow WHERE id = 100").collect()
    assert [r.asDict() for r in row] == [
        {
            "id": 100,
            "user_id": "narrow",
            "amount": None,
            "ts": datetime(2026, 11, 22, 0, 30),
            "dt": "2026-11-22",
            "hr": "00",
        }
    ]
    [partition] = hms.get_partitions_by_names("hostile_db", "t_narrow", ["dt=2026-11-22/hr=00"])
    assert partition.parameters["numRows"] == str(ROWS_PER_HOUR + 1)


#: Flink's avro form of the source's columns (nullable unions; TIMESTAMP(3) as timestamp-millis).
AVRO_EVENT_SCHEMA = {
    "type": "record",
    "name": "record",
    "fields": [
        {"name": "id", "type": ["null", "long"], "default": None},
        {"name": "user_id", "type": ["null", "string"], "default": None},
        {"name": "amount", "type": ["null", "double"], "default": None},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None},
    ],
}


def _avro_hour(directory: Path, hour: int) -> Path:
    """One hour of events as an avro file written by fastavro (as another producer of the files would)."""
    import fastavro

    base, first = START.replace(hour=hour), hour * ROWS_PER_HOUR
    records = [
        {"id": i, "user_id": f"u{i % 7}", "amount": i / 10, "ts": base.replace(minute=n * 5)}
        for n, i in enumerate(range(first, first + ROWS_PER_HOUR))
    ]
    path = directory / f"events-{base:%Y%m%d%H}.avro"
    with path.open("wb") as out:
        fastavro.writer(out, fastavro.parse_schema(AVRO_EVENT_SCHEMA), records)
    return path


def test_a_corrupt_avro_source_file_stops_the_insert_naming_it_then_a_rerun_skips_it(
    sql: Any, spark: Any, hms: MetastoreClient, tmp_path: Path
) -> None:
    from tests.support.interop import add_spark_avro

    add_spark_avro(spark)
    input_dir = tmp_path / "input"
    input_dir.mkdir()
    first = _avro_hour(input_dir, 0)
    hostile = input_dir / "events-hostile.avro"
    hostile.write_bytes(b"not an avro file " * 50)
    second = _avro_hour(input_dir, 1)
    stamp = os.stat(first).st_mtime + 1  # Spark takes files oldest first: the hostile one between the hours
    os.utime(hostile, (stamp, stamp))
    os.utime(second, (stamp + 1, stamp + 1))
    _create_tables(sql, tmp_path, "t_avro")
    sql("ALTER TABLE hostile_db.t_avro_src SET ('format' = 'avro')")

    failed = _insert(sql, "t_avro")

    failure = str(failed.exception())
    assert hostile.as_uri() in failure, failure[-3000:]
    hint = failure_hint(failure)
    assert f"source file {hostile.as_uri()} could not be read" in hint and "source.ignore-corrupt-files" in hint
    _assert_committed_exactly(spark, hms, "t_avro", tmp_path / "table", list(range(ROWS_PER_HOUR)))

    sql("ALTER TABLE hostile_db.t_avro_src SET ('source.ignore-corrupt-files' = 'true')")
    finished = _insert(sql, "t_avro")

    assert finished.exception() is None
    _assert_committed_exactly(spark, hms, "t_avro", tmp_path / "table", list(range(2 * ROWS_PER_HOUR)))
