"""The filesystem sink end to end: real Spark streaming queries, real files, partitions in a real HMS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.catalog.metastore.versions import HiveVersion
from sqlext.cli import main
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.sink import BATCH_SUFFIX, FileSystemSink, running_insert
from sqlext.io.fs import FileSystem
from sqlext.sink import InsertPlan
from sqlext.table import TableDefinition
from tests.support.read_job import committed_ids
from tests.support.services import FETCHED_VERSIONS, BackendMetastore
from tests.support.streams import event_rows, hourly_event_stream, write_hourly_events
from tests.support.tables import create_in_hms, events_table, keyed_table
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]

START = datetime(2026, 11, 22, 0, 0, 0)


def _run_bounded(
    spark, table: TableDefinition, metastore: MetastoreSettings, rows, checkpoint: Path, query_name: str = ""
) -> None:
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None
    )
    plan = InsertPlan(
        query_name=query_name or f"insert_{table.identifier.name}",
        checkpoint_location=checkpoint.as_uri(),
        available_now=True,
    )
    query = FileSystemSink(context).start_stream(rows, plan)
    running = running_insert(str(query.id))
    assert running is not None
    assert running.wait(300), "the insert did not finish"
    assert query.exception() is None


def _partition_names(hms: MetastoreClient, table: TableDefinition) -> list[str]:
    return sorted(hms.get_partition_names(table.identifier.database, table.identifier.name))


def _data_files(hms: MetastoreClient, table: TableDefinition) -> dict[str, tuple[Any, FileSystem, list[Any]]]:
    """Each partition the HMS lists, with the filesystem and the data files at its location (what a
    Hive-protocol reader reads, whichever metastore Spark's catalog reads)."""
    database, name = table.identifier.database, table.identifier.name
    names = _partition_names(hms, table)
    found = {}
    for partition, partition_name in zip(hms.get_partitions_by_names(database, name, names), names, strict=True):
        fs = FileSystem(partition.sd.location)
        files = [f for f in fs.list_files(partition.sd.location, recursive=False) if f.relative[0] not in "_."]
        found[partition_name] = (partition, fs, files)
    return found


def _rows_in(fs: FileSystem, files: list[Any]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(fs.open_input(f.uri)).num_rows for f in files)


def _rows_in_hms_partitions(hms: MetastoreClient, table: TableDefinition) -> dict[str, int]:
    """Rows of each partition the HMS lists, counted in the parquet files at its location."""
    return {name: _rows_in(fs, files) for name, (_, fs, files) in _data_files(hms, table).items()}


# The metastore tests every version runs (version_metastore: 2.3 embedded, 3.1 and 4 fetched): partition
# commit with statistics, `sqlext commits`, a late re-commit (alter), INSERT OVERWRITE and drop.


def test_the_client_probes_each_call_once_and_keeps_the_form_the_server_serves(
    version_metastore: BackendMetastore, tmp_path: Path
) -> None:
    """Here, not in tests/catalog, so that each version's metastore starts once per test worker."""
    from hmsclient.genthrift.hive_metastore import ttypes

    table = keyed_table("probe_db", "probed", tmp_path / "table")
    with MetastoreClient(version_metastore.uri) as client:
        create_in_hms(client, table)
        stored = client.get_table("probe_db", "probed")
        assert stored is not None and stored.tableName == "probed"
        assert client.served == {"get_table": "get_table_req"}  # the first form, served by 2.3, 3.1 and 4

        # The older form first: Hive 4.0.1 no longer serves get_table, so the probe falls to get_table_req.
        request = ttypes.GetTableRequest(dbName="probe_db", tblName="probed")
        found = client.call_served("old_first", {"get_table": ("probe_db", "probed"), "get_table_req": (request,)})
        expected = "get_table_req" if version_metastore.settings.version is HiveVersion.V4 else "get_table"
        assert client.served["old_first"] == expected
        assert (found.table if expected == "get_table_req" else found).tableName == "probed"


def test_alter_table_columns_reach_every_partition_in_one_call_every_version_serves(
    version_metastore: BackendMetastore, version_hms: MetastoreClient, tmp_path: Path
) -> None:
    """ALTER TABLE's column change (docs/schema-evolution.md) alters the table and every partition's columns,
    keeping each partition's location and statistics. Here, for each version's metastore to start once."""
    import copy

    from sqlext.catalog.hms import Catalog
    from sqlext.sql.parser import parse_statement

    table = keyed_table("evolve_db", "keyed", tmp_path / "table")
    create_in_hms(version_hms, table)
    stored = version_hms.get_table("evolve_db", "keyed")
    partitions = []
    for value in ("a", "b"):
        sd = copy.deepcopy(stored.sd)
        sd.location = f"{(tmp_path / 'table').as_uri()}/p={value}"
        partitions.append(
            ttypes.Partition(values=[value], dbName="evolve_db", tableName="keyed", sd=sd, parameters={"numFiles": "1"})
        )
    version_hms.add_partitions("evolve_db", "keyed", partitions)
    statement = parse_statement("ALTER TABLE evolve_db.keyed ADD (note STRING COMMENT 'added')")
    Catalog(version_hms).alter_table_schema(table.identifier, statement.change)  # type: ignore[attr-defined]

    assert version_hms.served["alter_table_cascade"] == "alter_table_with_environment_context"  # 2.3, 3.1 and 4
    altered = version_hms.get_table("evolve_db", "keyed")
    assert [(c.name, c.type, c.comment) for c in altered.sd.cols] == [
        ("id", "bigint", None),
        ("note", "string", "added"),
    ]
    assert altered.parameters["sqlext.table-id"] == stored.parameters["sqlext.table-id"]
    names = version_hms.get_partition_names("evolve_db", "keyed")
    for partition in version_hms.get_partitions_by_names("evolve_db", "keyed", names):
        assert partition.sd.cols == altered.sd.cols
        assert partition.sd.location.endswith(f"/table/p={partition.values[0]}")
        assert partition.parameters["numFiles"] == "1"


def test_partition_time_commits_after_watermark_passes_partition_end_plus_delay(
    spark, version_metastore: BackendMetastore, version_hms: MetastoreClient, tmp_path: Path
) -> None:
    hms, metastore = version_hms, version_metastore.settings
    input_dir = tmp_path / "input"
    write_hourly_events(input_dir, START, hours=5, rows_per_hour=120)
    table = events_table(
        "sink_db",
        "hourly",
        tmp_path / "table",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        },
    )
    create_in_hms(hms, table)

    _run_bounded(spark, table, metastore, hourly_event_stream(spark, input_dir), tmp_path / "checkpoint")

    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    entries = list(log.entries("insert_hourly"))
    assert [e.batch for e in entries] == [0, 1, 2, 3, 4]
    assert all(e.state is State.COMPLETED for e in entries)
    # Batch k reads hour k and commits with the watermark that follows its rows (as Flink's committer at
    # a checkpoint): the last event of hour k, k:59:30. Hour h has partition time h:00 and commits once
    # the watermark is past h:00 + delay 1 h, so in batch h+1 and not before.
    assert [e.watermark_ms for e in entries] == [
        int((START + timedelta(hours=k, minutes=59, seconds=30)).replace(tzinfo=UTC).timestamp() * 1000)
        for k in range(5)
    ]
    committed_by = {p: e.batch for e in entries for p in e.committed_partitions}
    assert committed_by == {f"dt=2026-11-22/hr={h:02d}": h + 1 for h in range(4)}
    # End of input commits the rest.
    assert _partition_names(hms, table) == [f"dt=2026-11-22/hr={h:02d}" for h in range(5)]

    partitions = hms.get_partitions_by_names("sink_db", "hourly", _partition_names(hms, table))
    for partition in partitions:
        directory = tmp_path / "table" / f"dt={partition.values[0]}" / f"hr={partition.values[1]}"
        assert (directory / "_SUCCESS").is_file()
        data_files = [f for f in directory.iterdir() if not f.name.startswith(("_", "."))]
        assert partition.parameters["numFiles"] == str(len(data_files))
        assert partition.parameters["totalSize"] == str(sum(f.stat().st_size for f in data_files))
        assert partition.parameters["numRows"] == "120"
        assert partition.sd.location.rstrip("/").endswith(f"dt={partition.values[0]}/hr={partition.values[1]}")

    assert _rows_in_hms_partitions(hms, table) == {f"dt=2026-11-22/hr={h:02d}": 120 for h in range(5)}
    if version_metastore.spark_catalog:
        counts = {
            (row.dt, row.hr): row.n
            for row in spark.sql(
                "SELECT dt, hr, count(*) AS n, count(DISTINCT id) AS d FROM sink_db.hourly GROUP BY dt, hr"
            ).collect()
        }
        assert counts == {("2026-11-22", f"{h:02d}"): 120 for h in range(5)}
    assert not list((tmp_path / "table").glob("_sqlext/staging/*/*"))


