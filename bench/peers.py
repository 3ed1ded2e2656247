"""Peers (issue #37): the same hourly events, streamed in micro-batches, appended into an hourly-partitioned
table by (s) Spark's own file sink, (q) a sqlext insert, and the table formats a user would choose instead:
(i) Apache Iceberg, (p) Apache Paimon, (h) Apache Hudi, each through its own Spark runtime and commit.

    python -m bench.peers [--rows 2000000] [--hours 8] [--batches 8] [--repeats 2] [--variants s,q,i,p,h]

The input is ``--batches`` parquet files in event-time order (``--hours`` of events), read one file per
micro-batch (``maxFilesPerTrigger`` 1, ``availableNow``) with a watermark on ``ts``; every variant gets the
same stream (``bench.sink_throughput.events``) and writes parquet partitioned by ``dt``/``hr``:
- (s) ``writeStream.format("parquet").partitionBy("dt", "hr")``: no catalog, readable by path through its
  ``_spark_metadata`` log;
- (q) a sqlext streaming insert: ``partition-time`` commit (delay 1 h), ``metastore,success-file``;
- (i) Iceberg: a table of the session's Hive metastore (Iceberg's ``HiveCatalog``), identity partitions
  ``dt``, ``hr``, ``fanout-enabled``; one snapshot per micro-batch;
- (p) Paimon: an append table (no primary key) in a filesystem catalog; one snapshot per micro-batch;
- (h) Hudi: a copy-on-write table, operation ``insert``, record key ``id``, hive-style ``dt``/``hr``
  partitions; one commit per micro-batch.

Fairness: each run is a process of its own (a runtime's jars, catalog and extensions differ, and one JVM
per run keeps one variant's JIT, caches and garbage from the next), all on the same metastore, with the
same Spark settings (``bench.common.spark_session``: ``local[--cores]``, 4 GB driver), the same input and
the same small warm-up write in the same process before the timed run. What differs is what each runtime
requires: (i) and (p) add their catalog only (no session extension: the bench's SQL is Spark's own), (h)
Hudi's session extension and catalog and Kryo as Spark's serializer, as Hudi's quick start sets them.
Runs are interleaved in a rotating order. The timed span is from the query's start to all its rows being
readable through its catalog (for sqlext: after its end-of-input commit); session start and table
creation are outside it. A runtime is taken from Maven Central (``sqlext.runtime.jars``, the shaded jar alone);
the candidates are tried newest first, and one that does not resolve or does not load on this Spark is
reported with its error, not run.

Reported per variant, as Paimon's cluster benchmark does: rows/s, bytes/s per core (input bytes / seconds /
``--cores``), the CPU the process used in the run (JVM + Python driver) as cores, and freshness: per
micro-batch, from its end (Spark's progress: trigger start + ``triggerExecution``) to its rows being
readable through the catalog (s: its ``_spark_metadata`` entry; q: the last of its partitions committed in
the HMS, ``sqlext.commit-time``; i, p, h: the snapshot or commit holding it), median and max over all
batches of all runs. A commit made inside the batch gives a freshness <= 0: the rows were readable when
Spark ended the batch. Every run is checked: all rows (count and sum of ids) read back through its catalog.
Writes bench/results/peers.json (``--result NAME``: bench/results/NAME.json).

Another Spark: run it with another venv's interpreter (the workers run under the same interpreter, so on its
pyspark); e.g. Spark 4.1, for which Iceberg's runtimes are built: ``python3.11 -m venv .venv-spark41 &&
.venv-spark41/bin/pip install pyspark==4.1.4 -e .``, then ``PYTHONPATH=$PWD .venv-spark41/bin/python -m
bench.peers --variants s,q,i --result peers_spark41``. The pyspark version is in the results file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pyspark

from bench.common import metastore, print_table, scratch_dir, spark_session, write_events, write_result
from bench.sink_throughput import events, partition_time_table, run_sqlext_insert, spark_file_sink
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.runtime import jars

START = datetime(2026, 11, 22)
WARMUP_ROWS = 20_000
DATABASE = "bench"
WORKER_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Run:
    """What one variant's worker process writes: the input, its own directory, the table's name."""

    input_dir: Path
    work: Path
    name: str
    metastore_uri: str

    @property
    def table_dir(self) -> Path:
        return self.work / "table"


@dataclass(frozen=True)
class Peer:
    """One variant: its runtime's Maven coordinates (candidates, newest first; none for Spark and sqlext),
    the session settings it needs, and how it creates, writes, counts and tells when each batch became
    readable."""

    key: str
    label: str
    candidates: tuple[str, ...]
    settings: Callable[[Run], dict[str, str]]
    prepare: Callable[[Any, Run], None]
    write: Callable[[Any, Run], Any]
    read: Callable[[Any, Run], Any]
    visible_at: Callable[[Any, Run, int], list[float]]
    location: Callable[[Run], Path] = lambda run: run.table_dir


# --- (s) Spark's file sink -------------------------------------------------------------------------------


def _spark_write(spark: Any, run: Run) -> Any:
    return spark_file_sink(spark, run.input_dir, run.work, files_per_trigger=1)


def _spark_visible(spark: Any, run: Run, batches: int) -> list[float]:
    """Batch N is readable by path once ``_spark_metadata/N`` (or ``N.compact``) is written."""
    log = run.table_dir / "_spark_metadata"
    times = []
    for batch in range(batches):
        entry = next(p for p in (log / str(batch), log / f"{batch}.compact") if p.exists())
        times.append(entry.stat().st_mtime)
    return times


# --- (q) sqlext ------------------------------------------------------------------------------------------


def _sqlext_prepare(spark: Any, run: Run) -> None:
    client = MetastoreClient(run.metastore_uri)
    try:
        Catalog(client).create_table(partition_time_table(run.name, run.table_dir), if_not_exists=False)
    finally:
        client.close()


def _sqlext_write(spark: Any, run: Run) -> Any:
    table = partition_time_table(run.name, run.table_dir)
    return run_sqlext_insert(spark, table, run.metastore_uri, events(spark, run.input_dir, 1), run.work / "checkpoint")


def _sqlext_visible(spark: Any, run: Run, batches: int) -> list[float]:
    """A batch's rows are readable once the last partition they went into is committed in the HMS."""
    client = MetastoreClient(run.metastore_uri)
    try:
        names = client.get_partition_names(DATABASE, run.name)
        partitions = client.get_partitions_by_names(DATABASE, run.name, names)
    finally:
        client.close()
    committed = {tuple(p.values): int(p.parameters["sqlext.commit-time"]) / 1000 for p in partitions if p.parameters}
    return [max(committed[part] for part in parts) for parts in _batch_partitions(run.input_dir)[:batches]]


