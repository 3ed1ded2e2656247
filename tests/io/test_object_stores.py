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

from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.faults import EXIT_CODE
from sqlext.io.fs import FileSystem
from tests.support.s3_server import S3Server
from tests.support.store_runs import (
    HOURS,
    ROWS_PER_HOUR,
    assert_committed,
    assert_nothing_pending,
    commit_log,
    data_bytes_sent,
    data_copies,
    hdfs_listing,
    print_request_report,
    run_insert,
    s3_commit_log,
    s3_rows,
    s3a_conf,
    start_job,
)
from tests.support.stores import HdfsCluster

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.jars, pytest.mark.slow]


@pytest.mark.s3
def test_a_streaming_insert_into_s3_commits_every_row_once_and_its_partitions_in_the_hms(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    bucket, prefix = "sqlext-insert", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    since = s3_server.mark()

    conf = run_insert(tmp_path, "s3_db", table_uri, store_metastore, s3a_conf(s3_server))

    requests = s3_server.requests(since)
    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert s3_rows(s3_server, bucket, prefix) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    log = commit_log(table_uri, conf, tmp_path / "home")
    with MetastoreClient(store_metastore.uri) as hms:
        assert_committed(hms, "s3_db", table_uri, objects, log)

    # Each data file's bytes are sent once, as a multipart upload to its final key that sqlext completes at
    # commit: no server-side copy (the rename path copied each file twice), nothing left pending.
    data_files = {k: v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-")}
    assert data_copies(requests, prefix) == []
    assert data_bytes_sent(requests, prefix) == sum(data_files.values())
    completed = [r for r in requests if r.operation == "CompleteMultipartUpload"]
    assert sorted(f"s3a://{bucket}/{r.key}" for r in completed) == sorted(data_files)
    assert_nothing_pending(s3_server, bucket, prefix)
    print_request_report(requests, data_files, prefix)
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
    storage = s3a_conf(s3_server)
    since = s3_server.mark()

    _, crashed = start_job(tmp_path, "crash_s3_db", table_uri, store_metastore, storage, "mid-move@1", two_files)
    assert crashed.returncode == EXIT_CODE, crashed.stderr[-4000:]
    assert "fault point 'mid-move' reached (batch 1)" in crashed.stderr
    _, finished = start_job(tmp_path, "crash_s3_db", table_uri, store_metastore, storage, None, two_files)
    assert finished.returncode == 0, finished.stderr[-4000:]

    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert s3_rows(s3_server, bucket, prefix) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    with MetastoreClient(store_metastore.uri) as hms:
        assert_committed(hms, "crash_s3_db", table_uri, objects, s3_commit_log(s3_server, bucket, prefix))
    assert_nothing_pending(s3_server, bucket, prefix)
    requests = s3_server.requests(since)
    data_bytes = sum(v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-"))
    assert data_bytes_sent(requests, prefix) == data_bytes, "a file was written again"
    assert data_copies(requests, prefix) == []
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
    storage = s3a_conf(s3_server)
    since = s3_server.mark()

    _, crashed = start_job(tmp_path, "replay_s3_db", table_uri, store_metastore, storage, "after-stage@1")
    assert crashed.returncode == EXIT_CODE, crashed.stderr[-4000:]
    assert "fault point 'after-stage' reached (batch 1)" in crashed.stderr
    left = {r.query["uploadId"][0] for r in s3_server.requests(since) if r.operation == "UploadPart"}
    _, finished = start_job(tmp_path, "replay_s3_db", table_uri, store_metastore, storage)
    assert finished.returncode == 0, finished.stderr[-4000:]

    requests = s3_server.requests(since)
    completed = {r.query["uploadId"][0] for r in requests if r.operation == "CompleteMultipartUpload"}
    aborted = {r.query["uploadId"][0] for r in requests if r.operation == "AbortMultipartUpload"}
    assert aborted and aborted == left - completed, "the first attempt's uploads of batch 1 are aborted"
    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert s3_rows(s3_server, bucket, prefix) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    with MetastoreClient(store_metastore.uri) as hms:
        assert_committed(hms, "replay_s3_db", table_uri, objects, s3_commit_log(s3_server, bucket, prefix))
    assert_nothing_pending(s3_server, bucket, prefix)


@pytest.mark.s3
def test_an_insert_without_s3_credentials_fails_naming_the_path_and_the_keys_before_writing(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    bucket, prefix = "sqlext-no-keys", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    # The metastore has the keys (the table is created); Spark has none.
    conf = {k: v for k, v in s3a_conf(s3_server).items() if not k.endswith(("access.key", "secret.key"))}

    _, failed = start_job(tmp_path, "no_keys_db", table_uri, store_metastore, conf)

    assert failed.returncode == 1, failed.stderr[-4000:]
    message = failed.stderr
    assert f"Cannot reach {table_uri}: no credentials for the bucket '{bucket}'" in message
    assert "spark.hadoop.fs.s3a.access.key" in message and "Nothing was written" in message
    written = [key for key in s3_server.objects(bucket, prefix) if not key.endswith("/")]
    assert written == [], "nothing of the insert in the bucket"


# -- HDFS -------------------------------------------------------------------------------------------------


@pytest.mark.hdfs
def test_a_streaming_insert_into_hdfs_commits_every_row_once_and_its_partitions_in_the_hms(
    spark: Any, hdfs_cluster: HdfsCluster, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    table_uri = f"{hdfs_cluster.uri}/warehouse/events"

    run_insert(tmp_path, "hdfs_db", table_uri, store_metastore, {})

    rows = spark.read.parquet(table_uri).select("id").collect()  # Spark's file index skips _sqlext/ and _SUCCESS
    assert sorted(r.id for r in rows) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    # The log read in this process (through the session's Spark): `sqlext commits` is run on S3 above.
    log = [entry.to_json() for entry in CommitLog(FileSystem(table_uri), table_uri).entries()]
    with MetastoreClient(store_metastore.uri) as hms:
        assert_committed(hms, "hdfs_db", table_uri, hdfs_listing(table_uri), log)
