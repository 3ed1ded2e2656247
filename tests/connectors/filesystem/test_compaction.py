"""Compaction: merged files keep rows, order and encoding; auto-compaction, the merging policy and
``sqlext compact`` leave partitions near the target size with exact rows and HMS statistics; readers
never see a wrong count; a crash at any step, restarted, leaves exactly the original rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.cli import main
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.compaction.compactor import COMPACTION_WRITER, Compactor
from sqlext.connectors.filesystem.compaction.merge import SourceFile, describe_file, merge_files
from sqlext.connectors.filesystem.compaction.plan import plan_groups
from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
from sqlext.faults import COMPACTION_POINTS, EXIT_CODE
from sqlext.io.fs import FileStatus, FileSystem
from sqlext.sink import InsertPlan
from sqlext.table import TableDefinition
from tests.support.streams import EVENT_DDL, event_rows, hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table

REPO = Path(__file__).resolve().parents[3]
START = datetime(2026, 11, 22)
PARTITION_TIME = {
    "sink.partition-commit.trigger": "partition-time",
    "sink.partition-commit.delay": "1 h",
    "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
}


# -- merging files (no Spark, no HMS) ----------------------------------------------------------------


def _status(path: Path) -> FileStatus:
    return FileStatus(path.as_uri(), path.name, path.stat().st_size, 0)


def _chunks(count: int, rows: int) -> list[pa.Table]:
    base = datetime(2026, 1, 1, 12)
    return [
        pa.table(
            {
                "id": pa.array(range(i * rows, (i + 1) * rows), pa.int64())[::-1],  # descending inside a file
                "name": [f"n{j}" for j in range(rows)],
                "ts": pa.array([base + timedelta(seconds=j) for j in range(rows)], pa.timestamp("ns")),
            }
        )
        for i in range(count)
    ]


def test_merged_parquet_keeps_rows_in_file_order_int96_timestamps_and_compression(tmp_path: Path) -> None:
    chunks = _chunks(3, 50)
    paths = []
    for index, chunk in enumerate(chunks):
        paths.append(tmp_path / f"part-{index}.c000.zstd.parquet")
        pq.write_table(chunk, paths[-1], compression="zstd", use_deprecated_int96_timestamps=True)
    fs = FileSystem(tmp_path.as_uri())
    sources = [describe_file(fs, _status(p), "parquet") for p in paths]
    target = tmp_path / "merged.parquet"

    merge_files(fs, sources, target.as_uri(), "parquet")

    merged = pq.ParquetFile(target)
    assert merged.read().to_pylist() == pa.concat_tables(chunks).to_pylist()
    assert merged.schema.column(2).physical_type == "INT96"
    assert merged.metadata.row_group(0).column(0).compression == "ZSTD"
    assert [s.rows for s in sources] == [50, 50, 50]
    assert len({s.shape for s in sources}) == 1


def test_parquet_files_spark_marked_as_rebased_merge_only_with_files_marked_alike(tmp_path: Path) -> None:
    """A file written with Spark's rebase modes LEGACY (its footer's markers) and one written CORRECTED hold
    the same schema; merged, one file's dates would read shifted in Spark, so their shapes differ."""
    fs = FileSystem(tmp_path.as_uri())
    chunk = _chunks(1, 5)[0]
    marked = {b"org.apache.spark.legacyDateTime": b"", b"org.apache.spark.legacyINT96": b""}
    shapes = []
    for name, metadata in (("legacy", marked), ("legacy-too", marked), ("corrected", {})):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(chunk.replace_schema_metadata(metadata), path, use_deprecated_int96_timestamps=True)
        shapes.append(describe_file(fs, _status(path), "parquet").shape)
    assert shapes[0] == shapes[1] != shapes[2]


