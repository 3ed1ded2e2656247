"""A streaming read of committed partitions from a kerberized metastore, in a process of its own (a keytab its
only login): a batch insert commits three hours into ``kread.events``, then a streaming insert reads the table's
committed partitions (``streaming-source.enable``; the source lists them in Spark's Python workers, which get
the session's Kerberos login through the source's spec) into the local table ``kread.copy``, stopped once it
holds every row. The result JSON holds the ids read and the streaming read's error, if any.

Usage: python -m tests.support.kerberized_read_job METASTORE_URI WORK_DIR INPUT_DIR RESULT_JSON [KEY=VALUE ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sqlext.connectors.filesystem.sink import running_insert
from sqlext.spark.session import spark_session
from tests.support.read_job import committed_ids

#: How long the streaming read may take to copy every committed row.
READ_WAIT_S = 180
COLUMNS = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3)"


def statements(work: Path, input_dir: Path) -> list[str]:
    """The tables of the job and its batch insert."""
    return [
        "CREATE DATABASE IF NOT EXISTS kread",
        f"CREATE TABLE kread.src ({COLUMNS}) WITH ('connector' = 'filesystem', 'path' = '{input_dir.as_uri()}', "
        "'format' = 'parquet')",
        f"CREATE TABLE kread.events ({COLUMNS}, dt STRING, hr STRING) PARTITIONED BY (dt, hr) WITH ("
        f"'connector' = 'filesystem', 'path' = '{(work / 'events').as_uri()}', 'format' = 'parquet', "
        "'sink.partition-commit.policy.kind' = 'metastore,success-file')",
        f"CREATE TABLE kread.copy ({COLUMNS}, dt STRING, hr STRING) WITH ('connector' = 'filesystem', "
        f"'path' = '{(work / 'copy').as_uri()}', 'format' = 'parquet')",
        "SET 'execution.runtime-mode' = 'batch'",
        "INSERT INTO kread.events SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), "
        "DATE_FORMAT(ts, 'HH') FROM kread.src",
        "SET 'execution.runtime-mode' = 'streaming'",
        "SET 'execution.checkpointing.interval' = '1 s'",
    ]


def main(argv: list[str]) -> int:
    uri, work, input_dir, result = argv[0], Path(argv[1]), Path(argv[2]), Path(argv[3])
    conf = {
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sqlext.metastore.uris": uri,
        "spark.sqlext.checkpoint.root": (work / "checkpoints").as_uri(),
        **dict(pair.split("=", 1) for pair in argv[4:]),
    }
    spark = spark_session(app_name="kerberized streaming read", conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    for statement in statements(work, input_dir):
        spark.sql(statement)
    expected = len(committed_ids(work / "events"))
    [job] = spark.sql(
        "INSERT INTO kread.copy SELECT * FROM kread.events "
        "/*+ OPTIONS('streaming-source.enable' = 'true', 'streaming-source.monitor-interval' = '1 s') */"
    ).collect()
    reader = running_insert(job.job_id)
    assert reader is not None
    deadline = time.monotonic() + READ_WAIT_S
    while len(committed_ids(work / "copy")) < expected and time.monotonic() < deadline:
        if reader.finished.is_set():
            break
        time.sleep(0.5)
    error = reader.query.exception()
    reader.stop()
    reader.wait(120)
    outcome = {"expected": expected, "ids": committed_ids(work / "copy"), "error": str(error) if error else None}
    result.write_text(json.dumps(outcome))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
