"""avro files both ways against Flink 2.3 itself, the same DDL in both engines (Flink's ``avro`` format with
``flink-sql-avro``): Flink's filesystem source reads back every value sqlext wrote (every column the
interop matrix's avro table holds, ARRAY, MAP and ROW too), and sqlext's source reads every value Flink's
filesystem sink wrote (the columns Flink writes from literals: no ARRAY, MAP, ROW). The rows are the interop
matrix's (:mod:`tests.support.interop`): a TIME holds times of day only (Avro's ``time-millis``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.registry import SourceContext
from sqlext.spark.session import extend
from sqlext.sql.parser import parse_statement
from sqlext.sql.statements import CreateTable
from tests.connectors.filesystem.test_flink_files import (
    FLINK_WRITTEN_ROWS,
    _from_flink_text,
    _select,
    flink_literal,
)
from tests.support import interop
from tests.support.flink import Flink, flink_avro_jar

pytestmark = [pytest.mark.flink, pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

DATABASE = "flinkavro"


def _config() -> dict[str, str]:
    return {"table.local-time-zone": "UTC", "pipeline.jars": flink_avro_jar().as_uri()}


def _ddl(name: str, columns: list[tuple[str, str]], path: Path) -> str:
    rendered = ", ".join(f"`{n}` {t}" for n, t in columns)
    return (
        f"CREATE TABLE {name} ({rendered}) PARTITIONED BY (p) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = 'avro')"
    )


# -- sqlext writes, Flink reads ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlext_written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An avro table sqlext wrote (a batch insert of the matrix's avro rows)."""
    root = tmp_path_factory.mktemp("sqlext-avro")
    extend(spark)
    interop.add_spark_avro(spark)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    try:
        landing = root / "landing"
        spark.createDataFrame(interop.expected_rows("avro"), interop.spark_schema("avro")).coalesce(1).write.parquet(
            landing.as_uri()
        )
        spark.sql(
            f"CREATE TABLE {DATABASE}.src ({interop.ddl_columns('avro')}) WITH ('connector' = 'filesystem', "
            f"'path' = '{landing.as_uri()}', 'format' = 'parquet')"
        )
        spark.sql(_ddl(f"{DATABASE}.sqlext_avro", interop.columns_for("avro"), root / "avro"))
        spark.sql(f"INSERT INTO {DATABASE}.sqlext_avro SELECT * FROM {DATABASE}.src")
    finally:
        spark.sql("RESET 'execution.runtime-mode'")
    yield root / "avro"


def test_flink_reads_every_value_sqlext_wrote(flink: Flink, sqlext_written: Path) -> None:
    assert any(sqlext_written.glob("p=*/*.avro")), "sqlext wrote avro files"
    ddl = _ddl("t", interop.columns_for("avro"), sqlext_written)
    rows = flink.query([ddl, _select("t", "avro", "flink")], mode="batch", **_config())
    interop.assert_rows_equal("avro", "Flink's source reading sqlext's avro", _from_flink_text(rows, "avro"))


# -- Flink writes, sqlext reads ----------------------------------------------------------------------

#: The avro columns Flink writes from literals here (no ARRAY, MAP, ROW literals).
FLAT = [(n, t) for n, t in interop.columns_for("avro") if not interop.is_complex(t)]


def _flink_holds() -> list[tuple[Any, ...]]:
    """The matrix's rows on :data:`FLAT` as Flink holds them after inserting them from literals (CHAR padded,
    FLOAT folded to 7 digits), a TIME that is no time of day NULL."""
    keep = [i for i, column in enumerate(interop.COLUMNS) if column in FLAT]
    return sorted((tuple(row[i] for i in keep) for row in FLINK_WRITTEN_ROWS), key=lambda row: row[0])


def test_sqlext_reads_every_value_flink_wrote(
    flink: Flink, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    interop.add_spark_avro(spark)
    path = tmp_path / "flink_avro"
    ddl = _ddl("flink_avro", FLAT, path)
    types = [t for _, t in FLAT]
    values = ",\n".join(
        "(" + ", ".join(flink_literal(v, t) for v, t in zip(row, types, strict=True)) + ")" for row in _flink_holds()
    )
    flink.run([ddl, f"INSERT INTO flink_avro VALUES {values}"], mode="batch", **_config())
    assert any(path.glob("p=*/part-*")), "Flink wrote its files"
    statement = parse_statement(ddl)
    assert isinstance(statement, CreateTable)
    frame = FileSystemTableFactory().create_source(SourceContext(spark, statement.table, streaming=False))
    rows = frame.select(*[f"`{n}`" for n, _ in FLAT]).collect()
    monkeypatch.setattr(interop, "columns_for", lambda fmt: FLAT)
    interop.assert_rows_equal("avro", "sqlext's source reading Flink's avro", rows, _flink_holds())
