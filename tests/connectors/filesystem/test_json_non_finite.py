"""NaN, Infinity and -Infinity in a json table (``json.encode.non-finite-number.mode``, issue 56): what an
INSERT commits in each mode and what Spark (through the HMS), sqlext's source and pyarrow's json reader read
back. Trino's reads are in ``test_trino.py``; Flink's (its json writer writes the strings ``"NaN"``,
``"Infinity"``, ``"-Infinity"``, which mode ``STRING``, the default, writes) in ``test_flink_files.py``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pytest

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import FileSystemTableFactory
from sqlext.registry import SourceContext
from sqlext.table import TableIdentifier
from tests.support.extension import extended_session
from tests.support.non_finite import NULLED, ROWS, create_json_table, create_source, data_lines, same
from tests.support.services import spark_own_sql

pytestmark = [pytest.mark.spark, pytest.mark.hms]

DB = "non_finite"
#: The data columns as pyarrow reads them from a json file (the partition key is in the path).
ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("d", pa.float64()),
        ("f", pa.float32()),
        ("a", pa.list_(pa.float64())),
        ("r", pa.struct([("x", pa.float64())])),
    ]
)


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The extended session with the database ``non_finite``; its root and the source of :data:`ROWS`."""
    root = tmp_path_factory.mktemp("non_finite")
    with extended_session(spark, root, DB):
        yield root, create_source(spark, DB, root, "src", ROWS)


def _insert(spark: Any, statement: str) -> None:
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    [row] = spark.sql(statement).collect()
    assert row.status == "FINISHED", row


def _spark_rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    rows = spark_own_sql(spark)(f"SELECT id, d, f, a, r, p FROM {DB}.{table} ORDER BY id").collect()
    return [(r.id, r.d, r.f, r.a, None if r.r is None else (r.r.x,), r.p) for r in rows]


def _sqlext_rows(spark: Any, hms: MetastoreClient, table: str) -> list[tuple[Any, ...]]:
    """The table's rows as sqlext's filesystem source reads its files."""
    definition = Catalog(hms).get_table(TableIdentifier(DB, table))
    frame = FileSystemTableFactory().create_source(SourceContext(spark, definition, streaming=False))
    rows = frame.select("id", "d", "f", "a", "r", "p").orderBy("id").collect()
    return [(r.id, r.d, r.f, r.a, None if r.r is None else (r.r.x,), r.p) for r in rows]


def _arrow_rows(path: Path) -> list[tuple[Any, ...]]:
    [data] = [f for f in path.rglob("*.json") if f.relative_to(path).parts[0] == "p=a"]
    table = pa_json.read_json(data, parse_options=pa_json.ParseOptions(explicit_schema=ARROW_SCHEMA))
    rows = table.to_pylist()
    return sorted((r["id"], r["d"], r["f"], r["a"], None if r["r"] is None else (r["r"]["x"],), "a") for r in rows)


def test_mode_fail_fails_an_insert_holding_one_naming_table_column_and_value(
    spark: Any, hms: MetastoreClient, source: tuple[Path, str]
) -> None:
    root, src = source
    path = create_json_table(spark, DB, root, "t_fail", "FAIL")
    with pytest.raises(Exception) as failure:
        _insert(spark, f"INSERT INTO {DB}.t_fail SELECT * FROM {src}")
    message = str(failure.value)
    assert "of table non_finite.t_fail holds " in message
    assert "'json.encode.non-finite-number.mode' = 'STRING'" in message and "'NULL'" in message
    # Nothing committed: no partition in the metastore, no data file in the table.
    assert hms.get_partition_names(DB, "t_fail") == []
    assert data_lines(path) == []


def test_a_non_finite_value_inside_an_array_is_named_by_its_place(
    spark: Any, hms: MetastoreClient, source: tuple[Path, str]
) -> None:
    root, _ = source
    src = create_source(spark, DB, root, "src_nested", [(1, 1.0, 1.0, [2.0, -float("inf")], (3.0,), "a")])
    create_json_table(spark, DB, root, "t_nested", "fail")
    with pytest.raises(Exception, match=r"Column 'a' \(at a\[\*\]\) of table non_finite.t_nested holds -Infinity"):
        _insert(spark, f"INSERT INTO {DB}.t_nested SELECT * FROM {src}")
    assert hms.get_partition_names(DB, "t_nested") == []


def test_by_default_flinks_strings_are_written_which_spark_reads_back_and_pyarrow_fails_on(
    spark: Any, hms: MetastoreClient, source: tuple[Path, str]
) -> None:
    root, src = source
    path = create_json_table(spark, DB, root, "t_string", None)  # the default, STRING
    _insert(spark, f"INSERT INTO {DB}.t_string SELECT * FROM {src}")
    assert hms.get_partition_names(DB, "t_string") == ["p=a"]
    assert data_lines(path) == [
        '{"id":1,"d":"NaN","f":"NaN","a":[1.0,"NaN"],"r":{"x":"Infinity"}}',
        '{"id":2,"d":"Infinity","f":"-Infinity","a":[],"r":{"x":1.0}}',
        '{"id":3,"d":"-Infinity","f":1.5,"a":null,"r":null}',
        '{"id":4,"d":2.5,"f":2.5,"a":[2.5],"r":{"x":2.5}}',
    ]
    assert same(_spark_rows(spark, "t_string"), ROWS)
    assert same(_sqlext_rows(spark, hms, "t_string"), ROWS)
    with pytest.raises(pa.ArrowInvalid, match="changed from number to string"):
        _arrow_rows(path)