def test_merged_orc_and_json_keep_rows_in_order(tmp_path: Path) -> None:
    fs = FileSystem(tmp_path.as_uri())
    chunks = _chunks(2, 20)
    orc_paths = []
    for index, chunk in enumerate(chunks):
        orc_paths.append(tmp_path / f"part-{index}.orc")
        orc.write_table(chunk, orc_paths[-1], compression="zlib")
    orc_target = tmp_path / "merged.orc"
    merge_files(fs, [describe_file(fs, _status(p), "orc") for p in orc_paths], orc_target.as_uri(), "orc")
    assert orc.ORCFile(orc_target).read().to_pylist() == pa.concat_tables(chunks).to_pylist()
    assert orc.ORCFile(orc_target).compression == "ZLIB"

    json_paths = [tmp_path / "a.json", tmp_path / "b.json"]
    json_paths[0].write_text('{"id": 1}\n{"id": 2}\n')
    json_paths[1].write_text('{"id": 3}')  # no final newline: the merge adds it
    json_target = tmp_path / "merged.json"
    merge_files(fs, [describe_file(fs, _status(p), "json") for p in json_paths], json_target.as_uri(), "json")
    assert json_target.read_text() == '{"id": 1}\n{"id": 2}\n{"id": 3}\n'


def test_groups_stay_under_the_target_keep_order_and_never_mix_shapes() -> None:
    def source(name: str, size: int, shape: str = "a") -> SourceFile:
        return SourceFile(FileStatus(f"file:///p/{name}", name, size, 0), 1, shape)

    files = [
        source("1", 40),
        source("2", 40),
        source("3", 40),
        source("big", 500),
        source("4", 30),
        source("5", 30, "b"),
        source("6", 30, "b"),
        source("7", 10, "c"),
    ]
    groups = [[s.status.relative for s in g.sources] for g in plan_groups(files, 100)]
    # 1+2 fit, 3 starts anew and takes 4; "big" is left alone; b's merge; a lone "c" is not rewritten.
    assert groups == [["1", "2"], ["3", "4"], ["5", "6"]]


def test_a_compaction_logs_each_merged_file_with_its_size_on_disk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = events_table("compact_db", "sizes", tmp_path / "table")
    partition = tmp_path / "table" / "dt=2026-11-22" / "hr=00"
    partition.mkdir(parents=True)
    for index, chunk in enumerate(_chunks(4, 30)):
        pq.write_table(chunk, partition / f"part-{index:05d}.c000.snappy.parquet")
    sources_size = sum(path.stat().st_size for path in _data_files(partition))

    [entry] = Compactor(table, None, 1 << 20, timedelta(0)).compact(
        [("dt=2026-11-22/hr=00", ["2026-11-22", "00"])], registered=False
    )

    [merged] = _data_files(partition)
    on_disk = merged.stat().st_size
    assert on_disk != sources_size, "the merged file has its sources' total size: this test would show nothing"
    logged = CommitLog(FileSystem(table.options["path"]), table.options["path"]).get(COMPACTION_WRITER, entry.batch)
    assert logged is not None and logged.state is State.COMPLETED
    assert [(f.final.rsplit("/", 1)[1], f.size, f.rows) for f in logged.files] == [(merged.name, on_disk, 120)]

    assert main(["commits", table.options["path"], "--json"]) == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    [compaction] = [e for e in shown if e["query"] == COMPACTION_WRITER]
    assert [f["size"] for f in compaction["files"]] == [on_disk]


def _partition_rows(directory: Path) -> list[dict[str, Any]]:
    rows = [row for path in _data_files(directory) for row in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda row: row["id"])


