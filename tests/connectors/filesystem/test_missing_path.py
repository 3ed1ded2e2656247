"""A source path that does not exist (a typo) fails the statement naming it, as Flink 2.3 fails the job ("File
file:/... does not exist or the user running Flink ... has insufficient permissions to access it"). The
metastore makes the directory of every table it creates (Spark's Hive reader of a text table fails without it),
so a directory it made at CREATE and nothing was written into since counts as missing; a sink's path may be
missing: it is written into."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sqlext.catalog.locations import MADE_MARK
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.errors import FileSystemError
from tests.support.extension import extended_session

pytestmark = [pytest.mark.spark, pytest.mark.hms]


def _ddl(name: str, path: Path, fmt: str, partitioned: bool = False) -> str:
    partition = " PARTITIONED BY (dt)" if partitioned else ""
    return (
        f"CREATE TABLE {name} (id INT, dt STRING){partition} WITH ("
        f"'connector' = 'filesystem', 'path' = '{path.as_uri()}', 'format' = '{fmt}')"
    )


def test_a_missing_source_path_fails_naming_it_even_once_the_metastore_made_its_directory(
    spark, hms: MetastoreClient, tmp_path: Path
) -> None:
    typo, partitioned_typo, out = tmp_path / "inptu", tmp_path / "by_dayy", tmp_path / "out"
    with extended_session(spark, tmp_path, "missing_path") as session:
        sql = session.sql
        sql("USE missing_path")
        sql(_ddl("src", typo, "csv"))
        sql(_ddl("src_by_day", partitioned_typo, "parquet", partitioned=True))
        sql(_ddl("snk", out, "csv"))
        sql(_ddl("snk_parquet", tmp_path / "out_parquet", "parquet", partitioned=True))
        (tmp_path / "there").mkdir()
        sql(_ddl("snk_parquet_there", tmp_path / "there", "parquet"))
        for made in (typo, partitioned_typo, out):  # the metastore made them; sqlext marked them
            assert [p.relative_to(made).as_posix() for p in made.rglob("*")] == ["_sqlext", MADE_MARK]
        assert list((tmp_path / "there").iterdir()) == []
        # Spark reads a table whose path does not exist yet as empty (csv: Hive's reader; parquet: Spark's).
        assert sql("SELECT count(*) AS n FROM snk").first().n == 0
        assert sql("SELECT count(*) AS n FROM snk_parquet").first().n == 0

        for mode in ("streaming", "batch"):
            sql(f"SET 'execution.runtime-mode' = '{mode}'")
            for source, path in (("src", typo), ("src_by_day", partitioned_typo)):
                with pytest.raises(FileSystemError) as failed:
                    sql(f"INSERT INTO snk SELECT * FROM {source}")
                assert path.as_uri() in str(failed.value) and "does not exist (the metastore made" in str(failed.value)
                assert failed.value.option == "path" and failed.value.statement is not None
        (partitioned_typo / "dt=x").mkdir()  # something in it: a source that exists, with no rows
        hinted = "SELECT count(*) AS n FROM src_by_day /*+ OPTIONS('source.ignore-corrupt-files' = 'false') */"
        assert sql(hinted).first().n == 0
        shutil.rmtree(typo)
        with pytest.raises(FileSystemError, match=r"which does not exist\. Check"):
            sql("INSERT INTO snk SELECT * FROM src")

        # Once the path is there, the same insert runs.
        typo.mkdir()
        (typo / "rows.csv").write_text("1,a\n2,b\n")
        sql("SET 'execution.runtime-mode' = 'streaming'")
        [job] = sql("INSERT INTO snk SELECT * FROM src").collect()
        running = running_insert(job.job_id)
        assert running is not None and running.wait(300) and running.query.exception() is None
        assert sorted(tuple(r) for r in sql("SELECT * FROM snk").collect()) == [(1, "a"), (2, "b")]
        assert not (out / MADE_MARK).exists(), "the sink wrote into it: no longer marked"
