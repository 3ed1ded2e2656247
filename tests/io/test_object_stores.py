"""A streaming SQL ``INSERT`` of several batches into a partitioned table on a real S3 server and on a real HDFS
mini cluster, run by ``sqlext run`` configured only with ``--conf`` keys (the storage's jars and its
``spark.hadoop.*`` keys), on a metastore given the same jars and keys: every row once, every partition
registered in the HMS with its statistics and ``_SUCCESS``, the commit log read back by ``sqlext commits``.

On S3 each batch is written as pending multipart uploads to the files' final keys and published by sqlext
completing them (``sqlext/connectors/filesystem/commit/uploads.py``): the server's request log shows what the
commit costs (no ``CopyObject`` of a data file, each data byte sent once; ``docs/object-stores.md``, "Requests
per batch on S3"), and two crashes show it exactly once: in the publish, and before the plan.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.faults import EXIT_CODE
from sqlext.io.fs import FileSystem
from tests.support.s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Request, S3Server
from tests.support.stores import HdfsCluster, hadoop_cloud_jars, s3a_jars
from tests.support.streams import write_hourly_events

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.jars, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HOURS = 4
ROWS_PER_HOUR = 30
PARTITIONS = [f"dt=2026-11-22/hr={h:02d}" for h in range(HOURS)]


def _job(database: str, input_dir: Path, table_uri: str, sink_options: str = "") -> str:
    """Hourly event files streamed one per micro-batch into a table partitioned by day and hour."""
    return f"""
CREATE DATABASE IF NOT EXISTS {database};
CREATE TABLE IF NOT EXISTS {database}.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', 'format' = 'parquet',
      'source.max-files-per-trigger' = '1');
CREATE TABLE IF NOT EXISTS {database}.events (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING)
PARTITIONED BY (dt, hr)
WITH ('connector' = 'filesystem', 'path' = '{table_uri}', 'format' = 'parquet',
      'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h',
      'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
      'sink.partition-commit.policy.kind' = 'metastore,success-file' {sink_options});
INSERT INTO {database}.events
SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM {database}.src;
"""


def _sqlext(
    args: list[str], conf: dict[str, str], home: Path, fault: str | None = None
) -> subprocess.CompletedProcess[str]:
    flags = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
    env = {**os.environ, "SQLEXT_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("SQLEXT_FAULT", None)
    if fault:
        env["SQLEXT_FAULT"] = fault
    command = [sys.executable, "-m", "sqlext.cli", *args, *flags]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)


def _start_job(
    tmp_path: Path,
    database: str,
    table_uri: str,
    metastore: MetastoreSettings,
    storage_conf: dict[str, str],
    fault: str | None = None,
    sink_options: str = "",
) -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    """Run the job with ``sqlext run`` (its input written the first time; ``fault``: ``SQLEXT_FAULT``);
    return the conf it ran with (for ``sqlext commits``) and the run."""
    if not (tmp_path / "input").is_dir():
        write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), HOURS, ROWS_PER_HOUR)
    job = tmp_path / "job.sql"
    job.write_text(_job(database, tmp_path / "input", table_uri, sink_options))
    conf = {
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sqlext.metastore.uris": metastore.uri,
        "spark.sqlext.checkpoint.root": (tmp_path / "checkpoints").as_uri(),
        **storage_conf,
    }
    return conf, _sqlext(["run", str(job)], conf, tmp_path / "home", fault)


def _run_insert(
    tmp_path: Path, database: str, table_uri: str, metastore: MetastoreSettings, storage_conf: dict[str, str]
) -> dict[str, str]:
    """Run the job to its end; return the conf it ran with."""
    conf, done = _start_job(tmp_path, database, table_uri, metastore, storage_conf)
    assert done.returncode == 0, done.stderr[-4000:]
    return conf


def _commit_log(table_uri: str, conf: dict[str, str], home: Path) -> list[dict[str, Any]]:
    """The batches of the table's commit log, as ``sqlext commits --json`` prints them."""
    done = _sqlext(["commits", table_uri, "--json"], conf, home)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return [line for line in lines if "insert" not in line]


