"""Where the driver's class archive lives and which JVM options ask for it (:mod:`sqlext.spark.class_sharing`)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from sqlext.config import SqlextConfig
from sqlext.errors import ConfigError
from sqlext.spark import class_sharing


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(class_sharing.SUBMIT_OPTS_ENV, "-XX:+ExitOnOutOfMemoryError")
    monkeypatch.setattr(class_sharing.atexit, "register", lambda *args: None)  # no JVM here to wait for
    return tmp_path / "sqlext" / "class-sharing"


def _options() -> list[str]:
    return os.environ[class_sharing.SUBMIT_OPTS_ENV].split()


def test_another_driver_class_path_has_its_own_archive(cache: Path) -> None:
    plain = class_sharing.archive_path({}, java="/usr/bin/java")
    assert plain.parent == cache
    assert class_sharing.archive_path({}, java="/usr/bin/java") == plain
    assert class_sharing.archive_path({"spark.driver.extraClassPath": "/x.jar"}, java="/usr/bin/java") != plain


def test_without_an_archive_the_driver_writes_one_and_with_one_starts_from_it(cache: Path) -> None:
    assert class_sharing.share_classes({}) is None
    archive = class_sharing.archive_path({})
    scratch = f"-XX:ArchiveClassesAtExit={archive.parent}/{archive.stem}.{os.getpid()}.jsa.tmp"
    assert _options() == ["-XX:+ExitOnOutOfMemoryError", scratch, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]

    archive.write_bytes(b"classes")
    assert class_sharing.share_classes({}) == archive
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
    class_sharing.share_classes({})
    assert not abandoned.exists() and running.exists()


def test_the_setting_takes_true_or_false_only() -> None:
    assert SqlextConfig.load({}).driver_class_sharing is True
    assert SqlextConfig.load({"spark.sqlext.driver.class-sharing": "false"}).driver_class_sharing is False
    expected = re.escape("'spark.sqlext.driver.class-sharing': 'no'. Expected true or false")
    with pytest.raises(ConfigError, match=expected):
        _ = SqlextConfig.load({"spark.sqlext.driver.class-sharing": "no"}).driver_class_sharing
