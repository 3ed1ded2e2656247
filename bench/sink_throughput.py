"""Sink throughput: the same input through (a) Spark's own file sink, (b) (a) + MSCK REPAIR TABLE,
(c) a sqlext insert with partition-time commit and metastore,success-file policies.

    python -m bench.sink_throughput [--rows 10000000] [--hours 24] [--files 20] [--repeats 3] [--tasks N]

Prints a table and writes bench/results/sink_throughput.json (``sink_throughput_tasks<N>.json`` with
``--tasks``). Each variant runs ``--repeats`` times, interleaved in a rotating order (a b c, b c a, c a b,
...), after one small warm-up of each; medians are reported. ``--tasks N`` spreads the input's rows over N
writing tasks (``repartition(N)``, round robin, the same in every variant), so that each task writes into
every partition: N small files per partition per batch.
"""

from __future__ import annotations

import argparse
import shutil
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.common import (
    EVENT_DDL,
    median,
    metastore,
    print_table,
    scratch_dir,
    spark_session,
    timed,
    write_events,
    write_result,
)
from sqlext.catalog import Catalog
from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
from sqlext.metastore.client import MetastoreClient
from sqlext.sink import InsertPlan
from sqlext.table import Column, TableDefinition, TableIdentifier

START = datetime(2026, 11, 22)
COLUMNS = (
    ("id", "BIGINT"),
    ("user_id", "STRING"),
    ("amount", "DOUBLE"),
    ("ts", "TIMESTAMP(3)"),
    ("dt", "STRING"),
    ("hr", "STRING"),
)


def events(spark: Any, input_dir: Path, files_per_trigger: int | None = None, tasks: int | None = None) -> Any:
    """The input files as a stream with a watermark on ``ts`` and ``dt``/``hr`` columns (``tasks``: spread
    round robin over that many tasks)."""
    reader = spark.readStream.schema(EVENT_DDL)
    if files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", files_per_trigger)
    rows = reader.parquet(input_dir.as_uri()).withWatermark("ts", "0 seconds")
    if tasks:
        rows = rows.repartition(tasks)
    return rows.selectExpr(
        "id", "user_id", "amount", "ts", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr"
    )


def spark_file_sink(
    spark: Any, input_dir: Path, work: Path, files_per_trigger: int | None = None, tasks: int | None = None
) -> Any:
    """Spark's own streaming file sink into ``work/table``; returns the finished query."""
    query = (
        events(spark, input_dir, files_per_trigger, tasks)
        .writeStream.format("parquet")
        .partitionBy("dt", "hr")
        .option("checkpointLocation", (work / "checkpoint").as_uri())
        .trigger(availableNow=True)
        .start((work / "table").as_uri())
    )
    query.awaitTermination()
    return query


def spark_file_sink_then_msck(spark: Any, input_dir: Path, work: Path, name: str, tasks: int | None = None) -> None:
    spark_file_sink(spark, input_dir, work, tasks=tasks)
    spark.sql(
        f"CREATE TABLE bench.{name} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP) "
        f"PARTITIONED BY (dt STRING, hr STRING) STORED AS PARQUET LOCATION '{(work / 'table').as_uri()}'"
    )
    spark.sql(f"MSCK REPAIR TABLE bench.{name}")


def partition_time_table(name: str, path: Path, **options: str) -> TableDefinition:
    """``bench.<name>`` at ``path``: hourly ``dt``/``hr`` partitions committed by partition time + 1 h
    into the metastore with a success file (plus ``options``)."""
    return TableDefinition(
        TableIdentifier("bench", name),
        tuple(Column(n, t) for n, t in COLUMNS),
        {
            "connector": "filesystem",
            "path": path.as_uri(),
            "format": "parquet",
            "sink.partition-commit.trigger": "partition-time",
            "sink.partition-commit.delay": "1 h",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
            "sink.partition-commit.policy.kind": "metastore,success-file",
            **options,
        },
        partition_keys=("dt", "hr"),
    )


