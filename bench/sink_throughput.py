"""Sink throughput: the same input through (a) Spark's own file sink, (b) (a) + MSCK REPAIR TABLE,
(c) a sqlext insert with partition-time commit and metastore,success-file policies.

    python -m bench.sink_throughput [--rows 10000000] [--hours 24] [--files 20] [--repeats 3] [--tasks N]
        [--format parquet|orc|csv|json] [--mode streaming|batch] [--files-per-trigger N]
        [--not-overlapped-too] [--no-statistics-too]

Prints a table and writes bench/results/sink_throughput.json (``sink_throughput_csv_batch.json``,
``sink_throughput_tasks<N>.json``: named by what differs from the default). The input is parquet; every
variant writes the ``--format`` (Spark's own csv and json writers in (a), sqlext's forms in (c)). Each
variant runs ``--repeats`` times, interleaved in a rotating order (a b c, b c a, c a b, ...), after one
small warm-up of each; medians are reported. ``--tasks N`` spreads the input's rows over N writing tasks
(``repartition(N)``, round robin, the same in every variant), so that each task writes into every
partition: N small files per partition per batch. ``--files-per-trigger N`` reads N input files per
micro-batch in both streaming variants (default: all in one batch), so that a batch's commit can overlap the
next batch's write (``_fpt<N>`` in the results file's name); ``--not-overlapped-too`` adds (d), (c) with
``'sink.partition-commit.async' = 'false'``; ``--no-statistics-too`` adds (e), (c) with
``'table.exec.hive.sink.statistic-auto-gather.enable' = 'false'`` (no file read for ``numRows``).
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import dataclass
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
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
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


@dataclass(frozen=True)
class Workload:
    """How every variant writes: the table's format, streaming (``availableNow``) or batch, and how many
    writing tasks (None: as Spark splits the input files)."""

    fmt: str = "parquet"
    mode: str = "streaming"
    tasks: int | None = None
    files_per_trigger: int | None = None

    @property
    def result_name(self) -> str:
        """The results file's name: ``sink_throughput`` plus what differs from the default workload."""
        parts = [part for part in (self.fmt != "parquet" and self.fmt, self.mode != "streaming" and self.mode) if part]
        tasks = [f"tasks{self.tasks}"] if self.tasks else []
        per_trigger = [f"fpt{self.files_per_trigger}"] if self.files_per_trigger else []
        return "_".join(["sink_throughput", *parts, *tasks, *per_trigger])


def events(spark: Any, input_dir: Path, files_per_trigger: int | None = None, tasks: int | None = None) -> Any:
    """The input files as a stream with a watermark on ``ts`` and ``dt``/``hr`` columns (``tasks``: spread
    round robin over that many tasks)."""
    reader = spark.readStream.schema(EVENT_DDL)
    if files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", files_per_trigger)
    return _with_partition_columns(reader.parquet(input_dir.as_uri()).withWatermark("ts", "0 seconds"), tasks)


def _batch_events(spark: Any, input_dir: Path, tasks: int | None) -> Any:
    return _with_partition_columns(spark.read.schema(EVENT_DDL).parquet(input_dir.as_uri()), tasks)


def _with_partition_columns(rows: Any, tasks: int | None) -> Any:
    if tasks:
        rows = rows.repartition(tasks)
    return rows.selectExpr(
        "id", "user_id", "amount", "ts", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr"
    )


def spark_file_sink(
    spark: Any, input_dir: Path, work: Path, files_per_trigger: int | None = None, workload: Workload = Workload()
) -> Any:
    """Spark's own file sink into ``work/table``, streaming (to the end of the input: returns the finished
    query) or batch."""
    target = (work / "table").as_uri()
    if workload.mode == "batch":
        rows = _batch_events(spark, input_dir, workload.tasks)
        rows.write.format(workload.fmt).partitionBy("dt", "hr").save(target)
        return None
    query = (
        events(spark, input_dir, files_per_trigger or workload.files_per_trigger, workload.tasks)
        .writeStream.format(workload.fmt)
        .partitionBy("dt", "hr")
        .option("checkpointLocation", (work / "checkpoint").as_uri())
        .trigger(availableNow=True)
        .start(target)
    )
    query.awaitTermination()
    return query


def spark_file_sink_then_msck(spark: Any, input_dir: Path, work: Path, name: str, workload: Workload) -> None:
    spark_file_sink(spark, input_dir, work, workload=workload)
    # csv and json as text files: MSCK REPAIR only lists the partition directories, nothing reads the rows.
    storage = workload.fmt.upper() if workload.fmt in ("parquet", "orc") else "TEXTFILE"
    spark.sql(
        f"CREATE TABLE bench.{name} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP) "
        f"PARTITIONED BY (dt STRING, hr STRING) STORED AS {storage} "
        f"LOCATION '{(work / 'table').as_uri()}'"
    )
    spark.sql(f"MSCK REPAIR TABLE bench.{name}")


