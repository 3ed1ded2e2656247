"""Streaming SQL ``INSERT``s of hourly batches into a partitioned table on a real S3 server and on a real HDFS
mini cluster, run by ``sqlext run`` configured only with ``--conf`` keys (the storage's jars and its
``spark.hadoop.*`` keys), on a metastore given the same jars and keys: every row once, every partition
registered in the HMS with its statistics and ``_SUCCESS``, the commit log all completed.

On S3 each batch is written as pending multipart uploads to the files' final keys and published by sqlext
completing them (``sqlext/connectors/filesystem/commit/uploads.py``): the server's request log shows what the
commit costs (no ``CopyObject`` of a data file, each data byte sent once; ``docs/object-stores.md``, "Requests
per batch on S3"), measured through a store that answers 503 SlowDown and resets connections now and then.
On both stores the driver is killed at every fault point of the commit path, one a batch, and restarted: the
chain of tests/jobs/test_crash_recovery.py on real storage. A table in a bucket that does not exist and an
insert without credentials fail naming the path and what to set, before anything is written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.errors import FileSystemError
from sqlext.io.fs import FileSystem
from tests.support.flaky_s3 import RESET, SLOW_DOWN, flaky_s3
from tests.support.s3_server import S3Server
from tests.support.store_runs import (
    HOURS,
    ROWS_PER_HOUR,
    assert_committed,
    assert_each_upload_completed_once_or_aborted,
    assert_nothing_pending,
    assert_partitions_hold_only_data_and_success,
    commit_log,
    data_bytes_sent,
    data_copies,
    hdfs_listing,
    print_request_report,
    run_crash_chain,
    run_insert,
    s3_commit_log,
    s3_rows,
    s3a_conf,
    start_job,
)
from tests.support.stores import HdfsCluster
from tests.support.tables import events_table

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.jars, pytest.mark.slow]

#: S3A's retries as a user sets them for a store that throttles and drops connections (Hadoop's defaults; the
#: S3 server's own conf lowers them to fail fast): the AWS SDK's attempts of one request (it retries 503s,
#: resets and 5xx itself, backing off), then S3A's own retries of an operation on throttling and on
#: connectivity failures.
RETRY_CONF = {
    "spark.hadoop.fs.s3a.attempts.maximum": "5",
    "spark.hadoop.fs.s3a.retry.limit": "7",
    "spark.hadoop.fs.s3a.retry.interval": "500ms",
    "spark.hadoop.fs.s3a.retry.throttle.limit": "20",
    "spark.hadoop.fs.s3a.retry.throttle.interval": "100ms",
}


@pytest.mark.s3
def test_a_streaming_insert_into_s3_through_a_flaky_store_commits_every_row_once_and_its_partitions_in_the_hms(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """Spark reaches the server through a proxy that answers 503 SlowDown to, or resets the connection of,
    every few requests of each commit-path operation (tests/support/flaky_s3.py); S3A retries them with its
    retry settings (:data:`RETRY_CONF`). The server sees only what got through, so its log measures what the
    commit costs as on a sound store."""
    bucket, prefix = "sqlext-insert", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    since = s3_server.mark()

    with flaky_s3(s3_server.endpoint, tmp_path / "faults.jsonl") as proxy:
        storage = {**s3a_conf(s3_server), **RETRY_CONF, "spark.hadoop.fs.s3a.endpoint": proxy.endpoint}
        conf = run_insert(tmp_path, "s3_db", table_uri, store_metastore, storage)
    conf["spark.hadoop.fs.s3a.endpoint"] = s3_server.endpoint  # `sqlext commits` below, after the proxy

    requests = s3_server.requests(since)
    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert s3_rows(s3_server, bucket, prefix) == list(range(HOURS * ROWS_PER_HOUR)), "rows lost or duplicated"
    log = commit_log(table_uri, conf, tmp_path / "home")
    with MetastoreClient(store_metastore.uri) as hms:
        assert_committed(hms, "s3_db", table_uri, objects, log)

    # Faults of every kind on the commit path's requests, the completes of the publish included.
    injected = Counter((i.operation, i.fault) for i in proxy.injected if i.bucket == bucket)
    print(f"\nfaults injected: {dict(sorted(injected.items()))}; passed on: {dict(sorted(proxy.passed.items()))}")
    assert set(injected) == {(op, fault) for op in proxy.plan.every for fault in (SLOW_DOWN, RESET)}

    # Each data file's bytes are sent once, as a multipart upload to its final key that sqlext completes at
    # commit: no server-side copy (the rename path copied each file twice), nothing left pending.
    data_files = {k: v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-")}
    assert data_copies(requests, prefix) == []
    assert data_bytes_sent(requests, prefix) == sum(data_files.values())
    assert assert_each_upload_completed_once_or_aborted(requests, bucket, prefix, data_files) == set()
    assert_nothing_pending(s3_server, bucket, prefix)
    print_request_report(requests, data_files, prefix)
    assert [r for r in requests if r.status >= 500] == []


@pytest.mark.s3
@pytest.mark.timeout(1500)  # nine runs of `sqlext run`, each bounded by run_cli's own timeout
def test_a_driver_killed_at_every_fault_point_on_s3_then_restarted_commits_every_row_once_and_each_byte_once(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """The driver killed at each point of the overlapped commit in turn (CHAIN_POINTS, one a batch, two files
    a batch), then run to its end: every row once, every hour committed, and from the server's log: no copy of
    a data file, each completed once from an upload that carried its bytes once, the uploads of the attempt
    killed before its plan (after-stage) aborted by its replay, and those of a task killed mid-write (no
    manifest) by the next run's first write, no manifest and no upload left."""
    bucket, prefix = "sqlext-crash", "warehouse/events"
    s3_server.create_bucket(bucket)
    table_uri = f"s3a://{bucket}/{prefix}"
    since = s3_server.mark()
    # What a task killed mid-write leaves (the chain's kills leave one only now and then): an upload with a part
    # sent and no manifest. The first run's first write is preceded by its abort.
    killed_task = f"{prefix}/dt=2026-11-22/hr=00/part-00009-killed-task.c000.snappy.parquet"
    client = s3_server.client()
    killed_upload = client.create_multipart_upload(Bucket=bucket, Key=killed_task)["UploadId"]
    client.upload_part(Bucket=bucket, Key=killed_task, UploadId=killed_upload, PartNumber=1, Body=b"x" * 1024)

    hours = run_crash_chain(tmp_path, "crash_s3_db", table_uri, store_metastore, s3a_conf(s3_server))

    objects = {f"s3a://{bucket}/{key}": size for key, size in s3_server.objects(bucket, prefix).items()}
    assert s3_rows(s3_server, bucket, prefix) == list(range(hours * ROWS_PER_HOUR)), "rows lost or duplicated"
    with MetastoreClient(store_metastore.uri) as hms:
        log = s3_commit_log(s3_server, bucket, prefix)
        assert_committed(hms, "crash_s3_db", table_uri, objects, log, hours)
    assert_partitions_hold_only_data_and_success(objects, table_uri, hours)
    assert_nothing_pending(s3_server, bucket, prefix)
    requests = s3_server.requests(since)
    assert data_copies(requests, prefix) == []
    data_files = {k: v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-")}
    aborted = assert_each_upload_completed_once_or_aborted(requests, bucket, prefix, data_files)
    assert killed_upload in aborted, "the killed task's upload, named by no manifest, is aborted"
    assert aborted - {killed_upload}, "the uploads of batch 0's attempt killed after-stage are aborted by its replay"
    assert [r for r in requests if r.status >= 500] == []


@pytest.mark.s3
def test_a_table_in_a_bucket_that_does_not_exist_is_refused_naming_the_path_and_what_to_check(
    s3_server: S3Server, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """CREATE TABLE's first write is the metastore's: it creates the table's location, and refuses one in a
    bucket it cannot find. No Spark is needed to see the message a job would end with."""
    bucket = "sqlext-no-such-bucket"
    table_uri = f"s3a://{bucket}/warehouse/events"
    table = events_table("wrong_bucket_db", "events", tmp_path)
    table = replace(table, options={**table.options, "path": table_uri})
    since = s3_server.mark()

    with MetastoreClient(store_metastore.uri) as hms:
        hms.create_database("wrong_bucket_db")
        with pytest.raises(FileSystemError) as refused:
            Catalog(hms).create_table(table)
        assert hms.get_table("wrong_bucket_db", "events") is None, "no table created"

    message = refused.value.message
    assert f"Cannot create wrong_bucket_db.events at {table_uri}" in message, message
    assert f"the bucket '{bucket}' does not exist at the endpoint" in message, message
    assert "spark.sqlext.metastore.hadoop.fs.s3a.endpoint" in message, message
    assert "Nothing was created" in message, message
    writes = [r for r in s3_server.requests(since) if r.bucket == bucket and r.method in ("PUT", "POST")]
    assert writes == [], "nothing written"


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
@pytest.mark.timeout(1500)  # nine runs of `sqlext run`, each bounded by run_cli's own timeout
def test_a_driver_killed_at_every_fault_point_on_hdfs_then_restarted_commits_every_row_once(
    spark: Any, hdfs_cluster: HdfsCluster, store_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    """As on S3, on the rename path: the driver killed at each point of the overlapped commit in turn, then
    run to its end. (The plain insert into HDFS is this test's finishing state: every row once, every hour in
    the HMS with its statistics and _SUCCESS, the log completed; it is not run apart.)"""
    # Its own dir: the session's cluster is shared with test_store_paths, whose hdfs_paths.events is at
    # /warehouse/events (the two files ran on one worker in CI and each read the other's rows).
    table_uri = f"{hdfs_cluster.uri}/crash-chain/events"

    hours = run_crash_chain(tmp_path, "hdfs_db", table_uri, store_metastore, {})

    rows = spark.read.parquet(table_uri).select("id").collect()  # Spark's file index skips _sqlext/ and _SUCCESS
    assert sorted(r.id for r in rows) == list(range(hours * ROWS_PER_HOUR)), "rows lost or duplicated"
    # The log read in this process (through the session's Spark): `sqlext commits` is run on S3 above.
    log = [entry.to_json() for entry in CommitLog(FileSystem(table_uri), table_uri).entries()]
    objects = hdfs_listing(table_uri)
    with MetastoreClient(store_metastore.uri) as hms:
        assert_committed(hms, "hdfs_db", table_uri, objects, log, hours)
    assert_partitions_hold_only_data_and_success(objects, table_uri, hours)
