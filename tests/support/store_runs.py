"""What the storage tests run and check: the hourly streaming job of ``sqlext run`` against a table on S3 or
HDFS (configured only by ``--conf`` keys), and the checks of a committed table there: rows read back, the HMS's
partitions and statistics against the files, the commit log, and the S3 server's requests (no copy of a data
file, each data byte sent once, nothing left pending).
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

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.config import DRIVER_CLASS_SHARING, ClassSharing
from sqlext.faults import EXIT_CODE, OVERLAPPED_POINTS
from sqlext.io.fs import FileSystem
from tests.support.class_archive import without_archive
from tests.support.s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Request, S3Server
from tests.support.stores import hadoop_cloud_jars, s3a_jars
from tests.support.streams import write_hourly_events

REPO = Path(__file__).resolve().parents[2]
HOURS = 4
ROWS_PER_HOUR = 30


def partitions(hours: int) -> list[str]:
    """The table's partitions once ``hours`` hours of input are committed."""
    return [f"dt=2026-11-22/hr={h:02d}" for h in range(hours)]


PARTITIONS = partitions(HOURS)


def hourly_job_sql(database: str, input_dir: Path, table_uri: str, sink_options: str = "") -> str:
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


def run_cli(
    args: list[str], conf: dict[str, str], home: Path, fault: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLEXT_HOME": str(home), "PYTHONPATH": str(REPO)}
    if "spark.driver.extraClassPath" in conf:
        env, conf = without_archive(env), {**conf, **_own_class_sharing(fault)}
    flags = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
    env.pop("SQLEXT_FAULT", None)
    if fault:
        env["SQLEXT_FAULT"] = fault
    command = [sys.executable, "-m", "sqlext.cli", *args, *flags]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)


def _own_class_sharing(fault: str | None) -> dict[str, str]:
    """sqlext's class archive for a driver whose class path starts with the storage's jars (S3A's), which the
    tests' archive of pyspark's class path cannot serve: each S3 run would load every class afresh. A run that
    ends writes the archive if there is none yet (once per class path, in sqlext's cache dir); one killed at a
    fault point only starts from it (it would write nothing: its driver dies before its exit hook)."""
    return {DRIVER_CLASS_SHARING: (ClassSharing.EXISTING if fault else ClassSharing.WRITE).value}


def start_job(
    tmp_path: Path,
    database: str,
    table_uri: str,
    metastore: MetastoreSettings,
    storage_conf: dict[str, str],
    fault: str | None = None,
    sink_options: str = "",
    hours: int = HOURS,
) -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    """Run the job with ``sqlext run`` (its input, ``hours`` files of an hour each, written the first time;
    ``fault``: ``SQLEXT_FAULT``); return the conf it ran with (for ``sqlext commits``) and the run."""
    if not (tmp_path / "input").is_dir():
        write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours, ROWS_PER_HOUR)
    job_file = tmp_path / "job.sql"
    job_file.write_text(hourly_job_sql(database, tmp_path / "input", table_uri, sink_options))
    conf = {
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sqlext.metastore.uris": metastore.uri,
        "spark.sqlext.checkpoint.root": (tmp_path / "checkpoints").as_uri(),
        **storage_conf,
    }
    return conf, run_cli(["run", str(job_file)], conf, tmp_path / "home", fault)


#: The kills of :func:`run_crash_chain`: every point of an overlapped commit (``sink.partition-commit.async``,
#: the default), as tests/jobs/test_crash_recovery.py kills on ``file:``.
CHAIN_POINTS = OVERLAPPED_POINTS
#: Two files per partition, so a kill can fall between two moves (on S3: two completed uploads).
TWO_FILES = ", 'sink.parallelism' = '2'"


def run_crash_chain(
    tmp_path: Path, database: str, table_uri: str, metastore: MetastoreSettings, storage_conf: dict[str, str]
) -> int:
    """Run the job once per point of :data:`CHAIN_POINTS`, killed at the ``i``-th point in batch ``i``, each
    run restarted from the checkpoint the one before left; then once to its end. The input has one hour per
    point, so the last kill falls on the last batch (after Spark recorded it: the finishing run has no batch
    and recovers it before its end of input). Returns the hours of input."""
    hours = len(CHAIN_POINTS)
    for batch, point in enumerate(CHAIN_POINTS):
        fault = f"{point}@{batch}"
        _, crashed = start_job(tmp_path, database, table_uri, metastore, storage_conf, fault, TWO_FILES, hours)
        assert crashed.returncode == EXIT_CODE, f"{fault} was not reached:\n{crashed.stderr[-4000:]}"
        assert f"fault point '{point}' reached (batch {batch})" in crashed.stderr
    _, finished = start_job(tmp_path, database, table_uri, metastore, storage_conf, None, TWO_FILES, hours)
    assert finished.returncode == 0, finished.stderr[-4000:]
    return hours


