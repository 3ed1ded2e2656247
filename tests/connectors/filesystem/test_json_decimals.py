"""DECIMALs in plain notation (``json.encode.decimal-as-plain-number`` = ``true``, and the change-event
formats' ``<format>.encode.decimal-as-plain-number``): the lines an INSERT commits are the text Flink 2.3
writes for the same DDL and values (``0.00000010``, never ``1.0E-7``; the declared scale kept), at the top
level, in an ARRAY, a ROW and a MAP's value; Spark reads every value back through the HMS. Flink's own
output for the same DDL is compared in ``test_flink_files.py``."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.extension import extended_session
from tests.support.services import spark_own_sql

pytestmark = [pytest.mark.spark, pytest.mark.hms]

DB = "json_decimals"
COLUMNS = "id INT, d DECIMAL(10, 8), a ARRAY<DECIMAL(10, 8)>, r ROW<y DECIMAL(10, 8)>, m MAP<STRING, DECIMAL(10, 8)>"
VALUES = (Decimal("0.0000001"), Decimal("0"), Decimal("12.5"), Decimal("-0.5"))
#: What Flink 2.3 writes for these rows with ``'json.encode.decimal-as-plain-number' = 'true'`` (its
#: default writes ``1E-7`` and ``0``, Spark's ``1.0E-7`` and ``0E-8``).
PLAIN = [
    '{"id":1,"d":0.00000010,"a":[0.00000010],"r":{"y":0.00000010},"m":{"k":0.00000010}}',
    '{"id":2,"d":0.00000000,"a":[0.00000000],"r":{"y":0.00000000},"m":{"k":0.00000000}}',
    '{"id":3,"d":12.50000000,"a":[12.50000000],"r":{"y":12.50000000},"m":{"k":12.50000000}}',
    '{"id":4,"d":-0.50000000,"a":[-0.50000000],"r":{"y":-0.50000000},"m":{"k":-0.50000000}}',
    '{"id":5,"d":null,"a":[null],"r":null,"m":{"k":null}}',
]


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The extended session with the database; its root and a parquet source of the rows."""
    root = tmp_path_factory.mktemp("json_decimals")
    with extended_session(spark, root, DB):
        rows = [(i, v, [v], (v,), {"k": v}, "a") for i, v in enumerate((*VALUES, None), start=1)]
        rows[-1] = (5, None, [None], None, {"k": None}, "a")
        landing = root / "landing"
        schema = "id INT, d DECIMAL(10,8), a ARRAY<DECIMAL(10,8)>, r STRUCT<y: DECIMAL(10,8)>, "
        schema += "m MAP<STRING, DECIMAL(10,8)>, p STRING"
        spark.createDataFrame(rows, schema).coalesce(1).write.parquet(landing.as_uri())
        spark.sql(
            f"CREATE TABLE {DB}.src ({COLUMNS}, p STRING) WITH ('connector' = 'filesystem', "
            f"'path' = '{landing.as_uri()}', 'format' = 'parquet')"
        )
        yield root, f"{DB}.src"


def _insert(spark: Any, statement: str) -> None:
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    try:
        [row] = spark.sql(statement).collect()
    finally:
        spark.sql("RESET 'execution.runtime-mode'")
    assert row.status == "FINISHED", row


def _lines(path: Path) -> list[str]:
    files = [f for f in sorted(path.rglob("part-*")) if not f.relative_to(path).parts[0].startswith(("_", "."))]
    return sorted(line for f in files for line in f.read_text().splitlines())


def test_plain_decimals_are_written_as_flink_writes_them_and_read_back(spark: Any, source: tuple[Path, str]) -> None:
    root, src = source
    path = root / "plain"
    spark.sql(
        f"CREATE TABLE {DB}.plain ({COLUMNS}, p STRING) PARTITIONED BY (p) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = 'json', 'json.encode.decimal-as-plain-number' = 'TRUE')"
    )
    _insert(spark, f"INSERT INTO {DB}.plain SELECT * FROM {src}")
    assert _lines(path) == PLAIN
    read = spark_own_sql(spark)(f"SELECT id, d, a, r, m, p FROM {DB}.plain ORDER BY id").collect()
    expected = spark_own_sql(spark)(f"SELECT id, d, a, r, m, p FROM {src} ORDER BY id").collect()
    assert [r.asDict(recursive=True) for r in read] == [r.asDict(recursive=True) for r in expected]


def test_a_change_event_format_writes_plain_decimals_too(spark: Any, source: tuple[Path, str]) -> None:
    root, src = source
    path = root / "events"
    spark.sql(
        f"CREATE TABLE {DB}.events ({COLUMNS}) WITH ('connector' = 'filesystem', 'path' = '{path.as_uri()}', "
        "'format' = 'debezium-json', 'debezium-json.encode.decimal-as-plain-number' = 'true')"
    )
    _insert(spark, f"INSERT INTO {DB}.events SELECT id, d, a, r, m FROM {src}")
    assert _lines(path) == sorted(f'{{"before":null,"after":{line},"op":"c"}}' for line in PLAIN)
