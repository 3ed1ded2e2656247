"""Streaming-read latency: from a partition's commit in the HMS to its rows committed in the downstream table.

    python -m bench.streaming_read_latency [--partitions 20] [--interval 5] [--rows 2000] [--monitor-interval 1]

A streaming INSERT reads ``bench.upstream`` as a stream of committed partitions
(``'streaming-source.enable' = 'true'``, ``create-time`` order) into ``bench.downstream`` (process-time
commit, delay 0: a partition is committed in the batch that wrote it). Once the reader runs, a steady writer
puts one parquet file into a new hourly partition directory of ``bench.upstream`` and commits the partition
(``ALTER TABLE ... ADD PARTITION``) every ``--interval`` seconds, after one warm-up partition (not timed)
has landed. Per partition, the latency is the
downstream partition's commit time (the metastore policy's ``sqlext.commit-time``, milliseconds) minus the
time the upstream ``ADD PARTITION`` call started (so it is an upper bound by the call's own duration).
The reader polls at ``--monitor-interval`` seconds and runs a micro-batch every second
(``execution.checkpointing.interval``), so the floor is about one poll plus one batch.

Prints the per-partition latencies and their median and max; writes bench/results/streaming_read_latency.json.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import median, metastore, print_table, scratch_dir, write_result
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.runtime.paths import packaged_conf_dir
from sqlext.spark.session import spark_session

DAY = "2026-11-22"
WARM_UP_HOUR = 23


def create_tables(spark: Any, home: Path, monitor_interval_s: int) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS bench")
    spark.sql(f"""
        CREATE TABLE bench.upstream (id BIGINT, user_id STRING, amount DOUBLE, dt STRING, `hr` STRING)
        PARTITIONED BY (dt, `hr`) WITH (
          'connector' = 'filesystem', 'path' = '{(home / "upstream").as_uri()}', 'format' = 'parquet',
          'streaming-source.enable' = 'true', 'streaming-source.partition-order' = 'create-time',
          'streaming-source.monitor-interval' = '{monitor_interval_s} s'
        )""")
    spark.sql(f"""
        CREATE TABLE bench.downstream (id BIGINT, user_id STRING, amount DOUBLE, dt STRING, `hr` STRING)
        PARTITIONED BY (dt, `hr`) WITH (
          'connector' = 'filesystem', 'path' = '{(home / "downstream").as_uri()}', 'format' = 'parquet',
          'sink.partition-commit.trigger' = 'process-time', 'sink.partition-commit.delay' = '0 s',
          'sink.partition-commit.policy.kind' = 'metastore'
        )""")


def start_reader(spark: Any) -> Any:
    """Start the reading insert and wait until its source runs; return its RunningInsert."""
    from sqlext.connectors.filesystem.sink import running_insert

    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    spark.sql("SET 'pipeline.name' = 'latency_reader'")
    [job] = spark.sql("INSERT INTO bench.downstream SELECT id, user_id, amount, dt, hr FROM bench.upstream").collect()
    running = running_insert(job.job_id)
    assert running is not None
    deadline = time.monotonic() + 300
    while "Initializing" in running.query.status["message"]:
        if running.finished.is_set() or time.monotonic() > deadline:
            raise SystemExit(f"the reader did not start: {running.query.exception()}")
        time.sleep(0.2)
    return running


def commit_partition(spark: Any, home: Path, hour: int, rows: int) -> int:
    """Write one partition's file and add the partition to the HMS; the call's start, epoch ms."""
    directory = home / "upstream" / f"dt={DAY}" / f"hr={hour:02d}"
    directory.mkdir(parents=True)
    ids = range(hour * rows, (hour + 1) * rows)
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "user_id": pa.array([f"user-{i % 1000}" for i in ids]),
            "amount": pa.array([i * 0.01 for i in ids]),
        }
    )
    pq.write_table(table, directory / "part-0.parquet")
    started_ms = int(time.time() * 1000)
    spark._sqlext_session.spark_sql(f"ALTER TABLE bench.upstream ADD PARTITION (dt = '{DAY}', hr = '{hour:02d}')")
    return started_ms


def landed(client: MetastoreClient) -> dict[str, int]:
    """Downstream partitions committed so far: name -> commit time (epoch ms)."""
    names = client.get_partition_names("bench", "downstream")
    found = client.get_partitions_by_names("bench", "downstream", names) if names else []
    return {
        f"dt={p.values[0]}/hr={p.values[1]}": int(p.parameters["sqlext.commit-time"])
        for p in found
        if "sqlext.commit-time" in (p.parameters or {})
    }


def wait_until(condition: Any, what: str, timeout_s: float = 300, strict: bool = True) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            if strict:
                raise SystemExit(f"timed out waiting for {what}")
            return
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=20, help="upstream partitions timed (max 22)")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between upstream commits")
    parser.add_argument("--rows", type=int, default=2000, help="rows per partition")
    parser.add_argument("--monitor-interval", type=int, default=1, help="streaming-source.monitor-interval, s")
    args = parser.parse_args()
    if not 0 < args.partitions < WARM_UP_HOUR:
        parser.error(f"--partitions: 1 to {WARM_UP_HOUR - 1} (hours of one day; hr={WARM_UP_HOUR} warms up)")

    home = scratch_dir()
    with metastore(home) as hms, MetastoreClient(hms.uri) as client:
        log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
        conf = {
            "spark.sqlext.metastore.uris": hms.uri,
            "spark.sqlext.checkpoint.root": (home / "checkpoints").as_uri(),
            "spark.sql.warehouse.dir": (home / "warehouse").as_uri(),
            "spark.sql.shuffle.partitions": "4",
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={log4j}",
        }
        spark = spark_session("sqlext-bench", "local[2]", conf)  # sqlext's own: the users' session
        spark.sparkContext.setLogLevel("ERROR")
        create_tables(spark, home, args.monitor_interval)
        reader = start_reader(spark)
        committed: dict[str, int] = {}
        try:
            # Warm-up, not measured: the reader's first batches start Python workers and JIT-compile.
            commit_partition(spark, home, WARM_UP_HOUR, args.rows)
            wait_until(lambda: f"dt={DAY}/hr={WARM_UP_HOUR}" in landed(client), "the warm-up partition")
            print("  warm-up partition landed", flush=True)
            next_at = time.monotonic()
            for hour in range(args.partitions):
                time.sleep(max(0.0, next_at - time.monotonic()))
                next_at += args.interval
                committed[f"dt={DAY}/hr={hour:02d}"] = commit_partition(spark, home, hour, args.rows)
                print(f"  committed upstream hr={hour:02d}", flush=True)
            wait_until(lambda: len(landed(client)) > args.partitions, "every partition landed", strict=False)
            arrived = landed(client)
        finally:
            reader.stop()
            reader.wait(120)
            spark.stop()
    shutil.rmtree(home, ignore_errors=True)

    latencies = {name: arrived[name] - started for name, started in committed.items() if name in arrived}
    print_table(["partition", "latency ms"], [[name, ms] for name, ms in latencies.items()])
    values = list(latencies.values())
    if len(values) < args.partitions:
        print(f"only {len(values)} of {args.partitions} partitions landed within 300 s")
    summary = {"median_ms": median(values), "max_ms": max(values)} if values else {}
    print(f"commit-to-landed latency: median {summary.get('median_ms')} ms, max {summary.get('max_ms')} ms")
    path = write_result(
        "streaming_read_latency",
        {
            "parameters": vars(args),
            "landed": len(values),
            "latency_ms": latencies,
            **summary,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