def _batch_partitions(input_dir: Path) -> list[set[tuple[str, str]]]:
    """The (dt, hr) partitions of each input file, in the order the stream reads them (one file a batch)."""
    found = []
    for path in sorted(input_dir.glob("*.parquet")):
        stamps = pq.read_table(path, columns=["ts"]).column("ts").to_pylist()
        found.append({(ts.strftime("%Y-%m-%d"), ts.strftime("%H")) for ts in stamps})
    return found


# --- (i) Iceberg -----------------------------------------------------------------------------------------

ICEBERG_CATALOG = "ice"


def _iceberg_settings(run: Run) -> dict[str, str]:
    prefix = f"spark.sql.catalog.{ICEBERG_CATALOG}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "hive",
        f"{prefix}.uri": run.metastore_uri,
        # Iceberg's default commit takes an HMS lock (lock, show_locks). The results in bench/README.md were
        # measured with it off, when the embedded HMS could not serve lock calls (it can since sqlext creates
        # Hive's transaction tables at start); kept off so that a rerun compares with them. Without the lock
        # Iceberg commits by the HMS's conditional alter_table on the metadata location.
        f"{prefix}.hadoop.iceberg.engine.hive.lock-enabled": "false",
    }


def _iceberg_prepare(spark: Any, run: Run) -> None:
    spark.sql(
        f"CREATE TABLE {ICEBERG_CATALOG}.{DATABASE}.{run.name} ({_TABLE_COLUMNS}) USING iceberg "
        f"PARTITIONED BY (dt, hr) LOCATION '{run.table_dir.as_uri()}' "
        "TBLPROPERTIES ('write.format.default' = 'parquet', 'engine.hive.lock-enabled' = 'false')"
    )


