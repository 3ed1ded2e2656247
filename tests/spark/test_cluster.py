"""On a standalone Spark cluster, over storage only Spark's Hadoop configuration knows.

A master and two workers from pyspark's jars (tests/support/cluster.py); the sink table and the checkpoint root
live at ``viewfs://`` URIs whose mount table is given only as ``spark.hadoop.fs.viewfs.mounttable.*`` keys (and,
to the metastore, as ``spark.sqlext.metastore.hadoop.*`` keys): neither pyarrow nor Python's ``os`` could
resolve them, so every file operation of the commit path goes through Spark's Hadoop FileSystem. A streaming
partition-time ``sqlext run --conf spark.master=spark://...`` is SIGKILLed once after its first committed batch
and started again; then ``sqlext compact`` and ``sqlext commits`` run on the table.

On the same cluster, a streaming insert into ``s3a://`` (the S3 server of tests/support/stores.py): its tasks run
on the executors, which write each data file as a pending upload through the committer classes sqlext adds to
the session (``addJar``); the driver completes them at commit, with no copy of a data file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.cluster import EXECUTOR_CONF, SparkCluster
from tests.support.s3_server import S3Server
from tests.support.store_runs import HOURS as S3_HOURS
from tests.support.store_runs import ROWS_PER_HOUR as S3_ROWS_PER_HOUR
from tests.support.store_runs import (
    assert_committed,
    assert_nothing_pending,
    commit_log,
    data_bytes_sent,
    data_copies,
    run_insert,
    s3_rows,
)
from tests.support.stores import s3a_packages_conf
from tests.support.streams import write_hourly_events
from tests.support.tables import assert_partitions_committed
from tests.support.waiting import free_port, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.hms, pytest.mark.slow, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]
START = datetime(2026, 11, 22)
#: Each batch reads one hour: its two files make two tasks, so each partition gets two files to compact.
HOURS, FILES_PER_HOUR, ROWS_PER_FILE = 3, 2, 25
MOUNT = "sqlextcluster"
QUERY = "cluster_insert"


def _job(tmp_path: Path) -> Path:
    job = tmp_path / "job.sql"
    job.write_text(f"""CREATE DATABASE IF NOT EXISTS cluster_db;
CREATE TABLE IF NOT EXISTS cluster_db.src (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'parquet',
  'source.monitor-interval' = '1 s', 'source.max-files-per-trigger' = '{FILES_PER_HOUR}');
CREATE TABLE IF NOT EXISTS cluster_db.dst (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING
) PARTITIONED BY (dt, hr) WITH (
  'connector' = 'filesystem', 'path' = 'viewfs://{MOUNT}/x/dst', 'format' = 'parquet',
  'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h',
  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
  'sink.partition-commit.idle-timeout' = '1 s',
  'sink.partition-commit.policy.kind' = 'metastore,success-file');
