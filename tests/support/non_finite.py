"""json tables holding NaN, Infinity and -Infinity (``json.encode.non-finite-number.mode``), for the tests of
what is committed and what each reader reads back (``test_json_non_finite``, ``test_trino``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

INF = math.inf
#: The columns, as sqlext declares them (after ``id INT``; partitioned by ``p``).
COLUMNS = "id INT, d DOUBLE, f FLOAT, a ARRAY<DOUBLE>, r ROW<x DOUBLE>, p STRING"
#: (id, d, f, a, r, p): each non-finite value at the top level, in an array and in a row, and a finite row.
ROWS: list[tuple[Any, ...]] = [
    (1, math.nan, math.nan, [1.0, math.nan], (INF,), "a"),
    (2, INF, -INF, [], (1.0,), "a"),
    (3, -INF, 1.5, None, None, "a"),
    (4, 2.5, 2.5, [2.5], (2.5,), "a"),
]
#: ``ROWS`` as written with mode ``NULL``: every non-finite value null, at any depth.
NULLED: list[tuple[Any, ...]] = [
    (1, None, None, [1.0, None], (None,), "a"),
    (2, None, None, [], (1.0,), "a"),
    (3, None, 1.5, None, None, "a"),
    (4, 2.5, 2.5, [2.5], (2.5,), "a"),
]


def create_source(spark: Any, database: str, root: Path, name: str, rows: list[tuple[Any, ...]]) -> str:
    """A parquet source table ``<database>.<name>`` holding ``rows`` (of :data:`COLUMNS`); its name."""
    landing = root / f"landing_{name}"
    schema = "id INT, d DOUBLE, f FLOAT, a ARRAY<DOUBLE>, r STRUCT<x: DOUBLE>, p STRING"
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(landing.as_uri())
    spark.sql(
        f"CREATE TABLE {database}.{name} ({COLUMNS}) WITH ('connector' = 'filesystem', "
        f"'path' = '{landing.as_uri()}', 'format' = 'parquet')"
    )
    return f"{database}.{name}"


def create_json_table(spark: Any, database: str, root: Path, name: str, mode: str | None) -> Path:
    """A json table ``<database>.<name>`` partitioned by ``p``, with ``json.encode.non-finite-number.mode``
    = ``mode`` (None: not declared); its path."""
    path = root / name
    extra = "" if mode is None else f", 'json.encode.non-finite-number.mode' = '{mode}'"
    spark.sql(
        f"CREATE TABLE {database}.{name} ({COLUMNS}) PARTITIONED BY (p) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = 'json'{extra})"
    )
    return path


def data_lines(path: Path) -> list[str]:
    """The lines of the committed json files under ``path`` (not the staging under ``_sqlext``)."""
    files = [f for f in sorted(path.rglob("*.json")) if not f.relative_to(path).parts[0].startswith(("_", "."))]
    return sorted(line for f in files for line in f.read_text().splitlines())


def same(left: Any, right: Any) -> bool:
    """Equal values, NaN equal to NaN, rows and lists compared item by item."""
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)