def run_sqlext_insert(spark: Any, table: TableDefinition, metastore_uri: str, rows: Any, checkpoint: Path) -> Any:
    """Stream ``rows`` into ``table`` through the sqlext sink until the input is consumed and every
    partition committed; return the finished query."""
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore_uri), config=None
    )
    plan = InsertPlan(table.identifier.name, checkpoint.as_uri(), available_now=True)
    query = FileSystemSink(context).start_stream(rows, plan)
    running = running_insert(str(query.id))
    assert running is not None
    running.wait()
    return query


def sqlext_sink(
    spark: Any, catalog: Catalog, metastore_uri: str, input_dir: Path, work: Path, name: str, tasks: int | None = None
) -> None:
    table = partition_time_table(name, work / "table")
    catalog.create_table(table, if_not_exists=False)
    run_sqlext_insert(spark, table, metastore_uri, events(spark, input_dir, tasks=tasks), work / "checkpoint")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=None, help="writing tasks, each into every partition")
    args = parser.parse_args()

    home = scratch_dir()
    with metastore(home) as hms:
        spark = spark_session(hms.uri, home / "warehouse")
        client = MetastoreClient(hms.uri)
        catalog = Catalog(client)
        client.create_database("bench")
        input_dir, warmup_dir = home / "input", home / "warmup-input"
        print(f"generating {args.rows:,} rows over {args.hours} hours in {args.files} files ...", flush=True)
        write_events(input_dir, args.rows, args.hours, args.files, START)
        write_events(warmup_dir, 100_000, args.hours, 2, START)

        def variants(source: Path, tag: str) -> dict[str, Any]:
            return {
                "spark_file_sink": lambda: spark_file_sink(spark, source, home / f"a-{tag}", tasks=args.tasks),
                "spark_file_sink+msck": lambda: spark_file_sink_then_msck(
                    spark, source, home / f"b-{tag}", f"b_{tag}", args.tasks
                ),
                "sqlext": lambda: sqlext_sink(
                    spark, catalog, hms.uri, source, home / f"c-{tag}", f"c_{tag}", args.tasks
                ),
            }

        for action in variants(warmup_dir, "warmup").values():
            action()
        seconds: dict[str, list[float]] = {"spark_file_sink": [], "spark_file_sink+msck": [], "sqlext": []}
        for repeat in range(args.repeats):
            # Rotate the order every repeat, so that no variant always runs first (or after another).
            ordered = list(variants(input_dir, f"r{repeat}").items())
            ordered = ordered[repeat % len(ordered) :] + ordered[: repeat % len(ordered)]
            for name, action in ordered:
                seconds[name].append(timed(action))
                print(f"  {name} run {repeat + 1}: {seconds[name][-1]:.1f} s", flush=True)
        spark.stop()
        client.close()
    shutil.rmtree(home, ignore_errors=True)

    rates = {name: args.rows / median(values) for name, values in seconds.items()}
    rows = [[name, f"{median(seconds[name]):.2f}", f"{rates[name] / 1e6:.3f}"] for name in seconds]
    print_table(["variant", "median s", "Mrows/s"], rows)
    ratio_a = rates["sqlext"] / rates["spark_file_sink"]
    ratio_b = rates["sqlext"] / rates["spark_file_sink+msck"]
    print(f"sqlext / spark file sink = {ratio_a:.2f}   sqlext / (spark file sink + MSCK REPAIR) = {ratio_b:.2f}")
    path = write_result(
        f"sink_throughput_tasks{args.tasks}" if args.tasks else "sink_throughput",
        {
            "params": vars(args),
            "seconds": seconds,
            "rows_per_s": rates,
            "ratio_sqlext_vs_spark_sink": ratio_a,
            "ratio_sqlext_vs_spark_sink_msck": ratio_b,
        },
    )
    print(f"written {path}")


if __name__ == "__main__":
    main()
