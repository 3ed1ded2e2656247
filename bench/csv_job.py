"""The csv source in a whole job (issue #60): one csv file -> hourly parquet, ``sqlext run`` against a PySpark
program with Spark's own csv reader and file sink, whole processes.

    python -m bench.csv_job [--rows 6000000] [--hours 24] [--repeats 2] [--mode batch|streaming]
                            [--variants spark,sqlext] [--inputs DIR] [--profile]

- ``spark``: ``spark.read.schema(...).csv(...)`` (or ``readStream`` with ``availableNow``), ``dt``/``hr`` by
  ``date_format``, ``write.partitionBy("dt", "hr").parquet(...)``; no metastore, no commit;
- ``sqlext``: ``sqlext run`` of the same as Flink SQL (``bench/flink_sink.py``'s statements: a filesystem csv
  source, a ``partition-time`` parquet sink committing ``metastore,success-file``), its driver started without
  the class data sharing archive (``spark.sqlext.driver.class-sharing=false``, the default when there is none).

The metastore is started once before (as a user's is already running). Each round runs the variants in turn,
the order reversed every other round (A B B A); every run is checked (all rows, ``--hours`` partitions). The
table shows each variant's best and median seconds and spark / sqlext (throughput, higher is better for
sqlext), with the load average at each run. ``--profile`` also keeps Spark's event log of every run and counts
its jobs (and their seconds) before the first job that writes: the work each spends before its data moves.
Writes bench/results/csv_job.json (``--result`` to name it otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.common import median, metastore, print_table, scratch_dir, write_result
from bench.csv_source import count_rows
from bench.flink_sink import environments, run_process, sqlext_command, write_input

SPARK_PROGRAM = """
import sys
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
mode, source, target, checkpoint = sys.argv[1:5]
builder = SparkSession.builder.appName("spark csv job").master("local[*]").config("spark.ui.enabled", "false")
for setting in sys.argv[5:]:
    key, value = setting.split("=", 1)
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
schema = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP"
def columns(rows):
    return rows.withColumn("dt", F.date_format("ts", "yyyy-MM-dd")).withColumn("hr", F.date_format("ts", "HH"))
if mode == "batch":
    columns(spark.read.schema(schema).csv(source)).write.partitionBy("dt", "hr").parquet(target)
else:
    rows = columns(spark.readStream.schema(schema).csv(source).withWatermark("ts", "0 seconds"))
    query = (rows.writeStream.format("parquet").partitionBy("dt", "hr").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(target))
    query.awaitTermination()