SET 'pipeline.name' = '{QUERY}';
INSERT INTO cluster_db.dst
SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM cluster_db.src;
""")
    return job


def _flags(conf: dict[str, str]) -> list[str]:
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


def _sqlext(arguments: list[str]) -> list[str]:
    return [sys.executable, "-m", "sqlext.cli", *arguments]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SQLEXT_FS", None)
    return env


def _committed_batches(table_dir: Path) -> int:
    return len(list((table_dir / "_sqlext" / "log" / QUERY).glob("*.completed")))


def test_a_streaming_insert_on_a_cluster_over_viewfs_survives_a_kill_then_compacts(
    spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    mount_key, mount_target = f"fs.viewfs.mounttable.{MOUNT}.link./x", mounted.as_uri()
    hms = MetastoreSettings(port=free_port(), home=tmp_path / "hms", hadoop=((mount_key, mount_target),))
    next_id = 0
    for hour in range(HOURS):
        for _ in range(FILES_PER_HOUR):
            next_id = write_hourly_events(
                tmp_path / "input", START + timedelta(hours=hour), 1, ROWS_PER_FILE, first_id=next_id
            )
    hadoop = {f"spark.hadoop.{mount_key}": mount_target}
    conf = {
        "spark.master": spark_cluster.master_url,
        "spark.sqlext.metastore.uris": hms.uri,
        "spark.sqlext.checkpoint.root": f"viewfs://{MOUNT}/x/checkpoints",
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        **EXECUTOR_CONF,
        **hadoop,
    }
    run = _sqlext(["run", str(_job(tmp_path)), *_flags(conf)])
    env, table_dir = _env(tmp_path), mounted / "dst"
    launcher.start(hms)
    try:
        with (tmp_path / "first.log").open("wb") as log:
            first = subprocess.Popen(run, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: _committed_batches(table_dir) >= 1 or first.poll() is not None, 600, 0.5, "a batch")
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=60)

        with (tmp_path / "second.log").open("wb") as log:
            second = subprocess.Popen(run, env=env, stdout=log, stderr=subprocess.STDOUT)
        names = [f"dt=2026-11-22/hr={hour:02d}" for hour in range(HOURS)]
        rows_each = FILES_PER_HOUR * ROWS_PER_FILE
        try:
            with MetastoreClient(hms.uri) as client:
                wait_for(
                    lambda: _rows_per_partition(client) == dict.fromkeys(names, rows_each) or second.poll() is not None,
                    600,
                    0.5,
                    "every partition committed with all its rows",
                )
                assert second.poll() is None, (tmp_path / "second.log").read_text()[-3000:]
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=300)

        with MetastoreClient(hms.uri) as client:
            table = client.get_table("cluster_db", "dst")
            assert table is not None and table.sd.location == f"viewfs://{MOUNT}/x/dst"
            assert_partitions_committed(client, "cluster_db", "dst", table_dir, names, rows_each)
            assert all(
                p.sd.location.startswith(f"viewfs://{MOUNT}/x/dst/")
                for p in client.get_partitions_by_names("cluster_db", "dst", names)
            )
        assert _ids(table_dir) == list(range(next_id)), "every row exactly once"
        assert [p for p in (table_dir / "_sqlext" / "staging").rglob("*") if p.is_file()] == []
        assert (mounted / "checkpoints").is_dir(), "the checkpoint root is on the mount"
        worker_apps = spark_cluster.executor_apps_per_worker()
        assert all(worker_apps) and len(worker_apps) == 2, f"executors per worker: {worker_apps}"

        storage = _flags(hadoop)
        compacted = subprocess.run(
            _sqlext(
                ["compact", "cluster_db.dst", "--metastore-uri", hms.uri, "--reader-grace", "1 s", "--quiet", *storage]
            ),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert compacted.returncode == 0, compacted.stderr[-3000:]
        assert f"{HOURS} of {HOURS} partition(s) compacted" in compacted.stdout, compacted.stdout
        with MetastoreClient(hms.uri) as client:
            assert_partitions_committed(client, "cluster_db", "dst", table_dir, names, rows_each)
        assert _ids(table_dir) == list(range(next_id)), "compaction kept every row exactly once"
        for name in names:
            assert len([f for f in (table_dir / name).iterdir() if not f.name.startswith(("_", "."))]) == 1

        commits = subprocess.run(
            _sqlext(["commits", "cluster_db.dst", "--metastore-uri", hms.uri, "--json", *storage]),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert commits.returncode == 0, commits.stderr[-3000:]
        objects = [json.loads(line) for line in commits.stdout.splitlines() if line]
        assert {o["query"] for o in objects if "batch" in o} == {QUERY, "_compaction"}, commits.stdout
        [insert] = [o for o in objects if "insert" in o]  # the insert, its checkpoint on the mount
        assert insert["insert"] == QUERY and insert["checkpoint"].startswith(f"viewfs://{MOUNT}/x/checkpoints/")
    finally:
        launcher.stop(hms)


@pytest.mark.s3
@pytest.mark.jars
def test_a_streaming_insert_on_a_cluster_into_s3_uploads_each_file_once_from_the_executors(
    spark_cluster: SparkCluster, s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    bucket, prefix = "sqlext-cluster", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    # S3A and Spark's binding committer as docs/object-stores.md tells a user to add them: Spark's Ivy fetches
    # them (cached in the tests' jar dir) and ships them to the executors; no class path is set by hand.
    storage = {**s3_server.hadoop_conf(), **s3a_packages_conf()}
    cluster = {"spark.master": spark_cluster.master_url, **EXECUTOR_CONF}
    apps_before = set().union(*spark_cluster.executor_apps_per_worker())
    since = s3_server.mark()

    conf = run_insert(tmp_path, "cluster_s3_db", table_uri, store_metastore, {**storage, **cluster})

    requests = s3_server.requests(since)
    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert s3_rows(s3_server, bucket, prefix) == list(range(S3_HOURS * S3_ROWS_PER_HOUR)), "rows lost or doubled"
    with MetastoreClient(store_metastore.uri) as client:
        assert_committed(client, "cluster_s3_db", table_uri, objects, commit_log(table_uri, conf, tmp_path / "home"))
    data_files = {k: v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-")}
    assert data_copies(requests, prefix) == []
    assert data_bytes_sent(requests, prefix) == sum(data_files.values()), "each data byte sent once"
    completed = [r for r in requests if r.operation == "CompleteMultipartUpload"]
    assert sorted(f"s3a://{bucket}/{r.key}" for r in completed) == sorted(data_files)
    assert_nothing_pending(s3_server, bucket, prefix)
    # The uploads came from executors: the insert's application ran one on each worker.
    new_apps = [apps - apps_before for apps in spark_cluster.executor_apps_per_worker()]
    assert all(new_apps) and len(set().union(*new_apps)) == 1, f"executors per worker: {new_apps}"


def _ids(table_dir: Path) -> list[int]:
    dataset = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True)
    return sorted(dataset.to_table(columns=["id"])["id"].to_pylist())


def _rows_per_partition(client: MetastoreClient) -> dict[str, int]:
    """numRows of each partition the HMS lists (the statistics the last commit wrote)."""
    names = client.get_partition_names("cluster_db", "dst")
    partitions = client.get_partitions_by_names("cluster_db", "dst", names) if names else []
    return {f"dt={p.values[0]}/hr={p.values[1]}": int(p.parameters.get("numRows", "-1")) for p in partitions}


def test_a_csv_file_split_across_executors_gives_each_multi_line_record_once(
    spark_cluster: SparkCluster, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    # Every fourth record has a quoted field with line breaks and doubled quotes; 4 KB ranges put record starts,
    # record ends and the lines of one record in ranges that the two workers' executors read apart.
    notes = {i: f'line one\nline "two" of {i}' if i % 4 == 0 else f"plain {i}" for i in range(2000)}
    quoted = {i: '"' + note.replace('"', '""') + '"' if "\n" in note else note for i, note in notes.items()}
    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "events.csv").write_text("".join(f"{i},{text}\n" for i, text in quoted.items()))
    job = tmp_path / "job.sql"
    job.write_text(f"""CREATE DATABASE IF NOT EXISTS cluster_csv_db;
