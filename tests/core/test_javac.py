"""sqlext's Java classes built into jars (:mod:`sqlext.javac`): what each jar holds, and an installation's jars
found, or refused when missing or built from other sources."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sqlext import javac


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The jars built from this checkout into a dir of their own: each jar's entries."""
    out = tmp_path_factory.mktemp("jars")
    jars = javac.build(javac.find_javac(), javac.build_class_path(), out)
    return {jar.name: sorted(zipfile.ZipFile(jar).namelist()) for jar in jars}


def test_each_jar_holds_the_classes_of_its_sources_and_no_stub(built: dict[str, list[str]]) -> None:
    assert sorted(built) == sorted(javac.JARS)
    assert "io/sqlext/csv/CsvRecordJoiner.class" in built["sqlext-csv.jar"]
    assert "io/sqlext/csv/CsvFields.class" in built["sqlext-csv.jar"]
    assert built["sqlext-s3a-committer.jar"] == [
        javac.DIGEST_ENTRY,
        "io/sqlext/s3a/SqlextMagicCommitter.class",
        "io/sqlext/s3a/SqlextMagicCommitterFactory.class",
    ], "S3A's stubs resolve names only"
    assert {"BoundHiveMetaStore.class", "MetastoreThriftServer.class", "TxnTables.class"} <= set(
        built["sqlext-metastore.jar"]
    )


def test_classes_are_for_java_17(tmp_path: Path) -> None:
    jar = javac.packaged_jar("sqlext-metastore.jar")
    with zipfile.ZipFile(jar) as archive:
        header = archive.read("TxnTables.class")[:8]
    assert int.from_bytes(header[6:8], "big") == 61, "class file version 61: Java 17"


def test_a_missing_jar_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(javac.MissingJarError, match=r"sqlext-csv.jar\) are missing from .*python -m sqlext.javac"):
        javac._checked("sqlext-csv.jar", tmp_path)


def test_a_jar_built_from_other_sources_is_refused(tmp_path: Path) -> None:
    stale = tmp_path / "sqlext-csv.jar"
    with zipfile.ZipFile(stale, "w") as archive:
        archive.writestr(javac.DIGEST_ENTRY, "0" * 64 + "\n")
    with pytest.raises(javac.MissingJarError, match=r"built from other sources than CsvRecordJoiner.java, CsvFields"):
        javac._checked("sqlext-csv.jar", tmp_path)
    shutil.copy(javac.packaged_jar("sqlext-csv.jar"), stale)
    assert javac._checked("sqlext-csv.jar", tmp_path) == stale


def test_a_source_that_does_not_compile_fails_the_build_with_javacs_message(tmp_path: Path) -> None:
    package = tmp_path / "sqlext"
    for relative in (p for paths in javac.JARS.values() for p in paths):
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(javac.PACKAGE_DIR / relative, package / relative)
    (package / "catalog/metastore/TxnTables.java").write_text("public class TxnTables { int x = ; }\n")
    with pytest.raises(javac.JavaCompileError, match=r"javac failed:\n.*TxnTables.java:1: error"):
        javac.build(javac.find_javac(), javac.build_class_path(), tmp_path / "out", package)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_python_m_sqlext_javac_without_a_jdk_says_what_is_needed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from sqlext import javac; sys.exit(javac.main())"],
        env={"JAVA_HOME": str(tmp_path), "PATH": "/nonexistent", "PYTHONPATH": str(javac.PACKAGE_DIR.parent)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "needs a JDK 17 or later (javac): none at $JAVA_HOME/bin/javac" in done.stderr