def test_commits_command_shows_each_batch_and_what_it_committed(
    spark,
    version_metastore: BackendMetastore,
    version_hms: MetastoreClient,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hms, metastore = version_hms, version_metastore.settings
    write_hourly_events(tmp_path / "input", START, hours=2, rows_per_hour=30)
    table = events_table("sink_db", "audited", tmp_path / "table")
    create_in_hms(hms, table)
    _run_bounded(spark, table, metastore, hourly_event_stream(spark, tmp_path / "input"), tmp_path / "checkpoint")

    assert main(["commits", "sink_db.audited", "--metastore-uri", metastore.uri]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[:3] == ["query", "batch", "state"]
    assert [line.split()[:6] for line in lines[1:]] == [
        ["insert_audited", "0", "completed", "append", "30", "1"],
        ["insert_audited", "1", "completed", "append", "30", "1"],
    ]
    assert lines[1].endswith("dt=2026-11-22/hr=00") and lines[2].endswith("dt=2026-11-22/hr=01")


def test_process_time_with_zero_delay_commits_each_partition_in_the_batch_that_wrote_it(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    write_hourly_events(input_dir, START, hours=3, rows_per_hour=50)
    table = events_table("sink_db", "proctime", tmp_path / "table")  # default trigger: process-time, 0 s
    create_in_hms(hms, table)

    _run_bounded(spark, table, metastore, hourly_event_stream(spark, input_dir), tmp_path / "checkpoint")

    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    committed_by = {p: e.batch for e in log.entries("insert_proctime") for p in e.committed_partitions}
    assert committed_by == {f"dt=2026-11-22/hr={h:02d}": h for h in range(3)}
    rows = spark.sql("SELECT count(*) AS n, count(DISTINCT id) AS d FROM sink_db.proctime").collect()[0]
    assert (rows.n, rows.d) == (150, 150)


def test_the_commit_log_keeps_the_retained_batches_and_every_row_is_committed(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    write_hourly_events(input_dir, START, hours=5, rows_per_hour=10)
    table = events_table("sink_db", "retained", tmp_path / "table", **{"sink.commit-log.retained-batches": "2"})
    create_in_hms(hms, table)

    _run_bounded(spark, table, metastore, hourly_event_stream(spark, input_dir), tmp_path / "checkpoint")

    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    assert [(e.batch, e.state) for e in log.entries("insert_retained")] == [(3, State.COMPLETED), (4, State.COMPLETED)]
    assert _partition_names(hms, table) == [f"dt=2026-11-22/hr={h:02d}" for h in range(5)]
    rows = spark.sql("SELECT count(*) AS n, count(DISTINCT id) AS d FROM sink_db.retained").collect()[0]
    assert (rows.n, rows.d) == (50, 50)


SPECIAL_VALUES = [
    "a/b",
    "x=y",
    "50%",
    "with space",
    "ünïcode",
    "..",
    "../../escape",
    "/abs",
    "%2e%2e",
    "v" * 250,  # the longest that fits a path segment with its key (255 bytes)
    None,
    "",
]


def _rows_by_partition_value(hms: MetastoreClient, table: TableDefinition) -> list[tuple[int, str]]:
    """(id, value) of every row, the value as the HMS stores it for the partition whose location holds
    the row's file: what a Hive-protocol reader sees, whichever catalog Spark reads."""
    import pyarrow.parquet as pq

    database, name = table.identifier.database, table.identifier.name
    rows = []
    for partition in hms.get_partitions_by_names(database, name, _partition_names(hms, table)):
        location = partition.sd.location  # Hive-escaped, not URI-encoded: read it through sqlext's fs
        fs = FileSystem(location)
        for file in fs.list_files(location, recursive=False):
            if not file.relative.startswith(("_", ".")):
                ids = pq.read_table(fs.open_input(file.uri), columns=["id"]).column("id").to_pylist()
                rows += [(row_id, partition.values[0]) for row_id in ids]
    return sorted(rows)


def test_special_partition_values_stay_inside_the_table_dir_and_read_back_equal(
    spark, backend_metastore: BackendMetastore, backend_hms: MetastoreClient, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    input_dir = tmp_path / "input"
    input_dir.mkdir()
    pq.write_table(
        pa.table({"id": list(range(len(SPECIAL_VALUES))), "p": SPECIAL_VALUES}), input_dir / "values.parquet"
    )
    table = keyed_table("sink_db", "special", tmp_path / "root" / "table")
    hms = backend_hms
    create_in_hms(hms, table)
    rows = spark.readStream.schema("id BIGINT, p STRING").parquet(input_dir.as_uri())

    _run_bounded(spark, table, backend_metastore.settings, rows, tmp_path / "checkpoint")

    root = (tmp_path / "root").resolve()
    written = [p.resolve() for p in root.rglob("*") if p.is_file()]
    assert written and all(str(p).startswith(str(root / "table") + "/") for p in written)
    names = _partition_names(hms, table)
    stored = sorted(p.values[0] for p in hms.get_partitions_by_names("sink_db", "special", names))
    expected = sorted({v for v in SPECIAL_VALUES if v} | {"__HIVE_DEFAULT_PARTITION__"})
    assert stored == expected
    assert (root / "table" / "p=a%2Fb").is_dir() and (root / "table" / "p=..").is_dir()
    default = "__HIVE_DEFAULT_PARTITION__"
    assert _rows_by_partition_value(hms, table) == [(i, v or default) for i, v in enumerate(SPECIAL_VALUES)]
    if backend_metastore.spark_catalog:
        read_back = sorted((row.id, row.p) for row in spark.sql("SELECT id, p FROM sink_db.special").collect())
        assert read_back == [(i, v if v else None) for i, v in enumerate(SPECIAL_VALUES)]


def test_late_data_for_a_committed_partition_commits_it_again(
    spark, version_metastore: BackendMetastore, version_hms: MetastoreClient, tmp_path: Path
) -> None:
    hms, metastore = version_hms, version_metastore.settings
    input_dir = tmp_path / "input"
    next_id = write_hourly_events(input_dir, START, hours=3, rows_per_hour=60)
    write_hourly_events(input_dir, START, hours=1, rows_per_hour=10, first_id=next_id)  # late rows for 00:00
    table = events_table(
        "sink_db",
        "late",
        tmp_path / "table",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        },
    )
    create_in_hms(hms, table)

    _run_bounded(spark, table, metastore, hourly_event_stream(spark, input_dir), tmp_path / "checkpoint")

    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    commits_of_hour_zero = [
        e.batch for e in log.entries("insert_late") if "dt=2026-11-22/hr=00" in e.committed_partitions
    ]
    assert commits_of_hour_zero == [1, 3], "committed when the watermark passed, again for the late rows"
    [hour_zero] = hms.get_partitions_by_names("sink_db", "late", ["dt=2026-11-22/hr=00"])
    assert hour_zero.parameters["numRows"] == "70"
    assert hour_zero.parameters["numFiles"] == "2"
    hour_zero_dir = tmp_path / "table" / "dt=2026-11-22" / "hr=00"
    data_files = [f for f in hour_zero_dir.iterdir() if not f.name.startswith(("_", "."))]
    assert hour_zero.parameters["totalSize"] == str(sum(f.stat().st_size for f in data_files))
    assert _rows_in_hms_partitions(hms, table)["dt=2026-11-22/hr=00"] == 70
    if version_metastore.spark_catalog:
        count = spark.sql("SELECT count(*) AS n FROM sink_db.late WHERE hr = '00'").collect()[0].n
        assert count == 70


def test_a_partition_committed_again_by_another_insert_reads_back_whole_in_the_session_that_read_it(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """The first insert adds its partitions (new to the metastore: no refresh of Spark's cache needed); the
    session reads them, caching their file listings; a second insert (its own query, nothing committed
    here yet) adds files to a partition the metastore already has, so the session's next read sees them."""
    table = events_table(
        "sink_db",
        "again",
        tmp_path / "table",
        **{"sink.partition-commit.trigger": "process-time", "sink.partition-commit.delay": "0 s"},
    )
    create_in_hms(hms, table)
    first, second = tmp_path / "first", tmp_path / "second"
    next_id = write_hourly_events(first, START, hours=2, rows_per_hour=30)
    write_hourly_events(second, START, hours=1, rows_per_hour=5, first_id=next_id)

    _run_bounded(spark, table, metastore, hourly_event_stream(spark, first), tmp_path / "checkpoint-1")
    count_hour_zero = "SELECT count(*) AS n FROM sink_db.again WHERE hr = '00'"
    assert spark.sql(count_hour_zero).collect()[0].n == 30
    rows = hourly_event_stream(spark, second)
    _run_bounded(spark, table, metastore, rows, tmp_path / "checkpoint-2", query_name="insert_again_late")

    assert spark.sql(count_hour_zero).collect()[0].n == 35
    [hour_zero] = hms.get_partitions_by_names("sink_db", "again", ["dt=2026-11-22/hr=00"])
    assert hour_zero.parameters["numRows"] == "35"


def _write_batch(
    spark, table: TableDefinition, metastore: MetastoreSettings, rows, tmp_path: Path, overwrite: bool
) -> None:
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None
    )
    plan = InsertPlan(
        query_name="batch_insert", checkpoint_location=(tmp_path / "checkpoint").as_uri(), overwrite=overwrite
    )
    FileSystemSink(context).write_batch(rows, plan)


def test_batch_insert_commits_every_partition_and_overwrite_replaces_only_written_ones(
    spark, version_metastore: BackendMetastore, version_hms: MetastoreClient, tmp_path: Path
) -> None:
    hms, metastore = version_hms, version_metastore.settings
    table = keyed_table(
        "sink_db",
        "overwritten",
        tmp_path / "table",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "365 d",
            "partition.time-extractor.timestamp-pattern": "2026-01-01",
        },
    )
    create_in_hms(hms, table)
    first = spark.createDataFrame([(i, p) for p in ("a", "b") for i in range(10)], "id BIGINT, p STRING")
    _write_batch(spark, table, metastore, first, tmp_path, overwrite=False)
    # The trigger could never fire (delay 365 d, no watermark): end of input committed both anyway.
    assert _partition_names(hms, table) == ["p=a", "p=b"]

    second = spark.createDataFrame([(100 + i, "b") for i in range(3)], "id BIGINT, p STRING")
    _write_batch(spark, table, metastore, second, tmp_path, overwrite=True)

    assert _rows_in_hms_partitions(hms, table) == {"p=a": 10, "p=b": 3}
    if version_metastore.spark_catalog:
        read_back = sorted((r.id, r.p) for r in spark.sql("SELECT id, p FROM sink_db.overwritten").collect())
        assert read_back == sorted([(i, "a") for i in range(10)] + [(100 + i, "b") for i in range(3)])
    [b] = hms.get_partitions_by_names("sink_db", "overwritten", ["p=b"])
    assert b.parameters["numRows"] == "3"
    assert b.parameters["numFiles"] == str(
        len([f for f in (tmp_path / "table" / "p=b").iterdir() if not f.name.startswith(("_", "."))])
    )
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    last = list(log.entries("batch_insert" + BATCH_SUFFIX))[-1]  # batch inserts log apart from streams
    assert last.operation == "overwrite" and last.replaced_files
    assert not list((tmp_path / "table").glob(".*")) and not list((tmp_path / "table").glob("*/.*"))

    assert hms.drop_table("sink_db", "overwritten") is True
    assert hms.get_table("sink_db", "overwritten") is None
    assert "overwritten" not in hms.get_all_tables("sink_db")
    assert (tmp_path / "table" / "p=b").is_dir(), "an external table's files outlive the drop"


def test_idle_timeout_commits_quiet_partitions_without_a_new_batch(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    input_dir = tmp_path / "input"
    write_hourly_events(input_dir, START, hours=2, rows_per_hour=20)  # event time long past
    table = events_table(
        "sink_db",
        "idle",
        tmp_path / "table",
        **{
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
            "sink.partition-commit.idle-timeout": "1 s",
        },
    )
    create_in_hms(hms, table)
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore.uri), config=None
    )
    plan = InsertPlan(query_name="idle_insert", checkpoint_location=(tmp_path / "checkpoint").as_uri())
    query = FileSystemSink(context).start_stream(hourly_event_stream(spark, input_dir), plan)  # unbounded
    try:
        # The last hour's watermark never comes (no more data); the idle rule commits it.
        wait_for(lambda: len(_partition_names(hms, table)) == 2, timeout_s=120, what="both partitions committed")
        assert query.isActive
        log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
        by_batches = {p for e in log.entries("idle_insert") for p in e.committed_partitions}
        assert "dt=2026-11-22/hr=01" not in by_batches, "hour 01 was committed by the idle rule, not a batch"
    finally:
        query.stop()


def test_rolling_file_size_caps_the_files_of_a_batch(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    write_hourly_events(tmp_path / "input", START, hours=2, rows_per_hour=20_000)
    table = events_table("sink_db", "rolled", tmp_path / "table", **{"sink.rolling-policy.file-size": "64kb"})
    create_in_hms(hms, table)

    _run_bounded(spark, table, metastore, hourly_event_stream(spark, tmp_path / "input"), tmp_path / "checkpoint")

    for hour in ("00", "01"):
        files = [
            f
            for f in (tmp_path / "table" / "dt=2026-11-22" / f"hr={hour}").iterdir()
            if not f.name.startswith(("_", "."))
        ]
        assert len(files) > 3, "the batch was split into several files"
        assert max(f.stat().st_size for f in files) < 2 * 64 * 1024
    assert spark.sql("SELECT count(*) AS n FROM sink_db.rolled").collect()[0].n == 40_000


def test_each_staged_file_is_moved_once_by_sqlext_on_the_move_pool(
    spark, hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    from collections import Counter

    moves: Counter[str] = Counter()
    threads: dict[str, str] = {}
    original = FileSystem.move

    def counting_move(self: FileSystem, source: str, target: str) -> None:
        moves[target] += 1
        threads[target] = threading.current_thread().name
        original(self, source, target)

    monkeypatch.setattr(FileSystem, "move", counting_move)
    write_hourly_events(tmp_path / "input", START, hours=2, rows_per_hour=40)
    table = events_table("sink_db", "moved_once", tmp_path / "table", **{"sink.parallelism": "3"})
    create_in_hms(hms, table)

    _run_bounded(spark, table, metastore, hourly_event_stream(spark, tmp_path / "input"), tmp_path / "checkpoint")

    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    finals = [planned.final for entry in log.entries("insert_moved_once") for planned in entry.files]
    assert len(finals) >= 3 and all(moves[final] == 1 for final in finals), moves
    data_moves = {target: count for target, count in moves.items() if "/_sqlext/" not in target}
    assert sorted(data_moves) == sorted(finals), "sqlext moved nothing but the planned files into the table"
    assert all(threads[final].startswith("sqlext-move-insert_moved_once") for final in finals), threads


# What reads or rewrites committed partitions, on every version: compaction's swap, a streaming read of
# committed partitions and a lookup join's newest partition. Here, for each version's metastore to start once.


def _files_by_partition(hms: MetastoreClient, table: TableDefinition) -> dict[str, int]:
    """Data files of each partition the HMS lists, once its numFiles, totalSize and numRows are checked."""
    files = {}
    for partition_name, (partition, fs, data) in _data_files(hms, table).items():
        assert partition.parameters["numFiles"] == str(len(data))
        assert partition.parameters["totalSize"] == str(sum(f.size for f in data))
        assert partition.parameters["numRows"] == str(_rows_in(fs, data))
        files[partition_name] = len(data)
    return files


def _success_files(table: TableDefinition) -> list[str]:
    """The partitions (``dt=.../hr=...``) that hold a success file."""
    root = Path(table.options["path"].removeprefix("file://"))
    return sorted(str(marker.parent.relative_to(root)) for marker in root.glob("*/*/_SUCCESS"))


def test_compaction_swaps_each_partitions_files_and_statistics_on_every_version(
    spark, version_metastore: BackendMetastore, version_hms: MetastoreClient, tmp_path: Path
) -> None:
    hms, uri = version_hms, version_metastore.uri
    table = events_table("versions_db", "compacted", tmp_path / "table")
    create_in_hms(hms, table)
    context = SimpleNamespace(spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=uri), config=None)
    sink = FileSystemSink(context)
    for batch in range(4):  # four batch inserts: four small files in each of the two partitions
        rows = event_rows(spark, range(batch * 100, (batch + 1) * 100), hours=2)
        sink.write_batch(rows.coalesce(1), InsertPlan("load_compacted", (tmp_path / "checkpoint").as_uri()))
    names = ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
    assert _files_by_partition(hms, table) == dict.fromkeys(names, 4)

    assert main(["compact", "versions_db.compacted", "--metastore-uri", uri, "--reader-grace", "0s", "--quiet"]) == 0

    assert _files_by_partition(hms, table) == dict.fromkeys(names, 1)
    assert committed_ids(Path(table.options["path"].removeprefix("file://"))) == list(range(400))
    assert [p for p in (tmp_path / "table" / "_sqlext").rglob("*") if p.is_file() and "trash" in p.parts] == []


def test_a_streaming_read_and_a_lookup_join_see_each_commit_on_every_version(
    spark, version_metastore: BackendMetastore, version_hms: MetastoreClient, tmp_path: Path
) -> None:
    from sqlext.connectors.filesystem.streaming.source import register
    from sqlext.connectors.filesystem.streaming.spec import FORMAT_NAME, SourceSpec
    from sqlext.jobs.lookup_join import LatestPartition

    hms, metastore = version_hms, version_metastore.settings
    options = {"streaming-source.enable": "true", "streaming-source.monitor-interval": "1 s"}
    table = events_table("versions_db", "read_back", tmp_path / "table", **options)
    create_in_hms(hms, table)
    input_dir, checkpoint = tmp_path / "input", tmp_path / "checkpoint"
    next_id = write_hourly_events(input_dir, START, hours=2, rows_per_hour=60)
    _run_bounded(spark, table, metastore, hourly_event_stream(spark, input_dir), checkpoint)

    now = [0.0]
    latest = LatestPartition(table, metastore.uri, f"latest_{version_metastore.settings.version.name}", lambda: now[0])
    hour_ids = {row.id for row in latest.frame(spark).collect()}
    assert hour_ids == set(range(60, 120)), "the newest committed partition, hr=01"

    register(spark)
    spec = SourceSpec.of_table(table, metastore.uri, {})
    read = spark.readStream.format(FORMAT_NAME).schema(spec.schema_ddl()).option("spec", spec.to_json()).load()
    sink = f"read_back_{version_metastore.settings.version.name}"
    query = (
        read.writeStream.format("memory")
        .queryName(sink)
        .option("checkpointLocation", (tmp_path / "reader").as_uri())
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        ids = lambda: sorted(row.id for row in spark.sql(f"SELECT id FROM {sink}").collect())  # noqa: E731
        wait_for(lambda: ids() == list(range(120)), 120, 0.5, "the two committed partitions read")
        write_hourly_events(input_dir, START + timedelta(hours=2), hours=1, rows_per_hour=60, first_id=next_id)
        _run_bounded(spark, table, metastore, hourly_event_stream(spark, input_dir), checkpoint)
        wait_for(lambda: len(ids()) >= 180, 120, 0.5, "the partition committed next read")
        assert ids() == list(range(180)), "every committed row read once"
    finally:
        query.stop()

    now[0] = 1.0  # the monitor interval passed: the join looks for a newer partition
    assert {row.id for row in latest.frame(spark).collect()} == set(range(120, 180))
    latest.release()


@pytest.mark.parametrize("version_metastore", FETCHED_VERSIONS, indirect=True)
def test_a_metastore_restarted_under_a_streaming_insert_gets_every_partition_once_on_3_1_and_4(
    spark, version_metastore: BackendMetastore, tmp_path: Path
) -> None:
    """Hive 2.3's outage is tests/jobs/test_fault_tolerance.py's (Spark's catalog reads that metastore, so it
    is not restarted here); 3.1 and 4 are the worker's own, stopped and started again under a running insert."""
    from sqlext.catalog.metastore import launcher

    settings = version_metastore.settings
    input_dir = tmp_path / "input"
    next_id = write_hourly_events(input_dir, START, hours=2, rows_per_hour=30)
    table = events_table(
        "versions_db",
        "restarted",
        tmp_path / "table",
        **{"sink.partition-commit.policy.kind": "metastore,success-file"},
    )
    with MetastoreClient(settings.uri) as client:
        create_in_hms(client, table)
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=settings.uri), config=None
    )
    plan = InsertPlan(query_name="restarted_insert", checkpoint_location=(tmp_path / "checkpoint").as_uri())
    query = FileSystemSink(context).start_stream(hourly_event_stream(spark, input_dir), plan)  # unbounded
    names = [f"dt=2026-11-22/hr={h:02d}" for h in range(4)]
    try:
        with MetastoreClient(settings.uri) as client:
            wait_for(lambda: _partition_names(client, table) == names[:2], 120, 0.5, "the first two partitions")
        launcher.stop(settings)
        write_hourly_events(input_dir, START + timedelta(hours=2), hours=2, rows_per_hour=30, first_id=next_id)
        wait_for(lambda: len(list((tmp_path / "table").glob("dt=*/hr=03/*.parquet"))) > 0, 120, 0.5, "hr=03 written")
        launcher.start(settings)
        with MetastoreClient(settings.uri) as client:
            wait_for(
                lambda: _partition_names(client, table) == names and _success_files(table) == names,
                120,
                0.5,
                "every partition committed (the HMS, then its success file), once it is back",
            )
            assert _files_by_partition(client, table).keys() == set(names)
            assert _rows_in_hms_partitions(client, table) == dict.fromkeys(names, 30)
        assert query.isActive
    finally:
        query.stop()
        launcher.start(settings)  # serving again for the worker's later tests, whatever happened
    assert committed_ids(Path(table.options["path"].removeprefix("file://"))) == list(range(120))
