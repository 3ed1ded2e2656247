"""sqlext's csv source against Spark's own csv reader and against parquet: the read alone, the same rows
(``id, user_id, amount, ts``, the input of ``bench/csv_source.py``) into Spark's ``noop`` sink, each variant in a
process of its own (the same plain local Spark session for all, 2 cores):

- ``sqlext csv``: the filesystem source of a Flink DDL table (``'connector' = 'filesystem'``, ``'format' =
  'csv'``), built by its connector factory as an ``INSERT`` from a csv table builds it (a plain ``SELECT`` of the
  table is read by Spark's Hive reader instead);
- ``spark csv``: ``spark.read.schema(...).csv(...)``, timestamps by Spark's default parsing (the same values);
- ``spark csv, timestampFormat``: the same with ``timestampFormat`` = ``yyyy-MM-dd HH:mm:ss[.SSS]``;
- ``parquet``: ``spark.read.parquet`` of the same rows.

    python -m bench.csv_read [--rows 3000000] [--repeats 3] [--warm 3] [--inputs DIR]

Each process times the read once cold (its first plan: code generation, classes loaded) and ``--warm`` times
after; medians over ``--repeats`` rounds in a rotating order. A ``sqlext run`` reads its source once, so the cold
time is the one a job pays. Every read is checked to give ``--rows`` rows. Writes bench/results/csv_read.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import EVENT_DDL, median, print_table, scratch_dir, timed, write_result
from bench.csv_source import write_parquet_copy
from bench.flink_sink import write_input

VARIANTS = ("sqlext csv", "spark csv", "spark csv, timestampFormat", "parquet")
PEER = "spark csv"


def reader(spark: Any, variant: str, csv: Path, parquet: Path) -> Any:
    """The DataFrame a variant reads (created once per process; the read runs at each write)."""
    if variant == "sqlext csv":
        from sqlext.connectors.filesystem import FileSystemTableFactory
        from sqlext.registry import SourceContext
        from sqlext.sql.parser import parse_statement
        from sqlext.sql.statements import CreateTable

        ddl = f"CREATE TABLE events ({EVENT_DDL}) WITH ('connector' = 'filesystem', 'path' = '{csv.as_uri()}', "
        statement = parse_statement(ddl + "'format' = 'csv')")
        assert isinstance(statement, CreateTable)
        frame = FileSystemTableFactory().create_source(SourceContext(spark, statement.table, streaming=False))
        # Records joined and split on the JVM (csv_records_jvm), not in Python.
        assert "MapPartitions" in frame._jdf.queryExecution().analyzed().toString()
        return frame
    if variant == "parquet":
        return spark.read.parquet(str(parquet))
    csv_reader = spark.read.schema(EVENT_DDL.replace("BIGINT", "LONG"))
    if variant == "spark csv, timestampFormat":
        csv_reader = csv_reader.option("timestampFormat", "yyyy-MM-dd HH:mm:ss[.SSS]")
    return csv_reader.csv(str(csv))


def run_variant(variant: str, csv: Path, parquet: Path, warm: int, rows: int) -> dict[str, Any]:
    """In this process: the variant's cold read, then ``warm`` reads; their seconds."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    frame = reader(spark, variant, csv, parquet)
    seconds = [timed(lambda: frame.write.format("noop").mode("overwrite").save()) for _ in range(warm + 1)]
    counted = frame.count()
    assert counted == rows, f"{variant}: {counted} rows, expected {rows}"
    spark.stop()
    return {"cold": seconds[0], "warm": median(seconds[1:]) if warm else None}


def run_process(variant: str, inputs: dict[str, Path], warm: int, rows: int) -> dict[str, Any]:
    """:func:`run_variant` in a new Python process."""
    argv = [sys.executable, "-m", "bench.csv_read", "--variant", variant]
    argv += ["--csv", str(inputs["csv"]), "--parquet", str(inputs["parquet"]), "--warm", str(warm)]
    argv += ["--rows", str(rows)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--inputs", type=Path, help="a dir with input-csv/ and input-parquet/ of an earlier run")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--csv", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--parquet", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.csv, args.parquet, args.warm, args.rows)))
        return
    home = scratch_dir()
    base = args.inputs or home
    inputs = {"csv": base / "input-csv", "parquet": base / "input-parquet"}
    if args.inputs is None:
        print(f"generating {args.rows:,} rows in one csv file and its parquet copy ...", flush=True)
        write_input(inputs["csv"], "csv", args.rows, 24, 1)
        write_parquet_copy(inputs["csv"], inputs["parquet"])
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    for repeat in range(args.repeats):
        order = VARIANTS[repeat % len(VARIANTS) :] + VARIANTS[: repeat % len(VARIANTS)]
        for variant in order:
            run = run_process(variant, inputs, args.warm, args.rows)
            runs[variant].append(run)
            print(f"  r{repeat} {variant}: cold {run['cold']:.2f} s, warm {run['warm']:.2f} s", flush=True)
    cold = {name: median([run["cold"] for run in values]) for name, values in runs.items()}
    warm = {name: median([run["warm"] for run in values]) for name, values in runs.items()}
    table = [
        [name, f"{cold[name]:.2f}", f"{warm[name]:.2f}", *(f"{by[PEER] / by[name]:.2f}x" for by in (cold, warm))]
        for name in VARIANTS
    ]
    print_table(["variant", "cold s", "warm s", "vs spark csv, cold", "vs spark csv, warm"], table)
    result = {"rows": args.rows, "warm_reads": args.warm, "runs": runs, "cold": cold, "warm": warm}
    path = write_result("csv_read", result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
