"""One driver process that runs sqlext's write and read paths against each store of its spec (a table root on
S3, one on HDFS), for ``tests/io/test_store_paths.py``: a Spark start costs 15-30 s, so every path of both stores
shares this one.

On each store in turn, on an extended session (``sqlext.spark_session``) configured only with the spec's Spark
conf:

- ``batch``: ``SET 'execution.runtime-mode' = 'batch'``; ``INSERT INTO events`` (four hours, two files a
  partition); ``INSERT OVERWRITE events PARTITION (dt, hr = '01')`` (a static partition: half its rows, amounts
  times ten); ``INSERT OVERWRITE events`` of hour 02's rows with ``id % 3 = 0`` (dynamic: that partition alone is
  replaced); ``INSERT INTO flat`` then ``INSERT OVERWRITE flat`` (a table without partitions, replaced whole);
- ``stream``: a streaming ``INSERT INTO stream_events`` (one hour per micro-batch, two files a batch, with
  ``auto-compaction``), and with ``read`` in the spec, at the same time a streaming insert that reads
  ``stream_events``' committed partitions (``streaming-source.enable``) into a local table, stopped once it
  holds every row;
- ``dataframe``: ``writeStream.format("sqlext")`` into ``df_events`` (pyarrow in Spark's Python workers,
  configured from the session's ``spark.hadoop.*`` keys: ``fs.s3a.*`` on S3, ``dfs.namenode.http-address`` on
  HDFS, reached through WebHDFS where libhdfs is missing).

On S3 last, ``replaced``: a file replaced between its open and its read is read again, its new version.

It also creates ``sdp_events``, which ``spark-pipelines run`` writes afterwards (tests/io/test_store_paths.py).

Each step's outcome (error text if any), and with the store's ``request_log`` the S3 server's request log
position before and after it, with its ``audit_log`` the HDFS NameNode's audit log position, go into the result
JSON (by database); the tests read the tables themselves.

Usage: python -m tests.support.store_paths_job SPEC_JSON RESULT_JSON
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import sqlext
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.connectors.filesystem.streaming.offsets import batch_progress
from sqlext.spark.session import spark_session
from tests.support.read_job import committed_ids
from tests.support.streams import hourly_event_stream

PARTITIONED = "PARTITIONED BY (dt, hr)"
EVENT_COLUMNS = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)"
DERIVED = "id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH')"
COMMITTED = "'sink.partition-commit.policy.kind' = 'metastore,success-file'"
BY_PARTITION_TIME = (
    "'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 h', "
    "'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00'"
)
#: The streaming read's pipeline name (its checkpoint's name), by database.
READER = "{database}_reader"
#: How long the streaming read may take to copy every row once its input is committed.
READ_WAIT_S = 180


def ddl(database: str, root: str, input_dir: Path, local: Path) -> list[str]:
    """The tables of the run: ``src`` (the hourly input, on local disk) and the store's tables under ``root``."""
    table = f"{EVENT_COLUMNS}, dt STRING, hr STRING"
    return [
        f"CREATE DATABASE IF NOT EXISTS {database}",
        f"""CREATE TABLE {database}.src ({EVENT_COLUMNS}, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
            WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', 'format' = 'parquet',
                  'source.max-files-per-trigger' = '1')""",
        f"""CREATE TABLE {database}.events ({table}) {PARTITIONED}
            WITH ('connector' = 'filesystem', 'path' = '{root}/events', 'format' = 'parquet',
                  'sink.parallelism' = '2', {COMMITTED})""",
        f"""CREATE TABLE {database}.flat ({EVENT_COLUMNS})
            WITH ('connector' = 'filesystem', 'path' = '{root}/flat', 'format' = 'parquet')""",
        f"""CREATE TABLE {database}.stream_events ({table}) {PARTITIONED}
            WITH ('connector' = 'filesystem', 'path' = '{root}/stream_events', 'format' = 'parquet',
                  'sink.parallelism' = '2', 'auto-compaction' = 'true', {BY_PARTITION_TIME}, {COMMITTED})""",
        f"""CREATE TABLE {database}.df_events ({table}) {PARTITIONED}
            WITH ('connector' = 'filesystem', 'path' = '{root}/df_events', 'format' = 'parquet',
                  'sink.partition-commit.trigger' = 'process-time', {COMMITTED})""",
        f"""CREATE TABLE {database}.sdp_events ({table}) {PARTITIONED}
            WITH ('connector' = 'filesystem', 'path' = '{root}/sdp_events', 'format' = 'parquet',
                  'sink.partition-commit.trigger' = 'process-time', {COMMITTED})""",
        f"""CREATE TABLE {database}.stream_copy ({table})
            WITH ('connector' = 'filesystem', 'path' = '{(local / "stream_copy").as_uri()}', 'format' = 'parquet')""",
    ]


