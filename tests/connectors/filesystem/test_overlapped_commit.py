"""The overlapped commit (``sink.partition-commit.async``) without Spark: the committer of a streaming insert
moves and commits batch N on its background thread while batch N+1 is staged, plans N+1 only once N is
committed, fails the insert with N's own error, and a restart finishes what a crash left to that thread.

Batches are staged by writing parquet files with pyarrow; the table's policies are ``success-file`` and a
gate policy of this module that the test opens and closes, and that records what it committed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from sqlext.connectors.filesystem.commit import committer as committer_module
from sqlext.connectors.filesystem.commit import moves, partition_commit
from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.commit.partition_commit import trigger_state_uri
from sqlext.connectors.filesystem.commit.plan import BatchInfo, StagedFile
from sqlext.connectors.filesystem.commit.trigger import TriggerState
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.policies import PartitionCommitContext, PartitionCommitPolicy
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import CommitError
from sqlext.faults import BACKGROUND_POINTS
from sqlext.io.fs import FileSystem, join
from tests.support.tables import events_table
from tests.support.waiting import wait_for

QUERY = "overlap_q"
ROWS = 5


class GatePolicy(PartitionCommitPolicy):
    """Commits by recording ``(batch, partition)``, once :attr:`opened` is set; raises :attr:`failure` if set."""

    opened = threading.Event()
    entered = threading.Event()
    committed: list[tuple[int | None, str]] = []  # noqa: RUF012 - shared with the test on purpose
    failure: Exception | None = None

    def commit(self, context: PartitionCommitContext) -> None:
        GatePolicy.entered.set()
        assert GatePolicy.opened.wait(30), "the test never opened the gate"
        if GatePolicy.failure is not None:
            raise GatePolicy.failure
        GatePolicy.committed.append((context.batch, context.relative_path))


@pytest.fixture(autouse=True)
def gate() -> Iterator[type[GatePolicy]]:
    GatePolicy.opened.set()
    GatePolicy.entered.clear()
    GatePolicy.committed = []
    GatePolicy.failure = None
    yield GatePolicy
    GatePolicy.opened.set()


def _settings(tmp_path: Path, **options: str) -> SinkSettings:
    policies = {
        "sink.partition-commit.policy.kind": "custom,success-file",
        "sink.partition-commit.policy.class": f"{__name__}.GatePolicy",
    }
    return SinkSettings.from_table(events_table("units", "events", tmp_path / "events", **{**policies, **options}))


def _committer(tmp_path: Path, overlap: bool = True) -> BatchCommitter:
    committer = BatchCommitter(_settings(tmp_path), QUERY, _checkpoint(tmp_path), None)
    committer.commit_in_background(overlap, lambda batch: True)
    return committer


def _checkpoint(tmp_path: Path) -> str:
    return (tmp_path / "checkpoint").as_uri()


def _stage(settings: SinkSettings, batch: int, ran: threading.Event | None = None) -> Callable[[], list[StagedFile]]:
    """Batch ``batch`` writes ids ``batch*ROWS ..`` into hour ``batch`` (one staged parquet file)."""

    def stage() -> list[StagedFile]:
        log = CommitLog(FileSystem(settings.path), settings.path)
        uri = join(log.staging_dir(QUERY, batch), f"dt=2026-11-22/hr={batch:02d}", f"part-{batch}.parquet")
        path = Path(uri.removeprefix("file://"))
        path.parent.mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(batch * ROWS, (batch + 1) * ROWS))}), path)
        if ran is not None:
            ran.set()
        return [StagedFile(uri, path.stat().st_size, ["2026-11-22", f"{batch:02d}"], ROWS)]

    return stage


def _log(settings: SinkSettings) -> CommitLog:
    return CommitLog(FileSystem(settings.path), settings.path)


def _ids(settings: SinkSettings) -> list[int]:
    table = Path(settings.path.removeprefix("file://"))
    dataset = ds.dataset(table, format="parquet", partitioning="hive", exclude_invalid_files=True)
    return sorted(dataset.to_table(columns=["id"]).column("id").to_pylist())


def _assert_committed_once(settings: SinkSettings, batches: int) -> None:
    table = Path(settings.path.removeprefix("file://"))
    assert _ids(settings) == list(range(batches * ROWS)), "rows lost or duplicated"
    for batch in range(batches):
        assert (table / f"dt=2026-11-22/hr={batch:02d}" / "_SUCCESS").is_file()
    assert {state for state in _log(settings).states(QUERY).values()} == {State.COMPLETED}
    assert [p for p in (table / "_sqlext" / "staging").rglob("*") if p.is_file()] == []


def test_batch_n_is_committed_while_n_plus_1_is_staged_and_n_plus_1_is_planned_after(
    tmp_path: Path, gate: type[GatePolicy]
) -> None:
    committer = _committer(tmp_path)
    settings = committer.settings
    gate.opened.clear()
    committer.process(0, BatchInfo(None, 0), _stage(settings, 0))  # returns once planned
    wait_for(gate.entered.is_set, 30, what="batch 0's partition commit to start")
    assert _log(settings).states(QUERY) == {0: State.COMPLETED}, "its files are moved, its partition not committed"

    staged_next = threading.Event()
    next_stage = _stage(settings, 1, staged_next)
    next_batch = threading.Thread(target=committer.process, args=(1, BatchInfo(None, 0), next_stage))
    next_batch.start()
    wait_for(staged_next.is_set, 30, what="batch 1 to be staged while batch 0 commits")
    assert 1 not in _log(settings).states(QUERY), "batch 1 planned before batch 0 was committed"
    assert next_batch.is_alive(), "batch 1 did not wait for batch 0's commit (back-pressure)"

    gate.opened.set()
    next_batch.join(30)
    assert committer.wait_committed(30)
    committer.close()
    assert gate.committed == [(0, "dt=2026-11-22/hr=00"), (1, "dt=2026-11-22/hr=01")]
    _assert_committed_once(settings, 2)
    state = TriggerState.from_json(FileSystem(settings.path).read_json(trigger_state_uri(_checkpoint(tmp_path))))
    assert state.last_batch == 1 and state.pending == {}


def test_without_overlap_a_batch_returns_once_committed(tmp_path: Path, gate: type[GatePolicy]) -> None:
    committer = _committer(tmp_path, overlap=False)
    gate.opened.clear()
    batch = threading.Thread(target=committer.process, args=(0, BatchInfo(None, 0), _stage(committer.settings, 0)))
    batch.start()
    wait_for(gate.entered.is_set, 30, what="batch 0's partition commit to start")
    assert batch.is_alive(), "the batch returned before its partition was committed"
    gate.opened.set()
    batch.join(30)
    committer.close()
    _assert_committed_once(committer.settings, 1)


def test_a_failed_commit_fails_the_next_batch_stop_and_end_of_input_with_its_own_error(
    tmp_path: Path, gate: type[GatePolicy]
) -> None:
    committer = _committer(tmp_path)
    settings = committer.settings
    gate.failure = CommitError("the policy refused dt=2026-11-22/hr=00")
    committer.process(0, BatchInfo(None, 0), _stage(settings, 0))

    for attempt in (
        lambda: committer.process(1, BatchInfo(None, 0), _stage(settings, 1)),
        committer.end_of_input,
        committer.wait_committed,
    ):
        with pytest.raises(CommitError, match="the policy refused dt=2026-11-22/hr=00"):
            attempt()
    assert committer.tick() == [], "a tick committed after a failed commit"
    assert 1 not in _log(settings).states(QUERY), "a batch was planned after a failed commit"
    assert committer.wait_idle(30)
    committer.close()


def _crash_at(point: str) -> Callable[[str, int | None], None]:
    def fault_point(name: str, batch: int | None = None) -> None:
        if name == point and batch == 1:
            raise SimulatedCrash(point)

    return fault_point


class SimulatedCrash(BaseException):
    """What a fault point raises here instead of ending the process (the state on disk is what a kill leaves)."""


@pytest.mark.parametrize("point", [p for p in BACKGROUND_POINTS if p != "after-report"])
def test_a_restart_finishes_the_batch_a_crash_left_to_the_background_committer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """Batch 1 was recorded by Spark (its ``foreachBatch`` returned) and its commit was cut at ``point``:
    the restart has no batch to replay, only its end of input, and still ends with every row once and every
    partition committed."""
    crashed = _committer(tmp_path)
    settings = crashed.settings
    with monkeypatch.context() as patched:
        for module in (committer_module, moves, partition_commit):
            patched.setattr(module, "fault_point", _crash_at(point))
        crashed.process(0, BatchInfo(None, 0), _stage(settings, 0))
        crashed.process(1, BatchInfo(None, 0), _stage(settings, 1))
        with pytest.raises(SimulatedCrash):
            crashed.wait_committed(30)
    crashed.close()
    GatePolicy.committed = []

    restarted = _committer(tmp_path)
    restarted.end_of_input()
    restarted.close()

    _assert_committed_once(settings, 2)
    assert (1, "dt=2026-11-22/hr=01") in GatePolicy.committed, "batch 1's partition was not committed"
    assert (0, "dt=2026-11-22/hr=00") not in GatePolicy.committed, "batch 0 (committed before) was redone"


def test_a_trigger_state_saved_before_the_last_batch_was_recorded_recovers_only_unfinished_batches(
    tmp_path: Path,
) -> None:
    """A state saved by an older sqlext has no ``last_batch``: it committed every batch before Spark recorded
    it, so its completed batches are not committed again; an unfinished one is finished (Spark replays it)."""
    committer = _committer(tmp_path, overlap=False)
    settings = committer.settings
    committer.process(0, BatchInfo(None, 0), _stage(settings, 0))
    committer.close()
    state_fs = FileSystem(settings.path)
    saved = state_fs.read_json(trigger_state_uri(_checkpoint(tmp_path)))
    del saved["last_batch"]
    state_fs.write_json(trigger_state_uri(_checkpoint(tmp_path)), saved)
    GatePolicy.committed = []

    restarted = _committer(tmp_path)
    assert restarted.wait_committed(30)
    restarted.close()
    assert GatePolicy.committed == [], "a batch committed before was committed again"


def test_a_restart_removes_the_staging_dir_a_kill_left_after_its_batch_was_recorded_completed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between recording batch 1 ``completed`` and removing its staging dir (Spark's own ``_SUCCESS``
    marker is left there): the restart's recovery, which commits batch 1's partition, removes the dir too."""
    crashed = _committer(tmp_path)
    settings = crashed.settings
    with monkeypatch.context() as patched:
        patched.setattr(committer_module, "fault_point", _crash_at("after-log"))
        crashed.process(0, BatchInfo(None, 0), _stage(settings, 0))
        crashed.process(1, BatchInfo(None, 0), _stage(settings, 1))
        with pytest.raises(SimulatedCrash):
            crashed.wait_committed(30)
    crashed.close()
    left = Path(_log(settings).staging_dir(QUERY, 1).removeprefix("file://")) / "_SUCCESS"
    left.parent.mkdir(parents=True)
    left.write_bytes(b"")

    restarted = _committer(tmp_path)
    restarted.end_of_input()
    restarted.close()

    assert not left.parent.exists()
    _assert_committed_once(settings, 2)


