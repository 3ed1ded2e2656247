"""Maven artifacts fetched on demand with pyspark's Ivy: into one directory each, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext.errors import SqlextError
from sqlext.runtime import jars


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
    assert first != jars.fetched_dir("junit", ["junit:junit:4.13.1"], transitive=False)


@pytest.mark.jars
def test_fetch_brings_the_dependencies_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLEXT_JARS_DIR", str(tmp_path))
    fetched = jars.fetch("junit", ["junit:junit:4.13.2"])
    assert sorted(p.name for p in fetched.glob("*.jar")) == ["hamcrest-core-1.3.jar", "junit-4.13.2.jar"]
    assert jars.is_fetched("junit", ["junit:junit:4.13.2"])
    (fetched / "junit-4.13.2.jar").unlink()
    assert jars.fetch("junit", ["junit:junit:4.13.2"]) == fetched  # complete: not fetched again
    assert not (fetched / "junit-4.13.2.jar").exists()
    alone = jars.fetch("junit", ["junit:junit:4.13.2"], transitive=False)
    assert [p.name for p in alone.glob("*.jar")] == ["junit-4.13.2.jar"]


@pytest.mark.jars
def test_an_unknown_artifact_is_named_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLEXT_JARS_DIR", str(tmp_path))
    with pytest.raises(SqlextError) as failure:
        jars.fetch("nope", ["org.apache.nope:nope:1.0"])
    assert "Could not fetch org.apache.nope:nope:1.0" in failure.value.message
    assert "org.apache.nope#nope;1.0: not found" in failure.value.message
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".ivy")] == []


def _archives(tmp_path: Path) -> list[Path]:
    import tarfile
    import zipfile

    content = tmp_path / "content"
    for name in ("pkg-1/lib/a.jar", "pkg-1/lib/b.jar", "pkg-1/bin/run"):
        (content / name).parent.mkdir(parents=True, exist_ok=True)
        (content / name).write_text(name)
    tarred, zipped = tmp_path / "pkg-1.tar.gz", tmp_path / "pkg-1.zip"
    with tarfile.open(tarred, "w:gz") as tar:
        tar.add(content / "pkg-1", "pkg-1")
    with zipfile.ZipFile(zipped, "w") as zip_:
        for file in sorted(content.rglob("*")):
            if file.is_file():
                zip_.write(file, file.relative_to(content).as_posix())
    return [tarred, zipped]


def test_an_archive_is_unpacked_whole_or_below_a_path(tmp_path: Path) -> None:
    for archive in _archives(tmp_path):
        whole, lib_only = tmp_path / f"whole-{archive.name}", tmp_path / f"lib-{archive.name}"
        jars.unpack(archive, whole)
        jars.unpack(archive, lib_only, keep=["pkg-1/lib/"])
        assert sorted(p.relative_to(whole).as_posix() for p in whole.rglob("*") if p.is_file()) == [
            "pkg-1/bin/run",
            "pkg-1/lib/a.jar",
            "pkg-1/lib/b.jar",
        ]
        assert sorted(p.name for p in lib_only.rglob("*") if p.is_file()) == ["a.jar", "b.jar"]
        assert (lib_only / "pkg-1/lib/a.jar").read_text() == "pkg-1/lib/a.jar"


def test_a_kept_hard_link_to_an_entry_left_out_gets_its_data(tmp_path: Path) -> None:
    """Trino's server tarball links a plugin's jars to the copies of another plugin or of ``lib/``."""
    import io
    import tarfile

    archive = tmp_path / "linked.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        shared = tarfile.TarInfo("pkg/plugin/other/x.jar")
        shared.size = 4
        tar.addfile(shared, io.BytesIO(b"data"))
        link = tarfile.TarInfo("pkg/plugin/hive/x.jar")
        link.type, link.linkname = tarfile.LNKTYPE, "pkg/plugin/other/x.jar"
        tar.addfile(link)
    jars.unpack(archive, tmp_path / "into", keep=["pkg/plugin/hive/"])
    assert (tmp_path / "into/pkg/plugin/hive/x.jar").read_bytes() == b"data"
    assert sorted(p.relative_to(tmp_path / "into").as_posix() for p in (tmp_path / "into").rglob("*")) == [
        "pkg",
        "pkg/plugin",
        "pkg/plugin/hive",
        "pkg/plugin/hive/x.jar",
    ]


def test_a_tar_entry_outside_the_target_is_refused(tmp_path: Path) -> None:
    import io
    import tarfile

    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        entry = tarfile.TarInfo("../escaped.txt")
        entry.size = 2
        tar.addfile(entry, io.BytesIO(b"no"))
    with pytest.raises(tarfile.OutsideDestinationError):
        jars.unpack(evil, tmp_path / "into")
    assert not (tmp_path / "escaped.txt").exists()


def test_only_tar_gz_and_zip_archives_are_fetched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLEXT_JARS_DIR", str(tmp_path))
    with pytest.raises(jars.JarFetchError, match=r"Archive type 'rpm' of io.trino:trino-server-rpm:476 is not"):
        jars.fetch_archive("rpm", "io.trino:trino-server-rpm:476", "rpm")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.jars
def test_an_unknown_archive_is_named_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SQLEXT_JARS_DIR", str(tmp_path))
    with pytest.raises(jars.JarFetchError) as failure:
        jars.fetch_archive("nope", "io.trino:trino-server:1", "tar.gz")
    assert "Could not fetch io.trino:trino-server:1" in failure.value.message
    assert "io.trino#trino-server;1: not found" in failure.value.message
    assert [p.name for p in tmp_path.iterdir()] == [".ivy-cache"]
    assert list((tmp_path / ".ivy-cache").iterdir()) == []
