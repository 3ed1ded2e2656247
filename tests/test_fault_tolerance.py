"""The metastore goes away during a streaming insert: writing goes on, partition commits wait and
happen once it is back, nothing is lost."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pyarrow.dataset as ds
import pytest

from sqlext.fs import FileSystem
from sqlext.metastore import launcher
from sqlext.metastore.client import MetastoreClient
from sqlext.metastore.launcher import MetastoreSettings
from sqlext.sink.api import InsertPlan
from sqlext.sink.commitlog import CommitLog, State
from sqlext.sink.filesystem import FileSystemSink, running_insert
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

OUTAGE_S = 30.0
START = datetime(2026, 11, 22)


def _partitions(settings: MetastoreSettings) -> list[str]:
    with MetastoreClient(settings.uri) as client:
        return sorted(client.get_partition_names("outage_db", "events"))


def test_metastore_outage_during_a_streaming_insert_delays_commits_and_loses_nothing(
    spark, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    own = MetastoreSettings(port=free_port(), home=tmp_path / "hms")
    launcher.start(own)
    table = events_table("outage_db", "events", tmp_path / "table")  # process-time, delay 0
    with MetastoreClient(own.uri) as client:
        create_in_hms(client, table)
    input_dir = tmp_path / "input"
    next_id = write_hourly_events(input_dir, START, hours=1, rows_per_hour=50)
    rows = hourly_event_stream(spark, input_dir, None)
    context = SimpleNamespace(spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=own.uri), config=None)
    plan = InsertPlan("outage_insert", (tmp_path / "checkpoint").as_uri(), trigger_interval="1 second")
    query = FileSystemSink(context).start_stream(rows, plan)
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    try:
        wait_for(lambda: _partitions(own) == ["dt=2026-11-22/hr=00"], 120, what="hour 00 committed")

        launcher.stop(own)
        stopped_at = time.monotonic()
        write_hourly_events(input_dir, datetime(2026, 11, 22, 1), hours=1, rows_per_hour=50, first_id=next_id)

        def hour_one_files_committed() -> bool:
            return any(
                e.state is State.COMPLETED and "dt=2026-11-22/hr=01" in e.partitions
                for e in log.entries("outage_insert")
            )

        wait_for(hour_one_files_committed, 120, what="hour 01's files committed while the metastore is down")
        assert query.isActive
        wait_for(lambda: time.monotonic() - stopped_at >= OUTAGE_S, OUTAGE_S + 5, what="the outage to last")
        assert not launcher.status(own).answering
        assert "wait to be committed" in caplog.text

        launcher.start(own)
        wait_for(
            lambda: _partitions(own) == ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"],
            120,
            what="hour 01 committed once the metastore is back",
        )
    finally:
        query.stop()
        launcher.stop(own)

    ids = sorted(
        ds.dataset(tmp_path / "table", format="parquet", partitioning="hive", exclude_invalid_files=True)
        .to_table(columns=["id"])["id"]
        .to_pylist()
    )
    assert ids == list(range(100))
    assert (tmp_path / "table" / "dt=2026-11-22" / "hr=01" / "_SUCCESS").is_file()


def test_two_queries_writing_one_table_with_a_reader_throughout(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    import threading

    table = events_table("concurrent_db", "events", tmp_path / "table")  # process-time, delay 0
    create_in_hms(hms, table)
    first_free = write_hourly_events(tmp_path / "a", START, hours=4, rows_per_hour=25)
    write_hourly_events(tmp_path / "b", START, hours=4, rows_per_hour=25, first_id=first_free)
    total = 2 * first_free
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None
    )
    counts: list[int] = []
    stop_reading = threading.Event()

    def read_throughout() -> None:
        while not stop_reading.is_set():
            spark.catalog.refreshTable("concurrent_db.events")
            counts.append(spark.sql("SELECT count(*) AS n FROM concurrent_db.events").first().n)

    reader = threading.Thread(target=read_throughout, daemon=True)
    reader.start()
    queries = [
        FileSystemSink(context).start_stream(
            hourly_event_stream(spark, tmp_path / name),
            InsertPlan(f"writer_{name}", (tmp_path / f"cp_{name}").as_uri(), available_now=True),
        )
        for name in ("a", "b")
    ]
    for query in queries:
        running = running_insert(str(query.id))
        assert running is not None and running.wait(300)
    stop_reading.set()
    reader.join(60)

    ids = sorted(
        ds.dataset(tmp_path / "table", format="parquet", partitioning="hive", exclude_invalid_files=True)
        .to_table(columns=["id"])["id"]
        .to_pylist()
    )
    assert ids == list(range(total)), "a row of one writer was lost or doubled"
    names = sorted(hms.get_partition_names("concurrent_db", "events"))
    assert names == [f"dt=2026-11-22/hr={h:02d}" for h in range(4)]
    rows = {
        tuple(p.values): int(p.parameters["numRows"])
        for p in hms.get_partitions_by_names("concurrent_db", "events", names)
    }
    assert sum(rows.values()) == total, f"partition statistics lost a writer's commit: {rows}"
    assert counts and all(0 <= n <= total for n in counts)
    assert spark.sql("SELECT count(*) AS n FROM concurrent_db.events").first().n == total
