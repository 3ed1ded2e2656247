"""The commit log's archive (``sink.commit-log.archive.retained-batches``): what the log expires is kept, in few
files, for a bounded number of entries; ``sqlext commits`` shows the last N without reading the whole log."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext.cli.main import build_parser
from sqlext.connectors.filesystem import commit_log_archive
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.connectors.filesystem.commit_log_archive import ARCHIVE_DIR, CommitLogArchive, table_archive
from sqlext.io.fs import FileSystem
from sqlext.jobs.audit import commit_log_entries


def _write(log: CommitLog, archive: CommitLogArchive | None, batches: range, retained: int) -> None:
    """Batches as a writer records them: each completed, then the log expired to ``retained``."""
    for batch in batches:
        log.write(LogEntry("q", batch, State.COMPLETED, committed_partitions=[f"hr={batch}"]))
        log.expire("q", retained, archive=archive)


def _files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def test_expired_entries_are_archived_in_merged_files_and_the_oldest_files_deleted(tmp_path: Path) -> None:
    root = tmp_path.as_uri()
    log = CommitLog(FileSystem(root), root)
    archive = CommitLogArchive(log.fs, root, retained=200)

    _write(log, archive, range(1000), retained=3)

    assert [e.batch for e in log.entries("q")] == [997, 998, 999]
    archived = [e.batch for e in archive.entries("q")]
    # 997 expired: the newest 200 in whole merged files of 100 (700-899), the last 97 loose, not merged yet.
    assert archived == list(range(700, 997))
    assert [e.committed_partitions for e in archive.entries("q")][:1] == [["hr=700"]]
    files = _files(tmp_path)
    assert len(files) == 3 + 2 + 97
    assert f"{ARCHIVE_DIR}/q/{700:020d}-{799:020d}.archive" in files


def test_a_log_without_archive_deletes_what_it_expires(tmp_path: Path) -> None:
    root = tmp_path.as_uri()
    log = CommitLog(FileSystem(root), root)

    _write(log, table_archive(log.fs, root, 0), range(20), retained=3)

    assert _files(tmp_path) == [f"_sqlext/log/q/{batch:020d}.completed" for batch in (17, 18, 19)]


def test_an_archive_merge_cut_before_its_parts_are_deleted_reads_each_entry_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path.as_uri()
    log = CommitLog(FileSystem(root), root)
    archive = CommitLogArchive(log.fs, root, retained=1000)
    monkeypatch.setattr(commit_log_archive, "ENTRIES_PER_FILE", 10)
    deleting = log.fs.delete_file

    def crash_on_a_merged_part(uri: str) -> None:
        if "/_sqlext/archive/" in uri:
            raise OSError("killed")
        deleting(uri)

    _write(log, archive, range(10), retained=1)  # batches 0-8 archived loose
    monkeypatch.setattr(log.fs, "delete_file", crash_on_a_merged_part)
    with pytest.raises(OSError, match="killed"):
        _write(log, archive, range(10, 11), retained=1)  # 9 archived, 0-9 merged, the crash before deleting
    monkeypatch.setattr(log.fs, "delete_file", deleting)
    _write(log, archive, range(11, 25), retained=1)

    assert [e.batch for e in archive.entries("q")] == list(range(24))
    assert [e.batch for e in commit_log_entries(root, archived=True)] == list(range(25))


def test_commits_shows_the_last_n_reading_only_those(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path.as_uri()
    log = CommitLog(FileSystem(root), root)
    _write(log, CommitLogArchive(log.fs, root, retained=1000), range(150), retained=100)
    read: list[str] = []
    reading = log.fs.read_json

    def counted(uri: str) -> object:
        read.append(uri)
        return reading(uri)

    monkeypatch.setattr(log.fs, "read_json", counted)

    assert [e.batch for e in commit_log_entries(root, log=log, last=5)] == [145, 146, 147, 148, 149]
    assert len(read) == 5
    assert [e.batch for e in commit_log_entries(root, log=log, last=120, archived=True)] == list(range(30, 150))
    assert [e.batch for e in commit_log_entries(root, log=log)] == list(range(50, 150))
    assert [e.batch for e in commit_log_entries(root, log=log, last=500)] == list(range(50, 150))


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_commits_last_refuses_what_is_no_count(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["commits", "db.t", "--last", value])
    assert f"argument --last: '{value}' is not a whole number of at least 1" in capsys.readouterr().err
