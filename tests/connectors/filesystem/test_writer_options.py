"""Parquet's and orc's format options reach the file writer under their Hadoop keys, as Flink hands them to its
writers: what the options ask for is in the files' footers, read by pyarrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from tests.support.extension import extended_session

pytestmark = [pytest.mark.spark, pytest.mark.hms]

DB = "writer_options"


def _data_files(root: Path) -> list[Path]:
    return [
        p for p in root.rglob("*") if p.is_file() and not p.name.startswith(("_", ".")) and "_sqlext" not in p.parts
    ]


def _insert(spark: Any, root: Path, name: str, fmt: str, options: str) -> list[Path]:
    path = root / name
    spark.sql(
        f"CREATE TABLE {DB}.{name} (id BIGINT, name STRING, dt STRING) PARTITIONED BY (dt) WITH ("
        f"'connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = '{fmt}', {options})"
    )
    spark.sql(f"INSERT INTO {DB}.{name} SELECT id, CAST(id AS STRING), '2026-12-01' FROM range(100) AS r(id)")
    return _data_files(path)


def test_orc_and_parquet_options_are_written_into_the_files(spark: Any, tmp_path: Path) -> None:
    with extended_session(spark, tmp_path, DB):
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        try:
            orc_files = _insert(spark, tmp_path, "zlib_orc", "orc", "'orc.compress' = 'ZLIB'")
            plain_orc = _insert(spark, tmp_path, "plain_orc", "orc", "'orc.stripe.size' = '67108864'")
            parquet_files = _insert(
                spark,
                tmp_path,
                "gzip_parquet",
                "parquet",
                "'parquet.compression' = 'GZIP', 'parquet.page.size' = '4096'",
            )
        finally:
            spark.sql("RESET 'execution.runtime-mode'")
        rows = spark.sql(f"SELECT count(*) FROM {DB}.zlib_orc").first()[0]
    assert rows == 100
    assert orc_files and {orc.ORCFile(str(p)).compression for p in orc_files} == {"ZLIB"}
    assert plain_orc and {orc.ORCFile(str(p)).compression for p in plain_orc} == {"ZSTD"}, "Spark 4's default"
    assert parquet_files
    codecs = {pq.ParquetFile(p).metadata.row_group(0).column(0).compression for p in parquet_files}
    assert codecs == {"GZIP"}


def test_a_query_whose_columns_share_a_name_inserts_them_by_position(spark: Any, tmp_path: Path) -> None:
    """Spark names ``CAST(id AS STRING)`` ``id`` too; columns go to the sink by position, as in Flink."""
    with extended_session(spark, tmp_path, DB):
        spark.sql("SET 'execution.runtime-mode' = 'batch'")
        try:
            _insert(spark, tmp_path, "same_names", "parquet", "'parquet.compression' = 'SNAPPY'")
        finally:
            spark.sql("RESET 'execution.runtime-mode'")
        rows = spark.sql(f"SELECT id, name, dt FROM {DB}.same_names WHERE id IN (7, 42) ORDER BY id").collect()
    assert [tuple(row) for row in rows] == [(7, "7", "2026-12-01"), (42, "42", "2026-12-01")]