def _iceberg_write(spark: Any, run: Run) -> Any:
    query = (
        events(spark, run.input_dir, 1)
        .writeStream.format("iceberg")
        .outputMode("append")
        .option("fanout-enabled", "true")
        .option("checkpointLocation", (run.work / "checkpoint").as_uri())
        .trigger(availableNow=True)
        .toTable(f"{ICEBERG_CATALOG}.{DATABASE}.{run.name}")
    )
    query.awaitTermination()
    return query


def _iceberg_read(spark: Any, run: Run) -> Any:
    return spark.table(f"{ICEBERG_CATALOG}.{DATABASE}.{run.name}")


def _iceberg_visible(spark: Any, run: Run, batches: int) -> list[float]:
    """One snapshot per micro-batch, committed (``committed_at``) when its rows became readable."""
    rows = spark.sql(
        f"SELECT unix_millis(committed_at) AS ms FROM {ICEBERG_CATALOG}.{DATABASE}.{run.name}.snapshots "
        "WHERE operation = 'append' ORDER BY committed_at"
    ).collect()
    return [row.ms / 1000 for row in rows]


# --- (p) Paimon ------------------------------------------------------------------------------------------

PAIMON_CATALOG = "paimon"


def _paimon_warehouse(run: Run) -> Path:
    """One per worker process (its warm-up and timed tables side by side), as the session's catalog is."""
    return run.work.parent / "paimon-warehouse"


def _paimon_table_dir(run: Run) -> Path:
    return _paimon_warehouse(run) / f"{DATABASE}.db" / run.name


def _paimon_settings(run: Run) -> dict[str, str]:
    prefix = f"spark.sql.catalog.{PAIMON_CATALOG}"
    return {prefix: "org.apache.paimon.spark.SparkCatalog", f"{prefix}.warehouse": _paimon_warehouse(run).as_uri()}


def _paimon_prepare(spark: Any, run: Run) -> None:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {PAIMON_CATALOG}.{DATABASE}")
    spark.sql(
        f"CREATE TABLE {PAIMON_CATALOG}.{DATABASE}.{run.name} ({_TABLE_COLUMNS}) PARTITIONED BY (dt, hr) "
        "TBLPROPERTIES ('file.format' = 'parquet')"
    )


def _paimon_write(spark: Any, run: Run) -> Any:
    query = (
        events(spark, run.input_dir, 1)
        .writeStream.format("paimon")
        .outputMode("append")
        .option("checkpointLocation", (run.work / "checkpoint").as_uri())
        .trigger(availableNow=True)
        .start(_paimon_table_dir(run).as_uri())
    )
    query.awaitTermination()
    return query


def _paimon_read(spark: Any, run: Run) -> Any:
    return spark.table(f"{PAIMON_CATALOG}.{DATABASE}.{run.name}")


def _paimon_visible(spark: Any, run: Run, batches: int) -> list[float]:
    """One APPEND snapshot per micro-batch (compactions commit COMPACT ones), readable from its ``timeMillis``
    (set as the snapshot file is written)."""
    snapshots = []
    for path in (_paimon_table_dir(run) / "snapshot").glob("snapshot-*"):
        snapshot = json.loads(path.read_text())
        if snapshot.get("commitKind") == "APPEND":
            snapshots.append((snapshot["id"], snapshot["timeMillis"] / 1000))
    return [at for _, at in sorted(snapshots)]


# --- (h) Hudi --------------------------------------------------------------------------------------------


def _hudi_settings(run: Run) -> dict[str, str]:
    return {
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    }