SET 'execution.runtime-mode' = 'batch';
CREATE TABLE cluster_csv_db.src (id BIGINT, note STRING)
  WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'csv');
CREATE TABLE cluster_csv_db.dst (id BIGINT, note STRING)
  WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "dst").as_uri()}', 'format' = 'parquet');
INSERT INTO cluster_csv_db.dst SELECT id, note FROM cluster_csv_db.src;
""")
    conf = {
        "spark.master": spark_cluster.master_url,
        "spark.sqlext.metastore.uris": metastore.uri,
        "spark.sql.files.maxPartitionBytes": "4096",
        "spark.ui.enabled": "false",
        **EXECUTOR_CONF,
    }
    apps_before = set().union(*spark_cluster.executor_apps_per_worker())
    run = subprocess.run(
        _sqlext(["run", str(job), *_flags(conf)]), env=_env(tmp_path), capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "csv records are joined on the JVM" in run.stderr, run.stderr[-3000:]
    rows = ds.dataset(tmp_path / "dst", format="parquet").to_table().to_pylist()
    assert sorted((row["id"], row["note"]) for row in rows) == sorted(notes.items()), "records lost, split or doubled"
    new_apps = [apps - apps_before for apps in spark_cluster.executor_apps_per_worker()]
    assert all(new_apps), f"the insert had an executor on each worker: {new_apps}"