def test_a_compaction_crashed_at_each_step_and_restarted_leaves_every_row_once(tmp_path: Path) -> None:
    """Each run finishes the compaction the previous one left and dies at the next step; the last one ends it."""
    table = tmp_path / "table"
    partition = table / "dt=2026-11-22" / "hr=00"
    partition.mkdir(parents=True)
    for index, chunk in enumerate(_chunks(4, 30)):
        pq.write_table(chunk, partition / f"part-{index:05d}.c000.snappy.parquet")
    replaced = {path.name for path in _data_files(partition)}
    before = _partition_rows(partition)
    command = [sys.executable, "-m", "tests.support.compaction_job", str(table), "dt=2026-11-22/hr=00"]

    files_after_each_run = []
    for fault in ("after-merge", "mid-delete", "mid-swap", None):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("SQLEXT_FAULT", None)
        env.update({"SQLEXT_FAULT": fault} if fault else {})
        run = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert run.returncode == (EXIT_CODE if fault else 0), run.stderr[-3000:]
        assert fault is None or f"fault point '{fault}' reached" in run.stderr
        names = {path.name for path in _data_files(partition)}
        merged = {name for name in names if name.startswith("compacted-")}
        assert not (merged and names & replaced), f"a merged file beside a file it replaced: {sorted(names)}"
        files_after_each_run.append(len(names))

    # Merged in the work dir; the first replaced file deleted; all of them; the merged file in their place.
    assert files_after_each_run == [4, 3, 0, 1]
    assert _partition_rows(partition) == before
    [merged_file] = _data_files(partition)
    [entry] = CommitLog(FileSystem(table.as_uri()), table.as_uri()).entries(COMPACTION_WRITER)
    assert entry.state is State.COMPLETED and sorted(f.rsplit("/", 1)[1] for f in entry.replaced_files) == sorted(
        replaced
    )
    assert [f.size for f in entry.files] == [merged_file.stat().st_size]
    leftovers = [p for p in (table / "_sqlext").rglob("*") if p.is_file() and "log" not in p.parts]
    assert leftovers == [], "work dir or moved-aside files left behind"


def test_a_compaction_an_earlier_version_left_mid_swap_is_finished_and_its_trash_removed(tmp_path: Path) -> None:
    """Earlier versions moved merged-away files into ``_sqlext/trash/_compaction/<id>/`` before placing the
    merged files; a crash there, restarted by this version, ends as a crash here does."""
    table = tmp_path / "table"
    partition = table / "dt=2026-11-22" / "hr=00"
    partition.mkdir(parents=True)
    for index, chunk in enumerate(_chunks(3, 20)):
        pq.write_table(chunk, partition / f"part-{index:05d}.c000.snappy.parquet")
    before = _partition_rows(partition)
    command = [sys.executable, "-m", "tests.support.compaction_job", str(table), "dt=2026-11-22/hr=00"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_FAULT": "after-merge"}
    crashed = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert crashed.returncode == EXIT_CODE, crashed.stderr[-3000:]
    [entry] = CommitLog(FileSystem(table.as_uri()), table.as_uri()).entries(COMPACTION_WRITER)
    trash = table / "_sqlext" / "trash" / "_compaction" / f"{entry.batch:020d}" / "dt=2026-11-22" / "hr=00"
    trash.mkdir(parents=True)
    for path in _data_files(partition):  # the old swap's first half
        path.rename(trash / path.name)

    recovered = Compactor(events_table("compact_db", "events", table), None, 1 << 20, timedelta(0)).recover()

    assert [e.batch for e in recovered] == [entry.batch]
    assert [p.name.startswith("compacted-") for p in _data_files(partition)] == [True]
    assert _partition_rows(partition) == before
    assert not (table / "_sqlext" / "trash" / "_compaction" / f"{entry.batch:020d}").exists()


# -- with Spark and the HMS ----------------------------------------------------------------------------


def _write_chunked_hours(directory: Path, hours: int, files_per_hour: int, rows_per_file: int) -> int:
    """``files_per_hour`` event files per hour, in hour order: each file is one micro-batch."""
    next_id = 0
    for hour in range(hours):
        for _ in range(files_per_hour):
            next_id = write_hourly_events(directory, START + timedelta(hours=hour), 1, rows_per_file, next_id)
    return next_id


def _stream_into(spark: Any, table: TableDefinition, metastore: MetastoreSettings, input_dir: Path, checkpoint: Path):
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None
    )
    plan = InsertPlan(f"insert_{table.identifier.name}", checkpoint.as_uri(), available_now=True)
    query = FileSystemSink(context).start_stream(hourly_event_stream(spark, input_dir), plan)
    running = running_insert(str(query.id))
    assert running is not None and running.wait(300), "the insert did not finish"
    assert query.exception() is None


