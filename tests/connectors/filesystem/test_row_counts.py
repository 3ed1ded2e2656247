"""Row counts of committed files in every format: footers (parquet, orc), lines (csv, json), and an honest
"uncounted" where a count cannot be known (compressed text)."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.commit_log import LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.files import count_all_rows, data_files
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.io.fs import FileSystem
from sqlext.spark.session import extend
from sqlext.table import TableDefinition, TableIdentifier


def _counts(directory: Path, fmt: str) -> int | None:
    fs = FileSystem(directory.as_uri())
    return count_all_rows(fs, data_files(fs, directory.as_uri()), fmt)


def test_csv_and_json_rows_are_their_lines_a_last_line_without_a_break_included(tmp_path: Path) -> None:
    (tmp_path / "part-0.csv").write_bytes(b"1,a\n2,b\\nstill b\n3,c\n")  # a line break in a value is escaped
    (tmp_path / "part-1.csv").write_bytes(b"4,d\n5,e")  # no final line break
    (tmp_path / "part-2.csv").write_bytes(b"")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    assert _counts(tmp_path, "csv") == 5
    assert _counts(tmp_path, "json") == 5


def test_a_compressed_text_file_is_uncounted_not_zero(tmp_path: Path) -> None:
    (tmp_path / "part-0.csv").write_bytes(b"1,a\n")
    (tmp_path / "part-1.csv.gz").write_bytes(gzip.compress(b"2,b\n3,c\n"))
    assert _counts(tmp_path, "csv") is None
    entry = LogEntry(
        "q", 0, State.COMPLETED, files=[PlannedFile("s", "f", "p", 1, None), PlannedFile("s", "g", "p", 1, 3)]
    )
    assert not entry.rows_known and entry.rows == 3
    assert entry.rows_described == "an uncounted number of"


@pytest.mark.spark
@pytest.mark.hms
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_text_partitions_are_committed_with_their_row_counts(
    spark, hms: MetastoreClient, tmp_path: Path, fmt: str
) -> None:
    extend(spark)
    spark.sql("CREATE DATABASE IF NOT EXISTS row_counts")
    spark.sql(f"""
        CREATE TABLE row_counts.t_{fmt} (id BIGINT, note STRING, p STRING) PARTITIONED BY (p)
        WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / fmt).as_uri()}', 'format' = '{fmt}')""")
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    try:
        spark.sql(f"""
            INSERT INTO row_counts.t_{fmt}
            SELECT id, CASE WHEN id % 3 = 0 THEN 'two\nlines' ELSE 'x' END, IF(id < 7, 'a', 'b')
            FROM range(10)""")
    finally:
        spark.sql("RESET 'execution.runtime-mode'")

    names = sorted(hms.get_partition_names("row_counts", f"t_{fmt}"))
    partitions = hms.get_partitions_by_names("row_counts", f"t_{fmt}", names)
    assert {p.values[0]: p.parameters["numRows"] for p in partitions} == {"a": "7", "b": "3"}


def test_without_gathered_statistics_a_file_is_not_read_for_its_rows(tmp_path: Path) -> None:
    (tmp_path / "part-0.json").write_bytes(b'{"id": 1}\n{"id": 2}\n')
    table = TableDefinition(
        TableIdentifier("d", "t"), (), {"connector": "filesystem", "path": tmp_path.as_uri(), "format": "json"}
    )
    settings = SinkSettings.from_table(table)
    fs = FileSystem(tmp_path.as_uri())
    [status] = data_files(fs, tmp_path.as_uri())
    assert settings.count_rows(fs, status) == 2
    assert replace(settings, gather_statistics=False).count_rows(fs, status) is None


@pytest.mark.spark
@pytest.mark.hms
def test_partitions_committed_without_gathered_statistics_have_no_row_count_and_lose_an_old_one(
    spark, hms: MetastoreClient, tmp_path: Path
) -> None:
    """Flink's ``table.exec.hive.sink.statistic-auto-gather.enable`` = ``false``: ``numFiles`` and ``totalSize``
    from the listing, no ``numRows``, also where an earlier commit with statistics had stored one."""
    extend(spark)
    option = "table.exec.hive.sink.statistic-auto-gather.enable"
    spark.sql("CREATE DATABASE IF NOT EXISTS row_counts")
    spark.sql(f"""
        CREATE TABLE row_counts.t_gather (id BIGINT, p STRING) PARTITIONED BY (p)
        WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "t").as_uri()}', 'format' = 'json')""")
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    try:
        spark.sql("INSERT INTO row_counts.t_gather SELECT id, 'a' FROM range(4)")
        spark.sql(f"SET '{option}' = 'yes'")
        with pytest.raises(Exception, match=f"Invalid value for option '{option}': 'yes'. Expected 'true' or 'false'"):
            spark.sql("INSERT INTO row_counts.t_gather SELECT id, 'a' FROM range(3)")
        spark.sql(f"SET '{option}' = 'FALSE'")
        spark.sql("INSERT INTO row_counts.t_gather SELECT id, IF(id < 3, 'a', 'b') FROM range(5)")
    finally:
        spark.sql("RESET 'execution.runtime-mode'")
        spark.sql(f"RESET '{option}'")

    names = sorted(hms.get_partition_names("row_counts", "t_gather"))
    partitions = {p.values[0]: p.parameters for p in hms.get_partitions_by_names("row_counts", "t_gather", names)}
    files = {p: [f for f in (tmp_path / "t" / f"p={p}").iterdir() if not f.name.startswith(("_", "."))] for p in "ab"}
    for value, parameters in partitions.items():
        assert "numRows" not in parameters, (value, parameters)  # 'a' had 4 before the second insert
        assert parameters["numFiles"] == str(len(files[value]))
        assert parameters["totalSize"] == str(sum(f.stat().st_size for f in files[value]))
    rows = spark.read.json(str(tmp_path / "t")).groupBy("p").count().collect()
    assert {row["p"]: row["count"] for row in rows} == {"a": 7, "b": 2}
