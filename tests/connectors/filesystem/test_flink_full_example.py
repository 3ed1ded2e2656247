"""The "Full Example" of Flink's FileSystem SQL connector page, run as the docs give it: a streaming insert into
a ``success-file``-only table, then the docs' batch ``SELECT``s, which read what was written (Flink reads a
filesystem table by listing its directories; no partition ever reaches the metastore).

Only the source's ``WITH (...)`` (Kafka in the docs) and the ``path`` (``'...'``) are filled in: the source
is a bounded filesystem table of rows on three hours of 2020-05-20, the hour the docs' query names among them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import running_insert
from tests.support.extension import extended_session

pytestmark = [pytest.mark.spark, pytest.mark.hms]

#: Rows per hour of 2020-05-20, hours 11, 12 and 13.
ROWS_PER_HOUR = 20
HOURS = (11, 12, 13)

#: The docs' statements, verbatim but for the placeholders ({source}, {path}; {format} is the docs' parquet
#: and json) and trailing spaces.
KAFKA_TABLE = """
CREATE TABLE kafka_table (
  user_id STRING,
  order_amount DOUBLE,
  log_ts TIMESTAMP(3),
  WATERMARK FOR log_ts AS log_ts - INTERVAL '5' SECOND
) WITH ({source})"""
FS_TABLE = """
CREATE TABLE fs_table (
  user_id STRING,
  order_amount DOUBLE,
  dt STRING,
  `hour` STRING
) PARTITIONED BY (dt, `hour`) WITH (
  'connector'='filesystem',
  'path'='{path}',
  'format'='{format}',
  'sink.partition-commit.delay'='1 h',
  'sink.partition-commit.policy.kind'='success-file'
)"""
INSERT = """
INSERT INTO fs_table
SELECT
    user_id,
    order_amount,
    DATE_FORMAT(log_ts, 'yyyy-MM-dd'),
    DATE_FORMAT(log_ts, 'HH')