def _hudi_write(spark: Any, run: Run) -> Any:
    options = {
        "hoodie.table.name": run.name,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.operation": "insert",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt,hr",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.table.timeline.timezone": "UTC",
        "checkpointLocation": (run.work / "checkpoint").as_uri(),
    }
    query = (
        events(spark, run.input_dir, 1)
        .writeStream.format("hudi")
        .outputMode("append")
        .options(**options)
        .trigger(availableNow=True)
        .start(run.table_dir.as_uri())
    )
    query.awaitTermination()
    return query


def _hudi_read(spark: Any, run: Run) -> Any:
    return spark.read.format("hudi").load(run.table_dir.as_uri())


#: A completed instant of Hudi's timeline: ``<requested>_<completed>.commit`` (1.x) or ``<requested>.commit``.
HUDI_COMMIT = re.compile(r"^(\d{17})(?:_(\d{17}))?\.commit$")


def _hudi_visible(spark: Any, run: Run, batches: int) -> list[float]:
    """One commit per micro-batch, readable from its completion time (in the name since Hudi 1.0, UTC as
    the table says; else the file's time)."""
    commits = []
    for timeline in (run.table_dir / ".hoodie" / "timeline", run.table_dir / ".hoodie"):
        for path in timeline.glob("*.commit") if timeline.is_dir() else ():
            matched = HUDI_COMMIT.match(path.name)
            if matched:
                completed = matched.group(2)
                at = _hudi_instant(completed) if completed else path.stat().st_mtime
                commits.append((matched.group(1), at))
    return [at for _, at in sorted(commits)]


def _hudi_instant(stamp: str) -> float:
    return datetime.strptime(stamp + "000", "%Y%m%d%H%M%S%f").replace(tzinfo=UTC).timestamp()


# --- the variants ----------------------------------------------------------------------------------------

_TABLE_COLUMNS = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP, dt STRING, hr STRING"


def _no_settings(run: Run) -> dict[str, str]:
    return {}


def _nothing(spark: Any, run: Run) -> None:
    return None


PEERS = {
    peer.key: peer
    for peer in (
        Peer(
            "s",
            "Spark's file sink (no catalog)",
            (),
            _no_settings,
            _nothing,
            _spark_write,
            lambda spark, run: spark.read.parquet(run.table_dir.as_uri()),
            _spark_visible,
        ),
        Peer(
            "q",
            "sqlext insert, partition-time, metastore + success file",
            (),
            _no_settings,
            _sqlext_prepare,
            _sqlext_write,
            lambda spark, run: spark.table(f"{DATABASE}.{run.name}"),
            _sqlext_visible,
        ),
        Peer(
            "i",
            "Apache Iceberg, Hive catalog",
            (
                "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0",
                "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0",
                "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.1",
            ),
            _iceberg_settings,
            _iceberg_prepare,
            _iceberg_write,
            _iceberg_read,
            _iceberg_visible,
        ),
        Peer(
            "p",
            "Apache Paimon, append table, filesystem catalog",
            (
                "org.apache.paimon:paimon-spark-4.1_2.13:2.0.0",
                "org.apache.paimon:paimon-spark-4.0_2.13:2.0.0",
                "org.apache.paimon:paimon-spark-4.0_2.13:1.4.2",
            ),
            _paimon_settings,
            _paimon_prepare,
            _paimon_write,
            _paimon_read,
            _paimon_visible,
            _paimon_table_dir,
        ),
        Peer(
            "h",
            "Apache Hudi, copy-on-write, insert",
            (
                "org.apache.hudi:hudi-spark4.1-bundle_2.13:1.2.0",
                "org.apache.hudi:hudi-spark4.0-bundle_2.13:1.2.0",
                "org.apache.hudi:hudi-spark4.0-bundle_2.13:1.1.0",
            ),
            _hudi_settings,
            _nothing,
            _hudi_write,
            _hudi_read,
            _hudi_visible,
        ),
    )
}


# --- the worker: one process, one variant, a warm-up then one timed run -----------------------------------


