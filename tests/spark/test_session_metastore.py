"""The embedded metastore a session starts: ``sqlext.spark_session()`` stops it when Python exits, ``sqlext run``
keeps it and says how to stop it; Spark's own ``CREATE DATABASE`` puts databases in its warehouse (under
``$SQLEXT_HOME``), not in ``./spark-warehouse`` of the current directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.waiting import free_port

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import sqlext

spark = sqlext.spark_session(conf={"spark.sqlext.metastore.port": sys.argv[1], "spark.ui.enabled": "false"})
spark.sql("CREATE DATABASE py_db")
print(spark.sql("DESCRIBE DATABASE py_db").collect())
"""


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "SQLEXT_HOME": str(home), "PYTHONPATH": str(REPO)}


def test_spark_session_stops_the_metastore_it_started_and_databases_go_to_its_warehouse(tmp_path: Path) -> None:
    port, cwd = free_port(), tmp_path / "cwd"
    cwd.mkdir()
    embedded = MetastoreSettings(port=port, home=tmp_path / "home" / "metastore")
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(port)],
            cwd=cwd,
            env=_env(tmp_path / "home"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert not launcher.status(embedded).answering, "the metastore the session started runs on"
    finally:
        launcher.stop(embedded)

    assert (embedded.home / "warehouse" / "py_db.db").is_dir()
    assert not (cwd / "spark-warehouse").exists()


def test_sqlext_run_keeps_the_metastore_it_started_and_says_how_to_stop_it(tmp_path: Path) -> None:
    port, cwd = free_port(), tmp_path / "cwd"
    cwd.mkdir()
    job = tmp_path / "job.sql"
    job.write_text("CREATE DATABASE run_db;\n")
    embedded = MetastoreSettings(port=port, home=tmp_path / "home" / "metastore")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "sqlext.cli", "run", str(job), "--conf", f"spark.sqlext.metastore.port={port}"],
            cwd=cwd,
            env=_env(tmp_path / "home"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert launcher.status(embedded).answering
        assert f"keeps running after this process; stop it with 'sqlext metastore stop --port {port}" in done.stderr
    finally:
        launcher.stop(embedded)

    assert (embedded.home / "warehouse" / "run_db.db").is_dir()
    assert not (cwd / "spark-warehouse").exists()