def _expected_rows(spark: Any, input_dir: Path) -> list[tuple[Any, ...]]:
    """The input as Spark reads it (the same reader the stream used), ordered by id."""
    rows = spark.read.schema(EVENT_DDL).parquet(input_dir.as_uri()).orderBy("id").collect()
    return [tuple(row) for row in rows]


def _table_rows(spark: Any, table: TableDefinition, hive_serde: bool = False) -> list[tuple[Any, ...]]:
    """The table through the HMS: Spark's native reader, or Hive's SerDe (how Hive-protocol engines read)."""
    name = f"{table.identifier.database}.{table.identifier.name}"
    spark.conf.set("spark.sql.hive.convertMetastoreParquet", str(not hive_serde).lower())
    try:
        spark.catalog.refreshTable(name)
        rows = spark.sql(f"SELECT id, user_id, amount, ts FROM {name} ORDER BY id").collect()
    finally:
        spark.conf.unset("spark.sql.hive.convertMetastoreParquet")
    return [tuple(row) for row in rows]


def _data_files(directory: Path) -> list[Path]:
    return sorted(f for f in directory.iterdir() if f.is_file() and not f.name.startswith(("_", ".")))


def _assert_stats_match_disk(hms: MetastoreClient, table: TableDefinition) -> dict[str, list[Path]]:
    """Every HMS partition is at its usual path with numFiles/totalSize/numRows of the files there."""
    database, name = table.identifier.database, table.identifier.name
    root = Path(table.options["path"].removeprefix("file://"))
    files_by_partition = {}
    names = hms.get_partition_names(database, name)
    for partition in hms.get_partitions_by_names(database, name, names):
        directory = root / f"dt={partition.values[0]}" / f"hr={partition.values[1]}"
        assert partition.sd.location.removeprefix("file:").rstrip("/").endswith(str(directory).lstrip("/"))
        files = _data_files(directory)
        assert partition.parameters["numFiles"] == str(len(files))
        assert partition.parameters["totalSize"] == str(sum(f.stat().st_size for f in files))
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        assert partition.parameters["numRows"] == str(rows)
        files_by_partition[directory.name] = files
    return files_by_partition


def _assert_no_leftovers(table: TableDefinition) -> None:
    root = Path(table.options["path"].removeprefix("file://"))
    left = [p for p in (root / "_sqlext").glob("*compaction*/**/*") if p.is_file()]
    left += [p for p in (root / "_sqlext" / "trash").rglob("*") if p.is_file()]
    assert left == [], "compaction work files or trash left behind"
    assert not list(root.glob("dt=*/hr=*/.*")), "hidden files left in partitions"


def _assert_runs_of_whole_input_files(path: Path, rows_per_file: int) -> None:
    """A merged file holds whole input files one after another, each in its own row order."""
    ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
    assert len(ids) % rows_per_file == 0
    for start in range(0, len(ids), rows_per_file):
        run = ids[start : start + rows_per_file]
        assert run == list(range(run[0], run[0] + rows_per_file))