def _assert_committed(
    hms: MetastoreClient,
    database: str,
    table_uri: str,
    objects: dict[str, int],
    log: list[dict[str, Any]],
) -> None:
    """The HMS lists each hour once, at its place, with the statistics of the data files there and a
    ``_SUCCESS``; the commit log has every batch completed and every row once. ``objects``: every file under
    the table, URI -> size (S3A's empty ``dir/`` markers included)."""
    assert sorted(hms.get_partition_names(database, "events")) == PARTITIONS
    for partition in hms.get_partitions_by_names(database, "events", PARTITIONS):
        relative = f"dt={partition.values[0]}/hr={partition.values[1]}"
        location = f"{table_uri}/{relative}"
        assert partition.sd.location == location
        inside = {k[len(location) + 1 :]: v for k, v in objects.items() if k.startswith(location + "/")}
        data = {k: v for k, v in inside.items() if k and not k.startswith(("_", ".")) and not k.endswith("/")}
        assert f"{location}/_SUCCESS" in objects, f"no _SUCCESS in {location}"
        assert data, f"no data file in {location}"
        assert partition.parameters["numFiles"] == str(len(data))
        assert partition.parameters["totalSize"] == str(sum(data.values()))
        assert partition.parameters["numRows"] == str(ROWS_PER_HOUR)
    assert log and {entry["state"] for entry in log} == {"completed"}
    assert sum(f["rows"] for entry in log for f in entry["files"]) == HOURS * ROWS_PER_HOUR
    assert {f["final"] for entry in log for f in entry["files"]} == {k for k in objects if "/part-" in k}
    committed = [p for entry in log for p in [*entry["committed_partitions"], *entry["committed_later"]]]
    assert sorted(set(committed)) == PARTITIONS
    assert not [k for k in objects if "/_sqlext/staging/" in k and not k.endswith("/")], "staged files left"


# -- S3 ---------------------------------------------------------------------------------------------------


def _s3a_conf(server: S3Server) -> dict[str, str]:
    """S3A's jars and Spark's binding committer on the driver's class path (so batches are written as pending
    uploads), the server's keys."""
    return {"spark.driver.extraClassPath": f"{s3a_jars()}/*:{hadoop_cloud_jars()}/*", **server.hadoop_conf()}


def _s3_rows(server: S3Server, bucket: str, prefix: str) -> list[int]:
    from pyarrow import fs

    s3 = fs.S3FileSystem(
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        endpoint_override=server.endpoint,
        region=REGION,
        allow_bucket_creation=False,
    )
    dataset = ds.dataset(f"{bucket}/{prefix}", filesystem=s3, format="parquet", partitioning="hive")
    return sorted(dataset.to_table(columns=["id"])["id"].to_pylist())


def _s3_commit_log(server: S3Server, bucket: str, prefix: str) -> list[dict[str, Any]]:
    """Each batch's most advanced commit log entry, read from the bucket (no JVM: ``sqlext commits`` prints the
    same, and is run by the first test)."""
    order = {"requested": 0, "inflight": 1, "completed": 2}
    latest: dict[str, tuple[int, str]] = {}
    for key in server.objects(bucket, f"{prefix}/_sqlext/log/"):
        batch, _, state = key.rsplit("/", 1)[1].partition(".")
        if state in order and order[state] >= latest.get(batch, (-1, ""))[0]:
            latest[batch] = (order[state], key)
    client = server.client()
    return [json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read()) for _, key in latest.values()]


def _data_bytes_sent(requests: list[S3Request], table_prefix: str) -> int:
    """Bytes PUT or uploaded as parts into the table's data files (their final keys)."""
    return sum(
        r.body_bytes
        for r in requests
        if r.operation in ("PutObject", "UploadPart")
        and r.key.startswith(table_prefix + "/")
        and "/__magic_job-" not in r.key
        and r.key.rsplit("/", 1)[1].startswith("part-")
    )


