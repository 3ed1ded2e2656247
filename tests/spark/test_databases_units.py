"""Which statements sqlext creates as Spark's ``CREATE DATABASE`` (sqlext.spark.databases), without Spark."""

from __future__ import annotations

import pytest

from sqlext.spark.databases import plain_create_database


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("CREATE DATABASE d", ("d", False)),
        ("create schema IF NOT EXISTS Sales_2026", ("sales_2026", True)),
        ("  CREATE DATABASE `Raw`;  ", ("raw", False)),
        ("CREATE\nDATABASE\tif not exists x1", ("x1", True)),
    ],
)
def test_the_plain_form_gives_the_name_as_spark_stores_it(sql: str, expected: tuple[str, bool]) -> None:
    assert plain_create_database(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE DATABASE d COMMENT 'c'",
        "CREATE DATABASE d LOCATION '/tmp/d'",
        "CREATE DATABASE d WITH DBPROPERTIES ('k' = 'v')",
        "CREATE DATABASE cat.d",
        "CREATE DATABASE `a-b`",
        "CREATE NAMESPACE d",
        "CREATE TABLE d (a INT)",
        "CREATE DATABASE IF EXISTS d",
    ],
)
def test_every_other_form_is_left_to_spark(sql: str) -> None:
    assert plain_create_database(sql) is None