def assert_partitions_hold_only_data_and_success(objects: dict[str, int], table_uri: str, hours: int) -> None:
    """Nothing but data files and ``_SUCCESS`` in a partition dir (no hidden or half-moved file); S3A's
    empty ``dir/`` markers aside."""
    for partition in partitions(hours):
        location = f"{table_uri}/{partition}/"
        names = {k[len(location) :] for k in objects if k.startswith(location)} - {""}
        assert {n for n in names if n != "_SUCCESS" and not n.startswith("part-")} == set(), location


def run_insert(
    tmp_path: Path, database: str, table_uri: str, metastore: MetastoreSettings, storage_conf: dict[str, str]
) -> dict[str, str]:
    """Run the job to its end; return the conf it ran with."""
    conf, done = start_job(tmp_path, database, table_uri, metastore, storage_conf)
    assert done.returncode == 0, done.stderr[-4000:]
    return conf


def commit_log(table_uri: str, conf: dict[str, str], home: Path) -> list[dict[str, Any]]:
    """The batches of the table's commit log, as ``sqlext commits --json`` prints them."""
    done = run_cli(["commits", table_uri, "--json"], conf, home)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return [line for line in lines if "insert" not in line]


def assert_committed(
    hms: MetastoreClient,
    database: str,
    table_uri: str,
    objects: dict[str, int],
    log: list[dict[str, Any]],
    hours: int = HOURS,
) -> None:
    """The HMS lists each of the ``hours`` once, at its place, with the statistics of the data files there
    and a ``_SUCCESS``; the commit log has every batch completed and every row once. ``objects``: every file
    under the table, URI -> size (S3A's empty ``dir/`` markers included)."""
    expected = partitions(hours)
    assert sorted(hms.get_partition_names(database, "events")) == expected
    for partition in hms.get_partitions_by_names(database, "events", expected):
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
    assert sum(f["rows"] for entry in log for f in entry["files"]) == hours * ROWS_PER_HOUR
    assert {f["final"] for entry in log for f in entry["files"]} == {k for k in objects if "/part-" in k}
    committed = [p for entry in log for p in [*entry["committed_partitions"], *entry["committed_later"]]]
    assert sorted(set(committed)) == expected
    assert not [k for k in objects if "/_sqlext/staging/" in k and not k.endswith("/")], "staged files left"


# -- S3 ---------------------------------------------------------------------------------------------------


def s3a_conf(server: S3Server) -> dict[str, str]:
    """S3A's jars and Spark's binding committer on the driver's class path (so batches are written as pending
    uploads), the server's keys."""
    return {"spark.driver.extraClassPath": f"{s3a_jars()}/*:{hadoop_cloud_jars()}/*", **server.hadoop_conf()}


def s3_rows(server: S3Server, bucket: str, prefix: str) -> list[int]:
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


def s3_commit_log(server: S3Server, bucket: str, prefix: str) -> list[dict[str, Any]]:
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


def data_bytes_sent(requests: list[S3Request], table_prefix: str) -> int:
    """Bytes PUT or uploaded as parts into the table's data files (their final keys)."""
    return sum(
        r.body_bytes
        for r in requests
        if r.operation in ("PutObject", "UploadPart")
        and r.key.startswith(table_prefix + "/")
        and "/__magic_job-" not in r.key
        and r.key.rsplit("/", 1)[1].startswith("part-")
    )


def assert_nothing_pending(server: S3Server, bucket: str, prefix: str) -> None:
    """No manifest of the magic committer left in the table, no multipart upload left incomplete."""
    assert [k for k in server.objects(bucket, prefix) if "/__magic_job-" in k] == [], "manifests left"
    uploads = server.client().list_multipart_uploads(Bucket=bucket, Prefix=prefix).get("Uploads", [])
    assert [u["Key"] for u in uploads] == [], "incomplete uploads left"


def data_copies(requests: list[S3Request], table_prefix: str) -> list[S3Request]:
    """Server-side copies whose target is a data file of the table (not sqlext's own files)."""
    return [
        r
        for r in requests
        if r.operation in ("CopyObject", "UploadPartCopy")
        and r.key.startswith(table_prefix + "/")
        and r.key.rsplit("/", 1)[1].startswith("part-")
    ]


def assert_each_upload_completed_once_or_aborted(
    requests: list[S3Request], bucket: str, table_prefix: str, data_files: dict[str, int]
) -> set[str]:
    """Over ``requests`` (one or more runs): each data file (``s3a://`` URI -> size) completed exactly once
    and from an upload whose parts carried exactly its bytes (nothing written twice into it); every other
    upload of a data file aborted, none completed and aborted. Returns the aborted upload ids."""

    def of_data(r: S3Request) -> bool:
        return (
            r.bucket == bucket
            and r.key.startswith(table_prefix + "/")
            and "/__magic_job-" not in r.key
            and r.key.rsplit("/", 1)[1].startswith("part-")
        )

    ours = [r for r in requests if of_data(r) and r.status < 300]
    completed = {r.query["uploadId"][0]: r.key for r in ours if r.operation == "CompleteMultipartUpload"}
    completions = sorted(f"s3a://{bucket}/{r.key}" for r in ours if r.operation == "CompleteMultipartUpload")
    assert completions == sorted(data_files), "a data file completed twice, or not at all"
    part_bytes = Counter[str]()
    for r in ours:
        if r.operation == "UploadPart":
            part_bytes[r.query["uploadId"][0]] += r.body_bytes
    sizes = {f"s3a://{bucket}/{key}": part_bytes[upload] for upload, key in completed.items()}
    assert sizes == data_files, "a completed upload's parts differ from the file's bytes"
    aborted = {r.query["uploadId"][0] for r in ours if r.operation == "AbortMultipartUpload"}
    assert aborted == set(part_bytes) - set(completed), "an upload neither completed nor aborted"
    return aborted


