"""What the csv source's Python pass costs (issue #42): the source's csv read (lines, records, fields, typed
columns) of the bench's csv rows into Spark's ``noop`` sink, in one Spark session (``local[2]``), with the
record-joining step done in several ways, interleaved in a rotating order:

- ``lines only``: Spark's text source alone, no parse; ``parquet``: the same rows as one parquet file, read whole
  (what the parquet source costs for the same rows);
- ``no python``: the lines taken as records, no Python pass (the floor: wrong for a record with a line break);
- ``mapInArrow``: this tree's ``csv_records.records`` (the source as it is; since 2026-11-27 it joins records on
  the JVM, ``CsvRecordJoiner.java``, so the name is historical);
- ``arrow_udf, text only``: a scalar iterator Arrow UDF given each line's text that returns nulls, then
  ``explode(coalesce(result, array(value)))`` (the floor of any per-line UDF);
- ``mapInArrow identity``: a ``mapInArrow`` that returns its batches as they came, then the field parse (the floor
  of any ``mapInArrow`` pass); ``mapInArrow identity, range columns``: the same, sent the file path and range
  columns that ``RecordJoiner`` gets, and returning the lines only;
- ``csv_records@REF`` for each ``--ref``: ``sqlext/connectors/filesystem/csv_records.py`` as it is at that git
  commit (pickled by value, so the workers need not import it);
- ``csv_fields@REF, text`` and ``csv_fields@REF, typed``, for a ``--ref`` that has
  ``sqlext/connectors/filesystem/csv_fields.py`` (branch csvarrow, adc7c3d): ``RecordJoiner``, then, in the same
  Python pass, the fields of each plain record (no escape, quote or line break character) of the right count
  split in pyarrow (``split_pattern``) and returned as columns (the record's text then null), Spark casting them
  and parsing only the other records as before; ``text``: every field as a string column, ``typed``: integers,
  plain doubles and (in a UTC session) timestamps converted in pyarrow, as that commit's source did.

Timed: wall seconds, and CPU seconds of this process's children (the JVM, Python workers), which the
machine's other load disturbs less. Writes bench/results/csv_python_pass.json.

    python -m bench.csv_python_pass [--rows 1000000] [--rounds 3] [--ref COMMIT ...] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import median, print_table, scratch_dir, write_result
from bench.csv_source import write_parquet_copy
from bench.flink_sink import write_input

TYPES = [("id", "bigint"), ("user_id", "string"), ("amount", "double"), ("ts", "timestamp")]
MODULES = "sqlext/connectors/filesystem"


def tree_cpu_seconds() -> float:
    """User and system CPU seconds of this process's descendants (living, and reaped by them)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append((int(entry), fields))
    total, todo = 0.0, [os.getpid()]
    while todo:
        for child, fields in children.get(todo.pop(), []):
            total += sum(int(value) for value in fields[11:15]) / tick  # utime stime cutime cstime
            todo.append(child)
    return total


