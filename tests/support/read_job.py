"""A driver process running one streaming INSERT (a streaming read of committed partitions) until its sink
holds a number of rows: the process the streaming-source crash test kills (fault points) and restarts.

Usage: python -m tests.support.read_job METASTORE_URI CHECKPOINT_ROOT SINK_DIR ROWS INSERT_SQL
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from sqlext.connectors.filesystem.sink import running_insert
from sqlext.runtime.paths import packaged_conf_dir
from sqlext.spark.session import extend

PIPELINE = "crash_reader"


def committed_ids(sink: Path) -> list[int]:
    """Every id in the data files under ``sink`` (not hidden, not staged), sorted, duplicates kept. Hidden
    dirs are never entered: the sink creates and removes its staging dirs while this runs."""
    ids: list[int] = []
    for directory, subdirs, names in os.walk(sink):
        subdirs[:] = [name for name in subdirs if not name.startswith(("_", "."))]
        for name in names:
            if not name.startswith(("_", ".")):
                ids.extend(pq.read_table(Path(directory) / name).column("id").to_pylist())
    return sorted(ids)


def start_insert(spark: Any, sql: str, attempts: int = 3) -> Any:
    """Start a streaming INSERT and wait until its sources have started; start it again (it resumes its
    checkpoint) when Spark gave up on the streaming source's Python process connecting back, which a
    loaded machine can delay past Spark's deadline (``spark.python.authenticate.socketTimeout``, 15 s)."""
    for attempt in range(attempts):
        [job] = spark.sql(sql).collect()
        running = running_insert(job.job_id)
        assert running is not None
        deadline = time.monotonic() + 120
        while not running.finished.is_set() and "Initializing" in running.query.status["message"]:
            if time.monotonic() > deadline:
                raise AssertionError(f"the sources of {job.job_name} did not start in 120 s")
            time.sleep(0.2)
        # The status leaves "Initializing" when the query fails too; the insert may not know it yet.
        failure = None if running.query.isActive else running.query.exception()
        if failure is None:
            return running
        if "connect back" not in str(failure) or attempt == attempts - 1:
            raise AssertionError(f"{job.job_name} failed at its start: {failure}")
    raise AssertionError("unreachable")


def main(argv: list[str]) -> int:
    from pyspark.sql import SparkSession

    metastore_uri, checkpoint_root, sink, rows, sql = argv[0], argv[1], Path(argv[2]), int(argv[3]), argv[4]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.hadoop.hive.metastore.uris", metastore_uri)
        .config("spark.sqlext.metastore.uris", metastore_uri)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j}")
        .enableHiveSupport()
        .getOrCreate()
    )
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", checkpoint_root)
    spark.sql(f"SET 'pipeline.name' = '{PIPELINE}'")
    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    running = start_insert(spark, sql)
    deadline = time.monotonic() + 300
    while len(committed_ids(sink)) < rows and not running.finished.is_set() and time.monotonic() < deadline:
        time.sleep(0.5)
    running.stop()
    running.wait(60)
    return 0 if len(committed_ids(sink)) >= rows else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
