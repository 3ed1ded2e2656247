"""The Flink dialect: types and statements, parsed without any service."""

from __future__ import annotations

import pytest

from sqlext.errors import ValidationError
from sqlext.types import hive_type, normalize, spark_type

# Flink type text -> (canonical Flink text, Spark type, Hive type)
TYPES = [
    ("CHAR(3)", "CHAR(3)", "string", "string"),
    ("char", "CHAR(1)", "string", "string"),
    ("VARCHAR(10)", "VARCHAR(10)", "string", "string"),
    ("STRING", "STRING", "string", "string"),
    ("BOOLEAN", "BOOLEAN", "boolean", "boolean"),
    ("TINYINT", "TINYINT", "tinyint", "tinyint"),
    ("SMALLINT", "SMALLINT", "smallint", "smallint"),
    ("INT", "INT", "int", "int"),
    ("integer", "INT", "int", "int"),
    ("BIGINT", "BIGINT", "bigint", "bigint"),
    ("FLOAT", "FLOAT", "float", "float"),
    ("DOUBLE", "DOUBLE", "double", "double"),
    ("DECIMAL", "DECIMAL(10, 0)", "decimal(10,0)", "decimal(10,0)"),
    ("DECIMAL(12)", "DECIMAL(12, 0)", "decimal(12,0)", "decimal(12,0)"),
    ("DECIMAL(12, 2)", "DECIMAL(12, 2)", "decimal(12,2)", "decimal(12,2)"),
    ("DATE", "DATE", "date", "date"),
    ("TIME", "TIME(0)", "string", "string"),
    ("TIME(3)", "TIME(3)", "string", "string"),
    ("TIMESTAMP", "TIMESTAMP(6)", "timestamp", "timestamp"),
    ("TIMESTAMP(3)", "TIMESTAMP(3)", "timestamp", "timestamp"),
    ("TIMESTAMP(3) WITHOUT TIME ZONE", "TIMESTAMP(3)", "timestamp", "timestamp"),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)", "timestamp", "timestamp"),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)", "timestamp", "timestamp"),
    ("BYTES", "BYTES", "binary", "binary"),
    ("BINARY(4)", "BINARY(4)", "binary", "binary"),
    ("VARBINARY(4)", "VARBINARY(4)", "binary", "binary"),
    ("ARRAY<INT>", "ARRAY<INT>", "array<int>", "array<int>"),
    ("MAP<STRING, BIGINT>", "MAP<STRING, BIGINT>", "map<string,bigint>", "map<string,bigint>"),
    ("MULTISET<STRING>", "MULTISET<STRING>", "map<string,int>", "map<string,int>"),
    ("ROW<a INT, b STRING>", "ROW<`a` INT, `b` STRING>", "struct<a:int,b:string>", "struct<a:int,b:string>"),
    ("ROW(a INT, b STRING)", "ROW<`a` INT, `b` STRING>", "struct<a:int,b:string>", "struct<a:int,b:string>"),
    ("ROW<`a b` INT>", "ROW<`a b` INT>", "struct<`a b`:int>", "struct<a b:int>"),
    (
        "ARRAY<ROW<k STRING, v MAP<STRING, ARRAY<DOUBLE>>>>",
        "ARRAY<ROW<`k` STRING, `v` MAP<STRING, ARRAY<DOUBLE>>>>",
        "array<struct<k:string,v:map<string,array<double>>>>",
        "array<struct<k:string,v:map<string,array<double>>>>",
    ),
]


@pytest.mark.parametrize(("flink", "canonical", "spark", "hive"), TYPES, ids=[t[0] for t in TYPES])
def test_type_mapping(flink: str, canonical: str, spark: str, hive: str) -> None:
    assert normalize(flink) == canonical
    assert normalize(canonical) == canonical, "canonical text is a fixed point"
    assert spark_type(flink) == spark
    assert hive_type(flink) == hive


@pytest.mark.parametrize("text", ["FOO", "TIMESTAMP(3) WITH TIME ZONE", "INTERVAL DAY", "RAW('a', 'b')", "LIST<INT>"])
def test_unsupported_types_name_the_type_and_list_the_supported_ones(text: str) -> None:
    with pytest.raises(ValidationError) as failure:
        normalize(text)
    assert f"Unsupported type '{text}'" in failure.value.message or text.split("(")[0] in failure.value.message
    assert "Supported types: CHAR(n)" in failure.value.message and "MULTISET<T>" in failure.value.message
