"""The filesystem interface takes a URI's path literally, as Hadoop does: Hive-escaped partition dirs
(``p=%252e%252e``), spaces and non-ASCII names are the directories they spell, never URI-decoded."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext.fs import FileSystem, join

NAMES = ["p=%252e%252e", "p=a%2Fb", "with space", "ünïcode", "x%20y"]


@pytest.mark.parametrize("name", NAMES)
def test_a_root_with_escapes_spaces_or_unicode_is_the_directory_it_spells(tmp_path: Path, name: str) -> None:
    root = f"file://{tmp_path}/{name}"
    fs = FileSystem(root)
    fs.write_text(join(root, "a.txt"), "rows")
    fs.move(join(root, "a.txt"), join(root, "b.txt"))

    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert [p.name for p in (tmp_path / name).iterdir()] == ["b.txt"]
    assert [f.relative for f in fs.list_files(root)] == ["b.txt"]
    assert fs.read_text(join(root, "b.txt")) == "rows"


def test_a_hive_style_location_without_slashes_resolves_the_same(tmp_path: Path) -> None:
    (tmp_path / "p=%252e").mkdir()
    (tmp_path / "p=%252e" / "f").write_text("x")
    location = f"file:{tmp_path}/p=%252e"  # as the HMS stores a partition location

    assert [f.relative for f in FileSystem(location).list_files(location)] == ["f"]