def test_mode_null_writes_null_which_spark_and_pyarrow_read(
    spark: Any, hms: MetastoreClient, source: tuple[Path, str]
) -> None:
    root, src = source
    path = create_json_table(spark, DB, root, "t_null", "Null")
    _insert(spark, f"INSERT INTO {DB}.t_null SELECT * FROM {src}")
    assert hms.get_partition_names(DB, "t_null") == ["p=a"]
    assert data_lines(path) == [
        '{"id":1,"d":null,"f":null,"a":[1.0,null],"r":{"x":null}}',
        '{"id":2,"d":null,"f":null,"a":[],"r":{"x":1.0}}',
        '{"id":3,"d":null,"f":1.5,"a":null,"r":null}',
        '{"id":4,"d":2.5,"f":2.5,"a":[2.5],"r":{"x":2.5}}',
    ]
    assert same(_spark_rows(spark, "t_null"), NULLED)
    assert same(_sqlext_rows(spark, hms, "t_null"), NULLED)
    assert same(_arrow_rows(path), NULLED)


def test_an_unknown_mode_is_refused_at_create_table_naming_the_modes(spark: Any, source: tuple[Path, str]) -> None:
    root, _ = source
    with pytest.raises(Exception) as refused:
        create_json_table(spark, DB, root, "t_bad", "ZERO")
    message = str(refused.value)
    assert "Invalid value for option 'json.encode.non-finite-number.mode': 'ZERO'" in message
    assert "'FAIL', 'STRING', 'NULL'" in message
    assert not spark_own_sql(spark)(f"SHOW TABLES IN {DB} LIKE 't_bad'").collect()


def test_a_maps_non_finite_values_are_handled_as_the_mode_says(
    spark: Any, hms: MetastoreClient, source: tuple[Path, str]
) -> None:
    root, _ = source
    landing = root / "landing_maps"
    rows = [(1, {"k": float("nan"), "j": 1.0}, "a")]
    spark.createDataFrame(rows, "id INT, m MAP<STRING, DOUBLE>, p STRING").write.parquet(landing.as_uri())
    columns = "id INT, m MAP<STRING, DOUBLE>, p STRING"
    spark.sql(
        f"CREATE TABLE {DB}.src_maps ({columns}) WITH ('connector' = 'filesystem', 'path' = '{landing.as_uri()}', "
        "'format' = 'parquet')"
    )
    for mode in ("FAIL", "NULL"):
        spark.sql(
            f"CREATE TABLE {DB}.t_maps_{mode.lower()} ({columns}) PARTITIONED BY (p) WITH ('connector' = "
            f"'filesystem', 'path' = '{(root / f't_maps_{mode}').as_uri()}', 'format' = 'json', "
            f"'json.encode.non-finite-number.mode' = '{mode}')"
        )
    with pytest.raises(Exception, match=r"Column 'm' \(at m\[\*\]\) of table non_finite.t_maps_fail holds NaN"):
        _insert(spark, f"INSERT INTO {DB}.t_maps_fail SELECT * FROM {DB}.src_maps")
    assert hms.get_partition_names(DB, "t_maps_fail") == []
    _insert(spark, f"INSERT INTO {DB}.t_maps_null SELECT * FROM {DB}.src_maps")
    assert [json.loads(line) for line in data_lines(root / "t_maps_NULL")] == [{"id": 1, "m": {"k": None, "j": 1.0}}]
    [row] = spark_own_sql(spark)(f"SELECT id, m FROM {DB}.t_maps_null").collect()
    assert (row.id, row.m) == (1, {"k": None, "j": 1.0})


def test_mode_null_fails_a_not_null_columns_own_value_and_nulls_the_others(
    spark: Any, hms: MetastoreClient, source: tuple[Path, str]
) -> None:
    """A NOT NULL column cannot hold the null mode ``NULL`` writes: its own non-finite value fails the write
    (as Flink's sink fails a null in a NOT NULL column at the row), saying so; values inside it, and the
    nullable columns, are written as null."""
    root, src = source
    columns = "id INT, d DOUBLE NOT NULL, f FLOAT, a ARRAY<DOUBLE> NOT NULL, r ROW<x DOUBLE>, p STRING"
    path = root / "t_not_null"
    spark.sql(
        f"CREATE TABLE {DB}.t_not_null ({columns}) PARTITIONED BY (p) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = 'json', 'json.encode.non-finite-number.mode' = 'NULL')"
    )
    with pytest.raises(Exception) as failure:
        _insert(spark, f"INSERT INTO {DB}.t_not_null SELECT * FROM {src} WHERE id = 1")
    message = str(failure.value)
    assert "Column 'd' of table non_finite.t_not_null holds NaN" in message
    assert "the column is NOT NULL, so 'json.encode.non-finite-number.mode' = 'NULL' cannot write null" in message
    assert hms.get_partition_names(DB, "t_not_null") == []
    assert data_lines(path) == []

    finite_d = create_source(spark, DB, root, "src_finite_d", [(1, 1.0, math.nan, [math.nan], (math.inf,), "a")])
    _insert(spark, f"INSERT INTO {DB}.t_not_null SELECT * FROM {finite_d}")
    assert data_lines(path) == ['{"id":1,"d":1.0,"f":null,"a":[null],"r":{"x":null}}']
