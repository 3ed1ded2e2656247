"""sqlext as a user gets it: a wheel built from a clean clone, installed in a fresh venv, run on a Java runtime
without the ``jdk.compiler`` module (jlink'd, as many container images' JREs are; nor has it a base class data
sharing archive). The wheel carries sqlext's Java classes (hatch_build.py): the demo starts the embedded metastore
from them, and the csv source joins its records on the JVM, with nothing compiled and no class archive written in
the user's cache dir."""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pyspark
import pytest

from sqlext import javac
from tests.support.waiting import free_port

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
#: What Spark (its JVM options add jdk.incubator.vector), Hive's client and the metastore need of the JDK, without
#: jdk.compiler (java.compiler is the javax.tools API only, with no compiler behind it).
JRE_MODULES = (
    "java.se,jdk.unsupported,jdk.crypto.ec,jdk.security.auth,jdk.security.jgss,jdk.management,jdk.zipfs,"
    "jdk.charsets,jdk.naming.dns,jdk.httpserver,jdk.localedata,jdk.incubator.vector"
)


@pytest.fixture(scope="module")
def jre() -> Path:
    """A jlink'd JRE without jdk.compiler, made once per JDK in the temp dir (about 100 MB, a minute)."""
    jlink = Path(os.path.realpath(javac.find_javac())).with_name("jlink")
    version = subprocess.run([str(jlink), "--version"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256(f"{jlink}\n{version}\n{JRE_MODULES}".encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"sqlext-test-jre-{key}"
    if not (target / "bin" / "java").is_file():
        scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        command = [str(jlink), "--add-modules", JRE_MODULES, "--no-header-files", "--no-man-pages", "--strip-debug"]
        subprocess.run([*command, "--output", str(scratch)], check=True, capture_output=True)
        try:
            scratch.rename(target)
        except OSError:  # another process made it first
            shutil.rmtree(scratch, ignore_errors=True)
    modules = subprocess.run([str(target / "bin" / "java"), "--list-modules"], capture_output=True, text=True).stdout
    assert "jdk.compiler@" not in modules and "java.base@" in modules
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from a clean clone of this checkout's HEAD; sqlext's dependencies come
    from this venv (a .pth naming its site-packages: nothing downloaded but the build's own requirements)."""
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run(["git", "clone", "-q", str(REPO), str(work / "src")], check=True)
    (work / "build-constraints.txt").write_text(f"pyspark=={pyspark.__version__}\n")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist")]
    build += ["--build-constraint", str(work / "build-constraints.txt"), str(work / "src")]
    subprocess.run(build, check=True, capture_output=True, timeout=900)
    [wheel] = (work / "dist").glob("sqlext-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300)
    # After the install: pip would take the sqlext installed here (an editable one) for the wheel's.
    (Path(site) / "shared-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _env(jre: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_SUBMIT_OPTS", "SPARK_HOME")}
    env |= {"JAVA_HOME": str(jre), "PATH": f"{jre / 'bin'}:{env['PATH']}", "XDG_CACHE_HOME": str(cache)}
    return env | {"SPARK_LOCAL_IP": "127.0.0.1", "SQLEXT_HOME": str(cache.parent / "home")}


def test_the_wheel_runs_the_demo_and_the_csv_joiner_on_a_jre_without_a_compiler(
    jre: Path, installed: Path, tmp_path: Path
) -> None:
    cache, home, port = tmp_path / "cache", tmp_path / "demo", free_port()
    env = _env(jre, cache)
    python = str(installed / "bin" / "python")
    where = subprocess.run(
        [python, "-c", "import sqlext; print(sqlext.__file__)"], env=env, cwd=tmp_path, capture_output=True
    )
    package = Path(where.stdout.decode().strip()).parent
    assert package.is_relative_to(installed), "the wheel's sqlext, not the checkout's"
    assert sorted(p.name for p in (package / "_jars").glob("*.jar")) == sorted(javac.JARS)

    sqlext = [str(installed / "bin" / "sqlext")]
    try:
        demo = subprocess.run(
            [*sqlext, "demo", "--home", str(home), "--port", str(port)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert demo.returncode == 0, demo.stderr[-4000:]
        assert "total: 21600 rows" in demo.stdout, demo.stdout[-2000:]
        assert "committed partitions of demo.events_by_hour (6;" in demo.stdout

        source, table = tmp_path / "in", tmp_path / "out"
        source.mkdir()
        (source / "a.csv").write_text('1,plain\n2,"two\nlines"\n3,"a, b"\n')
        job = tmp_path / "csv.sql"
        job.write_text(
            f"""CREATE DATABASE IF NOT EXISTS wheel_csv;
            CREATE TABLE wheel_csv.src (id BIGINT, text STRING)
                WITH ('connector' = 'filesystem', 'path' = '{source.as_uri()}', 'format' = 'csv');
            CREATE TABLE wheel_csv.t (id BIGINT, text STRING)
                WITH ('connector' = 'filesystem', 'path' = '{table.as_uri()}', 'format' = 'csv');
            SET 'execution.runtime-mode' = 'batch';
            INSERT INTO wheel_csv.t SELECT id, text FROM wheel_csv.src;
            """
        )
        uri = f"thrift://127.0.0.1:{port}"
        # Asked for a class archive, on a runtime that cannot write one: the driver starts without it.
        conf = ["--conf", "spark.ui.enabled=false", "--conf", "spark.sqlext.driver.class-sharing=true"]
        run = subprocess.run(
            [*sqlext, "run", str(job), "--metastore-uri", uri, *conf],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert run.returncode == 0, run.stderr[-4000:]
        assert f"csv records are joined on the JVM ({package / '_jars' / 'sqlext-csv.jar'})" in run.stderr
        assert "joined in Python" not in run.stderr
        assert f"starts without a class archive: its Java runtime {jre} has no base CDS archive" in run.stderr
        written = sorted(
            tuple(row)
            for path in table.iterdir()
            if not path.name.startswith((".", "_"))
            for row in csv.reader(path.open(newline=""))
        )
        # Three records, the second's two lines joined into one (the csv sink escapes its line break).
        assert [row[0] for row in written] == ["1", "2", "3"], written
        assert written[0][1] == "plain" and written[1][1].startswith("two") and written[1][1].endswith("lines")
    finally:
        subprocess.run([*sqlext, "metastore", "stop", "--home", str(home / "metastore"), "--port", str(port)], env=env)

    # Nothing compiled, no class archive: the user's cache dir holds nothing of sqlext's.
    assert not (cache / "sqlext").exists() or sorted(p.name for p in (cache / "sqlext").iterdir()) == []
