"""Where a micro-batch's time goes (issue #37): Spark's own file sink next to a sqlext streaming insert
(``partition-time``, ``metastore,success-file``, overlapped commit), batch by batch.

    python -m bench.batch_path [--rows 4000000] [--hours 12] [--batches 12] [--repeats 2] [--code DIR ...]

The workload is bench.peers': ``--batches`` parquet files of hourly events, one per micro-batch
(``maxFilesPerTrigger`` 1, ``availableNow``). Each run is a process of its own (a Spark session, a small
warm-up write, then the timed run), all on one HMS, interleaved; ``--code`` runs the sqlext insert once per
source tree given (``PYTHONPATH``), so two trees (before/after a change) are measured in the same run.

Per run it reports, as medians over the batches that read rows:
- Spark's phases of the batch (``recentProgress[i].durationMs``: ``addBatch`` is the sink's part);
- Spark's jobs, stages and tasks per batch, and the jobs' wall time (the event log), by call site;
- for sqlext, the phases of ``foreachBatch`` on py4j's callback thread (timers around the steps of
  ``BatchCommitter.process``) and a cProfile of that thread over all batches (top functions by own time
  and by cumulative time), and the background commit of each batch (``_finish``), which runs beside the
  next batch's write.
Writes bench/results/batch_path.json.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import metastore, scratch_dir, spark_session, write_events, write_result
from bench.sink_throughput import events, partition_time_table, run_sqlext_insert, spark_file_sink

START = datetime(2026, 11, 22)
WARMUP_ROWS = 20_000
DATABASE = "bench"
#: Spark's phases of a micro-batch, in the order they run.
PHASES = ("latestOffset", "walCommit", "getBatch", "queryPlanning", "addBatch", "commitOffsets", "triggerExecution")


class StepTimers:
    """Wall time of named steps, per call, by the thread that ran them."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = defaultdict(list)
        self._patched: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                thread = threading.current_thread().name.rstrip("0123456789_-")
                self.calls[f"{label} [{thread}]"].append(time.perf_counter() - started)

        self._patched.append((owner, name, original))
        setattr(owner, name, timed)

    def clear(self) -> None:
        self.calls.clear()


