"""Start-up: ``sqlext run`` of a DDL + INSERT script vs a plain PySpark program starting the same query.

    python -m bench.startup [--repeats 3] [--rows 1000]

Both are whole processes, run in turn (sqlext, Spark, sqlext, ...), on the same small csv input (so the one
batch is short and the process time is mostly start-up): (a) a PySpark program that defines the stream
(``readStream`` text, parsed as csv) and writes it with Spark's file sink partitioned by day and hour,
``availableNow``; (b) ``sqlext run`` of the same as Flink SQL: ``CREATE DATABASE``, two ``CREATE TABLE``,
``SET``, ``INSERT`` with partition-time commit into the metastore with a success file. The metastore is
started once before (as a user's is already running). The target (issue #21): (b) - (a) <= 2 s. Each
process also prints when its query's first batch started (seconds from process start), from Spark's own
query progress; the table shows the medians of both figures. Writes bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import median, metastore, print_table, scratch_dir, write_result

#: Printed by both programs: seconds from process start to the first batch's start.
FIRST_BATCH = "first-batch-started-after"

SPARK_PROGRAM = """
import sys, time
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
source, target, checkpoint = sys.argv[1:4]
spark = (SparkSession.builder.appName("spark alone").master("local[*]")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
fields = F.split(F.col("value"), ",")
rows = (spark.readStream.format("text").schema("value STRING").load(source)
        .select(fields[0].cast("bigint").alias("id"), fields[1].alias("user_id"),
                fields[2].cast("double").alias("amount"), fields[3].cast("timestamp").alias("ts"))
        .withWatermark("ts", "0 seconds")
        .withColumn("dt", F.date_format("ts", "yyyy-MM-dd")).withColumn("hr", F.date_format("ts", "HH")))
query = (rows.writeStream.format("csv").partitionBy("dt", "hr").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start(target))
query.awaitTermination()
from datetime import datetime
import os
began = datetime.fromisoformat(query.recentProgress[0]["timestamp"].replace("Z", "+00:00")).timestamp()
print("first-batch-started-after", round(began - float(os.environ["BENCH_PROCESS_START"]), 3), flush=True)
"""

SQLEXT_SCRIPT = """
CREATE DATABASE IF NOT EXISTS startup;
CREATE TABLE startup.events_raw_{tag} (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '0' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv');
CREATE TABLE startup.events_{tag} (
  id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING
) PARTITIONED BY (dt, hr) WITH (
  'connector' = 'filesystem', 'path' = '{target}', 'format' = 'csv',
  'sink.partition-commit.trigger' = 'partition-time',
  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
  'sink.partition-commit.policy.kind' = 'metastore,success-file'
);
SET 'pipeline.name' = 'startup_{tag}';
INSERT INTO startup.events_{tag}
SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM startup.events_raw_{tag};
"""

#: Wraps either program: records when the first batch starts, from a streaming query listener.
LISTENER = """
import os, sys, time
from pyspark.sql.streaming import StreamingQueryListener
from pyspark.sql import SparkSession
_start = float(os.environ["BENCH_PROCESS_START"])
_seen = []
class _FirstBatch(StreamingQueryListener):
    def onQueryStarted(self, event):
        pass
    def onQueryProgress(self, event):
        if not _seen:
            _seen.append(1)
            # the progress's own timestamp: when the batch started
            from datetime import datetime
            began = datetime.fromisoformat(event.progress.timestamp.replace("Z", "+00:00")).timestamp()
            print("{marker}", round(began - _start, 3), flush=True)
    def onQueryIdle(self, event):
        pass
    def onQueryTerminated(self, event):
        pass
_builder_get = SparkSession.Builder.getOrCreate
def _get(self):
    spark = _builder_get(self)
    if not getattr(spark, "_bench_listener", False):
        spark.streams.addListener(_FirstBatch())
        spark._bench_listener = True
    return spark
SparkSession.Builder.getOrCreate = _get
"""


def write_input(directory: Path, rows: int) -> None:
    directory.mkdir(parents=True)
    lines = [f"{i},user-{i % 100},{i * 0.5},2026-11-22 {i % 24:02d}:{i % 60:02d}:00.000" for i in range(rows)]
    (directory / "part-0.csv").write_text("\n".join(lines) + "\n")


def run_process(argv: list[str], env: dict[str, str]) -> tuple[float, float | None]:
    """Wall seconds of a whole process, and its first batch's start (seconds after process start)."""
    started = time.time()
    done = subprocess.run(argv, env={**env, "BENCH_PROCESS_START": str(started)}, capture_output=True, text=True)
    wall = time.time() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    found = re.search(rf"{FIRST_BATCH} ([0-9.]+)", done.stdout)
    return wall, float(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    home = scratch_dir()
    source = home / "input"
    write_input(source, args.rows)
    wrapper = home / "bench_listener"
    wrapper.mkdir()
    (wrapper / "sitecustomize.py").write_text(LISTENER.replace("{marker}", FIRST_BATCH))
    (home / "spark_alone.py").write_text(SPARK_PROGRAM)
    results: dict[str, dict[str, list[float]]] = {k: {"wall": [], "first_batch": []} for k in ("spark", "sqlext")}
    with metastore(home) as hms:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(wrapper), env.get("PYTHONPATH", "")]))
        env["SQLEXT_HOME"] = str(home / "sqlext-home")
        for repeat in range(args.repeats + 1):  # the first pair warms the disk cache, and is not counted
            tag = f"r{repeat}"
            script = home / f"{tag}.sql"
            script.write_text(
                SQLEXT_SCRIPT.format(source=source.as_uri(), target=(home / f"sqlext-{tag}").as_uri(), tag=tag)
            )
            sqlext_conf = ["--conf", f"spark.sqlext.metastore.uris={hms.uri}", "--conf", "spark.ui.enabled=false"]
            spark_paths = [(home / f"spark-{tag}").as_uri(), (home / f"spark-cp-{tag}").as_uri()]
            commands: dict[str, list[str]] = {
                "sqlext": [sys.executable, "-m", "sqlext.cli", "run", str(script), *sqlext_conf],
                "spark": [sys.executable, str(home / "spark_alone.py"), source.as_uri(), *spark_paths],
            }
            order = list(commands) if repeat % 2 == 0 else list(reversed(commands))
            for kind in order:
                wall, first = run_process(commands[kind], env)
                print(f"  {kind} run {repeat}: {wall:.1f} s, first batch at {first} s", flush=True)
                if repeat:
                    results[kind]["wall"].append(wall)
                    if first is not None:
                        results[kind]["first_batch"].append(first)
            # sqlext committed partitions: the insert did its work
            assert any((home / f"sqlext-{tag}").glob("dt=*/hr=*/_SUCCESS")), "sqlext committed no partition"
    shutil.rmtree(home, ignore_errors=True)
    medians = {k: {f: median(v) if v else float("nan") for f, v in figures.items()} for k, figures in results.items()}
    print_table(
        ["variant", "median wall s", "median first batch s"],
        [[k, f"{m['wall']:.2f}", f"{m['first_batch']:.2f}"] for k, m in medians.items()],
    )
    difference = medians["sqlext"]["first_batch"] - medians["spark"]["first_batch"]
    wall_difference = medians["sqlext"]["wall"] - medians["spark"]["wall"]
    print(f"sqlext - spark: first batch {difference:+.2f} s, whole process {wall_difference:+.2f} s (target <= 2 s)")
    result: dict[str, Any] = {
        "params": vars(args),
        "seconds": results,
        "medians": medians,
        "first_batch_difference_s": difference,
        "wall_difference_s": wall_difference,
    }
    print(f"written {write_result('startup', json.loads(json.dumps(result)))}")


if __name__ == "__main__":
    main()