def _assert_nothing_pending(server: S3Server, bucket: str, prefix: str) -> None:
    """No manifest of the magic committer left in the table, no multipart upload left incomplete."""
    assert [k for k in server.objects(bucket, prefix) if "/__magic_job-" in k] == [], "manifests left"
    uploads = server.client().list_multipart_uploads(Bucket=bucket, Prefix=prefix).get("Uploads", [])
    assert [u["Key"] for u in uploads] == [], "incomplete uploads left"


def _data_copies(requests: list[S3Request], table_prefix: str) -> list[S3Request]:
    """Server-side copies whose target is a data file of the table (not sqlext's own files)."""
    return [
        r
        for r in requests
        if r.operation in ("CopyObject", "UploadPartCopy")
        and r.key.startswith(table_prefix + "/")
        and r.key.rsplit("/", 1)[1].startswith("part-")
    ]


@pytest.mark.s3
def test_a_streaming_insert_into_s3_commits_every_row_once_and_its_partitions_in_the_hms(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    bucket, prefix = "sqlext-insert", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    since = s3_server.mark()

    conf = _run_insert(tmp_path, "s3_db", table_uri, store_metastore, _s3a_conf(s3_server))

    requests = s3_server.requests(since)
    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert _s3_rows(s3_server, bucket, prefix) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    log = _commit_log(table_uri, conf, tmp_path / "home")
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_committed(hms, "s3_db", table_uri, objects, log)

    # Each data file's bytes are sent once, as a multipart upload to its final key that sqlext completes at
    # commit: no server-side copy (the rename path copied each file twice), nothing left pending.
    data_files = {k: v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-")}
    assert _data_copies(requests, prefix) == []
    assert _data_bytes_sent(requests, prefix) == sum(data_files.values())
    completed = [r for r in requests if r.operation == "CompleteMultipartUpload"]
    assert sorted(f"s3a://{bucket}/{r.key}" for r in completed) == sorted(data_files)
    _assert_nothing_pending(s3_server, bucket, prefix)
    _report(requests, data_files, prefix)
    assert [r for r in requests if r.status >= 500] == []


@pytest.mark.s3
def test_a_driver_killed_between_two_publishes_on_s3_then_restarted_commits_every_row_once(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """Killed once the first of a planned batch's two uploads is completed: the restart completes the other
    from the plan, uploads nothing again, and leaves no manifest and no upload pending."""
    bucket, prefix = "sqlext-crash", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    two_files = ", 'sink.parallelism' = '2'"  # two files in the batch, so the kill falls between their publishes
    storage = _s3a_conf(s3_server)
    since = s3_server.mark()

    _, crashed = _start_job(tmp_path, "crash_s3_db", table_uri, store_metastore, storage, "mid-move@1", two_files)
    assert crashed.returncode == EXIT_CODE, crashed.stderr[-4000:]
    assert "fault point 'mid-move' reached (batch 1)" in crashed.stderr
    _, finished = _start_job(tmp_path, "crash_s3_db", table_uri, store_metastore, storage, None, two_files)
    assert finished.returncode == 0, finished.stderr[-4000:]

    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert _s3_rows(s3_server, bucket, prefix) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_committed(hms, "crash_s3_db", table_uri, objects, _s3_commit_log(s3_server, bucket, prefix))
    _assert_nothing_pending(s3_server, bucket, prefix)
    requests = s3_server.requests(since)
    data_bytes = sum(v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-"))
    assert _data_bytes_sent(requests, prefix) == data_bytes, "a file was written again"
    assert _data_copies(requests, prefix) == []
    completed = [r.key for r in requests if r.operation == "CompleteMultipartUpload"]
    assert sorted(completed) == sorted(k.split("/", 3)[3] for k in objects if "/part-" in k), "completed twice"


@pytest.mark.s3
def test_a_driver_killed_before_the_plan_on_s3_aborts_the_old_uploads_and_writes_the_batch_once(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """Killed after Spark wrote batch 1 as pending uploads, before sqlext planned it: the restart replays the
    batch, aborts the uploads of the first attempt (named by its manifests) and writes the batch afresh."""
    bucket, prefix = "sqlext-replay", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    storage = _s3a_conf(s3_server)
    since = s3_server.mark()

    _, crashed = _start_job(tmp_path, "replay_s3_db", table_uri, store_metastore, storage, "after-stage@1")
    assert crashed.returncode == EXIT_CODE, crashed.stderr[-4000:]
    assert "fault point 'after-stage' reached (batch 1)" in crashed.stderr
    left = {r.query["uploadId"][0] for r in s3_server.requests(since) if r.operation == "UploadPart"}
    _, finished = _start_job(tmp_path, "replay_s3_db", table_uri, store_metastore, storage)
    assert finished.returncode == 0, finished.stderr[-4000:]

    requests = s3_server.requests(since)
    completed = {r.query["uploadId"][0] for r in requests if r.operation == "CompleteMultipartUpload"}
    aborted = {r.query["uploadId"][0] for r in requests if r.operation == "AbortMultipartUpload"}
    assert aborted and aborted == left - completed, "the first attempt's uploads of batch 1 are aborted"
    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert _s3_rows(s3_server, bucket, prefix) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_committed(hms, "replay_s3_db", table_uri, objects, _s3_commit_log(s3_server, bucket, prefix))
    _assert_nothing_pending(s3_server, bucket, prefix)


@pytest.mark.s3
def test_an_insert_without_s3_credentials_fails_naming_the_path_and_the_keys_before_writing(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    bucket, prefix = "sqlext-no-keys", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    # The metastore has the keys (the table is created); Spark has none.
    conf = {k: v for k, v in _s3a_conf(s3_server).items() if not k.endswith(("access.key", "secret.key"))}

    _, failed = _start_job(tmp_path, "no_keys_db", table_uri, store_metastore, conf)

    assert failed.returncode == 1, failed.stderr[-4000:]
    message = failed.stderr
    assert f"Cannot reach {table_uri}: no credentials for the bucket '{bucket}'" in message
    assert "spark.hadoop.fs.s3a.access.key" in message and "Nothing was written" in message
    written = [key for key in s3_server.objects(bucket, prefix) if not key.endswith("/")]
    assert written == [], "nothing of the insert in the bucket"


def _report(requests: list[S3Request], data: dict[str, int], prefix: str) -> None:
    """What the tests measured, printed for docs/object-stores.md (shown with ``-s`` or ``-rP``)."""
    counts = Counter(r.operation for r in requests)
    sent = sum(r.body_bytes for r in requests if r.operation in ("PutObject", "UploadPart"))
    manifests = sum(r.body_bytes for r in requests if r.operation == "PutObject" and "/__magic_job-" in r.key)
    print(
        f"\nS3 requests for {len(data)} data files ({sum(data.values())} bytes): {dict(sorted(counts.items()))}; "
        f"CopyObject of data files: {len(_data_copies(requests, prefix))}; bytes into data files: "
        f"{_data_bytes_sent(requests, prefix)}; manifests: {manifests}; bytes PUT in all: {sent}"
    )


# -- HDFS -------------------------------------------------------------------------------------------------


def _hdfs_listing(table_uri: str) -> dict[str, int]:
    """Every file under the table, through the test session's Spark (Hadoop's HDFS client)."""
    return {status.uri: status.size for status in FileSystem(table_uri).list_files(table_uri)}


@pytest.mark.hdfs
def test_a_streaming_insert_into_hdfs_commits_every_row_once_and_its_partitions_in_the_hms(
    spark: Any, hdfs_cluster: HdfsCluster, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    table_uri = f"{hdfs_cluster.uri}/warehouse/events"

    _run_insert(tmp_path, "hdfs_db", table_uri, store_metastore, {})

    rows = spark.read.parquet(table_uri).select("id").collect()  # Spark's file index skips _sqlext/ and _SUCCESS
    assert sorted(r.id for r in rows) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    # The log read in this process (through the session's Spark): `sqlext commits` is run on S3 above.
    log = [entry.to_json() for entry in CommitLog(FileSystem(table_uri), table_uri).entries()]
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_committed(hms, "hdfs_db", table_uri, _hdfs_listing(table_uri), log)
