"""The csv source against the parquet source and Flink: the same rows (``id, user_id, amount, ts``) as csv and as
parquet, the same Flink SQL as ``bench/flink_sink.py`` (source with a watermark, sink partitioned by ``dt``/``hr``,
``partition-time`` commit, delay 1 h), whole processes, in one run:

- ``flink csv->csv``: Flink 2.3's filesystem source and sink (PyFlink mini-cluster, ``success-file``);
- ``sqlext csv->csv``, ``sqlext csv->parquet``, ``sqlext parquet->parquet``: ``sqlext run``
  (``metastore,success-file``), its driver started from the class data sharing archive (docs/operations.md;
  the warm-up round writes it when there is none);
- ``sqlext csv->csv without archive``: the same with ``spark.sqlext.driver.class-sharing=false``.

    python -m bench.csv_source [--rows 3000000] [--files 1] [--repeats 1] [--mode streaming|batch]
                               [--no-warmup] [--inputs DIR]

One warm-up round on a small input (not counted; ``--no-warmup`` skips it), then ``--repeats`` rounds in a
rotating order; medians. Every run is checked: all rows in ``--hours`` partitions, each with a success file.
Needs the Flink venv (``make flink-venv``, or ``SQLEXT_FLINK_VENV``). Writes bench/results/csv_source.json.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench.common import median, metastore, print_table, scratch_dir, write_result
from bench.flink_sink import (
    FLINK_VENV,
    environments,
    flink_command,
    run_process,
    sqlext_command,
    write_input,
)

#: sqlext csv->csv with its driver started without the class data sharing archive (docs/operations.md).
NO_ARCHIVE = "sqlext csv->csv without archive"
#: variant -> (engine, source format, sink format)
VARIANTS = {
    "flink csv->csv": ("flink", "csv", "csv"),
    "sqlext csv->csv": ("sqlext", "csv", "csv"),
    "sqlext csv->parquet": ("sqlext", "csv", "parquet"),
    "sqlext parquet->parquet": ("sqlext", "parquet", "parquet"),
    NO_ARCHIVE: ("sqlext", "csv", "csv"),
}


def write_parquet_copy(csv_dir: Path, target: Path) -> None:
    """The csv input's files as parquet files with the same rows (one parquet file per csv file)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    target.mkdir(parents=True)
    names = ["id", "user_id", "amount", "ts"]
    types = {"id": pa.int64(), "user_id": pa.string(), "amount": pa.float64(), "ts": pa.timestamp("ms")}
    for path in sorted(csv_dir.glob("*.csv")):
        rows = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names),
            convert_options=pacsv.ConvertOptions(column_types=types),
        )
        pq.write_table(rows, target / f"{path.stem}.parquet")


def count_rows(table: Path, fmt: str, hours: int) -> int:
    """Rows in the table's partitions (asserting ``hours`` partitions, each with a success file)."""
    import pyarrow.parquet as pq

    partitions = sorted(table.glob("dt=*/hr=*"))
    assert len(partitions) == hours, f"{table}: {len(partitions)} partitions, expected {hours}"
    assert all((p / "_SUCCESS").exists() for p in partitions), f"{table}: a partition without a success file"
    rows = 0
    for partition in partitions:
        for data in partition.iterdir():
            if data.is_file() and not data.name.startswith((".", "_")):
                if fmt == "parquet":
                    rows += pq.ParquetFile(data).metadata.num_rows
                else:
                    with data.open("rb") as lines:
                        rows += sum(1 for _ in lines)
    return rows


def run_round(
    home: Path, tag: str, inputs: dict[str, Path], mode: str, rows: int, hours: int, hms_uri: str, order: list[str]
) -> dict[str, float]:
    envs, seconds = environments(), {}
    for variant in order:
        engine, source_format, sink_format = VARIANTS[variant]
        work = home / f"{tag}-{variant.replace(' ', '-').replace('>', '')}"
        work.mkdir()
        if engine == "flink":
            argv = flink_command(work, source_format, mode, inputs[source_format])
        else:
            extra = {"spark.sqlext.driver.class-sharing": "false"} if variant == NO_ARCHIVE else {}
            argv = sqlext_command(work, source_format, mode, inputs[source_format], hms_uri, sink_format, extra)
        seconds[variant] = run_process(argv, envs[engine], work / "process.log")
        written = count_rows(work / "table", sink_format, hours)
        assert written == rows, f"{variant}: {written} rows, expected {rows}"
        print(f"  {tag} {variant}: {seconds[variant]:.1f} s (load average {os.getloadavg()[0]:.1f})", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--files", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--mode", default="streaming", choices=("streaming", "batch"))
    parser.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--inputs", type=Path, help="a dir with input-csv/ and input-parquet/ of an earlier run")
    args = parser.parse_args()
    if not (FLINK_VENV / ".installed").is_file():
        raise SystemExit(f"no Flink venv at {FLINK_VENV}: run `make flink-venv` or set SQLEXT_FLINK_VENV")
    home = scratch_dir()
    names = list(VARIANTS)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    loads = []
    with metastore(home) as hms:
        base = args.inputs or home
        inputs = {"csv": base / "input-csv", "parquet": base / "input-parquet"}
        if args.inputs is None:
            print(f"generating {args.rows:,} rows over {args.hours} hours in {args.files} csv file(s) ...", flush=True)
            write_input(inputs["csv"], "csv", args.rows, args.hours, args.files)
            write_parquet_copy(inputs["csv"], inputs["parquet"])
        if args.warmup:
            warm = {"csv": home / "warm-csv", "parquet": home / "warm-parquet"}
            write_input(warm["csv"], "csv", 10_000, args.hours, 1)
            write_parquet_copy(warm["csv"], warm["parquet"])
            run_round(home, "warmup", warm, args.mode, 10_000, args.hours, hms.uri, names)
        for repeat in range(args.repeats):
            order = names[repeat % len(names) :] + names[: repeat % len(names)]
            loads.append(os.getloadavg()[0])
            for name, value in run_round(
                home, f"r{repeat}", inputs, args.mode, args.rows, args.hours, hms.uri, order
            ).items():
                seconds[name].append(value)
    medians = {name: median(values) for name, values in seconds.items()}
    flink = medians["flink csv->csv"]
    pq_pq = medians["sqlext parquet->parquet"]
    table = [
        [name, f"{medians[name]:.1f}", f"{pq_pq / medians[name]:.2f}x", f"{flink / medians[name]:.2f}x"]
        for name in names
    ]
    print_table(["variant", "seconds", "vs sqlext parquet->parquet", "vs Flink csv->csv"], table)
    path = write_result(
        "csv_source",
        {
            "rows": args.rows,
            "files": args.files,
            "mode": args.mode,
            "seconds": seconds,
            "medians": medians,
            "load_average_at_rounds": loads,
            "csv_parquet_vs_parquet_parquet": medians["sqlext csv->parquet"] / pq_pq,
            "csv_csv_vs_flink": flink / medians["sqlext csv->csv"],
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