def batch_statements(database: str) -> dict[str, str]:
    """The batch-mode statements, by step name, in order."""
    hour = "DATE_FORMAT(ts, 'HH')"
    return {
        "insert": f"INSERT INTO {database}.events SELECT {DERIVED} FROM {database}.src",
        "overwrite_partition": f"INSERT OVERWRITE {database}.events PARTITION (dt = '2026-11-22', hr = '01') "
        f"SELECT id, user_id, amount * 10, ts FROM {database}.src WHERE {hour} = '01' AND id % 2 = 0",
        "overwrite_dynamic": f"INSERT OVERWRITE {database}.events SELECT {DERIVED} FROM {database}.src "
        f"WHERE {hour} = '02' AND id % 3 = 0",
        "flat_insert": f"INSERT INTO {database}.flat SELECT id, user_id, amount, ts FROM {database}.src",
        "flat_overwrite": f"INSERT OVERWRITE {database}.flat SELECT id, user_id, amount, ts FROM {database}.src "
        "WHERE id < 40",
    }


class Steps:
    """Runs the job's steps, recording each one's outcome and the S3 request log or HDFS audit log around it."""

    def __init__(self, request_log: str | None, audit_log: str | None = None) -> None:
        self.request_log = Path(request_log) if request_log else None
        self.audit_log = Path(audit_log) if audit_log else None
        self.results: dict[str, dict[str, Any]] = {}

    def mark(self) -> int | None:
        return len(self.request_log.read_text().splitlines()) if self.request_log else None

    def audit_mark(self) -> int | None:
        return len(self.audit_log.read_text().splitlines()) if self.audit_log else None

    def run(self, name: str, step: Callable[[], Any]) -> None:
        began, since, audit_since = time.monotonic(), self.mark(), self.audit_mark()
        outcome: dict[str, Any] = {"error": None}
        try:
            done = step()
            outcome.update(done if isinstance(done, dict) else {})
        except Exception as exc:
            outcome["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-4000:]}"
        outcome.update(since=since, until=self.mark(), seconds=round(time.monotonic() - began, 1))
        outcome.update(audit_since=audit_since, audit_until=self.audit_mark())
        self.results[name] = outcome
        print(f"{name}: {'failed' if outcome['error'] else 'done'} in {outcome['seconds']} s", file=sys.stderr)


def run_streams(spark: Any, database: str, local: Path, read: bool) -> dict[str, Any]:
    """The streaming insert, and with ``read`` the streaming read of its committed partitions beside it."""
    reader = None
    reader_name = READER.format(database=database)
    if read:
        spark.sql(f"SET 'pipeline.name' = '{reader_name}'")
        spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
        [job] = spark.sql(
            f"INSERT INTO {database}.stream_copy SELECT id, user_id, amount, ts, dt, hr FROM {database}.stream_events "
            "/*+ OPTIONS('streaming-source.enable' = 'true', 'streaming-source.monitor-interval' = '1 s') */"
        ).collect()
        reader = running_insert(job.job_id)
        spark.sql("RESET 'pipeline.name'")
        spark.sql("RESET 'execution.checkpointing.interval'")
    [job] = spark.sql(f"INSERT INTO {database}.stream_events SELECT {DERIVED} FROM {database}.src").collect()
    writer = running_insert(job.job_id)
    assert writer is not None
    writer.wait()
    if writer.query.exception() is not None:
        raise RuntimeError(f"the streaming insert failed: {writer.query.exception()}")
    if reader is None:
        return {}
    try:
        deadline = time.monotonic() + READ_WAIT_S
        while len(committed_ids(local / "stream_copy")) < writer.committer.progress.rows:
            if time.monotonic() > deadline or reader.finished.is_set():
                break
            time.sleep(0.5)
        reader.wait_committed(60)
        if reader.query.exception() is not None:
            raise RuntimeError(f"the streaming read failed: {reader.query.exception()}")
    finally:
        reader.stop()
        reader.wait(120)
    checkpoints = Path(urlparse(spark.conf.get("spark.sqlext.checkpoint.root")).path)
    return {
        "read_partitions": partitions_read(checkpoints / reader_name),
        "written_rows": writer.committer.progress.rows,
    }


def partitions_read(checkpoint: Path) -> list[list[str]]:
    """The partitions each micro-batch of a streaming read read, from the end offsets in Spark's offset log (its
    progress reports lag behind: the last batch's may not be posted when the query stops)."""
    read = []
    for offset in sorted(
        (p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
    ):
        progress = batch_progress(json.loads(offset.read_text().splitlines()[2]))
        if progress is not None:
            read.append(list(progress.partitions))
    return read


def run_dataframe(spark: Any, database: str, input_dir: Path, local: Path) -> None:
    """``format("sqlext")`` into ``df_events``."""
    sqlext.register(spark)
    query = (
        hourly_event_stream(spark, input_dir, None)
        .writeStream.format("sqlext")
        .option("table", f"{database}.df_events")
        .option("checkpointLocation", (local / "df_checkpoint").as_uri())
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


class ReplacedAfterOpen:
    """A Hadoop ``FileSystem`` whose first ``open`` is followed by a write replacing the file opened (as a commit
    log entry is rewritten while another thread or process reads it)."""

    def __init__(self, fs: Any, replace: Callable[[], None]) -> None:
        self._fs, self._replace = fs, replace
        self.opens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)

    def open(self, path: Any) -> Any:
        stream = self._fs.open(path)
        self.opens += 1
        if self.opens == 1:
            self._replace()
        return stream


def read_replaced(root: str) -> dict[str, Any]:
    """Write ``replaced.json``, then read it through :class:`ReplacedAfterOpen`: the text read."""
    from sqlext.io.hadoopfs import HadoopBackend, active_hadoop_conf

    jvm, conf = active_hadoop_conf() or (None, None)
    writer, reader = HadoopBackend(jvm, conf), HadoopBackend(jvm, conf)
    uri = f"{root}/replaced.json"
    writer.write_new(uri, b'{"version": 1}')
    store = writer._fs(jvm.org.apache.hadoop.fs.Path(uri))
    replacing = ReplacedAfterOpen(store, lambda: writer.write_new(uri, b'{"version": 2}'))
    reader._fs = lambda path: replacing  # type: ignore[method-assign]
    return {"read": reader.read_bytes(uri).decode(), "opens": replacing.opens, "key": uri}


def run_store(spark: Any, store: dict[str, Any], input_dir: Path) -> dict[str, dict[str, Any]]:
    """Every path on one store (its tables under ``store["root"]``, in ``store["database"]``); each step's outcome."""
    database, root, local = store["database"], store["root"], Path(store["local"])
    steps = Steps(store.get("request_log"), store.get("audit_log"))
    for statement in ddl(database, root, input_dir, local):
        spark.sql(statement)
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    for name, statement in batch_statements(database).items():
        steps.run(name, partial(spark.sql, statement))
    spark.sql("SET 'execution.runtime-mode' = 'streaming'")
    steps.run("stream", lambda: run_streams(spark, database, local, store.get("read", False)))
    steps.run("dataframe", lambda: run_dataframe(spark, database, input_dir, local))
    if store.get("request_log"):
        steps.run("replaced", lambda: read_replaced(root))
    return steps.results


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    spark = spark_session(app_name="store paths", conf=spec["conf"])
    spark.sparkContext.setLogLevel("ERROR")
    results = {store["database"]: run_store(spark, store, Path(spec["input"])) for store in spec["stores"]}
    Path(argv[1]).write_text(json.dumps(results, indent=1))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
