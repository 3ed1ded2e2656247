"""Spark's write rebase modes during sqlext's inserts (:mod:`sqlext.jobs.calendar_rebase`): ``CORRECTED``
unless the session sets a mode, a mode the session sets is kept (and is what the files say), the session's
conf is as it was afterwards. What each reader reads of either: ``test_each_reader_of_the_date_and_timestamp_
edge_cases`` (tests/connectors/filesystem/test_trino.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.filesystem.sink import running_insert
from sqlext.jobs.calendar_rebase import CORRECTED, WRITE_REBASE_KEYS, corrected_rebase
from tests.support.extension import extended_session
from tests.support.services import spark_own_sql

pytestmark = [pytest.mark.spark, pytest.mark.hms]

DB = "calendar_rebase"
PARQUET_DATES, INT96, AVRO = WRITE_REBASE_KEYS
#: Spark's parquet footer keys saying the file's days / INT96 timestamps are rebased to the hybrid calendar.
LEGACY_MARKERS = {b"org.apache.spark.legacyDateTime", b"org.apache.spark.legacyINT96"}
ANCIENT = (date(1000, 1, 1), datetime(1000, 1, 1, 12, 0, 0, 1000))


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("calendar_rebase")
    with extended_session(spark, root, DB):
        yield root


def test_unset_modes_are_corrected_in_the_block_and_unset_after_it(spark: Any) -> None:
    spark.conf.set(INT96, "LEGACY")
    try:
        with corrected_rebase(spark):
            seen = {key: spark.conf.get(key) for key in WRITE_REBASE_KEYS}
        assert seen == {PARQUET_DATES: CORRECTED, INT96: "LEGACY", AVRO: CORRECTED}
        assert set(spark.conf.getAll) & set(WRITE_REBASE_KEYS) == {INT96}
    finally:
        spark.conf.unset(INT96)


def _markers(directory: Path) -> set[bytes]:
    import pyarrow.parquet as pq

    [file] = [f for f in directory.glob("p=*/*.parquet")]
    return set(pq.ParquetFile(file).metadata.metadata or {}) & LEGACY_MARKERS


@pytest.mark.parametrize("mode", ["batch", "streaming"])
@pytest.mark.parametrize("legacy", [False, True], ids=["unset", "session-legacy"])
def test_an_insert_writes_parquet_in_the_mode_the_session_sets_else_corrected(
    session: Path, spark: Any, tmp_path: Path, mode: str, legacy: bool
) -> None:
    """A streaming insert keeps the modes it started with: the session's ``LEGACY`` is unset as soon as
    the statement returns, before its query has written anything it reads."""
    name = f"{DB}.t_{mode}_{'legacy' if legacy else 'unset'}"
    spark.sql(
        f"CREATE TABLE {DB}.src_{mode}_{legacy} (d DATE, ts TIMESTAMP(3)) WITH ('connector' = "
        f"'filesystem', 'path' = '{(tmp_path / 'src').as_uri()}', 'format' = 'parquet')"
    )
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    spark.sql(f"INSERT INTO {DB}.src_{mode}_{legacy} VALUES (DATE '1000-01-01', TIMESTAMP '1000-01-01 12:00:00.001')")
    spark.sql(
        f"CREATE TABLE {name} (d DATE, ts TIMESTAMP(3), p STRING) PARTITIONED BY (p) WITH ('connector' = "
        f"'filesystem', 'path' = '{(tmp_path / 't').as_uri()}', 'format' = 'parquet')"
    )
    spark.sql(f"SET 'execution.runtime-mode' = '{mode}'")
    keys = (PARQUET_DATES, INT96) if legacy else ()
    for key in keys:
        spark.conf.set(key, "LEGACY")
    try:
        [row] = spark.sql(f"INSERT INTO {name} SELECT d, ts, 'x' FROM {DB}.src_{mode}_{legacy}").collect()
    finally:
        for key in keys:
            spark.conf.unset(key)
    if mode == "streaming":
        running = running_insert(row.job_id)
        assert running is not None and running.wait(300), "the streaming insert did not finish"
        assert running.query.exception() is None
    assert set(spark.conf.getAll) & set(WRITE_REBASE_KEYS) == set()

    assert _markers(tmp_path / "t") == (LEGACY_MARKERS if legacy else set())
    spark.catalog.refreshTable(name)
    assert [tuple(r) for r in spark_own_sql(spark)(f"SELECT d, ts FROM {name}").collect()] == [ANCIENT]
