"""Maven artifacts fetched on demand with pyspark's Ivy: into one directory each, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext import jars
from sqlext.errors import SqlextError


def test_a_coordinate_needs_group_artifact_and_version() -> None:
    assert str(jars.Artifact.parse("junit:junit:4.13.2")) == "junit:junit:4.13.2"
    with pytest.raises(jars.JarFetchError, match="'junit:junit' is not a Maven coordinate"):
        jars.Artifact.parse("junit:junit")


def test_the_directory_changes_with_the_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLEXT_JARS_DIR", str(tmp_path))
    first = jars.fetched_dir("junit", ["junit:junit:4.13.1"])
    assert first.parent == tmp_path and first.name.startswith("junit-")
    assert first != jars.fetched_dir("junit", ["junit:junit:4.13.2"])
    assert first != jars.fetched_dir("junit", ["junit:junit:4.13.1"], exclude=["org.hamcrest:*"])


@pytest.mark.jars
def test_fetch_brings_the_dependencies_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLEXT_JARS_DIR", str(tmp_path))
    fetched = jars.fetch("junit", ["junit:junit:4.13.2"])
    assert sorted(p.name for p in fetched.glob("*.jar")) == ["hamcrest-core-1.3.jar", "junit-4.13.2.jar"]
    assert jars.is_fetched("junit", ["junit:junit:4.13.2"])
    (fetched / "junit-4.13.2.jar").unlink()
    assert jars.fetch("junit", ["junit:junit:4.13.2"]) == fetched  # complete: not fetched again
    assert not (fetched / "junit-4.13.2.jar").exists()


@pytest.mark.jars
def test_an_unknown_artifact_is_named_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLEXT_JARS_DIR", str(tmp_path))
    with pytest.raises(SqlextError) as failure:
        jars.fetch("nope", ["org.apache.nope:nope:1.0"])
    assert "Could not fetch org.apache.nope:nope:1.0" in failure.value.message
    assert "org.apache.nope#nope;1.0: not found" in failure.value.message
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".ivy")] == []