def test_a_batch_the_restart_recovered_and_spark_replays_counts_once_in_the_run_totals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Killed after batch 1's files moved, before Spark recorded it: the restart's recovery finishes batch 1,
    then Spark replays it. Its rows are in the table once, and in the run's totals and log once."""
    crashed = _committer(tmp_path)
    settings = crashed.settings
    with monkeypatch.context() as patched:
        patched.setattr(committer_module, "fault_point", _crash_at("after-log"))
        crashed.process(0, BatchInfo(None, 0), _stage(settings, 0))
        crashed.process(1, BatchInfo(None, 0), _stage(settings, 1))
        with pytest.raises(SimulatedCrash):
            crashed.wait_committed(30)
    crashed.close()

    with caplog.at_level("INFO", logger="sqlext.commit"):
        restarted = _committer(tmp_path)
        assert restarted.wait_committed(30)
        restarted.process(1, BatchInfo(None, 0), _stage(settings, 1))  # Spark's replay
        restarted.process(2, BatchInfo(None, 0), _stage(settings, 2))
        assert restarted.wait_committed(30)
    restarted.close()

    _assert_committed_once(settings, 3)
    progress = restarted.progress
    assert (progress.batches, progress.rows, progress.files, progress.last_batch) == (2, 2 * ROWS, 2, 2)
    committed_lines = [r.getMessage() for r in caplog.records if f"{QUERY}: batch 1 committed" in r.getMessage()]
    assert len(committed_lines) == 1, committed_lines
    assert "totals: 2 batches, 10 rows, 2 files" in caplog.text