FROM kafka_table"""
PRUNED_SELECT = "SELECT * FROM fs_table WHERE dt='2020-05-20' and `hour`='12'"


def _write_orders(directory: Path) -> list[tuple[str, float, str, str]]:
    """The source's rows, one parquet file; returns them as fs_table's rows."""
    directory.mkdir(parents=True)
    times = [datetime(2020, 5, 20, h) + timedelta(minutes=3 * n) for h in HOURS for n in range(ROWS_PER_HOUR)]
    users = [f"user_{i % 5}" for i in range(len(times))]
    amounts = [float(i) for i in range(len(times))]
    table = pa.table(
        {"user_id": users, "order_amount": amounts, "log_ts": times},
        schema=pa.schema([("user_id", pa.string()), ("order_amount", pa.float64()), ("log_ts", pa.timestamp("ms"))]),
    )
    pq.write_table(table, directory / "orders.parquet")
    return [(u, a, f"{t:%Y-%m-%d}", f"{t:%H}") for u, a, t in zip(users, amounts, times, strict=True)]


@pytest.mark.parametrize("fmt", ["parquet", "json"])  # the docs' format; json, a data source table already
def test_the_full_example_reads_back_every_row_it_wrote(spark, hms: MetastoreClient, tmp_path: Path, fmt: str) -> None:
    written = _write_orders(tmp_path / "orders")
    database = f"flink_full_{fmt}"
    source = f"'connector' = 'filesystem', 'path' = '{(tmp_path / 'orders').as_uri()}', 'format' = 'parquet'"
    sink = tmp_path / "fs_table"
    with extended_session(spark, tmp_path, database) as sql_session:
        sql = sql_session.sql
        sql(f"USE {database}")
        sql(KAFKA_TABLE.format(source=source))
        sql(FS_TABLE.format(path=sink.as_uri(), format=fmt))
        assert sql("SELECT count(*) AS n FROM fs_table").first().n == 0  # read (and cached by Spark) before

        [job] = sql(INSERT).collect()
        running = running_insert(job.job_id)
        assert running is not None and running.wait(300)
        assert running.query.exception() is None

        # What the docs' success-file policy leaves: files and _SUCCESS, no partition in the metastore.
        assert all((sink / "dt=2020-05-20" / f"hour={h}" / "_SUCCESS").is_file() for h in HOURS)
        assert hms.get_partition_names(database, "fs_table") == []

        everything = sql("SELECT * FROM fs_table").collect()
        assert sorted(tuple(r) for r in everything) == sorted(written)
        assert sql("SELECT count(*) AS n FROM fs_table").first().n == len(written)
        pruned = sql(PRUNED_SELECT)
        assert sorted(tuple(r) for r in pruned.collect()) == sorted(r for r in written if r[3] == "12")
        assert len([r for r in written if r[3] == "12"]) == ROWS_PER_HOUR
        plan = pruned._jdf.queryExecution().executedPlan().toString()
        assert "PartitionFilters: [" in plan and "dt#" in plan.split("PartitionFilters: [", 1)[1].split("]")[0]
        # Spark's own read of the table too, as any Spark client (spark.table, the Thrift server) reads it.
        assert spark.table(f"{database}.fs_table").where("`hour` = '13'").count() == ROWS_PER_HOUR


def test_a_running_insert_s_committed_batches_are_read_before_their_partitions_are_committed(
    spark, hms: MetastoreClient, tmp_path: Path
) -> None:
    """Flink reads the files a checkpoint finalized, committed partition or not: here, the files of each batch
    once sqlext's commit moved them into place (the partitions wait an hour), never a staged, hidden or
    ``_``-prefixed file, and in the same session that read the table before (Spark caches its listing)."""
    from tests.support.waiting import wait_for

    orders = tmp_path / "orders"
    written = _write_orders(orders)
    source = (
        f"'connector' = 'filesystem', 'path' = '{orders.as_uri()}', 'format' = 'parquet', "
        "'source.monitor-interval' = '1 s'"
    )
    sink = tmp_path / "fs_table"
    with extended_session(spark, tmp_path, "flink_full_running") as session:
        sql = session.sql
        sql("USE flink_full_running")
        sql(KAFKA_TABLE.format(source=source))
        sql(FS_TABLE.format(path=sink.as_uri(), format="parquet"))
        [job] = sql(INSERT).collect()
        running = running_insert(job.job_id)
        assert running is not None
        try:
            wait_for(lambda: running.committer.progress.rows >= len(written), 180, what="the first batch committed")
            assert sql("SELECT count(*) AS n FROM fs_table").first().n == len(written)
            assert hms.get_partition_names("flink_full_running", "fs_table") == []
            assert not (sink / "dt=2020-05-20" / "hour=12" / "_SUCCESS").exists()  # not committed: 1 h delay

            # Files no reader must read: staged (sqlext's own dir), hidden, and _-prefixed in a partition.
            partition = sink / "dt=2020-05-20" / "hour=12"
            stray = next(p for p in partition.iterdir() if not p.name.startswith((".", "_")))
            staged = sink / "_sqlext" / "staging" / "other" / "dt=2020-05-20" / "hour=12"
            staged.mkdir(parents=True)
            for copy in (staged / "part-0.parquet", partition / ".part-9.parquet", partition / "_part-9.parquet"):
                copy.write_bytes(stray.read_bytes())

            hidden = orders / ".more.parquet"  # whole before the source can list it
            hidden.write_bytes((orders / "orders.parquet").read_bytes())
            hidden.rename(orders / "more.parquet")
            wait_for(
                lambda: running.committer.progress.rows >= 2 * len(written), 180, what="the second batch committed"
            )
            assert sql("SELECT count(*) AS n FROM fs_table").first().n == 2 * len(written)
            assert sql(f"{PRUNED_SELECT.replace('*', 'count(*) AS n')}").first().n == 2 * ROWS_PER_HOUR
        finally:
            running.query.stop()
