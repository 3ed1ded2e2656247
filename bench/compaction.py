"""Compaction throughput: ``sqlext compact`` on committed partitions of small parquet files vs the limit,
pyarrow reading the same files and writing them as one file per partition (no HMS, no safe swap).

    python -m bench.compaction [--partitions 8] [--files 150] [--rows-per-file 8000] [--repeats 3]

Prints a table and writes bench/results/compaction.json. Each repeat writes a fresh copy of the small
files (compaction consumes them); the two variants alternate which goes first.
"""

from __future__ import annotations

import argparse
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import median, metastore, print_table, scratch_dir, timed, write_result
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.compaction.command import compact_table
from sqlext.connectors.filesystem.files import data_files
from sqlext.connectors.filesystem.policies import MetastorePolicy, PartitionCommitContext
from sqlext.io.fs import FileSystem
from sqlext.table import Column, TableDefinition, TableIdentifier

START = datetime(2026, 11, 22)


def write_small_files(root: Path, partitions: int, files: int, rows_per_file: int) -> int:
    """``files`` Spark-like parquet files (snappy, INT96 timestamps) in each of ``partitions`` dirs."""
    written = 0
    for partition in range(partitions):
        directory = root / f"hr={partition:02d}"
        directory.mkdir(parents=True)
        for index in range(files):
            first = (partition * files + index) * rows_per_file
            ids = range(first, first + rows_per_file)
            table = pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "user_id": pa.array([f"user-{i % 1000}" for i in ids]),
                    "amount": pa.array([i * 0.01 for i in ids]),
                    "ts": pa.array([START + timedelta(seconds=i % 3600) for i in ids], pa.timestamp("us")),
                }
            )
            path = directory / f"part-{index:05d}-bench.c000.snappy.parquet"
            pq.write_table(table, path, compression="snappy", use_deprecated_int96_timestamps=True)
            written += path.stat().st_size
    return written


def bench_table(name: str, path: Path) -> TableDefinition:
    columns = (Column("id", "BIGINT"), Column("user_id", "STRING"), Column("amount", "DOUBLE"))
    columns += (Column("ts", "TIMESTAMP(3)"), Column("hr", "STRING"))
    options = {"connector": "filesystem", "path": path.as_uri(), "format": "parquet"}
    return TableDefinition(TableIdentifier("bench", name), columns, options, partition_keys=("hr",))


def register_partitions(client: MetastoreClient, table: TableDefinition) -> None:
    """Commit every partition dir into the HMS, as the sink would have."""
    fs = FileSystem(table.options["path"])
    hms_table = client.get_table("bench", table.identifier.name)
    contexts = []
    for name in fs.list_dirs(table.options["path"]):
        directory = f"{table.options['path']}/{name}"
        files = data_files(fs, directory)
        values = [name.split("=", 1)[1]]
        contexts.append(PartitionCommitContext(table, ["hr"], values, directory, name, files, fs, client, hms_table))
    MetastorePolicy().commit_all(contexts)


def pyarrow_rewrite(root: Path) -> None:
    """The limit: read each partition's files with pyarrow and write them as one file, in place of none."""
    for directory in sorted(root.iterdir()):
        sources = sorted(directory.glob("*.parquet"))
        with pq.ParquetWriter(
            directory / "merged.parquet",
            pq.read_schema(sources[0]),
            compression="snappy",
            use_deprecated_int96_timestamps=True,
        ) as writer:
            for source in sources:
                writer.write_table(pq.read_table(source))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--files", type=int, default=150)
    parser.add_argument("--rows-per-file", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="also profile one more sqlext run (cProfile)")
    args = parser.parse_args()

    home = scratch_dir()
    seconds: dict[str, list[float]] = {"sqlext compact": [], "pyarrow read+write": []}
    size = 0
    with metastore(home) as hms, MetastoreClient(hms.uri) as client:
        client.create_database("bench")
        catalog = Catalog(client)
        for repeat in range(args.repeats):
            table = bench_table(f"t{repeat}", home / f"sqlext-{repeat}")
            size = write_small_files(home / f"sqlext-{repeat}", args.partitions, args.files, args.rows_per_file)
            catalog.create_table(table)
            register_partitions(client, table)
            write_small_files(home / f"pyarrow-{repeat}", args.partitions, args.files, args.rows_per_file)
            variants: list[tuple[str, Any]] = [
                ("sqlext compact", lambda t=table: compact_table(t, client, show_progress=False, **_no_grace())),
                ("pyarrow read+write", lambda r=repeat: pyarrow_rewrite(home / f"pyarrow-{r}")),
            ]
            for name, action in variants if repeat % 2 == 0 else variants[::-1]:
                seconds[name].append(timed(action))
                print(f"  {name} run {repeat + 1}: {seconds[name][-1]:.2f} s", flush=True)
        profile = _profile_one_run(client, catalog, home, args) if args.profile else None
    shutil.rmtree(home, ignore_errors=True)

    rates = {name: size / median(values) / 1e6 for name, values in seconds.items()}
    print_table(
        ["variant", "median s", "MB/s"], [[n, f"{median(v):.2f}", f"{rates[n]:.1f}"] for n, v in seconds.items()]
    )
    ratio = rates["sqlext compact"] / rates["pyarrow read+write"]
    print(f"sqlext compact / pyarrow read+write = {ratio:.2f}  ({size / 1e6:.0f} MB of small files per run)")
    path = write_result(
        "compaction",
        {
            "params": vars(args),
            "bytes": size,
            "seconds": seconds,
            "mb_per_s": rates,
            "ratio_sqlext_vs_pyarrow": ratio,
            "profile_top": profile,
        },
    )
    print(f"written {path}")


def _profile_one_run(client: MetastoreClient, catalog: Catalog, home: Path, args: argparse.Namespace) -> list[str]:
    """The functions sqlext compact spends most of its own time in (cProfile, by total time)."""
    import cProfile
    import io
    import pstats

    table = bench_table("profiled", home / "profiled")
    write_small_files(home / "profiled", args.partitions, args.files, args.rows_per_file)
    catalog.create_table(table)
    register_partitions(client, table)
    profiler = cProfile.Profile()
    profiler.runcall(compact_table, table, client, show_progress=False, **_no_grace())
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(8)
    print(out.getvalue())
    return [line.strip() for line in out.getvalue().splitlines() if line.strip()][-9:]


def _no_grace() -> dict[str, Any]:
    """No reader runs during the benchmark: the reader grace would only add idle seconds."""
    return {"reader_grace": timedelta(0)}


if __name__ == "__main__":
    main()
