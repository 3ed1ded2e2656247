"""Peers (issues #37, #60): the same hourly events, streamed in micro-batches, appended into an
hourly-partitioned table by (s) Spark's own file sink, (q) a sqlext insert, and the table formats a user would
choose instead: (i) Apache Iceberg, (p) Apache Paimon, (h) Apache Hudi, each through its own Spark runtime and
commit, and each compared with its own Spark's file sink in the same run.

    python -m bench.peers [--rows 2000000] [--hours 8] [--batches 8] [--repeats 2]
        [--variants s,q,i,s35,p,pm,h,hm] [--spark35 .venv-spark35/bin/python]

The input is ``--batches`` parquet files in event-time order (``--hours`` of events), read one file per
micro-batch (``maxFilesPerTrigger`` 1, ``availableNow``) with a watermark on ``ts``; every variant gets the
same stream (``bench.sink_throughput.events``) and writes parquet partitioned by ``dt``/``hr``:
- (s) ``writeStream.format("parquet").partitionBy("dt", "hr")``: no catalog, readable by path through its
  ``_spark_metadata`` log;
- (q) a sqlext streaming insert: ``partition-time`` commit (delay 1 h), ``metastore,success-file``;
- (i) Iceberg: a table of the session's Hive metastore (Iceberg's ``HiveCatalog``), identity partitions
  ``dt``, ``hr``, ``fanout-enabled``; one snapshot per micro-batch;
- (s35) (s) on Spark 3.5: the baseline of (p), (pm), (h), (hm);
- (p) Paimon: an append table (no primary key) in a filesystem catalog; one snapshot per micro-batch;
- (pm) (p) in Paimon's Hive catalog on the same HMS, with ``metastore.partitioned-table``: each new partition
  added to the HMS at its commit; written by ``foreachBatch`` through the catalog (Paimon 0.9's streaming sink
  loads the table by path and so registers no partition);
- (h) Hudi: a copy-on-write table, operation ``insert``, record key ``id``, hive-style ``dt``/``hr``
  partitions; one commit per micro-batch;
- (hm) (h) with Hudi's Hive sync (mode ``hms``) to the same HMS after each commit: the table and its
  partitions.

Paimon and Hudi have no Spark 4 runtime on Maven Central: they run on pyspark 3.5 (Java 17), under the
``--spark35`` interpreter (``make spark35-venv``: a venv of its own, as sqlext needs pyspark 4; its workers run
from the checkout), with Spark 3.5's own file sink (s35) as their baseline. The Sparks differ: compare their
ratios to their own sink, not their seconds with sqlext's.

Fairness: each run is a process of its own (a runtime's jars, catalog and extensions differ, and one JVM
per run keeps one variant's JIT, caches and garbage from the next), all on the same metastore, with the
same Spark settings (``bench.common.spark_session``: ``local[--cores]``, 4 GB driver), the same input and
the same small warm-up write in the same process before the timed run. What differs is what each runtime
requires: (i) and (p) add their catalog only (no session extension: the bench's SQL is Spark's own), (h)
Hudi's session extension and catalog and Kryo as Spark's serializer, as Hudi's quick start sets them.
Runs are interleaved A B B A (the variants in order, then backwards). The timed span is from the query's
start to all its rows being readable through its catalog (for sqlext: after its end-of-input commit); session
start and table creation are outside it. A runtime is taken from Maven Central (``sqlext.runtime.jars``, the
shaded jar alone); the candidates are tried newest first, and one that does not resolve or does not load on
its Spark is reported with its error, not run.

Reported per variant, as Paimon's cluster benchmark does: rows/s, bytes/s per core (input bytes / seconds /
``--cores``), the CPU the process used in the run (JVM + Python driver) as cores, and freshness: per
micro-batch, from its end (Spark's progress: trigger start + ``triggerExecution``) to its rows being
readable through the catalog (s: its ``_spark_metadata`` entry; q: the last of its partitions committed in
the HMS, ``sqlext.commit-time``; i, p, h: the snapshot or commit holding it), median and max over all
batches of all runs; and the throughput ratio to its Spark's file sink, of the medians and of the best runs.
A commit made inside the batch gives a freshness <= 0: the rows were readable when Spark ended the batch.
Every run is checked: all rows (count and sum of ids) read back through its catalog, and for (pm), (hm) every
input partition listed by the HMS. Writes bench/results/peers.json (``--result NAME``:
bench/results/NAME.json).

Another Spark for (s), (q), (i): run it with another venv's interpreter (those workers run under the same
interpreter, so on its pyspark); e.g. Spark 4.1, for which Iceberg's runtimes are built: ``python3.11 -m venv
.venv-spark41 && .venv-spark41/bin/pip install pyspark==4.1.4 -e .``, then ``PYTHONPATH=$PWD
.venv-spark41/bin/python -m bench.peers --variants s,q,i --result peers_spark41``. The pyspark version of each
run is in the results file.
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
    #: The Spark it runs on: ``""`` this interpreter's, ``"3.5"`` the Spark 3.5 venv's (``--spark35``).
    spark: str = ""
    #: The variant its ratio is taken to: that Spark's own file sink.
    baseline: str = "s"
    #: Where it registers partitions in the metastore (checked after each run): the HMS table's name.
    registers: Callable[[Run], str] | None = None


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


def _paimon_hive_settings(run: Run) -> dict[str, str]:
    """Paimon's Hive catalog on the bench's HMS: its tables are HMS tables (in the HMS database's location)."""
    prefix = f"spark.sql.catalog.{PAIMON_CATALOG}"
    return {**_paimon_settings(run), f"{prefix}.metastore": "hive", f"{prefix}.uri": run.metastore_uri}


def _paimon_create(spark: Any, run: Run, options: str = "") -> None:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {PAIMON_CATALOG}.{DATABASE}")
    spark.sql(
        f"CREATE TABLE {PAIMON_CATALOG}.{DATABASE}.{run.name} ({_TABLE_COLUMNS}) PARTITIONED BY (dt, hr) "
        f"TBLPROPERTIES ('file.format' = 'parquet'{options})"
    )


def _paimon_prepare(spark: Any, run: Run) -> None:
    _paimon_create(spark, run)


def _paimon_hive_prepare(spark: Any, run: Run) -> None:
    """With ``metastore.partitioned-table``: Paimon adds each new partition to the HMS as it commits it."""
    _paimon_create(spark, run, ", 'metastore.partitioned-table' = 'true'")


def _paimon_hive_table_dir(run: Run) -> Path:
    """Where the HMS says the table is (Paimon's Hive catalog puts it in the database's location)."""
    with MetastoreClient(run.metastore_uri) as client:
        table = client.get_table(DATABASE, run.name)
    if table is None:
        raise AssertionError(f"Paimon's Hive catalog did not create {DATABASE}.{run.name} in the HMS")
    return Path(table.sd.location.removeprefix("file:"))


def _paimon_writer(location: Callable[[Run], Path]) -> Callable[[Any, Run], Any]:
    def write(spark: Any, run: Run) -> Any:
        query = (
            events(spark, run.input_dir, 1)
            .writeStream.format("paimon")
            .outputMode("append")
            .option("checkpointLocation", (run.work / "checkpoint").as_uri())
            .trigger(availableNow=True)
            .start(location(run).as_uri())
        )
        query.awaitTermination()
        return query

    return write


def _paimon_catalog_write(spark: Any, run: Run) -> Any:
    """Each micro-batch appended through the catalog (``foreachBatch``, ``writeTo(...).append()``): Paimon
    0.9's streaming sink loads its table by path, without the catalog's metastore client, so it adds no
    partition to the HMS (measured: none listed); a write through the Hive catalog does."""
    table = f"{PAIMON_CATALOG}.{DATABASE}.{run.name}"
    query = (
        events(spark, run.input_dir, 1)
        .writeStream.foreachBatch(lambda batch, _: batch.writeTo(table).append())
        .option("checkpointLocation", (run.work / "checkpoint").as_uri())
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return query


def _paimon_read(spark: Any, run: Run) -> Any:
    return spark.table(f"{PAIMON_CATALOG}.{DATABASE}.{run.name}")


def _paimon_visible(location: Callable[[Run], Path]) -> Callable[[Any, Run, int], list[float]]:
    """One APPEND snapshot per micro-batch (compactions commit COMPACT ones), readable from its ``timeMillis``
    (set as the snapshot file is written)."""

    def visible(spark: Any, run: Run, batches: int) -> list[float]:
        snapshots = []
        for path in (location(run) / "snapshot").glob("snapshot-*"):
            snapshot = json.loads(path.read_text())
            if snapshot.get("commitKind") == "APPEND":
                snapshots.append((snapshot["id"], snapshot["timeMillis"] / 1000))
        return [at for _, at in sorted(snapshots)]

    return visible


# --- (h) Hudi --------------------------------------------------------------------------------------------


def _hudi_settings(run: Run) -> dict[str, str]:
    return {
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    }


def _hudi_options(run: Run) -> dict[str, str]:
    return {
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


def _hudi_hive_sync_options(run: Run) -> dict[str, str]:
    """Hudi's Hive sync after each commit, straight to the HMS (mode ``hms``): the table and its new
    partitions."""
    return {
        **_hudi_options(run),
        "hoodie.datasource.hive_sync.enable": "true",
        "hoodie.datasource.hive_sync.mode": "hms",
        "hoodie.datasource.hive_sync.metastore.uris": run.metastore_uri,
        "hoodie.datasource.hive_sync.database": DATABASE,
        "hoodie.datasource.hive_sync.table": run.name,
        "hoodie.datasource.hive_sync.partition_fields": "dt,hr",
        "hoodie.datasource.hive_sync.partition_extractor_class": "org.apache.hudi.hive.MultiPartKeysValueExtractor",
    }


def _hudi_writer(options: Callable[[Run], dict[str, str]]) -> Callable[[Any, Run], Any]:
    def write(spark: Any, run: Run) -> Any:
        query = (
            events(spark, run.input_dir, 1)
            .writeStream.format("hudi")
            .outputMode("append")
            .options(**options(run))
            .trigger(availableNow=True)
            .start(run.table_dir.as_uri())
        )
        query.awaitTermination()
        return query

    return write


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


#: Paimon's and Hudi's newest Spark runtimes that the Maven Central reachable here serves (2026-12-02): none
#: for Spark 4 (``paimon-spark-4.0_2.13``, ``hudi-spark4.0-bundle_2.13``: not found), so Spark 3.5's.
#: ``paimon-spark-3.5`` 0.9.1, 1.0.0, 1.0.1, 1.1.1, 1.2.0, 1.3.1 and ``hudi-spark3.5-bundle_2.12`` 1.1.0 are
#: not found; asking for them would only add a failed resolution to every run. ``hudi-spark3.5-bundle_2.12``
#: 1.2.0 is served too (found after the 2026-12-02 runs, which used 1.0.2); not yet run here.
PAIMON_RUNTIMES = ("org.apache.paimon:paimon-spark-3.5:0.9.0",)
HUDI_RUNTIMES = ("org.apache.hudi:hudi-spark3.5-bundle_2.12:1.0.2",)

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
            "s35",
            "Spark 3.5's file sink (no catalog)",
            (),
            _no_settings,
            _nothing,
            _spark_write,
            lambda spark, run: spark.read.parquet(run.table_dir.as_uri()),
            _spark_visible,
            spark="3.5",
            baseline="s35",
        ),
        Peer(
            "p",
            "Apache Paimon, append table, filesystem catalog",
            PAIMON_RUNTIMES,
            _paimon_settings,
            _paimon_prepare,
            _paimon_writer(_paimon_table_dir),
            _paimon_read,
            _paimon_visible(_paimon_table_dir),
            _paimon_table_dir,
            spark="3.5",
            baseline="s35",
        ),
        Peer(
            "pm",
            "Apache Paimon, append table, Hive catalog, partitions in the HMS (foreachBatch)",
            PAIMON_RUNTIMES,
            _paimon_hive_settings,
            _paimon_hive_prepare,
            _paimon_catalog_write,
            _paimon_read,
            _paimon_visible(_paimon_hive_table_dir),
            _paimon_hive_table_dir,
            spark="3.5",
            baseline="s35",
            registers=lambda run: run.name,
        ),
        Peer(
            "h",
            "Apache Hudi, copy-on-write, insert",
            HUDI_RUNTIMES,
            _hudi_settings,
            _nothing,
            _hudi_writer(_hudi_options),
            _hudi_read,
            _hudi_visible,
            spark="3.5",
            baseline="s35",
        ),
        Peer(
            "hm",
            "Apache Hudi, copy-on-write, insert, Hive sync to the HMS",
            HUDI_RUNTIMES,
            _hudi_settings,
            _nothing,
            _hudi_writer(_hudi_hive_sync_options),
            _hudi_read,
            _hudi_visible,
            spark="3.5",
            baseline="s35",
            registers=lambda run: run.name,
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
    registered = _registered_partitions(peer, run)
    return {
        "pyspark": pyspark.__version__,
        "hms_partitions": registered,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "batches": len(ends),
        "batch_seconds": [end - start for start, end in ends],
        "freshness_s": [at - end for (_, end), at in zip(ends, visible, strict=True)],
        "output_bytes": sum(p.stat().st_size for p in _data_files(peer.location(run))),
        "load_average": [load_before, load_after],
    }


def _registered_partitions(peer: Peer, run: Run) -> int | None:
    """How many partitions the HMS lists for a variant that registers them, checked against the input's."""
    if peer.registers is None:
        return None
    with MetastoreClient(run.metastore_uri) as client:
        names = set(client.get_partition_names(DATABASE, peer.registers(run)))
    expected = {f"dt={dt}/hr={hr}" for parts in _batch_partitions(run.input_dir) for dt, hr in parts}
    if names != expected:
        raise AssertionError(f"{peer.key}: the HMS lists partitions {sorted(names)}, expected {sorted(expected)}")
    return len(names)


PROGRESS_FIELDS = ("numInputRows", "timestamp", "batchId", "durationMs")


def _batch_ends(query: Any) -> list[tuple[float, float]]:
    """(start, end) in epoch seconds of each micro-batch that read rows, in batch order."""
    found = []
    for progress in query.recentProgress:
        # pyspark 4 gives StreamingQueryProgress objects, pyspark 3.5 their JSON as plain dicts.
        fields = progress if type(progress) is dict else {k: getattr(progress, k) for k in PROGRESS_FIELDS}
        if fields["numInputRows"] > 0:
            start = datetime.fromisoformat(fields["timestamp"].replace("Z", "+00:00")).timestamp()
            found.append((fields["batchId"], start, start + fields["durationMs"]["triggerExecution"] / 1000))
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


def run_worker(
    peer: Peer, home: Path, tag: str, settings: dict[str, Any], jar_paths: Sequence[str], python: str
) -> dict[str, Any]:
    """Run ``peer`` in a process of its own under ``python`` (hence on its pyspark); its measures, or
    ``{"error": ...}`` with the exact error."""
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
            [python, "-m", "bench.peers", "--worker", str(spec_path)],
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


def resolve(peer: Peer, home: Path, settings: dict[str, Any], python: str) -> Resolved:
    """The first candidate runtime of ``peer`` that Maven Central serves and that runs the warm-up write on
    ``python``'s Spark. The last candidate is not probed: with none after it, its runs say whether it runs."""
    resolved = Resolved()
    for index, coordinate in enumerate(peer.candidates):
        try:
            # Named by the artifact, so that variants of one runtime ((p) and (pm)) share its cached jar.
            directory = jars.fetch(f"peers-{coordinate.split(':')[1]}", [coordinate], transitive=False)
        except jars.JarFetchError as exc:
            resolved.tried.append({"coordinate": coordinate, "error": f"not fetched: {_ivy_reason(str(exc))}"})
            print(f"  {coordinate}: not fetched: {_ivy_reason(str(exc))}", flush=True)
            continue
        jar_paths = [str(p) for p in sorted(directory.glob("*.jar"))]
        if index < len(peer.candidates) - 1:
            tag = f"probe{len(resolved.tried)}"
            probe = run_worker(peer, home, tag, {**settings, "warmup_only": True}, jar_paths, python)
            if "error" in probe:
                resolved.tried.append({"coordinate": coordinate, "error": probe["error"]})
                print(f"  {coordinate}: does not run: {probe['error']}", flush=True)
                continue
        resolved.coordinate, resolved.jars = coordinate, jar_paths
        resolved.tried.append({"coordinate": coordinate, "error": ""})
        print(f"  {coordinate}: taken", flush=True)
        break
    return resolved


def summary(runs: list[dict[str, Any]], rows: int, input_bytes: int, cores: int) -> dict[str, Any]:
    seconds = statistics.median(r["seconds"] for r in runs)
    freshness = [f for r in runs for f in r["freshness_s"]]
    return {
        "median_s": seconds,
        "best_s": min(r["seconds"] for r in runs),
        "rows_per_s": rows / seconds,
        "bytes_per_s_per_core": input_bytes / seconds / cores,
        "cores_used": statistics.median(r["cpu_seconds"] / r["seconds"] for r in runs),
        "freshness_median_s": statistics.median(freshness),
        "freshness_max_s": max(freshness),
        "batch_median_s": statistics.median(b for r in runs for b in r["batch_seconds"]),
        "output_bytes": statistics.median(r["output_bytes"] for r in runs),
    }


def with_ratios(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``results`` with each variant's throughput relative to its Spark's own file sink (its baseline, in the
    same run): the baseline's seconds over its own, of the medians and of the best runs (> 1: faster)."""
    ratioed = {}
    for key, result in results.items():
        base = results.get(PEERS[key].baseline)
        extra = {}
        if base:
            extra = {
                "baseline": PEERS[key].baseline,
                "ratio_median": base["median_s"] / result["median_s"],
                "ratio_best": base["best_s"] / result["best_s"],
            }
        ratioed[key] = {**result, **extra}
    return ratioed


def parse_variants(text: str) -> list[Peer]:
    """The variants ``--variants`` names, each with its baseline (its Spark's file sink) added if missing,
    baselines first."""
    keys = [key.strip() for key in text.split(",") if key.strip()]
    unknown = [key for key in keys if key not in PEERS]
    if unknown or not keys:
        raise SystemExit(
            f"--variants {text!r}: unknown {', '.join(unknown) or '(none given)'}; allowed: {', '.join(PEERS)}"
        )
    wanted = set(keys) | {PEERS[key].baseline for key in keys}
    return [peer for peer in PEERS.values() if peer.key in wanted]


def run_order(peers: Sequence[Peer], repeat: int) -> list[Peer]:
    """A B B A: the variants in order on even repeats, backwards on odd ones, so that each pair of
    neighbours is measured as often first as second."""
    return list(peers) if repeat % 2 == 0 else list(reversed(peers))


def interpreter(peer: Peer, spark35: Path) -> str:
    """The python that runs ``peer``'s worker: this one, or the Spark 3.5 venv's."""
    return str(spark35) if peer.spark == "3.5" else sys.executable


def main() -> None:
    repo = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        epilog="Workers run under this interpreter, hence on its pyspark, except the Spark 3.5 variants (s35, p, "
        "pm, h, hm), which run under --spark35 (make spark35-venv). For another Spark, run it with another venv's "
        "python (e.g. .venv-spark41/bin/python with pyspark 4.1.x, which Iceberg's runtimes are built for) and "
        "--result peers_spark41.",
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--hours", type=int, default=8)
    parser.add_argument("--batches", type=int, default=8, help="input files, one per micro-batch")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--variants", default=",".join(PEERS), help=f"of {', '.join(PEERS)}")
    parser.add_argument(
        "--spark35",
        type=Path,
        default=repo / ".venv-spark35" / "bin" / "python",
        help="the python of a venv with pyspark 3.5 (make spark35-venv) for the Spark 3.5 variants",
    )
    parser.add_argument("--result", default="peers", help="results file name: bench/results/RESULT.json")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    chosen = parse_variants(args.variants)
    missing = not args.spark35.exists()
    unavailable = {
        p.key: f"no pyspark 3.5 at {args.spark35} (make spark35-venv)" for p in chosen if p.spark and missing
    }

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
            if peer.candidates and peer.key not in unavailable:
                print(f"resolving {peer.label} ...", flush=True)
                runtimes[peer.key] = resolve(peer, home, settings, interpreter(peer, args.spark35))
        runnable = [
            p for p in chosen if p.key not in unavailable and (p.key not in runtimes or runtimes[p.key].coordinate)
        ]
        measured: dict[str, list[dict[str, Any]]] = {p.key: [] for p in runnable}
        failures: dict[str, list[str]] = {p.key: [] for p in runnable}
        for repeat in range(args.repeats):
            for peer in run_order(runnable, repeat):
                jar_paths = runtimes[peer.key].jars if peer.key in runtimes else []
                python = interpreter(peer, args.spark35)
                outcome = run_worker(peer, home, f"r{repeat}", settings, jar_paths, python)
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

    results = with_ratios(
        {key: summary(runs, args.rows, input_bytes, args.cores) for key, runs in measured.items() if runs}
    )
    table = [
        [
            f"({key}) {PEERS[key].label}",
            measured[key][0]["pyspark"],
            f"{r['median_s']:.2f}",
            f"{r['best_s']:.2f}",
            f"{r['ratio_median']:.2f}x / {r['ratio_best']:.2f}x" if "baseline" in r else "",
            f"{r['rows_per_s']:,.0f}",
            f"{r['bytes_per_s_per_core'] / 1e6:.2f}",
            f"{r['cores_used']:.2f}",
            f"{r['freshness_median_s']:.2f}",
            f"{r['freshness_max_s']:.2f}",
            f"{r['output_bytes'] / 1e6:.1f}",
        ]
        for key, r in results.items()
    ]
    headers = ["variant", "spark", "median s", "best s", "vs its sink (med/best)", "rows/s", "MB/s/core"]
    print_table([*headers, "cores used", "fresh med s", "fresh max s", "out MB"], table)
    for key, reason in unavailable.items():
        print(f"({key}) not run: {reason}")
    for key, resolved in runtimes.items():
        print(f"({key}) runtime: {resolved.coordinate or 'none runs'}")
        for attempt in resolved.tried:
            if attempt["error"]:
                print(f"    {attempt['coordinate']}: {attempt['error']}")
    print(f"load average at start and end: {loads[0]} {loads[-1]}")
    path = write_result(
        args.result,
        {
            "params": {
                k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("worker", "result")
            },
            "pyspark": pyspark.__version__,
            "input_bytes": input_bytes,
            "load_average_start_end": loads,
            "runtimes": {key: vars(resolved) for key, resolved in runtimes.items()},
            "unavailable": unavailable,
            "runs": measured,
            "failures": failures,
            "summary": results,
        },
    )
    print(f"written {path}")


if __name__ == "__main__":
    main()
