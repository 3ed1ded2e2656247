"""Start-up costs no Spark job: DDL statements and an insert's planning run none (issue #21).

Spark's status tracker lists the jobs not in a job group; a streaming query runs its own jobs in a group
of its own (its run id), so every job counted here was run by the statement itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.connectors.filesystem.source import _directory_columns
from sqlext.spark.session import extend
from sqlext.table import Column, TableDefinition, TableIdentifier


def _jobs(spark: Any) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def _run_counting_jobs(spark: Any, statement: str) -> tuple[list[Any], list[str]]:
    """Run a statement and read its result back, as ``sqlext run`` does; its rows and the jobs it ran."""
    before = _jobs(spark)
    rows = spark.sql(statement).collect()
    store = spark.sparkContext._jsc.sc().statusStore()
    return rows, [str(store.job(job).name()) for job in sorted(_jobs(spark) - before)]


@pytest.mark.spark
@pytest.mark.hms
def test_ddl_statements_and_an_insert_start_run_no_spark_job(spark: Any, hms: MetastoreClient, tmp_path: Path) -> None:
    extend(spark)
    spark.conf.set("spark.sqlext.checkpoint.root", (tmp_path / "checkpoints").as_uri())
    source = tmp_path / "in"
    for day in range(40):  # more than Spark's 32 paths from which it lists directories with a job
        (source / f"dt=2026-01-{day + 1:02d}").mkdir(parents=True)
        (source / f"dt=2026-01-{day + 1:02d}" / "part-0.csv").write_text(f"{day},user-{day}\n")
    statements = [
        "CREATE DATABASE IF NOT EXISTS startup_db",
        f"""CREATE TABLE startup_db.src (id BIGINT, user_id STRING, dt STRING) PARTITIONED BY (dt)
            WITH ('connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'csv')""",
        f"""CREATE TABLE startup_db.dst (id BIGINT, user_id STRING, dt STRING) PARTITIONED BY (dt)
            WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "out").as_uri()}', 'format' = 'csv',
                  'sink.partition-commit.policy.kind' = 'metastore')""",
        "ALTER TABLE startup_db.dst SET ('sink.rolling-policy.file-size' = '64MB')",
        "SHOW TABLES IN startup_db",
        "DESCRIBE startup_db.dst",
        "SHOW CREATE TABLE startup_db.dst",
        "SET 'pipeline.name' = 'startup_insert'",
    ]
    for statement in statements:
        rows, jobs = _run_counting_jobs(spark, statement)
        # DDL answers as Spark's does, with no rows; the rest with rows
        assert bool(rows) == statement.startswith(("SHOW", "DESCRIBE", "SET")), statement
        assert not jobs, f"{statement.split(chr(10))[0]} ran Spark jobs: {jobs}"

    # Spark itself lists the 40 directories with a job when a stream of them is defined: the insert may
    # run that one, and nothing more.
    before = _jobs(spark)
    spark.readStream.format("text").schema("value STRING, dt STRING").load(source.as_uri())
    sparks_own = len(_jobs(spark) - before)
    started, jobs = _run_counting_jobs(spark, "INSERT INTO startup_db.dst SELECT id, user_id, dt FROM startup_db.src")
    assert len(jobs) == sparks_own, f"the insert ran Spark jobs {jobs}; Spark's own read ran {sparks_own}"
    running = running_insert(started[0].job_id)
    assert running is not None
    running.wait()
    assert len(hms.get_partition_names("startup_db", "dst")) == 40
    rows = spark.sql("SELECT id, dt FROM startup_db.dst WHERE dt = '2026-01-07'").collect()
    assert [(r.id, r.dt) for r in rows] == [(6, "2026-01-07")]
    spark.sql("RESET 'pipeline.name'")


def _columns(names: str) -> TableDefinition:
    columns = tuple(Column(name, "STRING") for name in names.split())
    return TableDefinition(TableIdentifier("db", "t"), columns, {"connector": "filesystem"})


def test_directory_columns_follow_the_k_v_directories_as_spark_discovers_them(tmp_path: Path) -> None:
    (tmp_path / "a=1" / "b=x").mkdir(parents=True)
    (tmp_path / "a=1" / "b=x" / "part-0.csv").write_text("1\n")
    (tmp_path / ".c=hidden").mkdir()  # hidden: never a partition directory
    (tmp_path / "_sqlext" / "state").mkdir(parents=True)  # '_' without '=': not one either
    table = _columns("v a b c")
    assert _directory_columns(None, tmp_path.as_uri(), table) == {"a", "b"}
    assert _directory_columns(None, tmp_path.as_uri(), _columns("v B")) == {"b"}, "names match case-blind"
    assert _directory_columns(None, (tmp_path / "missing").as_uri(), table) == set()
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "part-0.csv").write_text("1\n")
    assert _directory_columns(None, flat.as_uri(), table) == set()