def worker(spec_path: Path) -> None:
    """Run ``spec_path``'s variant (a JSON spec written by :func:`run_worker`) and write its measures next to
    it."""
    spec = json.loads(spec_path.read_text())
    peer = PEERS[spec["peer"]]
    work = Path(spec["work"])
    timed = Run(Path(spec["input"]), work / "run", spec["name"], spec["metastore"])
    warmup = Run(Path(spec["warmup_input"]), work / "warmup", f"{spec['name']}_w", spec["metastore"])
    extra = {
        **peer.settings(timed),
        "spark.sql.streaming.numRecentProgressUpdates": "1000",
        **({"spark.jars": ",".join(spec["jars"])} if spec["jars"] else {}),
    }
    spark = spark_session(spec["metastore"], work / "warehouse", spec["cores"], extra)
    try:
        _measured(spark, peer, warmup, WARMUP_ROWS)
        result = {} if spec["warmup_only"] else _measured(spark, peer, timed, spec["rows"])
    finally:
        spark.stop()
    (spec_path.parent / "result.json").write_text(json.dumps(result))


def _measured(spark: Any, peer: Peer, run: Run, rows: int) -> dict[str, Any]:
    peer.prepare(spark, run)
    load_before = os.getloadavg()[0]
    cpu_before = _cpu_seconds(spark)
    started = time.perf_counter()
    query = peer.write(spark, run)
    seconds = time.perf_counter() - started
    cpu = _cpu_seconds(spark) - cpu_before
    load_after = os.getloadavg()[0]
    ends = _batch_ends(query)
    visible = peer.visible_at(spark, run, len(ends))
    if len(visible) != len(ends):
        raise AssertionError(f"{peer.key}: {len(ends)} batches, but {len(visible)} commits found: {visible}")
    counted = peer.read(spark, run).selectExpr("count(*) AS n", "sum(id) AS ids").first()
    expected = (rows, rows * (rows - 1) // 2)
    if (counted.n, counted.ids) != expected:
        raise AssertionError(f"{peer.key}: read back {counted.n} rows (ids {counted.ids}), expected {expected}")
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "batches": len(ends),
        "batch_seconds": [end - start for start, end in ends],
        "freshness_s": [at - end for (_, end), at in zip(ends, visible, strict=True)],
        "output_bytes": sum(p.stat().st_size for p in _data_files(peer.location(run))),
        "load_average": [load_before, load_after],
    }


def _batch_ends(query: Any) -> list[tuple[float, float]]:
    """(start, end) in epoch seconds of each micro-batch that read rows, in batch order."""
    found = []
    for progress in query.recentProgress:
        if progress.numInputRows > 0:
            start = datetime.fromisoformat(progress.timestamp.replace("Z", "+00:00")).timestamp()
            found.append((progress.batchId, start, start + progress.durationMs["triggerExecution"] / 1000))
    return [(start, end) for _, start, end in sorted(found)]


def _cpu_seconds(spark: Any) -> float:
    """CPU seconds used so far by this process and its JVM (pyspark's gateway process)."""
    own = time.process_time()
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None:
        return own
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return own + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _data_files(work: Path) -> list[Path]:
    """The data files under ``work``, less any metadata directory's."""
    return [
        p
        for p in work.rglob("*.parquet")
        if not any(part.startswith((".", "_")) or part == "metadata" for part in p.relative_to(work).parts[:-1])
    ]


# --- the parent: resolve runtimes, run the variants interleaved, report -----------------------------------


@dataclass
class Resolved:
    """A variant's runtime: the coordinate used and its jars, or why none could run."""

    coordinate: str | None = None
    jars: list[str] = field(default_factory=list)
    tried: list[dict[str, str]] = field(default_factory=list)


