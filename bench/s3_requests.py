"""What a streaming write costs on S3, counted by the S3 server (issue #34): the same hourly parquet events (one
file per hour, one file per micro-batch) written (a) by Spark's own file sink (`writeStream.format("parquet")
.partitionBy("dt", "hr")`, no metastore) and (b) by a sqlext streaming insert (`sqlext run`, `partition-time`
commit, `metastore,success-file`) into a table on the same S3 server (moto, the tests' server with its request
log), each into a bucket of its own. Prints, per variant, the requests by operation, the CopyObject requests of
data files, the bytes sent into data files against the data files' bytes, and every byte PUT.

``python -m bench.s3_requests [--hours 4] [--rows-per-hour 30]`` (needs the dev extra's moto and the S3A and
hadoop-cloud jars, fetched once: ``make jars``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import print_table, scratch_dir, write_result
from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.s3_server import S3Request, S3Server, start_server, stop_server
from tests.support.stores import hadoop_cloud_jars, s3a_jars
from tests.support.streams import write_hourly_events
from tests.support.waiting import free_port

REPO = Path(__file__).resolve().parents[1]


def spark_file_sink(server: S3Server, input_dir: Path, work: Path, table: str) -> None:
    """(a): Spark's file sink, one file per micro-batch, in a process of its own."""
    program = f"""
import os
from pyspark.sql import SparkSession, functions as F
builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
builder = builder.config("spark.sql.shuffle.partitions", "2")
builder = builder.config("spark.driver.extraClassPath", {f"{s3a_jars()}/*"!r})
for key, value in {server.hadoop_conf()!r}.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
events = (spark.readStream.schema("id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP")
    .option("maxFilesPerTrigger", 1).parquet({input_dir.as_uri()!r}))
out = events.withColumn("dt", F.date_format("ts", "yyyy-MM-dd")).withColumn("hr", F.date_format("ts", "HH"))
query = (out.writeStream.format("parquet").partitionBy("dt", "hr")
    .option("checkpointLocation", {(work / "checkpoint").as_uri()!r}).trigger(availableNow=True).start({table!r}))
query.awaitTermination()
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


def sqlext_insert(server: S3Server, metastore_uri: str, input_dir: Path, work: Path, table: str) -> None:
    """(b): a sqlext streaming insert run by ``sqlext run``, configured by ``--conf`` keys only."""
    job = work / "job.sql"
    job.write_text(f"""
CREATE DATABASE IF NOT EXISTS bench;
CREATE TABLE IF NOT EXISTS bench.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', 'format' = 'parquet',
      'source.max-files-per-trigger' = '1');
CREATE TABLE IF NOT EXISTS bench.events (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING)
PARTITIONED BY (dt, hr)
WITH ('connector' = 'filesystem', 'path' = '{table}', 'format' = 'parquet',
      'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h',
      'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
      'sink.partition-commit.policy.kind' = 'metastore,success-file');
INSERT INTO bench.events
SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM bench.src;
""")
    conf = {
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sqlext.metastore.uris": metastore_uri,
        "spark.sqlext.checkpoint.root": (work / "checkpoints").as_uri(),
        "spark.driver.extraClassPath": f"{s3a_jars()}/*:{hadoop_cloud_jars()}/*",
        **server.hadoop_conf(),
    }
    flags = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
    env = {**os.environ, "SQLEXT_HOME": str(work / "home"), "PYTHONPATH": str(REPO)}
    env.pop("SQLEXT_FAULT", None)
    command = [sys.executable, "-m", "sqlext.cli", "run", str(job), *flags]
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


def costs(server: S3Server, bucket: str, requests: list[S3Request]) -> dict[str, Any]:
    """The counts of one variant's bucket."""
    mine = [r for r in requests if r.bucket == bucket]
    objects = server.objects(bucket)
    data = {k: v for k, v in objects.items() if k.rsplit("/", 1)[1].startswith("part-") and "/__magic" not in k}

    def into_data(r: S3Request) -> bool:
        return "/__magic_job-" not in r.key and r.key.rsplit("/", 1)[-1].startswith("part-")

    return {
        "data_files": len(data),
        "data_bytes": sum(data.values()),
        "requests": dict(sorted(Counter(r.operation for r in mine).items())),
        "data_copies": sum(1 for r in mine if r.operation in ("CopyObject", "UploadPartCopy") and into_data(r)),
        "bytes_into_data_files": sum(
            r.body_bytes for r in mine if r.operation in ("PutObject", "UploadPart") and into_data(r)
        ),
        "bytes_put": sum(r.body_bytes for r in mine if r.operation in ("PutObject", "UploadPart")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=4)
    parser.add_argument("--rows-per-hour", type=int, default=30)
    args = parser.parse_args()
    home = scratch_dir()
    input_dir = home / "input"
    write_hourly_events(input_dir, datetime(2026, 11, 22), args.hours, args.rows_per_hour)
    server = start_server(home / "requests.jsonl")
    settings = MetastoreSettings(
        port=free_port(),
        home=home / "metastore",
        hadoop=tuple(sorted(server.hadoop_conf(prefix="").items())),
        classpath=(f"{s3a_jars()}/*",),
    )
    launcher.start(settings)
    result: dict[str, Any] = {"params": vars(args)}
    try:
        for name, bucket, run in (
            ("spark_file_sink", "spark-sink", lambda t: spark_file_sink(server, input_dir, home / "a", t)),
            ("sqlext_insert", "sqlext-insert", lambda t: sqlext_insert(server, settings.uri, input_dir, home / "b", t)),
        ):
            server.create_bucket(bucket)
            (home / ("a" if name == "spark_file_sink" else "b")).mkdir(exist_ok=True)
            since = server.mark()
            print(f"running {name} ...", flush=True)
            run(f"s3a://{bucket}/warehouse/events")
            result[name] = costs(server, bucket, server.requests(since))
    finally:
        launcher.stop(settings)
        stop_server(server)
    rows = [
        [
            name,
            str(result[name]["data_files"]),
            str(result[name]["data_copies"]),
            f"{result[name]['bytes_into_data_files']:,} / {result[name]['data_bytes']:,}",
            f"{result[name]['bytes_put']:,}",
            str(sum(result[name]["requests"].values())),
        ]
        for name in ("spark_file_sink", "sqlext_insert")
    ]
    headers = ["variant", "data files", "CopyObject of data", "bytes into data / data", "bytes PUT", "requests"]
    print_table(headers, rows)
    for name in ("spark_file_sink", "sqlext_insert"):
        print(f"{name}: {result[name]['requests']}")
    write_result("s3_requests", result)


if __name__ == "__main__":
    main()
