"""Temporal (lookup) joins of a stream with the newest committed partition of a table
(``'streaming-source.partition.include' = 'latest'``), on a real metastore and real files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.errors import OptionError, ValidationError
from sqlext.jobs.lookup_join import LatestPartition
from sqlext.spark.session import extend
from sqlext.table import TableIdentifier
from tests.support.read_job import start_insert
from tests.support.services import spark_own_sql
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.hms]

RATES = {"1": {"a": 10, "b": 20}, "2": {"a": 11, "b": 21}, "3": {"a": 99, "b": 99}, "9": {"a": 9}, "10": {"a": 1}}


def _write_rates(root: Path, dt: str) -> None:
    directory = root / f"dt={dt}"
    directory.mkdir(parents=True, exist_ok=True)
    keys = sorted(RATES[dt])
    pq.write_table(pa.table({"k": keys, "rate": [RATES[dt][k] for k in keys]}), directory / "part-0.parquet")


def _commit(spark: Any, dt: str) -> None:
    spark_own_sql(spark)(f"ALTER TABLE lk.rates ADD PARTITION (dt = '{dt}')")


def _write_orders(root: Path, first_id: int) -> list[int]:
    """Orders for keys a, b and c (c has no rate)."""
    ids = [first_id, first_id + 1, first_id + 2]
    rows = pa.table({"id": ids, "k": ["a", "b", "c"]})
    pq.write_table(rows, root / f".orders-{first_id}.tmp")
    os.replace(root / f".orders-{first_id}.tmp", root / f"orders-{first_id}.parquet")  # whole files only
    return ids


def _joined(sink: Path) -> dict[int, tuple[str, int | None, str | None]]:
    """Every row committed into the sink: id -> (k, rate, dt)."""
    rows: dict[int, tuple[str, int | None, str | None]] = {}
    for directory, subdirs, names in os.walk(sink):
        subdirs[:] = [name for name in subdirs if not name.startswith(("_", "."))]
        for name in names:
            if not name.startswith(("_", ".")):
                for row in pq.read_table(Path(directory) / name).to_pylist():
                    assert row["id"] not in rows, f"row {row['id']} written twice"
                    rows[row["id"]] = (row["k"], row["rate"], row["dt"])
    return rows


@pytest.fixture
def tables(spark: Any, tmp_path: Path) -> Iterator[dict[str, Path]]:
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    spark.sql("CREATE DATABASE IF NOT EXISTS lk")
    paths = {name: tmp_path / name for name in ("orders", "rates", "enriched")}
    paths["orders"].mkdir()
    spark.sql(f"""
        CREATE TABLE lk.orders (id BIGINT, k STRING, proc_time AS PROCTIME()) WITH (
          'connector' = 'filesystem', 'path' = '{paths["orders"].as_uri()}', 'format' = 'parquet',
          'source.monitor-interval' = '1 s'
        )""")
    spark.sql(f"""
        CREATE TABLE lk.rates (k STRING, rate BIGINT, dt STRING) PARTITIONED BY (dt) WITH (
          'connector' = 'filesystem', 'path' = '{paths["rates"].as_uri()}', 'format' = 'parquet',
          'streaming-source.enable' = 'true',
          'streaming-source.partition.include' = 'latest',
          'streaming-source.monitor-interval' = '1 s'
        )""")
    spark.sql(f"""
        CREATE TABLE lk.enriched (id BIGINT, k STRING, rate BIGINT, dt STRING) WITH (
          'connector' = 'filesystem', 'path' = '{paths["enriched"].as_uri()}', 'format' = 'parquet'
        )""")
    yield paths
    for name in ("orders", "rates", "enriched"):
        spark.sql(f"DROP TABLE IF EXISTS lk.{name}")


JOIN = (
    "INSERT INTO lk.enriched SELECT o.id, o.k, d.rate, d.dt FROM lk.orders AS o "
    "JOIN lk.rates FOR SYSTEM_TIME AS OF o.proc_time AS d ON o.k = d.k"
)


@pytest.mark.slow
def test_a_stream_joins_the_newest_committed_partition_and_the_next_one_after_the_interval(
    spark: Any, tables: dict[str, Path]
) -> None:
    orders, rates, sink = tables["orders"], tables["rates"], tables["enriched"]
    _write_rates(rates, "1")
    _commit(spark, "1")
    spark.sql("SET 'execution.checkpointing.interval' = '1 s'")
    spark.sql("SET 'pipeline.name' = 'lookup_latest'")
    running = start_insert(spark, JOIN.replace("JOIN", "LEFT JOIN"))
    try:
        first = _write_orders(orders, 0)
        wait_for(lambda: set(first) <= set(_joined(sink)), 120, what="the first orders joined")
        assert _joined(sink) == {0: ("a", 10, "1"), 1: ("b", 20, "1"), 2: ("c", None, None)}

        _write_rates(rates, "2")
        _write_rates(rates, "3")  # on disk, never committed: never joined
        _commit(spark, "2")
        sent = [first]

        def joined_with_dt2() -> bool:
            rows = _joined(sink)
            if any(dt == "2" for _, _, dt in rows.values()):
                return True
            if set(sent[-1]) <= set(rows):  # the previous file is joined: send the next one
                sent.append(_write_orders(orders, sent[-1][0] + 3))
            return False

        wait_for(joined_with_dt2, 120, interval_s=0.5, what="orders joined with dt=2 after the monitor interval")
        last = _write_orders(orders, 1000)  # arrives after dt=2 was loaded
        wait_for(lambda: set(last) <= set(_joined(sink)), 120, what="the last orders joined")
        rows = _joined(sink)
        assert {i for i, (k, _, _) in rows.items() if k == "c"} == {i + 2 for i, *_ in sent} | {1002}
        matched = {i: (k, rate, dt) for i, (k, rate, dt) in rows.items() if k != "c"}
        assert all(rate is None and dt is None for k, rate, dt in rows.values() if k == "c")  # LEFT JOIN
        assert {dt for _, _, dt in matched.values()} == {"1", "2"}
        assert all(dt and rate == RATES[dt][k] for k, rate, dt in matched.values())  # one partition's values
        switched = min(i for i, (_, _, dt) in matched.items() if dt == "2")
        assert all(dt == ("1" if i < switched else "2") for i, (_, _, dt) in matched.items())
        assert rows[1000] == ("a", 11, "2") and rows[1001] == ("b", 21, "2")
    finally:
        running.stop()
        running.wait(60)


def test_the_cached_partition_is_reloaded_only_after_the_monitor_interval(
    spark: Any, metastore: MetastoreSettings, tables: dict[str, Path]
) -> None:
    rates = tables["rates"]
    now = [0.0]
    table = spark._sqlext_session.catalog.get_table(TableIdentifier("lk", "rates"))
    ten_seconds = table.with_options({**table.options, "streaming-source.monitor-interval": "10 s"})
    latest = LatestPartition(ten_seconds, metastore.uri, "rates_view", clock=lambda: now[0])

    def loaded() -> list[tuple[str, int, str]]:
        return sorted(tuple(row) for row in latest.frame(spark).collect())

    assert loaded() == []  # nothing committed yet
    _write_rates(rates, "1")
    _commit(spark, "1")
    now[0] = 10.0
    assert loaded() == [("a", 10, "1"), ("b", 20, "1")]
    _write_rates(rates, "2")
    _commit(spark, "2")
    now[0] = 19.9
    assert loaded() == [("a", 10, "1"), ("b", 20, "1")]  # within the interval: the cached rows
    now[0] = 20.0
    assert loaded() == [("a", 11, "2"), ("b", 21, "2")]
    latest.release()


def test_partition_order_decides_which_partition_is_the_latest(
    spark: Any, metastore: MetastoreSettings, tables: dict[str, Path]
) -> None:
    rates = tables["rates"]
    for dt in ("9", "10"):
        _write_rates(rates, dt)
        _commit(spark, dt)
    table = spark._sqlext_session.catalog.get_table(TableIdentifier("lk", "rates"))
    by_name = LatestPartition(table, metastore.uri, "v1")  # partition-name: 'dt=9' > 'dt=10'
    assert [tuple(row) for row in by_name.frame(spark).collect()] == [("a", 9, "9")]
    by_time = LatestPartition(
        table.with_options(
            {
                **table.options,
                "streaming-source.partition-order": "partition-time",
                "partition.time-extractor.timestamp-pattern": "2026-11-$dt 00:00:00",
            }
        ),
        metastore.uri,
        "v2",
    )
    assert [tuple(row) for row in by_time.frame(spark).collect()] == [("a", 1, "10")]
    by_name.release()
    by_time.release()


def test_bad_uses_fail_naming_what_is_allowed(spark: Any, hms: MetastoreClient, tables: dict[str, Path]) -> None:
    _write_rates(tables["rates"], "1")
    _commit(spark, "1")
    spark.sql("SET 'pipeline.name' = 'lookup_bad'")
    with pytest.raises(OptionError, match=r"'latest' is only for a temporal \(lookup\) join.*FOR SYSTEM_TIME AS OF"):
        spark.sql("INSERT INTO lk.enriched SELECT 0, k, rate, dt FROM lk.rates")
    with pytest.raises(OptionError, match=r"streaming-source\.partition-order.*'newest'.*partition-name"):
        spark.sql("ALTER TABLE lk.rates SET ('streaming-source.partition-order' = 'newest')")
    with pytest.raises(ValidationError, match=r"processing-time column.*AS PROCTIME\(\)"):
        spark.sql(JOIN.replace("o.proc_time", "o.id"))
    with pytest.raises(ValidationError, match=r"inner JOIN or a LEFT JOIN"):
        spark.sql(JOIN.replace("JOIN", "RIGHT JOIN"))
    with pytest.raises(ValidationError, match=r"one by one; it has an aggregate function"):
        spark.sql(
            "INSERT INTO lk.enriched SELECT max(o.id), o.k, max(d.rate), max(d.dt) FROM lk.orders AS o "
            "JOIN lk.rates FOR SYSTEM_TIME AS OF o.proc_time AS d ON o.k = d.k GROUP BY o.k"
        )
    with pytest.raises(ValidationError, match=r"lk\.orders does not"):
        spark.sql(
            "INSERT INTO lk.enriched SELECT o.id, o.k, 0, '' FROM lk.orders AS o "
            "JOIN lk.orders FOR SYSTEM_TIME AS OF o.proc_time AS p ON o.k = p.k"
        )
    with pytest.raises(ValidationError, match=r"the query returns 3 columns"):
        spark.sql(JOIN.replace("o.id, o.k, d.rate, d.dt", "o.id, o.k, d.rate"))
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    try:
        with pytest.raises(ValidationError, match=r"streaming mode only"):
            spark.sql(JOIN)
    finally:
        spark.sql("SET 'execution.runtime-mode' = 'streaming'")
    assert not any(query.name == "lookup_bad" for query in spark.streams.active)
    assert _joined(tables["enriched"]) == {}
    assert not (tables["orders"].parent / "checkpoints" / "lookup_bad").exists(), (
        "a refused insert leaves no checkpoint"
    )


def test_a_csv_table_with_a_typed_partition_key_loads_its_newest_partition(
    spark: Any, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    extend(spark)
    spark.sql("CREATE DATABASE IF NOT EXISTS lk")
    root = tmp_path / "prices"
    spark.sql(f"""
        CREATE TABLE lk.prices (k STRING, price DOUBLE, label AS upper(k), `day` INT) PARTITIONED BY (`day`) WITH (
          'connector' = 'filesystem', 'path' = '{root.as_uri()}', 'format' = 'csv',
          'streaming-source.enable' = 'true', 'streaming-source.partition.include' = 'latest'
        )""")
    try:
        for day, price in (("7", "1.5"), ("12", "2.5")):
            (root / f"day={day}").mkdir(parents=True)
            (root / f"day={day}" / "part-0.csv").write_text(f"x,{price}\ny,{price}\n")
            spark_own_sql(spark)(f"ALTER TABLE lk.prices ADD PARTITION (`day` = '{day}')")
        table = spark._sqlext_session.catalog.get_table(TableIdentifier("lk", "prices"))
        latest = LatestPartition(table, metastore.uri, "prices_view")
        frame = latest.frame(spark)
        assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
            ("k", "string"),
            ("price", "double"),
            ("label", "string"),
            ("day", "int"),
        ]
        assert sorted(tuple(row) for row in frame.collect()) == [("x", 1.5, "X", 7), ("y", 1.5, "Y", 7)]
        assert latest.interval.total_seconds() == 3600  # Flink's default for this join
        latest.release()
    finally:
        spark.sql("DROP TABLE IF EXISTS lk.prices")
