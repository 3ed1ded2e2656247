"""Incremental reads (``incremental-between-timestamp``) on the real HMS: consecutive windows over a streaming
insert with late data and a compaction in between read every row of the table once; a window the retained
commit log no longer covers, and bad values, are refused naming the option."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.compaction.compactor import Compactor
from sqlext.connectors.filesystem.incremental.plan import WindowNotCovered, plan_window
from sqlext.connectors.filesystem.incremental.window import Window
from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
from sqlext.errors import OptionError
from sqlext.sink import InsertPlan
from sqlext.spark.session import extend
from sqlext.table import TableDefinition
from tests.support.services import spark_own_sql
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table

pytestmark = [pytest.mark.spark, pytest.mark.hms]

START = datetime(2026, 11, 22)
KEY = "incremental-between-timestamp"
HR00 = "dt=2026-11-22/hr=00"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _context(spark: Any, table: TableDefinition, metastore: MetastoreSettings) -> Any:
    return SimpleNamespace(spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None)


def _stream(spark: Any, table: TableDefinition, metastore: MetastoreSettings, input_dir: Path, checkpoint: Path):
    """The input's new files into the table, one file a micro-batch, until there is no new file (the same
    checkpoint each time: a run resumes where the last one ended)."""
    plan = InsertPlan(f"insert_{table.identifier.name}", checkpoint.as_uri(), available_now=True)
    query = FileSystemSink(_context(spark, table, metastore)).start_stream(hourly_event_stream(spark, input_dir), plan)
    running = running_insert(str(query.id))
    assert running is not None and running.wait(300), "the insert did not finish"
    assert query.exception() is None


def _window(spark: Any, table: TableDefinition, start: int, end: int) -> list[tuple[Any, ...]]:
    name = f"{table.identifier.database}.{table.identifier.name}"
    hinted = f"SELECT id, user_id, amount, ts, dt, hr FROM {name} /*+ OPTIONS('{KEY}' = '{start},{end}') */"
    return sorted(tuple(row) for row in spark.sql(hinted).collect())


def _ids(rows: list[tuple[Any, ...]]) -> list[int]:
    return [row[0] for row in rows]


def test_consecutive_windows_over_late_data_and_a_compaction_read_every_row_of_the_table_once(
    spark: Any, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    extend(spark)
    table = events_table(
        "incr_db",
        "events",
        tmp_path / "table",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        },
    )
    create_in_hms(hms, table)
    input_dir, checkpoint = tmp_path / "input", tmp_path / "checkpoint"
    t0 = _now_ms()

    late_id = write_hourly_events(input_dir, START, hours=3, rows_per_hour=40)  # ids 0-119: hours 00, 01, 02
    _stream(spark, table, metastore, input_dir, checkpoint)  # hr=00 and 01 committed by watermark, 02 at the end
    t1 = _now_ms()
    hour_3 = write_hourly_events(input_dir, START, hours=1, rows_per_hour=5, first_id=late_id)  # late for hr=00
    _stream(spark, table, metastore, input_dir, checkpoint)  # hr=00 committed again
    t2 = _now_ms()
    compacted = Compactor(table, hms, 1 << 20, reader_grace=timedelta(0)).compact([(HR00, ["2026-11-22", "00"])])
    assert len(compacted) == 1 and len(compacted[0].replaced_files) == 2  # the first file and the late one
    t3 = _now_ms()
    write_hourly_events(input_dir, START.replace(hour=3), hours=1, rows_per_hour=40, first_id=hour_3)
    _stream(spark, table, metastore, input_dir, checkpoint)
    t4 = _now_ms()

    # Each window holds what was committed in it; the first window's hr=00 rows are read from the merged file.
    windows = [_window(spark, table, start, end) for start, end in ((t0, t1), (t1, t2), (t2, t3), (t3, t4))]
    assert [_ids(rows) for rows in windows] == [
        list(range(0, 120)),
        list(range(120, 125)),  # the late rows, once
        [],  # the compaction added no rows
        list(range(125, 165)),
    ]
    merged = compacted[0].files[0].final
    assert [uri for uri, _ in plan_window(table, Window(t0, t1)).parts] == [merged]
    everything = spark_own_sql(spark)("SELECT id, user_id, amount, ts, dt, hr FROM incr_db.events").collect()
    assert sorted(row for rows in windows for row in rows) == sorted(tuple(row) for row in everything)  # once each
    assert _window(spark, table, t0, t2) == sorted(windows[0] + windows[1])  # the merged file read whole

    # A daily-job shape: a batch INSERT of one window into another table; streaming mode is refused.
    copy = events_table("incr_db", "late_rows", tmp_path / "copy")
    create_in_hms(hms, copy)
    insert = (
        f"INSERT INTO incr_db.late_rows SELECT id, user_id, amount, ts, dt, hr "
        f"FROM incr_db.events /*+ OPTIONS('{KEY}' = '{t1},{t2}') */"
    )
    with pytest.raises(OptionError, match=f"Option '{KEY}' of incr_db.events reads .* batch mode") as refused:
        spark.sql(insert)
    assert refused.value.option == KEY
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    spark.sql(insert)
    copied = spark_own_sql(spark)("SELECT id FROM incr_db.late_rows ORDER BY id").collect()
    assert [row.id for row in copied] == list(range(120, 125))


def test_a_window_the_retained_log_no_longer_covers_is_refused_naming_the_oldest_start(
    spark: Any, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    extend(spark)
    table = events_table("incr_db", "short_log", tmp_path / "table", **{"sink.commit-log.retained-batches": "2"})
    create_in_hms(hms, table)
    context = _context(spark, table, metastore)
    for batch in range(3):  # three batch inserts: the log keeps the last two
        rows = spark.range(batch * 10, (batch + 1) * 10).selectExpr(
            "id",
            "'u' AS user_id",
            "id / 10 AS amount",
            "timestamp_seconds(1795300000 + id) AS ts",
            "'2026-11-22' AS dt",
            f"'{batch:02d}' AS hr",
        )
        FileSystemSink(context).write_batch(rows, InsertPlan("load_short_log", (tmp_path / "checkpoint").as_uri()))
    end = _now_ms()

    with pytest.raises(WindowNotCovered, match="lost its batches before batch 1") as error:
        _window(spark, table, 0, end)
    oldest = error.value.oldest_start_ms
    assert f"The oldest START it can answer (with this END) is {oldest} (" in str(error.value)
    assert error.value.option == KEY and error.value.value == f"0,{end}"
    assert _ids(_window(spark, table, oldest, end)) == list(range(10, 30))


BAD_VALUES = [
    (KEY, "abc", "Expected 'START,END': two times in epoch milliseconds"),
    (KEY, "1767225600000", "Expected 'START,END'"),
    (KEY, "5,3", "START 5 is after END 3"),
    ("incremental-between", "5,10", "no table-wide snapshot ids"),
]


def test_bad_windows_are_refused_naming_the_option_the_value_and_the_form(
    spark: Any, hms: MetastoreClient, tmp_path: Path
) -> None:
    extend(spark)
    create_in_hms(hms, events_table("incr_db", "bad_values", tmp_path / "table"))
    for option, value, expected in BAD_VALUES:
        with pytest.raises(OptionError, match=expected) as error:
            spark.sql(f"SELECT * FROM incr_db.bad_values /*+ OPTIONS('{option}' = '{value}') */")
        assert error.value.option == option and error.value.value == value
        assert f"'{value}'" in str(error.value)