spark.stop()
"""

VARIANTS = ("spark", "sqlext")


def event_log_conf(work: Path) -> dict[str, str]:
    (work / "events").mkdir()
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": (work / "events").as_uri(),
        "spark.eventLog.rolling.enabled": "false",
        "spark.eventLog.compress": "false",
    }


def command(variant: str, work: Path, mode: str, source: Path, hms_uri: str, profile: bool) -> list[str]:
    extra = event_log_conf(work) if profile else {}
    if variant == "spark":
        program = work.parent / "spark_csv_job.py"
        if not program.exists():
            program.write_text(SPARK_PROGRAM)
        paths = [source.as_uri(), (work / "table").as_uri(), (work / "checkpoint").as_uri()]
        return [sys.executable, str(program), mode, *paths, *(f"{k}={v}" for k, v in extra.items())]
    extra["spark.sqlext.driver.class-sharing"] = "false"
    return sqlext_command(work, "csv", mode, source, hms_uri, "parquet", extra)


def jobs_before_write(events: Path) -> dict[str, Any]:
    """From a run's event log: the jobs before the first one that writes files, their count and seconds, and
    every job's description."""
    [log] = list(events.iterdir())
    starts: dict[int, tuple[int, str]] = {}
    jobs: list[dict[str, Any]] = []
    app_start = None
    for line in log.read_text().splitlines():
        event = json.loads(line)
        kind = event["Event"]
        if kind == "SparkListenerApplicationStart":
            app_start = event["Timestamp"]
        elif kind == "SparkListenerJobStart":
            props = event.get("Properties") or {}
            name = props.get("spark.job.description") or props.get("callSite.short") or ""
            stages = event.get("Stage Infos") or []
            starts[event["Job ID"]] = (event["Submission Time"], name or (stages[0]["Stage Name"] if stages else ""))
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in starts:
            began, name = starts[event["Job ID"]]
            jobs.append(
                {
                    "name": name,
                    "start_s": (began - (app_start or began)) / 1000,
                    "seconds": (event["Completion Time"] - began) / 1000,
                }
            )
    writing = next(
        (
            i
            for i, job in enumerate(jobs)
            if "parquet" in job["name"] or "save" in job["name"] or "start" in job["name"] or "Batch" in job["name"]
        ),
        len(jobs),
    )
    before = jobs[:writing]
    return {"jobs": jobs, "jobs_before_write": len(before), "seconds_before_write": sum(j["seconds"] for j in before)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6_000_000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--mode", default="batch", choices=("batch", "streaming"))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--inputs", type=Path, help="a dir with input-csv/ of an earlier run (or to keep)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--result", default="csv_job")
    args = parser.parse_args()
    names = [name for name in args.variants.split(",") if name]
    home = scratch_dir()
    source = (args.inputs or home) / "input-csv"
    if not source.is_dir():
        print(f"generating {args.rows:,} rows over {args.hours} hours in one csv file ...", flush=True)
        write_input(source, "csv", args.rows, args.hours, 1)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    loads: dict[str, list[float]] = {name: [] for name in names}
    profiles: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    envs = environments()
    with metastore(home) as hms:
        for repeat in range(args.repeats):
            order = names if repeat % 2 == 0 else list(reversed(names))
            for name in order:
                work = home / f"r{repeat}-{name}"
                work.mkdir()
                argv = command(name, work, args.mode, source, hms.uri, args.profile)
                value = run_process(argv, envs["sqlext"], work / "process.log")
                # Spark's sink writes no success file per partition
                check = count_rows if name == "sqlext" else _spark_rows
                written = check(work / "table", "parquet", args.hours)
                assert written == args.rows, f"{name}: {written} rows, expected {args.rows}"
                seconds[name].append(value)
                loads[name].append(os.getloadavg()[0])
                if args.profile:
                    profiles[name].append(jobs_before_write(work / "events"))
                    print(f"    jobs: {[(j['name'][:40], round(j['seconds'], 2)) for j in profiles[name][-1]['jobs']]}")
                print(f"  r{repeat} {name}: {value:.1f} s (load average {loads[name][-1]:.1f})", flush=True)
    table = [
        [name, " ".join(f"{v:.1f}" for v in seconds[name]), f"{min(seconds[name]):.1f}", f"{median(seconds[name]):.1f}"]
        for name in names
    ]
    print_table(["variant", "seconds", "best", "median"], table)
    result: dict[str, Any] = {
        "params": {k: str(v) for k, v in vars(args).items()},
        "seconds": seconds,
        "load_average": loads,
    }
    if {"spark", "sqlext"} <= set(names):
        best = min(seconds["spark"]) / min(seconds["sqlext"])
        middle = median(seconds["spark"]) / median(seconds["sqlext"])
        print(f"spark / sqlext: best {best:.2f}x, median {middle:.2f}x")
        result |= {"ratio_best": best, "ratio_median": middle}
    if args.profile:
        result["profiles"] = profiles
    print(f"wrote {write_result(args.result, result)}")


def _spark_rows(table: Path, fmt: str, hours: int) -> int:
    import pyarrow.parquet as pq

    partitions = sorted(table.glob("dt=*/hr=*"))
    assert len(partitions) == hours, f"{table}: {len(partitions)} partitions, expected {hours}"
    return sum(pq.ParquetFile(f).metadata.num_rows for p in partitions for f in p.glob("*.parquet"))


if __name__ == "__main__":
    main()
