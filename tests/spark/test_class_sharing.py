"""The Spark driver's class data sharing archive (:mod:`sqlext.spark.class_sharing`): none written by default;
asked for, written by the first driver ``sqlext run`` launches and used by the next, and a broken one removed with
the driver started without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlext.catalog.metastore.launcher import MetastoreSettings

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def _run(script: Path, metastore: MetastoreSettings, cache: Path, *conf: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_SUBMIT_OPTS", None)  # the suite's own class archive (tests/support/class_archive.py)
    argv = [sys.executable, "-m", "sqlext.cli", "run", str(script), "--metastore-uri", metastore.uri]
    # In the test's dir: the JVM that maps a cut archive crashes and leaves its hs_err_pid log in its cwd.
    return subprocess.run(
        [*argv, "--conf", "spark.ui.enabled=false", *(f"--conf={c}" for c in conf)],
        env=env,
        cwd=cache.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_asked_for_the_first_driver_writes_the_archive_the_next_starts_from_it_and_a_broken_one_is_replaced(
    metastore: MetastoreSettings, tmp_path: Path
) -> None:
    script, cache = tmp_path / "answer.sql", tmp_path / "cache"
    script.write_text("SELECT 40 + 2 AS answer;\n")

    default = _run(script, metastore, cache)
    assert default.returncode == 0 and "42" in default.stdout.splitlines(), default.stderr[-3000:]
    assert not (cache / "sqlext").exists(), "nothing written unasked (no archive, no compiled classes)"

    first = _run(script, metastore, cache, "spark.sqlext.driver.class-sharing=true")
    assert first.returncode == 0 and "42" in first.stdout.splitlines(), first.stderr[-3000:]
    [archive] = (cache / "sqlext" / "class-sharing").glob("*.jsa")
    assert archive.stat().st_size > 10_000_000, "the classes Spark loaded"
    assert archive.with_suffix(".source").read_text().strip().endswith("pyspark"), "the installation it is for"
    assert list(archive.parent.glob("*.tmp")) == [], "no archive left half-written"

    written = archive.stat().st_mtime_ns
    second = _run(script, metastore, cache)
    assert second.returncode == 0 and "42" in second.stdout.splitlines(), second.stderr[-3000:]
    assert archive.stat().st_mtime_ns == written, "not written again"
    assert f"the Spark driver starts from its class archive {archive}" in second.stderr

    # A cut archive crashes a JVM that maps it: the driver starts again without it, and it is removed.
    archive.write_bytes(archive.read_bytes()[:1_000_000])
    third = _run(script, metastore, cache)
    assert third.returncode == 0 and "42" in third.stdout.splitlines(), third.stderr[-3000:]
    assert "did not start from its class archive" in third.stderr
    assert not archive.exists()
    assert list(tmp_path.glob("hs_err_pid*.log")), "the crash of the JVM that mapped it"