@pytest.mark.spark
@pytest.mark.hms
def test_auto_compaction_commits_partitions_of_tiny_batches_as_files_near_the_target_size(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    rows_per_file = 200
    total = _write_chunked_hours(input_dir, hours=3, files_per_hour=8, rows_per_file=rows_per_file)
    target = 16 * 1024
    table = events_table(
        "compact_db",
        "auto",
        tmp_path / "table",
        **PARTITION_TIME,
        **{"auto-compaction": "true", "compaction.file-size": "16kb"},
    )
    create_in_hms(hms, table)

    _stream_into(spark, table, metastore, input_dir, tmp_path / "checkpoint")

    expected = _expected_rows(spark, input_dir)
    assert len(expected) == total
    assert _table_rows(spark, table) == expected
    assert _table_rows(spark, table, hive_serde=True) == expected
    files = _assert_stats_match_disk(hms, table)
    assert sorted(files) == ["hr=00", "hr=01", "hr=02"]
    source_size = 0
    for partition_files in files.values():
        sizes = [f.stat().st_size for f in partition_files]
        assert len(sizes) < 8, "nothing was merged"
        assert max(sizes) <= target
        assert sum(1 for size in sizes if size < target / 2) <= 1, f"files far from the target: {sizes}"
        for path in partition_files:
            assert pq.ParquetFile(path).schema.column(3).physical_type == "INT96"
            _assert_runs_of_whole_input_files(path, rows_per_file)
        source_size += sum(sizes)
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    compactions = list(log.entries(COMPACTION_WRITER))
    assert {c.committed_partitions[0] for c in compactions} == {f"dt=2026-11-22/hr={h:02d}" for h in range(3)}
    assert all(c.state is State.COMPLETED and c.view is None for c in compactions)  # before first commit
    assert all(len(sources) >= 2 for c in compactions for sources in c.merged_from.values())
    _assert_no_leftovers(table)


@pytest.mark.spark
@pytest.mark.hms
def test_merging_policy_compacts_committed_partitions_and_updates_hms_statistics(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    _write_chunked_hours(input_dir, hours=2, files_per_hour=5, rows_per_file=100)
    table = events_table(
        "compact_db",
        "policy",
        tmp_path / "table",
        **{
            # process-time, delay 0: each batch commits its partition again, so the policy compacts
            # partitions that HMS readers already see.
            "sink.partition-commit.policy.kind": "metastore,custom,success-file",
            "sink.partition-commit.policy.class": "sqlext.connectors.filesystem.compaction.MergingCommitPolicy",
            "sink.partition-commit.policy.class.parameters": "1MB;0 s",  # no reader to wait for
        },
    )
    create_in_hms(hms, table)

    _stream_into(spark, table, metastore, input_dir, tmp_path / "checkpoint")

    assert _table_rows(spark, table) == _expected_rows(spark, input_dir)
    files = _assert_stats_match_disk(hms, table)
    assert {name: len(paths) for name, paths in files.items()} == {"hr=00": 1, "hr=01": 1}
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    compactions = list(log.entries(COMPACTION_WRITER))
    assert compactions and all(c.view is not None for c in compactions)  # switched through the HMS
    _assert_no_leftovers(table)


def _small_file_table(
    spark: Any, hms: MetastoreClient, metastore: MetastoreSettings, path: Path, name: str, partitions: int = 4
):
    """A committed table with ``partitions`` partitions of 6 small files each (6 batch inserts), and its rows."""
    table = events_table("compact_db", name, path)
    create_in_hms(hms, table)
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None
    )
    sink = FileSystemSink(context)
    for batch in range(6):
        rows = event_rows(spark, range(batch * 400, (batch + 1) * 400), partitions)
        sink.write_batch(rows.coalesce(1), InsertPlan(f"load_{name}", (path / "checkpoint").as_uri()))
    return table, _table_rows(spark, table)


def _compact_command(metastore: MetastoreSettings, table: TableDefinition, *extra: str, fault: str | None = None):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SQLEXT_FAULT", None)
    if fault:
        env["SQLEXT_FAULT"] = fault
    name = f"{table.identifier.database}.{table.identifier.name}"
    command = [sys.executable, "-m", "sqlext.cli", "compact", name, "--metastore-uri", metastore.uri, *extra]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.spark
@pytest.mark.hms
def test_compact_command_merges_chosen_partitions_with_progress_and_exact_statistics(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, before = _small_file_table(spark, hms, metastore, tmp_path / "table", "on_demand")
    root = tmp_path / "table" / "dt=2026-11-22"

    done = _compact_command(
        metastore, table, "--partition", "hr=00", "--partition", "hr=02", "--target-size", "1MB", "--reader-grace", "0s"
    )

    assert done.returncode == 0, done.stderr
    assert "compact_db.on_demand: 2 of 2 partition(s) compacted, 12 files merged into 2" in done.stdout
    assert "compacting compact_db.on_demand" in done.stderr and "2/2" in done.stderr  # the progress bar
    assert [len(_data_files(root / f"hr={h:02d}")) for h in range(4)] == [1, 6, 1, 6]
    assert _table_rows(spark, table) == before
    _assert_stats_match_disk(hms, table)
    _assert_no_leftovers(table)

    assert main(["commits", "compact_db.on_demand", "--metastore-uri", metastore.uri]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(COMPACTION_WRITER)]
    assert len(lines) == 2 and all("(6 files merged into 1)" in line for line in lines)

    bad = _compact_command(metastore, table, "--partition", "day=1")
    assert bad.returncode == 1 and "--partition 'day=1'" in bad.stderr and "(dt, hr)" in bad.stderr


@pytest.mark.spark
@pytest.mark.hms
def test_a_reader_looping_during_compaction_never_sees_a_wrong_count(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    table, before = _small_file_table(spark, hms, metastore, tmp_path / "table", "read_while", partitions=24)
    name = f"{table.identifier.database}.{table.identifier.name}"
    counts: list[int] = []
    failures: list[str] = []
    compacting = threading.Event()

    def read_until_done() -> None:
        while compacting.is_set():
            try:
                spark.catalog.refreshTable(name)
                counts.append(spark.sql(f"SELECT count(*) AS n FROM {name}").first().n)
            except Exception as exc:  # a query reading files the swap removed: rerun, never a wrong count
                failures.append(str(exc)[:300])

    compacting.set()
    reader = threading.Thread(target=read_until_done)
    reader.start()
    try:
        done = _compact_command(metastore, table, "--target-size", "1MB", "--reader-grace", "3 s")
    finally:
        compacting.clear()
        reader.join(120)
    assert done.returncode == 0, done.stderr
    assert len(counts) >= 5, "the reader hardly ran during the compaction"
    assert set(counts) == {len(before)}, f"wrong counts seen: {sorted(set(counts))}"
    assert failures == [], failures[:3]
    assert _table_rows(spark, table) == before


@pytest.mark.spark
@pytest.mark.hms
@pytest.mark.parametrize("point", COMPACTION_POINTS)
def test_a_crash_at_each_compaction_step_then_restart_leaves_exactly_the_original_rows(
    point: str, spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    table, before = _small_file_table(spark, hms, metastore, tmp_path / "table", f"crash_{point.replace('-', '_')}")

    crashed = _compact_command(metastore, table, "--target-size", "1MB", "--reader-grace", "0s", fault=point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr[-2000:]
    assert f"fault point '{point}' reached" in crashed.stderr
    assert _table_rows(spark, table) == before, "readers saw the crashed compaction"

    finished = _compact_command(metastore, table, "--target-size", "1MB", "--reader-grace", "0s", "--quiet")
    assert finished.returncode == 0, finished.stderr[-2000:]

    assert _table_rows(spark, table) == before
    files = _assert_stats_match_disk(hms, table)
    assert {len(paths) for paths in files.values()} == {1}
    _assert_no_leftovers(table)
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    compactions = list(log.entries(COMPACTION_WRITER))
    assert len(compactions) == 4 and all(c.state is State.COMPLETED for c in compactions)


@pytest.mark.spark
@pytest.mark.hms
@pytest.mark.slow
def test_a_crash_during_auto_compaction_of_the_sink_then_restart_gives_every_row_once(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    write_hourly_events(input_dir, START, 3, 60)
    options = {"sink.parallelism": "2", "auto-compaction": "true"}  # two files per partition to merge
    table = events_table("compact_crash_db", "events", tmp_path / "table", **options)
    create_in_hms(hms, table)
    command = [sys.executable, "-m", "tests.support.sink_job", metastore.uri]
    command += [str(tmp_path / d) for d in ("table", "input", "checkpoint")]
    command += [json.dumps(options), "compact_crash_db"]

    # The second run crashes while finishing the first run's compaction: recovery is crash-safe too.
    for fault in ("after-merge", "mid-swap", None):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("SQLEXT_FAULT", None)
        env.update({"SQLEXT_FAULT": fault} if fault else {})
        run = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert run.returncode == (EXIT_CODE if fault else 0), run.stderr[-3000:]

    assert _table_rows(spark, table) == _expected_rows(spark, input_dir)
    files = _assert_stats_match_disk(hms, table)
    assert {len(paths) for paths in files.values()} == {1}
    _assert_no_leftovers(table)
