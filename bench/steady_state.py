"""Steady state and commit latency: a 500-batch sqlext insert with steady event time, next to Spark's own
file sink on the same input.

    python -m bench.steady_state [--batches 500] [--rows-per-batch 2000] [--minutes-per-batch 6]

Each input file is one micro-batch and holds the next ``--minutes-per-batch`` of event time, so hourly
partitions fill up and pass the watermark one after another (``partition-time``, delay 1 h). Reported:

- commit latency: for each partition, the batch whose watermark passes the partition's time + delay, the
  batch that committed it (target: the same one), and the time from that batch's start to the partition's
  commit in the HMS (its ``sqlext.commit-time``);
- steady state, per batch: the committer's time, the driver's memory (Python and JVM resident set) and the
  trigger state's size, with the slope of a least-squares line over the run (flat: about 0);
- the batch duration of sqlext and of Spark's file sink (no partition commit) over the same batches.

Prints tables and writes bench/results/steady_state.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import median, metastore, print_table, scratch_dir, spark_session, write_result
from bench.sink_throughput import events, partition_time_table, run_sqlext_insert, spark_file_sink
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.io.fs import FileSystem

START = datetime(2026, 11, 22)
DELAY = timedelta(hours=1)


def write_steady_input(directory: Path, batches: int, rows: int, minutes: int, start: datetime = START) -> None:
    """One file per batch, each with the next ``minutes`` of event time from ``start``, oldest first."""
    directory.mkdir(parents=True)
    for batch in range(batches):
        begin = start + timedelta(minutes=minutes * batch)
        step = timedelta(minutes=minutes) / rows
        ids = range(batch * rows, (batch + 1) * rows)
        table = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "user_id": pa.array([f"user-{i % 1000}" for i in ids]),
                "amount": pa.array([i * 0.01 for i in ids]),
                "ts": pa.array([begin + step * n for n in range(rows)], pa.timestamp("us")),
            }
        )
        path = directory / f"batch-{batch:05d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_700_000_000 + batch, 1_700_000_000 + batch))


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class BatchSampler:
    """Wraps the committer's ``process`` to measure each batch: commit time, memory, trigger state."""

    def __init__(self, spark: Any, state_file: Path) -> None:
        self.jvm_pid = spark.sparkContext._gateway.proc.pid
        self.state_file = state_file
        self.samples: list[dict[str, float]] = []
        self._original = BatchCommitter.process

    def __enter__(self) -> BatchSampler:
        sampler, original = self, self._original

        def process(committer: BatchCommitter, batch_id: int, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = original(committer, batch_id, *args, **kwargs)
            sampler.samples.append(
                {
                    "batch": batch_id,
                    "commit_s": time.perf_counter() - started,
                    "python_rss_mb": _rss_kb(os.getpid()) / 1024,
                    "jvm_rss_mb": _rss_kb(sampler.jvm_pid) / 1024,
                    "trigger_state_bytes": sampler.state_file.stat().st_size if sampler.state_file.exists() else 0,
                }
            )
            return result

        BatchCommitter.process = process  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        BatchCommitter.process = self._original  # type: ignore[method-assign]


def run_sqlext(
    spark: Any, client: MetastoreClient, uri: str, input_dir: Path, work: Path, batches: int
) -> tuple[Any, Any]:
    # The commit log keeps every batch, so that commit_latency can read which batch committed what.
    table = partition_time_table("steady", work / "table", **{"sink.commit-log.retained-batches": str(batches)})
    Catalog(client).create_table(table)
    rows = events(spark, input_dir, files_per_trigger=1)
    with BatchSampler(spark, work / "checkpoint" / "sqlext" / "trigger-state.json") as sampler:
        query = run_sqlext_insert(spark, table, uri, rows, work / "checkpoint")
    return sampler, query


def batch_durations(query: Any) -> list[float]:
    return [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress if p["numInputRows"]]


def commit_latency(client: MetastoreClient, table_path: str) -> list[dict[str, Any]]:
    """Per partition: the batch whose watermark passes its time + delay, the batch that committed it, and
    milliseconds from the start of the first to the partition's commit in the HMS."""
    entries = list(CommitLog(FileSystem(table_path), table_path).entries("steady"))
    committed_in = {p: e.batch for e in entries for p in e.committed_partitions}
    names = client.get_partition_names("bench", "steady")
    latencies = []
    for partition in client.get_partitions_by_names("bench", "steady", names):
        dt, hr = partition.values
        due_ms = int((datetime.strptime(f"{dt} {hr}", "%Y-%m-%d %H") + DELAY).timestamp() * 1000)
        due = next((e for e in entries if e.watermark_ms is not None and e.watermark_ms >= due_ms), None)
        if due is None:
            continue  # committed by the end of input, not by the watermark
        path = f"dt={dt}/hr={hr}"
        committed_ms = int(partition.parameters["sqlext.commit-time"])
        latencies.append(
            {
                "partition": path,
                "due_batch": due.batch,
                "committed_batch": committed_in.get(path),
                "ms_from_due_batch_start": committed_ms - due.batch_time_ms,
            }
        )
    return latencies


def slope(values: list[float]) -> float:
    """Least-squares slope per batch."""
    return statistics.linear_regression(range(len(values)), values).slope if len(values) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=500)
    parser.add_argument("--rows-per-batch", type=int, default=2000)
    parser.add_argument("--minutes-per-batch", type=int, default=6)
    args = parser.parse_args()

    home = scratch_dir()
    with metastore(home) as hms, MetastoreClient(hms.uri) as client:
        spark = spark_session(hms.uri, home / "warehouse")
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(args.batches + 10))
        client.create_database("bench")
        print(f"writing {args.batches} input files ...", flush=True)
        write_steady_input(home / "input", args.batches, args.rows_per_batch, args.minutes_per_batch)
        started = time.perf_counter()
        sampler, sqlext_query = run_sqlext(spark, client, hms.uri, home / "input", home, args.batches)
        print(f"  sqlext: {len(sampler.samples)} batches in {time.perf_counter() - started:.0f} s", flush=True)
        started = time.perf_counter()
        spark_query = spark_file_sink(spark, home / "input", home / "spark", files_per_trigger=1)
        print(f"  spark file sink: done in {time.perf_counter() - started:.0f} s", flush=True)
        latencies = commit_latency(client, (home / "table").as_uri())
        durations = {"sqlext": batch_durations(sqlext_query), "spark_file_sink": batch_durations(spark_query)}
        spark.stop()
    shutil.rmtree(home, ignore_errors=True)

    same_batch = sum(1 for item in latencies if item["committed_batch"] == item["due_batch"])
    latency_ms = [item["ms_from_due_batch_start"] for item in latencies]
    print(f"commit latency: {same_batch} of {len(latencies)} partitions committed in the batch whose watermark")
    print(f"passed their time + delay; ms from its start: median {median(latency_ms):.0f}, max {max(latency_ms)}")
    metrics = ["commit_s", "python_rss_mb", "jvm_rss_mb", "trigger_state_bytes"]
    rows = []
    result_slopes = {}
    for metric in metrics:
        values = [sample[metric] for sample in sampler.samples]
        result_slopes[metric] = slope(values)
        first, last = statistics.mean(values[:50]), statistics.mean(values[-50:])
        rows.append([metric, f"{first:.3f}", f"{last:.3f}", f"{result_slopes[metric] * 100:+.4f}"])
    print_table(["per batch", "mean first 50", "mean last 50", "slope per 100 batches"], rows)
    for name, values in durations.items():
        result_slopes[f"{name}_batch_s"] = slope(values)
    ratio = median(durations["sqlext"]) / median(durations["spark_file_sink"])
    print(
        f"batch duration median: sqlext {median(durations['sqlext']):.3f} s, spark file sink "
        f"{median(durations['spark_file_sink']):.3f} s (ratio {ratio:.2f}); slopes per 100 batches "
        f"{result_slopes['sqlext_batch_s'] * 100:+.4f} s and {result_slopes['spark_file_sink_batch_s'] * 100:+.4f} s"
    )
    path = write_result(
        "steady_state",
        {
            "params": vars(args),
            "samples": sampler.samples,
            "slopes_per_batch": result_slopes,
            "commit_latency": latencies,
            "committed_in_due_batch": same_batch,
            "batch_seconds": durations,
            "ratio_batch_duration_sqlext_vs_spark_sink": ratio,
        },
    )
    print(f"written {path}")


if __name__ == "__main__":
    main()
