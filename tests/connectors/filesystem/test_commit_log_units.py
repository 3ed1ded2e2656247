"""The commit log's look at a batch while another thread moves that batch on (a restart's recovery finishing the
batch Spark replays): :meth:`CommitLog.recorded` never misses it, where reading states from the last can."""

from __future__ import annotations

from pathlib import Path

from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.io.fs import FileSystem


class MovedOnAtFirstLook(FileSystem):
    """A filesystem on which the batch's ``inflight`` entry moves on to ``completed`` (written, then ``inflight``
    deleted, as :meth:`CommitLog.transition` does) just before the first look at its ``inflight`` file."""

    def __init__(self, root: str, log: CommitLog, entry: LogEntry) -> None:
        super().__init__(root)
        self.log, self.entry, self.moved = log, entry, False
        self.looked: list[str] = []

    def _move_on(self, uri: str) -> None:
        self.looked.append(uri.rsplit(".", 1)[1])
        if not self.moved and uri.endswith(".inflight"):
            self.moved = True
            self.log.transition(self.entry, State.COMPLETED)

    def exists(self, uri: str) -> bool:
        self._move_on(uri)
        return super().exists(uri)

    def read_bytes(self, uri: str) -> bytes:
        self._move_on(uri)
        return super().read_bytes(uri)


def _log_moving_on(tmp_path: Path) -> tuple[CommitLog, MovedOnAtFirstLook]:
    table = tmp_path.as_uri()
    writer = CommitLog(FileSystem(table), table)
    entry = LogEntry(query="q", batch=3, state=State.INFLIGHT)
    writer.write(entry)
    fs = MovedOnAtFirstLook(table, writer, entry)
    return CommitLog(fs, table), fs


def test_a_batch_moving_on_to_completed_while_recorded_looks_is_found(tmp_path: Path) -> None:
    log, fs = _log_moving_on(tmp_path)

    assert log.recorded("q", 3)
    assert fs.moved and fs.looked == ["requested", "inflight", "completed"]
    assert log.get("q", 3) is not None and log.get("q", 3).state is State.COMPLETED  # type: ignore[union-attr]


def test_get_looks_from_the_last_state_and_can_miss_a_batch_moving_on(tmp_path: Path) -> None:
    """Why :meth:`Committer.process` asks :meth:`CommitLog.recorded` first: ``get`` alone would take the batch
    for a new one, and write its rows again."""
    log, fs = _log_moving_on(tmp_path)

    assert log.get("q", 3) is None
    assert fs.moved and fs.looked == ["completed", "inflight", "requested"]


def test_a_batch_not_in_the_log_is_not_recorded(tmp_path: Path) -> None:
    table = tmp_path.as_uri()
    log = CommitLog(FileSystem(table), table)
    log.write(LogEntry(query="q", batch=1, state=State.COMPLETED))

    assert log.recorded("q", 1)
    assert not log.recorded("q", 2)
    assert not log.recorded("other", 1)
