"""README's worked example, run as a reader copies it: its SQL file through ``sqlext run``, the partitions
it commits listed by the metastore and every generated row read back from the files."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.commands import sqlext_run_command

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def _worked_example_sql() -> str:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## A worked example") :]
    match = re.search(r"```sql\n(.*?)```", section, flags=re.S)
    assert match, "README's worked example has no SQL block"
    return match.group(1)


def test_readmes_worked_example_commits_every_row(
    hms: MetastoreClient, metastore: MetastoreSettings, tmp_path: Path
) -> None:
    sql = _worked_example_sql()
    rows = int(re.search(r"'number-of-rows' = '(\d+)'", sql).group(1))  # type: ignore[union-attr]
    table_dir = tmp_path / "fs_table"
    # Only what a test must change: a temp path, names of its own in the shared metastore, fewer batches.
    sql = (
        sql.replace("fs_table", "readme_fs_table")
        .replace("file:///data/readme_fs_table", table_dir.as_uri())
        .replace("TABLE events ", "TABLE readme_events ")
        .replace("FROM events;", "FROM readme_events;")
        .replace("'rows-per-second' = '1000'", f"'rows-per-second' = '{rows // 2}'")
    )
    job = tmp_path / "hourly.sql"
    job.write_text(sql)

    done = subprocess.run(
        sqlext_run_command(job, metastore.uri, tmp_path / "cp"),
        env={**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    partitions = hms.get_partition_names("default", "readme_fs_table")
    assert partitions and all(re.fullmatch(r"dt=\d{4}-\d{2}-\d{2}/hour=\d{2}", p) for p in partitions), partitions
    for partition in partitions:
        assert (table_dir / partition / "_SUCCESS").exists(), partition
    written = ds.dataset(table_dir, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    assert written.num_rows == rows