class CallbackProfile:
    """A cProfile of ``foreachBatch``'s callback thread: enabled around each call of the wrapped function."""

    def __init__(self) -> None:
        self.profile = cProfile.Profile()

    def wrap(self, owner: Any, name: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def profiled(*args: Any, **kwargs: Any) -> Any:
            self.profile.enable()
            try:
                return original(*args, **kwargs)
            finally:
                self.profile.disable()

        setattr(owner, name, profiled)

    def top(self, key: str, count: int = 25) -> str:
        out = io.StringIO()
        pstats.Stats(self.profile, stream=out).sort_stats(key).print_stats(count)
        return out.getvalue()


def _instrument() -> tuple[StepTimers, CallbackProfile]:
    """Timers around the steps of a sqlext batch, and the callback thread's profile."""
    from sqlext.connectors.filesystem import sink
    from sqlext.connectors.filesystem.commit import committer, plan
    from sqlext.connectors.filesystem.commit_log import CommitLog

    timers = StepTimers()
    timers.wrap(committer.BatchCommitter, "process", "foreachBatch: process (all steps)")
    timers.wrap(plan.BatchPlanner, "stage", "1 stage: Spark's write into staging")
    timers.wrap(plan.BatchPlanner, "list_staged", "1 list staged files + footers")
    timers.wrap(sink, "batch_end_watermark", "1 end watermark (JVM plan walk)")
    timers.wrap(sink, "read_batch_info", "0 read Spark's offset log")
    timers.wrap(committer.BatchCommitter, "wait_committed", "2 wait for previous commit")
    timers.wrap(plan.BatchPlanner, "plan", "2 plan")
    timers.wrap(CommitLog, "write", "2/3 commit log write")
    timers.wrap(CommitLog, "get", "commit log read")
    timers.wrap(committer.BatchCommitter, "_finish", "3-4 move + partition commit")
    profile = CallbackProfile()
    profile.wrap(committer.BatchCommitter, "process")
    return timers, profile


def _spark(spark: Any, input_dir: Path, work: Path, name: str, metastore_uri: str) -> Any:
    return spark_file_sink(spark, input_dir, work, files_per_trigger=1)


def _sqlext_sync(spark: Any, input_dir: Path, work: Path, name: str, metastore_uri: str) -> Any:
    return _sqlext(spark, input_dir, work, name, metastore_uri, **{"sink.partition-commit.async": "false"})


def _sqlext(spark: Any, input_dir: Path, work: Path, name: str, metastore_uri: str, **options: str) -> Any:
    from sqlext.catalog.hms import Catalog
    from sqlext.catalog.metastore.client import MetastoreClient

    table = partition_time_table(name, work / "table", **options)
    client = MetastoreClient(metastore_uri)
    try:
        Catalog(client).create_table(table, if_not_exists=False)
    finally:
        client.close()
    return run_sqlext_insert(spark, table, metastore_uri, events(spark, input_dir, 1), work / "checkpoint")


VARIANTS: dict[str, Callable[[Any, Path, Path, str, str], Any]] = {
    "spark": _spark,
    "sqlext": _sqlext,
    "sqlext-sync": _sqlext_sync,
}


def worker(spec_path: Path) -> None:
    spec = json.loads(spec_path.read_text())
    work = Path(spec["work"])
    event_dir = work / "events"
    event_dir.mkdir(parents=True)
    extra = {
        "spark.sql.streaming.numRecentProgressUpdates": "1000",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": event_dir.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    spark = spark_session(spec["metastore"], work / "warehouse", 2, extra)
    run = VARIANTS[spec["variant"]]
    timers, profile = _instrument() if spec["variant"].startswith("sqlext") else (None, None)
    try:
        run(spark, Path(spec["warmup_input"]), work / "warmup", spec["name"] + "_w", spec["metastore"])
        if timers is not None and profile is not None:
            timers.clear()
            profile.profile = cProfile.Profile()
        window_start = time.time()
        started = time.perf_counter()
        query = run(spark, Path(spec["input"]), work / "run", spec["name"], spec["metastore"])
        seconds = time.perf_counter() - started
        window = (window_start, time.time())
        load = os.getloadavg()[0]
        progress = [json.loads(p.json) for p in query.recentProgress if p.numInputRows > 0]
    finally:
        spark.stop()
    import sqlext

    result = {
        "sqlext": sqlext.__file__,
        "seconds": seconds,
        "load": load,
        "batches": len(progress),
        "phases_ms": {phase: [p["durationMs"].get(phase, 0) for p in progress] for phase in PHASES},
        **_jobs(event_dir, window),
    }
    if timers is not None and profile is not None:
        result["steps_s"] = dict(timers.calls)
        result["profile_tottime"] = profile.top("tottime")
        result["profile_cumulative"] = profile.top("cumulative")
    (spec_path.parent / "result.json").write_text(json.dumps(result))


def _jobs(event_dir: Path, window: tuple[float, float]) -> dict[str, list[dict[str, Any]]]:
    """The Spark jobs (call site, stages, tasks, wall seconds) and SQL executions (root operator, wall
    seconds) that started in ``window`` (epoch s), from the event log."""
    starts: dict[int, dict[str, Any]] = {}
    ends: dict[int, float] = {}
    executions: dict[int, dict[str, Any]] = {}
    tasks: list[dict[str, Any]] = []
    execution_ends: dict[int, float] = {}
    for log_file in sorted(p for p in event_dir.rglob("*") if p.is_file() and not p.name.startswith(".")):
        for line in log_file.read_text().splitlines():
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                properties = event.get("Properties") or {}
                starts[event["Job ID"]] = {
                    "submitted": event["Submission Time"] / 1000,
                    "call_site": properties.get("callSite.short", ""),
                    "description": properties.get("spark.job.description", ""),
                    "stages": len(event["Stage Infos"]),
                    "tasks": sum(s["Number of Tasks"] for s in event["Stage Infos"]),
                }
            elif kind == "SparkListenerTaskEnd":
                metrics = event.get("Task Metrics") or {}
                info = event["Task Info"]
                tasks.append(
                    {
                        "launched": info["Launch Time"] / 1000,
                        "seconds": (info["Finish Time"] - info["Launch Time"]) / 1000,
                        "run_s": metrics.get("Executor Run Time", 0) / 1000,
                        "cpu_s": metrics.get("Executor CPU Time", 0) / 1e9,
                        "gc_s": metrics.get("JVM GC Time", 0) / 1000,
                    }
                )
            elif kind == "SparkListenerJobEnd":
                ends[event["Job ID"]] = event["Completion Time"] / 1000
            elif kind and kind.endswith("SparkListenerSQLExecutionStart"):
                executions[event["executionId"]] = {
                    "submitted": event["time"] / 1000,
                    "description": event.get("description", "")[:80],
                    "root": event.get("physicalPlanDescription", "").split("\n", 2)[1][:80]
                    if event.get("physicalPlanDescription")
                    else "",
                }
            elif kind and kind.endswith("SparkListenerSQLExecutionEnd"):
                execution_ends[event["executionId"]] = event["time"] / 1000
    jobs = [
        {**job, "seconds": ends.get(job_id, job["submitted"]) - job["submitted"]}
        for job_id, job in sorted(starts.items())
        if window[0] <= job["submitted"] <= window[1]
    ]
    sql = [
        {**execution, "seconds": execution_ends.get(key, execution["submitted"]) - execution["submitted"]}
        for key, execution in sorted(executions.items())
        if window[0] <= execution["submitted"] <= window[1]
    ]
    timed_tasks = [task for task in tasks if window[0] <= task["launched"] <= window[1]]
    return {"jobs": jobs, "sql_executions": sql, "tasks": timed_tasks}


def run_worker(variant: str, code: str, home: Path, tag: str, settings: dict[str, Any]) -> dict[str, Any]:
    work = home / "runs" / tag
    work.mkdir(parents=True)
    spec = {**settings, "variant": variant, "work": str(work), "name": tag.replace("-", "_")}
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(spec))
    here = str(Path(__file__).resolve().parent.parent)
    # sqlext from ``code``, this bench from here (``code`` may predate it).
    bootstrap = (
        f"import sys; sys.path.insert(0, {code!r}); import sqlext; sys.path.insert(0, {here!r}); "
        f"from bench.batch_path import worker; from pathlib import Path; worker(Path({str(spec_path)!r}))"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", bootstrap], env=env, cwd=work, check=True)
    return dict(json.loads((work / "result.json").read_text()))


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


#: Task measures summed per batch: wall seconds, executor run time, executor CPU time, GC time.
TASK_MEASURES = ("seconds", "run_s", "cpu_s", "gc_s")


def _task_sum(result: dict[str, Any], key: str) -> float:
    return float(sum(task[key] for task in result["tasks"]))


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """Medians per batch: Spark's phases, jobs/stages/tasks and job seconds by call site, sqlext's steps."""
    batches = max(1, result["batches"])
    steps: dict[str, list[float]] = result.get("steps_s", {})
    by_site: dict[str, list[float]] = defaultdict(list)
    for job in result["jobs"]:
        by_site[job["call_site"]].append(job["seconds"])
    by_root: dict[str, list[float]] = defaultdict(list)
    for execution in result["sql_executions"]:
        by_root[execution["root"]].append(execution["seconds"])
    return {
        "seconds": result["seconds"],
        "load": result["load"],
        "phases_median_ms": {k: _median(v) for k, v in result["phases_ms"].items()},
        "jobs_per_batch": len(result["jobs"]) / batches,
        "stages_per_batch": sum(j["stages"] for j in result["jobs"]) / batches,
        "tasks_per_batch": sum(j["tasks"] for j in result["jobs"]) / batches,
        "job_seconds_by_call_site": {k: [len(v), round(sum(v), 2), round(_median(v), 3)] for k, v in by_site.items()},
        "sql_seconds_by_root": {k: [len(v), round(sum(v), 2), round(_median(v), 3)] for k, v in by_root.items()},
        "task_sums_per_batch_s": {key: round(_task_sum(result, key) / batches, 3) for key in TASK_MEASURES},
        "steps_median_s": {k: [len(v), round(_median(v), 3), round(sum(v), 2)] for k, v in steps.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--hours", type=int, default=12)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--code", action="append", help="a sqlext source tree to run the insert from (repeatable)")
    parser.add_argument("--sync", action="store_true", help="also run sqlext with sink.partition-commit.async=false")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    here = str(Path(__file__).resolve().parent.parent)
    trees = args.code or [here]
    home = scratch_dir()
    loads = [os.getloadavg()]
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with metastore(home) as hms:
        from sqlext.catalog.metastore.client import MetastoreClient

        client = MetastoreClient(hms.uri)
        client.create_database(DATABASE)
        client.close()
        input_dir, warmup_dir = home / "input", home / "warmup-input"
        write_events(input_dir, args.rows, args.hours, args.batches, START)
        write_events(warmup_dir, WARMUP_ROWS, 2, 2, START - timedelta(days=1))
        settings = {"input": str(input_dir), "warmup_input": str(warmup_dir), "metastore": hms.uri}
        variants = [("spark", here, "spark")] + [("sqlext", tree, f"sqlext@{tree}") for tree in trees]
        if args.sync:
            variants.append(("sqlext-sync", here, "sqlext-sync"))
        for repeat in range(args.repeats):
            ordered = variants[repeat % len(variants) :] + variants[: repeat % len(variants)]
            for index, (variant, code, label) in enumerate(ordered):
                result = run_worker(variant, code, home, f"r{repeat}-{index}-{variant}", settings)
                runs[label].append(result)
                print(f"  {label} run {repeat + 1}: {result['seconds']:.1f} s, load {result['load']:.1f}", flush=True)
        loads.append(os.getloadavg())
    shutil.rmtree(home, ignore_errors=True)
    summaries = {label: [summary(r) for r in results] for label, results in runs.items()}
    for label, items in summaries.items():
        print(f"\n=== {label}")
        for item in items:
            print(json.dumps(item, indent=1))
        if "profile_tottime" in runs[label][-1]:
            print(runs[label][-1]["profile_cumulative"])
            print(runs[label][-1]["profile_tottime"])
    path = write_result(
        "batch_path",
        {
            "params": {k: v for k, v in vars(args).items() if k != "worker"},
            "loads": loads,
            "runs": runs,
            "summary": summaries,
        },
    )
    print(f"written {path}")


if __name__ == "__main__":
    main()
