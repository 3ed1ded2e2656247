"""Where the driver's class archive lives and which JVM options ask for it (:mod:`sqlext.spark.class_sharing`)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from pyspark import SparkContext

from sqlext.config import ClassSharing, SqlextConfig
from sqlext.errors import ConfigError
from sqlext.spark import class_sharing

WRITE = ClassSharing.WRITE


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(class_sharing.SUBMIT_OPTS_ENV, "-XX:+ExitOnOutOfMemoryError")
    monkeypatch.setattr(class_sharing.atexit, "register", lambda *args: None)  # no JVM here to wait for
    # As in a process about to launch its JVM (a test process may have one running for other tests).
    monkeypatch.setattr(SparkContext, "_gateway", None)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(class_sharing, "_ours", set())
    monkeypatch.setattr(class_sharing, "_pending", [])
    return tmp_path / "sqlext" / "class-sharing"


def _options() -> list[str]:
    return os.environ[class_sharing.SUBMIT_OPTS_ENV].split()


def test_another_driver_class_path_has_its_own_archive(cache: Path) -> None:
    plain = class_sharing.archive_path({}, java="/usr/bin/java")
    assert plain.parent == cache
    assert class_sharing.archive_path({}, java="/usr/bin/java") == plain
    assert class_sharing.archive_path({"spark.driver.extraClassPath": "/x.jar"}, java="/usr/bin/java") != plain


def test_without_an_archive_the_driver_writes_one_and_with_one_starts_from_it(cache: Path) -> None:
    assert class_sharing.share_classes({}, WRITE) is None
    archive = class_sharing.archive_path({})
    scratch = f"-XX:ArchiveClassesAtExit={archive.parent}/{archive.stem}.{os.getpid()}.jsa.tmp"
    assert _options() == ["-XX:+ExitOnOutOfMemoryError", scratch, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]

    assert class_sharing.writing() == archive
    class_sharing._pending.clear()  # as the next process

    archive.write_bytes(b"classes")
    assert class_sharing.share_classes({}, WRITE) == archive
    assert _options() == [
        "-XX:+ExitOnOutOfMemoryError",
        f"-XX:SharedArchiveFile={archive}",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
    ]

    class_sharing.unusable(archive)
    assert not archive.exists()
    assert _options() == ["-XX:+ExitOnOutOfMemoryError"], "the user's options stay"


def test_an_archive_its_writer_abandoned_is_removed_one_being_written_is_kept(cache: Path) -> None:
    archive = class_sharing.archive_path({})
    cache.mkdir(parents=True)
    ended = subprocess.Popen(["true"])
    ended.wait()
    abandoned = archive.with_name(f"{archive.stem}.{ended.pid}.jsa.tmp")
    running = archive.with_name(f"{archive.stem}.{os.getpid()}.jsa.tmp")
    abandoned.write_bytes(b"half")
    running.write_bytes(b"half")
    class_sharing.share_classes({}, WRITE)
    assert not abandoned.exists() and running.exists()


def test_the_setting_takes_existing_true_or_false_and_is_existing_by_default() -> None:
    assert SqlextConfig.load({}).driver_class_sharing is ClassSharing.EXISTING
    assert SqlextConfig.load({"spark.sqlext.driver.class-sharing": "false"}).driver_class_sharing is ClassSharing.OFF
    assert SqlextConfig.load({"spark.sqlext.driver.class-sharing": "TRUE"}).driver_class_sharing is WRITE
    expected = re.escape("'spark.sqlext.driver.class-sharing': 'no'. Expected one of: existing, true, false")
    with pytest.raises(ConfigError, match=expected):
        _ = SqlextConfig.load({"spark.sqlext.driver.class-sharing": "no"}).driver_class_sharing


def test_the_users_own_class_sharing_options_are_left_alone(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(class_sharing.SUBMIT_OPTS_ENV, "-XX:SharedArchiveFile=/mine.jsa")
    assert class_sharing.share_classes({}, WRITE) is None
    assert _options() == ["-XX:SharedArchiveFile=/mine.jsa"]
    monkeypatch.setenv(class_sharing.SUBMIT_OPTS_ENV, "")
    assert class_sharing.share_classes({"spark.driver.extraJavaOptions": "-Xshare:off"}, WRITE) is None
    assert _options() == []


def test_the_archive_of_a_pyspark_installation_that_is_gone_is_removed(cache: Path, tmp_path: Path) -> None:
    cache.mkdir(parents=True)
    gone, kept = cache / "spark-driver-0.jsa", cache / "spark-driver-1.jsa"
    for archive, source in ((gone, tmp_path / "deleted-venv"), (kept, tmp_path)):
        archive.write_bytes(b"classes")
        archive.with_suffix(".source").write_text(f"{source}\n")
    class_sharing.share_classes({}, WRITE)
    assert not gone.exists() and not gone.with_suffix(".source").exists()
    assert kept.exists()


def test_by_default_an_archive_is_used_when_there_is_one_and_none_is_written(cache: Path) -> None:
    assert class_sharing.share_classes({}, ClassSharing.EXISTING) is None
    assert _options() == ["-XX:+ExitOnOutOfMemoryError"]
    assert class_sharing.writing() is None
    assert not cache.exists(), "nothing written, not even the dir"

    archive = class_sharing.archive_path({})
    cache.mkdir(parents=True)
    archive.write_bytes(b"classes")  # as `sqlext warm-up` leaves it
    assert class_sharing.share_classes({}, ClassSharing.EXISTING) == archive
    assert f"-XX:SharedArchiveFile={archive}" in _options()


def test_false_neither_uses_nor_writes_an_archive(cache: Path) -> None:
    cache.mkdir(parents=True)
    class_sharing.archive_path({}).write_bytes(b"classes")
    assert class_sharing.share_classes({}, ClassSharing.OFF) is None
    assert _options() == ["-XX:+ExitOnOutOfMemoryError"]


def test_a_java_runtime_without_a_base_archive_starts_without_one_with_a_warning(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``-XX:ArchiveClassesAtExit`` on such a runtime stops the JVM from starting (``DynamicDumpSharedSpaces is
    unsupported when base CDS archive is not loaded``): sqlext does not ask it to."""
    jre = tmp_path / "jre"
    (jre / "bin").mkdir(parents=True)
    (jre / "bin" / "java").write_text("")
    (jre / "lib" / "server").mkdir(parents=True)
    monkeypatch.setenv("JAVA_HOME", str(jre))
    assert class_sharing.share_classes({}, WRITE) is None
    assert _options() == ["-XX:+ExitOnOutOfMemoryError"]
    assert class_sharing.writing() is None
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"starts without a class archive: its Java runtime {jre} has no base CDS archive" in warning
