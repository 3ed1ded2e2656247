"""``format("sqlext")`` resumes only its own checkpoint, and one writer at a time writes a table's query:
a recreated table refuses the old checkpoint, a new checkpoint writes every row it reads, and a second
writer process is refused while the first runs."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.io.fs import FileSystem
from sqlext.table import TableIdentifier
from tests.support.streams import hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]

REPO = Path(__file__).resolve().parents[2]
QUERY_OF = "sqlext_{db}_{name}"  # format('sqlext')'s default pipeline.name


def _start(spark: Any, input_dir: Path, table: str, checkpoint: Path, available_now: bool = True) -> Any:
    writer = (
        hourly_event_stream(spark, input_dir, None)
        .writeStream.format("sqlext")
        .option("table", table)
        .option("checkpointLocation", checkpoint.as_uri())
    )
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="1 second")
    return writer.start()


def _ids_in(table_dir: Path) -> list[int]:
    relative = [f.relative_to(table_dir).parts for f in table_dir.rglob("*.parquet")] if table_dir.exists() else []
    if not any(not part.startswith(("_", ".")) for parts in relative for part in parts[:1]):
        return []
    dataset = ds.dataset(table_dir, format="parquet", partitioning="hive")
    return sorted(dataset.to_table(columns=["id"]).column("id").to_pylist())


def _completed(table_dir: Path, query: str) -> int:
    log = CommitLog(FileSystem(table_dir.as_uri()), table_dir.as_uri())
    return sum(1 for entry in log.entries(query) if entry.state is State.COMPLETED)


def test_a_recreated_table_refuses_the_old_checkpoint_and_a_new_checkpoint_writes_every_row(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    import sqlext

    sqlext.register(spark)
    input_dir, checkpoint = tmp_path / "input", tmp_path / "checkpoint"
    write_hourly_events(input_dir, datetime(2026, 11, 22), hours=2, rows_per_hour=20)
    create_in_hms(hms, events_table("claim_db", "events", tmp_path / "first"))
    query = _start(spark, input_dir, "claim_db.events", checkpoint)
    query.awaitTermination()
    assert query.exception() is None
    assert _ids_in(tmp_path / "first") == list(range(40))

    # Dropped and created again at a new path: the old checkpoint has read both files already.
    Catalog(hms).drop_table(TableIdentifier("claim_db", "events"))
    create_in_hms(hms, events_table("claim_db", "events", tmp_path / "second"))
    write_hourly_events(input_dir, datetime(2026, 11, 22, 2), hours=1, rows_per_hour=20, first_id=40)
    with pytest.raises(Exception) as refused:
        _start(spark, input_dir, "claim_db.events", checkpoint).awaitTermination()
    message = str(refused.value)
    assert f"checkpoint {checkpoint.as_uri()}" in message
    assert "dropped and created again" in message and "new checkpointLocation" in message
    assert _ids_in(tmp_path / "second") == [], "the refused start wrote rows"
    assert hms.get_partition_names("claim_db", "events") == []

    # The way on the message gives: a new checkpoint reads the sources from the start, every row lands.
    query = _start(spark, input_dir, "claim_db.events", tmp_path / "checkpoint-2")
    query.awaitTermination()
    assert query.exception() is None
    assert _ids_in(tmp_path / "second") == list(range(60))
    assert len(hms.get_partition_names("claim_db", "events")) == 3


def test_a_new_checkpoint_on_a_written_table_sets_the_old_commit_log_aside_and_skips_nothing(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    import sqlext

    sqlext.register(spark)
    input_dir = tmp_path / "input"
    write_hourly_events(input_dir, datetime(2026, 11, 22), hours=2, rows_per_hour=20)
    create_in_hms(hms, events_table("claim_db", "again", tmp_path / "table"))
    for checkpoint in ("checkpoint-1", "checkpoint-2"):
        query = _start(spark, input_dir, "claim_db.again", tmp_path / checkpoint)
        query.awaitTermination()
        assert query.exception() is None

    # The second checkpoint read both files again from its batch 0; before, its batches 0 and 1 passed
    # for replays of the first checkpoint's committed batches and nothing was written.
    assert _ids_in(tmp_path / "table") == sorted([*range(40), *range(40)])
    query_name = QUERY_OF.format(db="claim_db", name="again")
    assert _completed(tmp_path / "table", query_name) == 2
    aside = [p.name for p in (tmp_path / "table" / "_sqlext" / "log").iterdir() if ".replaced-" in p.name]
    assert len(aside) == 1 and aside[0].startswith(query_name)


@pytest.mark.slow
def test_a_second_writer_process_is_refused_while_the_first_runs(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    import sqlext

    sqlext.register(spark)
    input_dir = tmp_path / "input"
    next_id = write_hourly_events(input_dir, datetime(2026, 11, 22), hours=1, rows_per_hour=20)
    create_in_hms(hms, events_table("claim_db", "busy", tmp_path / "table"))
    query_name = QUERY_OF.format(db="claim_db", name="busy")
    first = _start(spark, input_dir, "claim_db.busy", tmp_path / "checkpoint-1", available_now=False)
    try:
        wait_for(lambda: _completed(tmp_path / "table", query_name) >= 1, 120, what="the first writer's batch")

        command = [
            sys.executable,
            "-m",
            "tests.support.datasource_job",
            metastore.uri,
            "claim_db.busy",
            str(input_dir),
            str(tmp_path / "checkpoint-2"),
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        second = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)

        assert second.returncode == 1, second.stderr[-3000:]
        assert "is being written by" in second.stderr and "format('sqlext') writer in the Spark driver" in second.stderr
        assert first.isActive, "the first writer stopped"
        # The first keeps writing: a new file is committed by it, and nothing came from the second.
        write_hourly_events(input_dir, datetime(2026, 11, 22, 1), hours=1, rows_per_hour=20, first_id=next_id)
        wait_for(lambda: len(_ids_in(tmp_path / "table")) >= 40, 120, what="the first writer's second batch")
        assert _ids_in(tmp_path / "table") == list(range(40))
    finally:
        first.stop()