def print_request_report(requests: list[S3Request], data: dict[str, int], prefix: str) -> None:
    """What the tests measured, printed for docs/object-stores.md (shown with ``-s`` or ``-rP``)."""
    counts = Counter(r.operation for r in requests)
    sent = sum(r.body_bytes for r in requests if r.operation in ("PutObject", "UploadPart"))
    manifests = sum(r.body_bytes for r in requests if r.operation == "PutObject" and "/__magic_job-" in r.key)
    print(
        f"\nS3 requests for {len(data)} data files ({sum(data.values())} bytes): {dict(sorted(counts.items()))}; "
        f"CopyObject of data files: {len(data_copies(requests, prefix))}; bytes into data files: "
        f"{data_bytes_sent(requests, prefix)}; manifests: {manifests}; bytes PUT in all: {sent}"
    )


def hdfs_listing(table_uri: str) -> dict[str, int]:
    """Every file under the table, through the test session's Spark (Hadoop's HDFS client)."""
    return {status.uri: status.size for status in FileSystem(table_uri).list_files(table_uri)}


# -- the paths of tests/io/test_store_paths.py ------------------------------------------------------------


def run_job_process(module: str, args: list[str], home: Path, timeout_s: int = 900) -> subprocess.CompletedProcess[str]:
    """Run a driver script of tests/support (``python -m <module> <args>``) with this checkout's sqlext."""
    env = {**os.environ, "SQLEXT_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("SQLEXT_FAULT", None)
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)


def assert_partitions_match(
    hms: MetastoreClient,
    database: str,
    table: str,
    table_uri: str,
    expected: dict[str, list[int]],
    files: Any,
    ids: Any,
) -> None:
    """The HMS lists exactly ``expected``'s partitions (``k=v/k=v`` -> sorted ids) of the table, each at its
    place under ``table_uri`` with a ``_SUCCESS``, ``numFiles``/``totalSize`` of the data files there and
    ``numRows`` of the rows there, which a reader reads back as the expected ids. ``files(location)``: name ->
    size of the files directly in a dir; ``ids(location)``: the sorted ids a reader reads there."""
    assert sorted(hms.get_partition_names(database, table)) == sorted(expected)
    for partition in hms.get_partitions_by_names(database, table, sorted(expected)):
        relative = f"dt={partition.values[0]}/hr={partition.values[1]}"
        location = f"{table_uri}/{relative}"
        assert partition.sd.location == location
        present = files(location)
        data = {name: size for name, size in present.items() if not name.startswith(("_", "."))}
        assert "_SUCCESS" in present, f"no _SUCCESS in {location}"
        assert ids(location) == expected[relative], f"rows of {location}"
        assert partition.parameters["numFiles"] == str(len(data)), location
        assert partition.parameters["totalSize"] == str(sum(data.values())), location
        assert partition.parameters["numRows"] == str(len(expected[relative])), location


def s3_dir_files(server: S3Server, uri: str) -> dict[str, int]:
    """The objects directly in an ``s3a://bucket/dir`` (S3A's ``dir/`` markers left out): name -> size."""
    bucket, _, prefix = uri.removeprefix("s3a://").partition("/")
    return {
        key[len(prefix) + 1 :]: size
        for key, size in server.objects(bucket, prefix + "/").items()
        if "/" not in key[len(prefix) + 1 :] and not key.endswith("/")
    }


def s3_ids(server: S3Server, uri: str) -> list[int]:
    """The ids a reader (pyarrow's S3 client, skipping ``_``/``.`` names) reads under ``s3a://bucket/dir``."""
    bucket, _, prefix = uri.removeprefix("s3a://").partition("/")
    return s3_rows(server, bucket, prefix)


def s3_log(server: S3Server, table_uri: str, query: str) -> list[dict[str, Any]]:
    """The most advanced commit log entry of each batch of ``query`` in an ``s3a://`` table, read from the
    bucket (``<table>/_sqlext/log/<query>/<batch>.<state>``)."""
    bucket, _, prefix = table_uri.removeprefix("s3a://").partition("/")
    order = {"requested": 0, "inflight": 1, "completed": 2}
    latest: dict[int, tuple[int, str]] = {}
    for key in server.objects(bucket, f"{prefix}/_sqlext/log/{query}/"):
        batch, _, state = key.rsplit("/", 1)[1].partition(".")
        if state in order and order[state] >= latest.get(int(batch), (-1, ""))[0]:
            latest[int(batch)] = (order[state], key)
    client = server.client()
    return [
        json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read()) for _, (_, key) in sorted(latest.items())
    ]
