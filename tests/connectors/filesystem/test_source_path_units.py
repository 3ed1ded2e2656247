"""Which source paths a filesystem read refuses (see test_missing_path.py for the statements end to end)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sqlext.catalog.locations import MADE_MARK, made_and_unwritten, mark_made_dir
from sqlext.connectors.filesystem.source import _check_path_exists
from sqlext.errors import FileSystemError
from sqlext.table import Column, TableDefinition, TableIdentifier


def _table(path: Path, **options: str) -> TableDefinition:
    all_options = {"connector": "filesystem", "path": path.as_uri(), "format": "csv", **options}
    return TableDefinition(TableIdentifier("db", "src"), (Column("id", "INT"),), all_options)


def test_a_directory_the_metastore_made_counts_as_missing_until_something_is_written(tmp_path: Path) -> None:
    path = tmp_path / "inptu"
    with pytest.raises(FileSystemError, match=r"which does not exist\. Check"):
        _check_path_exists(_table(path))
    path.mkdir()  # what the metastore's create does
    mark_made_dir(_table(path))
    assert (path / MADE_MARK).is_file() and made_and_unwritten(path.as_uri())
    with pytest.raises(FileSystemError, match="the metastore made an empty directory there at CREATE TABLE"):
        _check_path_exists(_table(path))
    (path / "_sqlext" / "log").mkdir()  # a sink's first write
    assert not made_and_unwritten(path.as_uri())
    _check_path_exists(_table(path))


def test_a_watched_source_waits_for_its_first_files_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "landing"
    watched = _table(path, **{"source.monitor-interval": "10 s"})
    with pytest.raises(FileSystemError):
        _check_path_exists(watched)  # as Flink: a watched path must exist too
    path.mkdir()
    mark_made_dir(watched)
    with caplog.at_level(logging.WARNING):
        _check_path_exists(watched)
    assert "nothing was written there yet" in caplog.text and path.as_uri() in caplog.text


def test_a_directory_that_was_there_before_is_never_marked(tmp_path: Path) -> None:
    (tmp_path / "there").mkdir()
    (tmp_path / "there" / "a.csv").write_text("1\n")
    mark_made_dir(_table(tmp_path / "there"))
    assert not (tmp_path / "there" / "_sqlext").exists()
    _check_path_exists(_table(tmp_path / "there"))