def module_at(ref: str, home: Path, name: str = "csv_records") -> Any:
    """Module ``name`` of the filesystem connector as it is at git commit ``ref``, registered to be pickled by
    value; None where it does not exist there."""
    from pyspark import cloudpickle

    shown = subprocess.run(["git", "show", f"{ref}:{MODULES}/{name}.py"], capture_output=True, text=True)
    if shown.returncode != 0:
        return None
    path = home / f"{name}_{ref}.py"
    path.write_text(shown.stdout)
    spec = importlib.util.spec_from_file_location(f"{name}_{ref}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)
    return module


def nulls_udf(batches: Any) -> Any:
    import pyarrow as pa

    for values in batches:
        yield pa.nulls(len(values), pa.list_(pa.string()))


def identity(batches: Any) -> Any:
    yield from batches


def drop_range(batches: Any) -> Any:
    for batch in batches:
        yield batch.select(["value"])


def no_typed_kinds(self: Any) -> dict[int, str]:
    """``FieldSplit.typed_kinds`` of a split that returns every field as text (for Spark's cast)."""
    return {}


def variants(spark: Any, data: Path, refs: dict[str, tuple[Any, Any]]) -> dict[str, Callable[[], Any]]:
    """Each variant's read as a function giving a DataFrame of typed columns."""
    import warnings

    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    from pyspark.sql.types import ArrayType, StringType

    from sqlext.catalog.csv_text import CsvTextForm
    from sqlext.connectors.filesystem import csv_records

    form = CsvTextForm()
    zone = spark.conf.get("spark.sql.session.timeZone")

    def lines() -> Any:
        return spark.read.format("text").schema("value string").option("lineSep", "\n").load(str(data))

    def parsed(records: Any) -> Any:
        plain, fields = form.split(F.col("value"), len(TYPES))
        split = records.select(plain.alias("plain"), fields.alias("fields"))
        typed, _ = form.typed(F.col("plain"), F.col("fields"), TYPES)
        return split.select(*typed)

    def framed() -> Any:
        """The lines with the range columns the source sends to Python (file path, block start and end)."""
        return lines().select(
            "value",
            F.col("_metadata.file_path").alias(csv_records.FILE),
            F.col("_metadata.file_block_start").alias(csv_records.BLOCK_START),
            (F.col("_metadata.file_block_start") + F.col("_metadata.file_block_length")).alias(csv_records.BLOCK_END),
        )

    def split_in_python(joiner: Any, module: Any, typed: bool) -> Any:
        """The source's read as ``module`` (``csv_fields`` at a commit) makes it: records, and the fields of
        plain records from Python (typed, or all as text)."""
        kind = module.FieldSplit if typed else type("TextFields", (module.FieldSplit,), {"typed_kinds": no_typed_kinds})
        fields = kind(form, tuple(TYPES), zone)
        return module.typed_records(joiner.records(lines(), [], form, {}, fields), form, TYPES, None, [], fields)

    def text_only() -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="It is preferred to specify type hints")
            udf = arrow_udf(nulls_udf, ArrayType(StringType()), ArrowUDFType.SCALAR_ITER).asNondeterministic()
        value = F.col("value")
        found = lines().select(value, udf(value).alias("found"))
        return parsed(found.select(F.explode(F.coalesce(F.col("found"), F.array(value))).alias("value")))

    found: dict[str, Callable[[], Any]] = {
        "lines only": lines,
        "parquet": lambda: spark.read.parquet(str(data.with_name("input-parquet"))),
        "no python": lambda: parsed(lines()),
        "mapInArrow": lambda: parsed(csv_records.records(lines(), [], form, {})),
        "arrow_udf, text only": text_only,
        "mapInArrow identity": lambda: parsed(lines().mapInArrow(identity, "value string")),
        "mapInArrow identity, range columns": lambda: parsed(framed().mapInArrow(drop_range, "value string")),
    }
    for ref, (joiner, fields) in refs.items():
        found[f"csv_records@{ref}"] = lambda joiner=joiner: parsed(joiner.records(lines(), [], form, {}))
        if fields is not None:
            for typed, name in ((False, "text"), (True, "typed")):
                found[f"csv_fields@{ref}, {name}"] = lambda j=joiner, f=fields, t=typed: split_in_python(j, f, t)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--ref", action="append", default=[], help="a git commit whose csv_records (and csv_fields) to run too"
    )
    parser.add_argument("--only", action="append", default=[], help="a variant to run (default: all)")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers run this venv's Python
    home = scratch_dir()
    data = home / "input-csv"
    write_input(data, "csv", args.rows, 24, 1)
    write_parquet_copy(data, home / "input-parquet")
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    refs = {ref: (module_at(ref, home), module_at(ref, home, "csv_fields")) for ref in args.ref}
    reads = variants(spark, data, refs)
    if args.only:
        reads = {name: reads[name] for name in args.only}
    for name, read in reads.items():  # warm-up, and every variant reads every row
        count = read().count() if name != "lines only" else args.rows  # a count of lines reads no text
        assert count == args.rows, f"{name}: {count} rows"
        read().write.format("noop").mode("overwrite").save()
    names = list(reads)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    loads = []
    for index in range(args.rounds):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            loads.append(os.getloadavg()[0])
            before, started = tree_cpu_seconds(), time.perf_counter()
            reads[name]().write.format("noop").mode("overwrite").save()
            wall[name].append(round(time.perf_counter() - started, 2))
            cpu[name].append(round(tree_cpu_seconds() - before, 2))
            print(f"  round {index} {name}: {wall[name][-1]} s, CPU {cpu[name][-1]} s (load {loads[-1]:.1f})")
    spark.stop()
    floor = median(cpu["no python"]) if "no python" in cpu else 0.0
    table = [
        [name, ", ".join(map(str, wall[name])), ", ".join(map(str, cpu[name])), f"{median(cpu[name]) - floor:+.2f}"]
        for name in names
    ]
    print_table(["variant", "wall s", "CPU s", "CPU over no python (median)"], table)
    write_result(
        "csv_python_pass",
        {"rows": args.rows, "refs": args.ref, "wall_s": wall, "cpu_s": cpu, "load_average": [min(loads), max(loads)]},
    )


if __name__ == "__main__":
    main()
