"""The tests' Spark session extended by sqlext for one test module, and given back as it was."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlext.spark.session import extend


@contextmanager
def extended_session(spark: Any, root: Path, database: str | None = None) -> Iterator[Any]:
    """``spark`` extended, with its checkpoints under ``root`` (and ``database`` created); afterwards the
    plain session later modules expect, if it was plain before."""
    was_extended = hasattr(spark, "_sqlext_session")
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (root / "checkpoints").as_uri())
    if database:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    try:
        yield spark
    finally:
        spark.conf.unset("spark.sqlext.checkpoint.root")
        if not was_extended:
            del spark.sql
            del spark._sqlext_session
