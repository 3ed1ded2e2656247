"""Flink comparison: the same csv and json input, the same Flink SQL, through (a) Flink's filesystem sink
with partition commit (``success-file``), (b) a sqlext insert with partition commit
(``metastore,success-file``) and (c) Spark's own file sink without commit (reference).

    python -m bench.flink_sink [--rows 1000000] [--hours 24] [--files 4] [--repeats 3]
                               [--formats csv,json] [--modes streaming,batch] [--profile]

Every run is a whole process, as each engine's users run it on one machine, on the same input files:
(a) ``bench/flink_job.py`` with the Flink venv's python (PyFlink's local mini-cluster,
``parallelism.default`` = the cores, checkpoints every 10 s); (b) ``sqlext run`` of a script with the same
statements (the metastore is started once before, as a user's is already running); (c) a PySpark program
(``readStream`` of the files with the same watermark, ``writeStream.partitionBy("dt", "hr")``,
``availableNow``; batch mode: ``read`` and ``write``). Flink's PyPI jars have no Hive connector, so Flink
commits with a success file only. In streaming mode both commit by partition time (delay 1 h, watermark
``ts``): the file source is bounded, so each job ends at the end of the input, and both commit every
pending partition then (Flink: the end of input's watermark; sqlext: ``availableNow`` and the final commit).
Every run is checked afterwards: each variant wrote every row into ``--hours`` partitions, and (a)/(b)
wrote a success file into each.

The variants of one format and mode run ``--repeats`` times, interleaved in a rotating order (a b c,
b c a, ...), after one warm-up round on a small input that is not counted; medians are reported. The
results are written after each format and mode (a failed one is recorded and the others go on).
``--profile`` adds one streaming sqlext run per format (after the streaming runs) under cProfile with
Spark's event log, and prints where the time went (the top functions by cumulative time, and each Spark
stage's duration). Writes bench/results/flink_sink.json.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import median, metastore, print_table, scratch_dir, write_result

ROOT = Path(__file__).resolve().parents[1]
FLINK_VENV = Path(os.environ.get("SQLEXT_FLINK_VENV", ROOT / ".venv-flink"))
FLINK_JOB = Path(__file__).with_name("flink_job.py")
START = datetime(2026, 11, 22)
VARIANTS = ("flink", "sqlext", "spark_file_sink")
SOURCE_COLUMNS = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)"
SINK_COLUMNS = f"{SOURCE_COLUMNS}, dt STRING, hr STRING"
SELECT = "SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM {source}"

SPARK_PROGRAM = """
import sys
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
fmt, mode, source, target, checkpoint = sys.argv[1:6]
spark = (SparkSession.builder.appName("spark file sink").master("local[*]")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
schema = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP"
def columns(rows):
    return rows.withColumn("dt", F.date_format("ts", "yyyy-MM-dd")).withColumn("hr", F.date_format("ts", "HH"))
if mode == "batch":
    columns(spark.read.format(fmt).schema(schema).load(source)).write.format(fmt).partitionBy("dt", "hr").save(target)
else:
    rows = columns(spark.readStream.format(fmt).schema(schema).load(source).withWatermark("ts", "0 seconds"))
    query = (rows.writeStream.format(fmt).partitionBy("dt", "hr").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(target))
    query.awaitTermination()
spark.stop()
"""


def write_input(directory: Path, fmt: str, rows: int, hours: int, files: int) -> None:
    """``rows`` events spread evenly over ``hours`` hours from START, in ``files`` files of ``fmt``
    (csv or json lines; timestamps as ``yyyy-MM-dd HH:mm:ss.SSS``, which both engines read by default)."""
    directory.mkdir(parents=True)
    step = timedelta(hours=hours) / rows
    per_file = -(-rows // files)
    for index in range(files):
        lines = []
        for i in range(index * per_file, min(rows, (index + 1) * per_file)):
            ts = (START + step * i).isoformat(sep=" ", timespec="milliseconds")
            if fmt == "csv":
                lines.append(f"{i},user-{i % 1000},{i * 0.01:.2f},{ts}\n")
            else:
                lines.append(f'{{"id":{i},"user_id":"user-{i % 1000}","amount":{i * 0.01:.2f},"ts":"{ts}"}}\n')
        (directory / f"part-{index:05d}.{fmt}").write_text("".join(lines))


def statements(
    fmt: str, source: Path, target: Path, policy: str, prefix: str = "", sink_format: str | None = None
) -> list[str]:
    """The source and sink DDL and the INSERT, in Flink SQL, as both Flink and sqlext run them (the sink in
    ``sink_format``, default ``fmt``)."""
    sink_options = {
        "connector": "filesystem",
        "path": target.as_uri(),
        "format": sink_format or fmt,
        "sink.partition-commit.trigger": "partition-time",
        "sink.partition-commit.delay": "1 h",
        "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        "sink.partition-commit.policy.kind": policy,
    }
    rendered = ",\n  ".join(f"'{k}' = '{v}'" for k, v in sink_options.items())
    return [
        f"CREATE TABLE {prefix}events_src ({SOURCE_COLUMNS}, WATERMARK FOR ts AS ts - INTERVAL '0' SECOND) "
        f"WITH ('connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = '{fmt}')",
        f"CREATE TABLE {prefix}events ({SINK_COLUMNS}) PARTITIONED BY (dt, hr) WITH (\n  {rendered}\n)",
        f"INSERT INTO {prefix}events {SELECT.format(source=f'{prefix}events_src')}",
    ]


def flink_command(work: Path, fmt: str, mode: str, source: Path) -> list[str]:
    request = {
        "mode": mode,
        "config": {
            "parallelism.default": str(os.cpu_count() or 1),
            "execution.checkpointing.interval": "10 s",
            "restart-strategy.type": "none",  # a failure fails the run instead of restarting forever
        },
        "statements": statements(fmt, source, work / "table", "success-file"),
    }
    (work / "job.json").write_text(json.dumps(request))
    return [str(FLINK_VENV / "bin" / "python"), str(FLINK_JOB), str(work / "job.json")]


def sqlext_script(work: Path, fmt: str, mode: str, source: Path, sink_format: str | None = None) -> Path:
    database = f"bench_{work.name.replace('-', '_')}"
    lines = [
        f"CREATE DATABASE {database}",
        f"SET 'execution.runtime-mode' = '{mode}'",
        "SET 'execution.checkpointing.interval' = '10 s'",
        *statements(fmt, source, work / "table", "metastore,success-file", f"{database}.", sink_format),
    ]
    script = work / "insert.sql"
    script.write_text(";\n".join(lines) + ";\n")
    return script


def sqlext_command(
    work: Path,
    fmt: str,
    mode: str,
    source: Path,
    metastore_uri: str,
    sink_format: str | None = None,
    extra: dict[str, str] | None = None,
) -> list[str]:
    script = sqlext_script(work, fmt, mode, source, sink_format)
    conf = {
        "spark.sqlext.metastore.uris": metastore_uri,
        "spark.ui.enabled": "false",
        "spark.sqlext.checkpoint.root": (work / "checkpoints").as_uri(),
        **(extra or {}),
    }
    return [sys.executable, "-m", "sqlext.cli", "run", str(script), *(f"--conf={k}={v}" for k, v in conf.items())]


def spark_command(work: Path, fmt: str, mode: str, source: Path) -> list[str]:
    program = work.parent / "spark_file_sink.py"
    if not program.exists():
        program.write_text(SPARK_PROGRAM)
    paths = [source.as_uri(), (work / "table").as_uri(), (work / "checkpoint").as_uri()]
    return [sys.executable, str(program), fmt, mode, *paths]


def environments() -> dict[str, dict[str, str]]:
    spark = dict(os.environ)
    spark["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), spark.get("PYTHONPATH", "")]))
    flink = {key: value for key, value in os.environ.items() if not key.startswith(("PYSPARK", "SPARK"))}
    flink.pop("PYTHONPATH", None)
    return {"flink": flink, "sqlext": spark, "spark_file_sink": spark}


def run_process(argv: list[str], env: dict[str, str], log: Path) -> float:
    """Wall seconds of a whole process; its output goes to ``log``."""
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({done.returncode}):\n{log.read_text()[-4000:]}")
    return seconds


def check_output(table: Path, rows: int, hours: int, success_file: bool) -> None:
    """Every row landed, in ``hours`` partitions, each with a success file when committed."""
    partitions = sorted(table.glob("dt=*/hr=*"))
    assert len(partitions) == hours, f"{table}: {len(partitions)} partitions, expected {hours}"
    if success_file:
        missing = [p for p in partitions if not (p / "_SUCCESS").exists()]
        assert not missing, f"{table}: no success file in {missing[:3]}"
    written = 0
    for partition in partitions:
        for data in partition.iterdir():
            if data.is_file() and not data.name.startswith((".", "_")):
                with data.open("rb") as lines:
                    written += sum(1 for _ in lines)
    assert written == rows, f"{table}: {written} rows, expected {rows}"


def run_round(
    home: Path, tag: str, source: Path, fmt: str, mode: str, rows: int, hours: int, hms_uri: str, order: list[str]
) -> dict[str, float]:
    """Each variant once, in ``order``, checked; seconds per variant."""
    envs, seconds = environments(), {}
    for variant in order:
        work = home / f"{tag}-{fmt}-{mode}-{variant}"
        work.mkdir()
        if variant == "flink":
            argv = flink_command(work, fmt, mode, source)
        elif variant == "sqlext":
            argv = sqlext_command(work, fmt, mode, source, hms_uri)
        else:
            argv = spark_command(work, fmt, mode, source)
        seconds[variant] = run_process(argv, envs[variant], work / "process.log")
        check_output(work / "table", rows, hours, success_file=variant != "spark_file_sink")
        print(f"  {tag} {fmt} {mode} {variant}: {seconds[variant]:.1f} s", flush=True)
    return seconds


def profile_sqlext(home: Path, source: Path, fmt: str, hms_uri: str, rows: int, hours: int) -> dict[str, Any]:
    """One streaming sqlext run in this process under cProfile, with Spark's event log: the top
    functions by cumulative time and each Spark stage's seconds."""
    from sqlext.spark.runner import run_file

    work = home / f"profile-{fmt}"
    events = work / "events"
    events.mkdir(parents=True)
    script = sqlext_script(work, fmt, "streaming", source)
    conf = {
        "spark.sqlext.metastore.uris": hms_uri,
        "spark.ui.enabled": "false",
        "spark.sqlext.checkpoint.root": (work / "checkpoints").as_uri(),
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false",  # Spark 4 compresses with zstd by default
    }
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.runcall(run_file, str(script), conf)
    wall = time.perf_counter() - started
    check_output(work / "table", rows, hours, success_file=True)
    stats = pstats.Stats(profiler)
    top = sorted(stats.stats.items(), key=lambda item: item[1][3], reverse=True)  # type: ignore[attr-defined]
    functions = [
        {
            "function": f"{Path(file).name}:{line}({name})",
            "cumulative_s": round(entry[3], 3),
            "own_s": round(entry[2], 3),
        }
        for (file, line, name), entry in top[:40]
    ]
    return {"wall_s": wall, "top_functions": functions, "stages": stage_seconds(events)}


def stage_seconds(events: Path) -> list[dict[str, Any]]:
    """Each completed stage of the event log: name, tasks, seconds, summed task run time."""
    stages: dict[int, dict[str, Any]] = {}
    for log in sorted(path for path in events.rglob("*") if path.is_file()):  # Spark 4: eventlog_v2_*/events_*
        for line in log.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = event.get("Event")
            if kind == "SparkListenerTaskEnd":
                stage = stages.setdefault(event["Stage ID"], {"task_run_s": 0.0})
                stage["task_run_s"] += event.get("Task Metrics", {}).get("Executor Run Time", 0) / 1000
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                stage = stages.setdefault(info["Stage ID"], {"task_run_s": 0.0})
                stage.update(
                    name=info["Stage Name"].split(" at ")[0],
                    tasks=info["Number of Tasks"],
                    seconds=(info["Completion Time"] - info["Submission Time"]) / 1000,
                )
    return [{"stage": sid, **stage} for sid, stage in sorted(stages.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", default="csv,json")
    parser.add_argument("--modes", default="streaming,batch")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if not (FLINK_VENV / ".installed").is_file():
        raise SystemExit(f"no Flink venv at {FLINK_VENV}: run `make flink-venv` or set SQLEXT_FLINK_VENV")
    formats, modes = args.formats.split(","), args.modes.split(",")
    home = scratch_dir()
    seconds: dict[str, dict[str, list[float]]] = {}
    failures: dict[str, str] = {}
    profiles: dict[str, Any] = {}
    with metastore(home) as hms:
        sources = {}
        for fmt in formats:
            print(f"generating {args.rows:,} {fmt} rows over {args.hours} hours in {args.files} files ...", flush=True)
            sources[fmt] = home / f"input-{fmt}"
            write_input(sources[fmt], fmt, args.rows, args.hours, args.files)
        # One warm-up round (not counted) on a small input: the disk cache, the jars, the metastore.
        warmup, warmup_rows = home / "warmup", min(args.rows, 10_000)
        write_input(warmup, formats[0], warmup_rows, args.hours, 2)
        run_round(home, "warmup", warmup, formats[0], modes[0], warmup_rows, args.hours, hms.uri, [*VARIANTS])
        for mode in modes:
            for fmt in formats:
                key = f"{fmt}/{mode}"
                runs: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
                try:
                    for repeat in range(args.repeats):
                        # Rotate the order every repeat, so that no variant always runs first (or after another).
                        order = [*VARIANTS[repeat % 3 :], *VARIANTS[: repeat % 3]]
                        round_seconds = run_round(
                            home, f"r{repeat}", sources[fmt], fmt, mode, args.rows, args.hours, hms.uri, order
                        )
                        for variant, value in round_seconds.items():
                            runs[variant].append(value)
                    seconds[key] = runs
                except (RuntimeError, AssertionError) as exc:  # report the other groups all the same
                    failures[key] = str(exc)[-2000:]
                    print(f"  {key} failed: {failures[key]}", flush=True)
                report(args, seconds, failures, profiles)
            if args.profile and mode == "streaming":
                for fmt in formats:
                    profiles[fmt] = profile_sqlext(home, sources[fmt], fmt, hms.uri, args.rows, args.hours)
                    report(args, seconds, failures, profiles)
    shutil.rmtree(home, ignore_errors=True)


def report(
    args: argparse.Namespace,
    seconds: dict[str, dict[str, list[float]]],
    failures: dict[str, str],
    profiles: dict[str, Any],
) -> None:
    """Print the table (and profiles) and write the results so far."""
    medians = {key: {v: median(values) for v, values in runs.items()} for key, runs in seconds.items()}
    ratios = {
        key: {
            "sqlext_vs_flink": m["flink"] / m["sqlext"],
            "sqlext_vs_spark_file_sink": m["spark_file_sink"] / m["sqlext"],
        }
        for key, m in medians.items()
    }
    if medians:
        print_table(
            ["format/mode", *(f"{v} median s" for v in VARIANTS), "sqlext vs flink", "sqlext vs spark"],
            [
                [
                    key,
                    *(f"{medians[key][v]:.2f}" for v in VARIANTS),
                    f"{ratios[key]['sqlext_vs_flink']:.2f}x",
                    f"{ratios[key]['sqlext_vs_spark_file_sink']:.2f}x",
                ]
                for key in medians
            ],
        )
    for fmt, profile in profiles.items():
        print(f"profile of a streaming sqlext {fmt} run ({profile['wall_s']:.1f} s in the driver):")
        for stage in profile["stages"]:
            print(
                f"  stage {stage['stage']} {stage.get('name')}: {stage.get('seconds', 0):.2f} s, "
                f"{stage.get('tasks')} tasks, {stage['task_run_s']:.2f} s task run time"
            )
        for entry in profile["top_functions"][:20]:
            print(f"  {entry['cumulative_s']:8.2f} s cumulative  {entry['own_s']:8.2f} s own  {entry['function']}")
    result = {
        "params": vars(args),
        "seconds": seconds,
        "failures": failures,
        "medians": medians,
        "ratios": ratios,
        "profiles": profiles,
    }
    print(f"written {write_result('flink_sink', result)}")


if __name__ == "__main__":
    main()