def run_worker(peer: Peer, home: Path, tag: str, settings: dict[str, Any], jar_paths: Sequence[str]) -> dict[str, Any]:
    """Run ``peer`` in a process of its own; its measures, or ``{"error": ...}`` with the exact error."""
    directory = home / f"{peer.key}-{tag}"
    directory.mkdir(parents=True)
    spec = {**settings, "peer": peer.key, "work": str(directory), "name": f"{peer.key}_{tag}", "jars": list(jar_paths)}
    spec_path = directory / "spec.json"
    spec_path.write_text(json.dumps(spec))
    log = directory / "worker.log"
    started = time.perf_counter()
    with log.open("w") as out:
        # A session of its own, so that a worker past its time is ended with its JVM (and nothing else).
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.peers", "--worker", str(spec_path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parent.parent,
            start_new_session=True,
        )
        try:
            returncode = process.wait(WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return {"error": f"no result after {WORKER_TIMEOUT_S} s (ended)", "log": str(log)}
    process_seconds = time.perf_counter() - started
    if returncode != 0:
        return {"error": exact_error(log.read_text()), "log": str(log)}
    return {**json.loads((directory / "result.json").read_text()), "process_seconds": process_seconds}


def exact_error(log: str) -> str:
    """The lines of a failed worker's output that say what failed: Java's exception and its cause, else
    Python's last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    java = [
        line.lstrip(": ")
        for line in lines
        if re.match(r"^(: )?(Caused by: )?[\w.$]+(Exception|Error)\b", line) and "py4j.protocol" not in line
    ]
    picked = list(dict.fromkeys(java))[:3]
    return "\n".join(picked or lines[-3:])


def _ivy_reason(report: str) -> str:
    """Ivy's verdict on an unresolved artifact (``... not found``), else its report's last line."""
    lines = [line.strip(" \t:") for line in report.splitlines() if line.strip(" \t:")]
    return next((line for line in lines if line.endswith("not found")), lines[-1] if lines else report)


def resolve(peer: Peer, home: Path, settings: dict[str, Any]) -> Resolved:
    """The first candidate runtime of ``peer`` that Maven Central serves and that runs the warm-up write on
    this Spark."""
    resolved = Resolved()
    for coordinate in peer.candidates:
        try:
            directory = jars.fetch(f"peers-{peer.key}", [coordinate], transitive=False)
        except jars.JarFetchError as exc:
            resolved.tried.append({"coordinate": coordinate, "error": f"not fetched: {_ivy_reason(str(exc))}"})
            print(f"  {coordinate}: not fetched: {_ivy_reason(str(exc))}", flush=True)
            continue
        jar_paths = [str(p) for p in sorted(directory.glob("*.jar"))]
        probe = run_worker(peer, home, f"probe{len(resolved.tried)}", {**settings, "warmup_only": True}, jar_paths)
        if "error" in probe:
            resolved.tried.append({"coordinate": coordinate, "error": probe["error"]})
            print(f"  {coordinate}: does not run: {probe['error']}", flush=True)
            continue
        resolved.coordinate, resolved.jars = coordinate, jar_paths
        resolved.tried.append({"coordinate": coordinate, "error": ""})
        print(f"  {coordinate}: runs", flush=True)
        break
    return resolved


def summary(runs: list[dict[str, Any]], rows: int, input_bytes: int, cores: int) -> dict[str, Any]:
    seconds = statistics.median(r["seconds"] for r in runs)
    freshness = [f for r in runs for f in r["freshness_s"]]
    return {
        "median_s": seconds,
        "rows_per_s": rows / seconds,
        "bytes_per_s_per_core": input_bytes / seconds / cores,
        "cores_used": statistics.median(r["cpu_seconds"] / r["seconds"] for r in runs),
        "freshness_median_s": statistics.median(freshness),
        "freshness_max_s": max(freshness),
        "batch_median_s": statistics.median(b for r in runs for b in r["batch_seconds"]),
        "output_bytes": statistics.median(r["output_bytes"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        epilog="Workers run under this interpreter, hence on its pyspark: for another Spark, run it with another "
        "venv's python (e.g. .venv-spark41/bin/python with pyspark 4.1.x, which Iceberg's runtimes are built for) "
        "and --result peers_spark41.",
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--hours", type=int, default=8)
    parser.add_argument("--batches", type=int, default=8, help="input files, one per micro-batch")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--variants", default="s,q,i,p,h")
    parser.add_argument("--result", default="peers", help="results file name: bench/results/RESULT.json")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    chosen = [PEERS[key] for key in args.variants.split(",")]

    home = scratch_dir()
    loads = [os.getloadavg()]
    with metastore(home) as hms:
        client = MetastoreClient(hms.uri)
        client.create_database(DATABASE)
        client.close()
        input_dir, warmup_dir = home / "input", home / "warmup-input"
        print(f"generating {args.rows:,} rows over {args.hours} hours in {args.batches} files ...", flush=True)
        write_events(input_dir, args.rows, args.hours, args.batches, START)
        write_events(warmup_dir, WARMUP_ROWS, 2, 2, START - timedelta(days=1))
        input_bytes = sum(p.stat().st_size for p in input_dir.glob("*.parquet"))
        settings = {
            "input": str(input_dir),
            "warmup_input": str(warmup_dir),
            "metastore": hms.uri,
            "cores": args.cores,
            "rows": args.rows,
            "warmup_only": False,
        }
        runtimes = {}
        for peer in chosen:
            if peer.candidates:
                print(f"resolving {peer.label} ...", flush=True)
                runtimes[peer.key] = resolve(peer, home, settings)
        runnable = [p for p in chosen if p.key not in runtimes or runtimes[p.key].coordinate]
        measured: dict[str, list[dict[str, Any]]] = {p.key: [] for p in runnable}
        failures: dict[str, list[str]] = {p.key: [] for p in runnable}
        for repeat in range(args.repeats):
            ordered = runnable[repeat % len(runnable) :] + runnable[: repeat % len(runnable)]
            for peer in ordered:
                jar_paths = runtimes[peer.key].jars if peer.key in runtimes else []
                outcome = run_worker(peer, home, f"r{repeat}", settings, jar_paths)
                if "error" in outcome:
                    failures[peer.key].append(outcome["error"])
                    print(f"  ({peer.key}) run {repeat + 1} failed: {outcome['error']}", flush=True)
                    continue
                measured[peer.key].append(outcome)
                print(
                    f"  ({peer.key}) run {repeat + 1}: {outcome['seconds']:.1f} s, "
                    f"freshness median {statistics.median(outcome['freshness_s']):.2f} s, "
                    f"load {outcome['load_average'][0]:.1f}",
                    flush=True,
                )
        loads.append(os.getloadavg())
    shutil.rmtree(home, ignore_errors=True)

    results = {key: summary(runs, args.rows, input_bytes, args.cores) for key, runs in measured.items() if runs}
    table = [
        [
            f"({key}) {PEERS[key].label}",
            f"{r['median_s']:.2f}",
            f"{r['rows_per_s']:,.0f}",
            f"{r['bytes_per_s_per_core'] / 1e6:.2f}",
            f"{r['cores_used']:.2f}",
            f"{r['freshness_median_s']:.2f}",
            f"{r['freshness_max_s']:.2f}",
            f"{r['output_bytes'] / 1e6:.1f}",
        ]
        for key, r in results.items()
    ]
    print_table(
        ["variant", "median s", "rows/s", "MB/s/core", "cores used", "fresh med s", "fresh max s", "out MB"], table
    )
    for key, resolved in runtimes.items():
        print(f"({key}) runtime: {resolved.coordinate or 'none runs'}")
        for attempt in resolved.tried:
            if attempt["error"]:
                print(f"    {attempt['coordinate']}: {attempt['error']}")
    path = write_result(
        args.result,
        {
            "params": {k: v for k, v in vars(args).items() if k not in ("worker", "result")},
            "pyspark": pyspark.__version__,
            "input_bytes": input_bytes,
            "load_average_start_end": loads,
            "runtimes": {key: vars(resolved) for key, resolved in runtimes.items()},
            "runs": measured,
            "failures": failures,
            "summary": results,
        },
    )
    print(f"written {path}")


if __name__ == "__main__":
    main()
