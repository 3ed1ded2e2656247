"""A class-data sharing (CDS) archive of Spark's classes, so that the suite's many Spark JVMs start faster.

Most of the suite's time is Spark JVMs starting: every ``sqlext run``, crash-and-restart, ``spark-submit``,
Thrift server and session loads and links the same few thousand classes from pyspark's jars, and on two
busy cores that costs a fresh driver some 15 s of CPU. Java 17 can dump the classes one run loaded into an
archive (``-XX:ArchiveClassesAtExit``) and map it into later JVMs (``-XX:SharedArchiveFile``): measured on
this machine, a small Spark job's driver used 34 s of CPU without it and 19 s with it.

``python -m tests.support.class_archive`` (``make test`` runs it after the jars) dumps the archive once,
from a job that touches what the tests use (SQL, the file formats, a streaming query, Arrow batches to
Python), into the venv; its name holds pyspark's and Java's versions, so a new one of either dumps a new
archive. :func:`install` (each test process, at start) hands it to every Spark driver the tests
start, through ``SPARK_SUBMIT_OPTS``, which spark-submit adds to the driver JVM's options. A JVM whose class
path differs from the dump's (extra jars first on it) silently runs without the archive: ``-Xshare:auto``
is the default, and ``-Xlog:cds=off`` keeps the mismatch note out of the output the tests read.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from sqlext.spark.memory import SUBMIT_OPTS_ENV

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _java_version() -> str:
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    return done.stderr


def archive_path() -> Path:
    """Where the archive for this venv's pyspark and this Java lives (it may not exist yet).

    In the venv, not in the jars cache: a JVM maps the archive only if its class path names the very jar
    files it was dumped from, and every checkout's venv has its own copy of pyspark's jars.
    """
    key = hashlib.sha256(_java_version().encode()).hexdigest()[:12]
    return Path(sys.prefix) / f"spark-{pyspark.__version__}-classes-{key}.jsa"


def _workload(target: Path) -> None:
    """The Spark job whose loaded classes the archive keeps (run in the dumping JVM's driver)."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sqlext-class-archive")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    rows = spark.range(2000).selectExpr("id", "cast(id % 24 as string) as hr", "concat('u', id) as name")
    for fmt in ("parquet", "orc", "csv", "json"):
        path = str(target / fmt)
        rows.write.partitionBy("hr").format(fmt).mode("overwrite").save(path)
        spark.read.format(fmt).load(path).groupBy("hr").count().collect()
    spark.sql("SELECT hr, count(*) FROM parquet.`%s` GROUP BY hr ORDER BY hr" % (target / "parquet")).collect()

    def double(batches):  # type: ignore[no-untyped-def]
        yield from batches

    rows.mapInArrow(double, rows.schema).count()
    stream = spark.readStream.schema(rows.schema).parquet(str(target / "parquet"))
    query = (
        stream.writeStream.foreachBatch(lambda batch, _id: batch.count())
        .trigger(availableNow=True)
        .option("checkpointLocation", str(target / "checkpoint"))
        .start()
    )
    query.awaitTermination()
    jvm = spark.sparkContext._gateway.proc  # type: ignore[attr-defined]
    spark.stop()
    # The JVM writes the archive as it exits, which it does when its stdin closes: wait for that here.
    jvm.stdin.close()
    jvm.wait()


def dump() -> Path:
    """Dump the archive unless this pyspark's and Java's is already there; returns its path."""
    archive = archive_path()
    if archive.is_file():
        return archive
    partial = archive.with_suffix(f".{os.getpid()}.partial")
    work = archive.with_suffix(".work")
    dumping = f"-XX:ArchiveClassesAtExit={partial} {QUIET}"
    env = {**os.environ, SUBMIT_OPTS_ENV: dumping, "PYSPARK_PYTHON": sys.executable}
    started = time.monotonic()
    try:
        workload = [sys.executable, "-m", "tests.support.class_archive", "--workload", str(work)]
        subprocess.run(workload, env=env, check=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.replace(partial, archive)
    print(f"class archive: {archive} in {time.monotonic() - started:.0f} s", flush=True)
    return archive


def java_options() -> str | None:
    """The JVM options that map the archive (None: it was not dumped)."""
    archive = archive_path()
    return f"-XX:SharedArchiveFile={archive} {QUIET}" if archive.is_file() else None


def install() -> None:
    """Let every Spark driver started from here on map the archive, if it was dumped."""
    options = java_options()
    if options and SUBMIT_OPTS_ENV not in os.environ:
        os.environ[SUBMIT_OPTS_ENV] = options


def without_archive(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the options :func:`install` put in ``SPARK_SUBMIT_OPTS``: for a driver whose class path
    starts with other jars (``spark.driver.extraClassPath``), which cannot map this archive; sqlext's own class
    sharing (``spark.sqlext.driver.class-sharing``) then gives it an archive of its own class path."""
    ours = (java_options() or "").split()
    kept = [option for option in env.get(SUBMIT_OPTS_ENV, "").split() if option not in ours]
    stripped = {key: value for key, value in env.items() if key != SUBMIT_OPTS_ENV}
    return {**stripped, SUBMIT_OPTS_ENV: " ".join(kept)} if kept else stripped


def pytest_configure(config: pytest.Config) -> None:
    install()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--workload"]:
        _workload(Path(sys.argv[2]))
    else:
        dump()