def partition_time_table(name: str, path: Path, **options: str) -> TableDefinition:
    """``bench.<name>`` at ``path``: hourly ``dt``/``hr`` partitions committed by partition time + 1 h
    into the metastore with a success file (plus ``options``; parquet unless they say otherwise)."""
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


def _sink(spark: Any, table: TableDefinition, metastore_uri: str) -> FileSystemSink:
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore_uri), config=None
    )
    return FileSystemSink(context)


def run_sqlext_insert(
    spark: Any, table: TableDefinition, metastore_uri: str, rows: Any, checkpoint: Path, gather_statistics: bool = True
) -> Any:
    """Stream ``rows`` into ``table`` through the sqlext sink until the input is consumed and every
    partition committed; return the finished query."""
    plan = InsertPlan(
        table.identifier.name, checkpoint.as_uri(), available_now=True, gather_statistics=gather_statistics
    )
    query = _sink(spark, table, metastore_uri).start_stream(rows, plan)
    running = running_insert(str(query.id))
    assert running is not None
    running.wait()
    return query


def sqlext_sink(
    spark: Any,
    catalog: Catalog,
    metastore_uri: str,
    input_dir: Path,
    work: Path,
    name: str,
    workload: Workload,
    gather_statistics: bool = True,
    **options: str,
) -> None:
    """A sqlext insert into a new table (with ``options``): streaming, or batch (every partition committed at
    its end); ``gather_statistics``: the session option (``InsertPlan.gather_statistics``)."""
    table = partition_time_table(name, work / "table", format=workload.fmt, **options)
    catalog.create_table(table, if_not_exists=False)
    checkpoint = work / "checkpoint"
    if workload.mode == "batch":
        plan = InsertPlan(table.identifier.name, checkpoint.as_uri(), gather_statistics=gather_statistics)
        _sink(spark, table, metastore_uri).write_batch(_batch_events(spark, input_dir, workload.tasks), plan)
        return
    rows = events(spark, input_dir, workload.files_per_trigger, workload.tasks)
    run_sqlext_insert(spark, table, metastore_uri, rows, checkpoint, gather_statistics)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=None, help="writing tasks, each into every partition")
    parser.add_argument("--format", default="parquet", choices=("parquet", "orc", "csv", "json"))
    parser.add_argument("--mode", default="streaming", choices=("streaming", "batch"))
    parser.add_argument("--files-per-trigger", type=int, default=None, help="input files per streaming batch")
    parser.add_argument(
        "--not-overlapped-too",
        action="store_true",
        help="also run sqlext with 'sink.partition-commit.async' = 'false' (each batch committed before the next)",
    )
    parser.add_argument(
        "--no-statistics-too",
        action="store_true",
        help="also run sqlext with 'table.exec.hive.sink.statistic-auto-gather.enable' = 'false' (no numRows)",
    )
    args = parser.parse_args()
    workload = Workload(args.format, args.mode, args.tasks, args.files_per_trigger)

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
            def sqlext(letter: str, **kwargs: Any) -> Any:
                return lambda: sqlext_sink(
                    spark, catalog, hms.uri, source, home / f"{letter}-{tag}", f"{letter}_{tag}", workload, **kwargs
                )

            chosen = {
                "spark_file_sink": lambda: spark_file_sink(spark, source, home / f"a-{tag}", workload=workload),
                "spark_file_sink+msck": lambda: spark_file_sink_then_msck(
                    spark, source, home / f"b-{tag}", f"b_{tag}", workload
                ),
                "sqlext": sqlext("c"),
            }
            if args.not_overlapped_too:
                chosen["sqlext_not_overlapped"] = sqlext("d", **{"sink.partition-commit.async": "false"})
            if args.no_statistics_too:
                chosen["sqlext_no_statistics"] = sqlext("e", gather_statistics=False)
            return chosen

        for action in variants(warmup_dir, "warmup").values():
            action()
        seconds: dict[str, list[float]] = {name: [] for name in variants(warmup_dir, "names")}
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
    if "sqlext_not_overlapped" in rates:
        ratio_c = rates["sqlext_not_overlapped"] / rates["spark_file_sink"]
        print(f"sqlext with 'sink.partition-commit.async' = 'false' / spark file sink = {ratio_c:.2f}")
    if "sqlext_no_statistics" in rates:
        ratio_e = rates["sqlext_no_statistics"] / rates["spark_file_sink"]
        print(f"sqlext without gathered statistics / spark file sink = {ratio_e:.2f}")
    path = write_result(
        workload.result_name,
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
