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
from sqlext.sink.filesystem import FileSystemSink
from tests.support.streams import EVENT_DDL, write_hourly_events
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
    rows = (
        spark.readStream.schema(EVENT_DDL)
        .option("maxFilesPerTrigger", 1)
        .parquet(input_dir.as_uri())
        .selectExpr(
            "id",
            "user_id",
            "amount",
            "ts",
            "date_format(ts, 'yyyy-MM-dd') AS dt",
            "date_format(ts, 'HH') AS hr",
        )
    )
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
