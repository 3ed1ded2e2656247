"""An insert's checkpoint identity and its lease, without Spark or a metastore: what resumes, what starts
fresh, what is refused, and who may write a checkpoint."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.errors import ValidationError
from sqlext.io.fs import FileSystem
from sqlext.jobs import checkpoint as ck
from sqlext.jobs import lease as ls

IDENTITY = ck.InsertIdentity(
    pipeline="insert_ck_events",
    metastore=ck.normalize_metastore("thrift://127.0.0.1:9083"),
    sink=ck.TableRef("ck.events", "a1"),
    sources=(ck.TableRef("ck.src", "s1"),),
    query="SELECT id, dt FROM __sqlext_ck_src AS src",
)


def test_the_same_identity_resumes() -> None:
    assert ck.compare(IDENTITY, replace(IDENTITY)).verdict is ck.Verdict.SAME


def test_a_recreated_sink_table_is_a_replaced_sink() -> None:
    comparison = ck.compare(IDENTITY, replace(IDENTITY, sink=ck.TableRef("ck.events", "a2")))
    assert comparison.verdict is ck.Verdict.SINK_REPLACED
    assert "a1" in comparison.differences[0] and "a2" in comparison.differences[0]


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        (replace(IDENTITY, metastore="thrift://10.0.0.9:9083"), "metastore"),
        (replace(IDENTITY, sink=ck.TableRef("ck.other", "a1")), "sink table"),
        (replace(IDENTITY, sources=(ck.TableRef("ck.src2", "s2"),)), "source tables"),
        (replace(IDENTITY, sources=(ck.TableRef("ck.src", "s9"),)), "source table ck.src was created again"),
        (replace(IDENTITY, query="SELECT id, dt FROM __sqlext_ck_src AS src WHERE id > 3"), "query"),
    ],
)
def test_another_metastore_sink_source_or_query_is_a_conflict(changed: ck.InsertIdentity, named: str) -> None:
    comparison = ck.compare(IDENTITY, changed)
    assert comparison.verdict is ck.Verdict.CONFLICT
    assert any(d.startswith(named) for d in comparison.differences), comparison.differences


def test_a_recreated_sink_wins_over_a_changed_query() -> None:
    changed = replace(IDENTITY, sink=ck.TableRef("ck.events", "a2"), query="SELECT 1")
    assert ck.compare(IDENTITY, changed).verdict is ck.Verdict.SINK_REPLACED


EVOLVING = replace(IDENTITY, query="SELECT id, dt FROM __sqlext_ck_src AS src", sink_columns=("id", "dt"))


@pytest.mark.parametrize(
    ("query", "columns"),
    [
        ("SELECT id, CAST(NULL AS STRING), dt FROM __sqlext_ck_src AS src", ("id", "name", "dt")),  # added
        ("SELECT id, upper(src.name) AS n, dt FROM __sqlext_ck_src AS src", ("id", "name", "dt")),
        ("SELECT dt FROM __sqlext_ck_src AS src", ("dt",)),  # dropped
        ("SELECT id, dt FROM __sqlext_ck_src AS src", ("key", "dt")),  # renamed: the query may stay
        ("SELECT id + 0, dt FROM __sqlext_ck_src AS src", ("key", "dt")),  # ... or change for it
    ],
)
def test_a_query_that_follows_a_change_of_the_sinks_columns_resumes(query: str, columns: tuple[str, ...]) -> None:
    comparison = ck.compare(EVOLVING, replace(EVOLVING, query=query, sink_columns=columns))
    assert comparison.verdict is ck.Verdict.SAME
    assert comparison.notes or query == EVOLVING.query


@pytest.mark.parametrize(
    ("query", "columns"),
    [
        ("SELECT id, 'x', dt FROM __sqlext_ck_src AS src", ("id", "dt")),  # the sink did not change
        ("SELECT id * 2, 'x', dt FROM __sqlext_ck_src AS src", ("id", "name", "dt")),  # a kept column's value
        ("SELECT id, 'x', dt FROM __sqlext_ck_src AS src WHERE id > 3", ("id", "name", "dt")),  # the rows
        ("SELECT * FROM __sqlext_ck_src AS src", ("id", "name", "dt")),
        ("SELECT id, 'x', dt FROM __sqlext_ck_src AS src UNION ALL SELECT 1, 'y', 'z'", ("id", "name", "dt")),
    ],
)
def test_a_query_that_changes_more_than_the_sinks_columns_is_a_conflict(query: str, columns: tuple[str, ...]) -> None:
    comparison = ck.compare(EVOLVING, replace(EVOLVING, query=query, sink_columns=columns))
    assert comparison.verdict is ck.Verdict.CONFLICT
    assert comparison.differences[0].startswith("query")


def test_a_checkpoint_from_before_sink_columns_were_recorded_is_a_conflict_when_the_query_changed() -> None:
    changed = replace(EVOLVING, query="SELECT id, 'x', dt FROM __sqlext_ck_src AS src", sink_columns=("id", "n", "dt"))
    assert ck.compare(IDENTITY, changed).verdict is ck.Verdict.CONFLICT
    old_json = {k: v for k, v in IDENTITY.to_json().items() if k != "sink_columns"}  # written before they were
    assert ck.InsertIdentity.from_json(old_json).sink_columns == ()


def test_static_partitions_must_stay_the_same() -> None:
    stored = replace(EVOLVING, query="PARTITION (dt = 'a') SELECT id FROM s", sink_columns=("id",))
    for prefix, verdict in [("PARTITION (dt = 'a') ", ck.Verdict.SAME), ("PARTITION (dt = 'b') ", ck.Verdict.CONFLICT)]:
        changed = replace(stored, query=f"{prefix}SELECT id, 1 FROM s", sink_columns=("id", "n"))
        assert ck.compare(stored, changed).verdict is verdict


def test_identity_round_trips_through_json() -> None:
    assert ck.InsertIdentity.from_json(json.loads(json.dumps(IDENTITY.to_json()))) == IDENTITY


def test_metastore_uris_are_normalised_and_give_a_directory_name() -> None:
    assert ck.normalize_metastore(" thrift://B:1, thrift://a:2/") == "thrift://a:2,thrift://b:1"
    assert ck.metastore_dir_name("thrift://127.0.0.1:9083") == "127.0.0.1_9083"
    assert ck.metastore_dir_name("thrift://h1:9083,thrift://h2:9083") == "h1_9083_h2_9083"


def test_start_mode_names_the_allowed_values() -> None:
    assert ck.StartMode.parse(None) is ck.StartMode.AUTO
    assert ck.StartMode.parse(" Fresh ") is ck.StartMode.FRESH
    with pytest.raises(ValidationError, match=r"'sqlext\.insert\.start': 'again'.*'auto', 'fresh', 'resume'"):
        ck.StartMode.parse("again")


# -- prepare: what a start does with the checkpoint it finds ---------------------------------------------


def _spark_progress(location: Path) -> None:
    """What Spark leaves in a checkpoint after a batch."""
    (location / "offsets").mkdir(parents=True)
    (location / "offsets" / "0").write_text("v1\n{}\n")
    (location / "metadata").write_text('{"id":"x"}')


def test_a_new_checkpoint_starts_fresh_and_records_its_identity(tmp_path: Path) -> None:
    location = (tmp_path / "cp" / "insert_ck_events").as_uri()
    prepared = ck.prepare(location, IDENTITY, ck.StartMode.AUTO)
    try:
        assert not prepared.resumed and prepared.replaced is None
        assert ck.read_identity(FileSystem(location), location) == IDENTITY
        assert ls.read_lease(FileSystem(location), location) == prepared.lease.owner
    finally:
        prepared.lease.release()
    assert ls.read_lease(FileSystem(location), location) is None


def test_its_own_checkpoint_resumes(tmp_path: Path) -> None:
    location = tmp_path / "insert_ck_events"
    ck.prepare(location.as_uri(), IDENTITY, ck.StartMode.AUTO).lease.release()
    _spark_progress(location)
    prepared = ck.prepare(location.as_uri(), IDENTITY, ck.StartMode.AUTO)
    prepared.lease.release()
    assert prepared.resumed and (location / "offsets" / "0").is_file()


def test_the_checkpoint_of_a_dropped_sink_is_moved_aside_and_the_insert_starts_fresh(tmp_path: Path) -> None:
    location = tmp_path / "insert_ck_events"
    ck.prepare(location.as_uri(), IDENTITY, ck.StartMode.AUTO).lease.release()
    _spark_progress(location)
    recreated = replace(IDENTITY, sink=ck.TableRef("ck.events", "a2"))
    prepared = ck.prepare(location.as_uri(), recreated, ck.StartMode.AUTO)
    prepared.lease.release()
    assert not prepared.resumed and prepared.replaced is not None
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("insert_ck_events.replaced-")]
    assert prepared.replaced == aside.as_uri()
    assert (aside / "offsets" / "0").is_file(), "the old checkpoint is kept, whole"
    assert not (location / "offsets").exists()
    assert ck.read_identity(FileSystem(location.as_uri()), location.as_uri()) == recreated


def test_a_changed_query_is_refused_naming_the_checkpoint_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    location = tmp_path / "insert_ck_events"
    ck.prepare(location.as_uri(), IDENTITY, ck.StartMode.AUTO).lease.release()
    _spark_progress(location)
    changed = replace(IDENTITY, sources=(ck.TableRef("ck.src2", "s2"),), query="SELECT id, dt FROM src2")
    with pytest.raises(ck.CheckpointMismatchError) as raised:
        ck.prepare(location.as_uri(), changed, ck.StartMode.AUTO)
    message = raised.value.message
    assert location.as_uri() in message and "ck.src2" in message
    assert "'pipeline.name'" in message and "'sqlext.insert.start' = 'fresh'" in message and "--fresh" in message
    assert ck.read_identity(FileSystem(location.as_uri()), location.as_uri()) == IDENTITY
    assert ls.read_lease(FileSystem(location.as_uri()), location.as_uri()) is None, "the lease is given back"
    assert [p.name for p in tmp_path.iterdir()] == ["insert_ck_events"]


def test_fresh_moves_even_its_own_checkpoint_aside_and_resume_takes_a_changed_one(tmp_path: Path) -> None:
    location = tmp_path / "insert_ck_events"
    ck.prepare(location.as_uri(), IDENTITY, ck.StartMode.AUTO).lease.release()
    _spark_progress(location)
    changed = replace(IDENTITY, query="SELECT id, dt FROM __sqlext_ck_src AS src WHERE id > 0")
    resumed = ck.prepare(location.as_uri(), changed, ck.StartMode.RESUME)
    resumed.lease.release()
    assert resumed.resumed and ck.read_identity(FileSystem(location.as_uri()), location.as_uri()) == changed
    fresh = ck.prepare(location.as_uri(), changed, ck.StartMode.FRESH)
    fresh.lease.release()
    assert not fresh.resumed and fresh.replaced is not None and not (location / "offsets").exists()


def test_a_checkpoint_without_identity_is_adopted_only_when_the_sink_says_it_is_its_own(tmp_path: Path) -> None:
    mine, stranger = tmp_path / "mine", tmp_path / "stranger"
    _spark_progress(mine)
    _spark_progress(stranger)
    adopted = ck.prepare(mine.as_uri(), IDENTITY, ck.StartMode.AUTO, lambda: True)
    adopted.lease.release()
    assert adopted.resumed and (mine / "offsets" / "0").is_file()
    replaced = ck.prepare(stranger.as_uri(), IDENTITY, ck.StartMode.AUTO, lambda: False)
    replaced.lease.release()
    assert not replaced.resumed and not (stranger / "offsets").exists()


def test_a_fresh_start_moves_the_querys_old_commit_log_aside(tmp_path: Path) -> None:
    table = (tmp_path / "table").as_uri()
    log = CommitLog(FileSystem(table), table)
    assert ck.set_aside_commit_log(table, "insert_ck_events") is None
    log.write(LogEntry("insert_ck_events", 0, State.COMPLETED))
    log.write(LogEntry("other", 0, State.COMPLETED))
    aside = ck.set_aside_commit_log(table, "insert_ck_events")
    assert aside is not None and log.last_batch("insert_ck_events") is None
    assert log.last_batch("other") == 0
    assert [e.batch for e in log.entries(aside.rsplit("/", 1)[1])] == [0], "kept for the audit"


# -- the lease -----------------------------------------------------------------------------------------


def _write_lease(location: Path, **changes: object) -> ls.LeaseOwner:
    now = ls._now_ms()
    owner = ls.LeaseOwner(socket.gethostname(), os.getpid(), "someone", "insert_ck_events", now, now)
    owner = replace(owner, **changes)  # type: ignore[arg-type]
    (location / "sqlext").mkdir(parents=True, exist_ok=True)
    (location / "sqlext" / "lease.json").write_text(json.dumps(asdict(owner)))
    return owner


def _live_pid() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_live_writer_is_named_and_a_second_one_refused(tmp_path: Path) -> None:
    other = _live_pid()
    try:
        _write_lease(tmp_path, pid=other.pid)
        with pytest.raises(ls.CheckpointInUseError, match=f"process {other.pid} on {socket.gethostname()}"):
            ls.Lease.acquire(FileSystem(tmp_path.as_uri()), tmp_path.as_uri(), "insert_ck_events")
    finally:
        other.kill()
        other.wait()


def test_a_claim_whose_racing_writer_wrote_last_is_refused_at_confirmation(tmp_path: Path) -> None:
    fs = FileSystem(tmp_path.as_uri())
    claimed = ls.Lease.claim(fs, tmp_path.as_uri(), "a")
    with pytest.raises(ls.CheckpointInUseError):  # claimed, not yet confirmed: already held
        ls.Lease.claim(fs, tmp_path.as_uri(), "a")
    _write_lease(tmp_path, token="the-racer")  # a writer that read the lease before the claim was written
    with pytest.raises(ls.CheckpointInUseError, match="insert_ck_events in process"):
        claimed.confirm()
    claimed.release()
    assert ls.read_lease(fs, tmp_path.as_uri()).token == "the-racer"  # type: ignore[union-attr]


def test_a_claim_given_up_leaves_no_checkpoint_it_created(tmp_path: Path) -> None:
    fresh, existing = tmp_path / "fresh", tmp_path / "existing"
    (existing / "offsets").mkdir(parents=True)
    for location in (fresh, existing):
        ls.Lease.claim(FileSystem(location.as_uri()), location.as_uri(), "a").release()
    assert not fresh.exists()
    assert sorted(p.name for p in existing.iterdir()) == ["offsets", "sqlext"]
    assert not (existing / "sqlext" / "lease.json").exists()


def test_a_claim_confirmed_holds_the_lease(tmp_path: Path) -> None:
    fs = FileSystem(tmp_path.as_uri())
    claimed = ls.Lease.claim(fs, tmp_path.as_uri(), "a")
    claimed.confirm()
    try:
        assert ls.read_lease(fs, tmp_path.as_uri()) == claimed.owner
        with pytest.raises(ls.CheckpointInUseError):
            ls.Lease.acquire(fs, tmp_path.as_uri(), "a")
    finally:
        claimed.release()
    assert ls.read_lease(fs, tmp_path.as_uri()) is None


def test_the_same_process_holds_one_lease_per_checkpoint(tmp_path: Path) -> None:
    fs = FileSystem(tmp_path.as_uri())
    first = ls.Lease.acquire(fs, tmp_path.as_uri(), "a")
    try:
        with pytest.raises(ls.CheckpointInUseError):
            ls.Lease.acquire(fs, tmp_path.as_uri(), "a")
    finally:
        first.release()
    ls.Lease.acquire(fs, tmp_path.as_uri(), "a").release()


def test_an_ended_insert_of_this_process_does_not_block_its_restart(tmp_path: Path) -> None:
    fs = FileSystem(tmp_path.as_uri())
    running = [True]
    first = ls.Lease.acquire(fs, tmp_path.as_uri(), "a")
    first.keep_while(lambda: running[0], lambda: None)
    with pytest.raises(ls.CheckpointInUseError):
        ls.Lease.acquire(fs, tmp_path.as_uri(), "a")
    running[0] = False  # stopped: its heartbeat gives the lease up within a second, the restart need not wait
    second = ls.Lease.acquire(fs, tmp_path.as_uri(), "a")
    second.release()


@pytest.mark.parametrize(
    "stale",
    [
        {"pid": 2**22 + 12345},  # no such process on this host
        {"host": "elsewhere", "renewed_ms": 0},  # another host, silent for long
        {"token": "left-by-an-earlier-insert-of-this-process"},
    ],
    ids=["pid-gone", "heartbeat-old", "own-process-not-held"],
)
def test_a_stale_lease_is_taken_over(tmp_path: Path, stale: dict[str, object]) -> None:
    _write_lease(tmp_path, **stale)
    lease = ls.Lease.acquire(FileSystem(tmp_path.as_uri()), tmp_path.as_uri(), "insert_ck_events")
    try:
        assert ls.read_lease(FileSystem(tmp_path.as_uri()), tmp_path.as_uri()) == lease.owner
    finally:
        lease.release()


def test_a_lease_on_another_host_with_a_fresh_heartbeat_is_respected(tmp_path: Path) -> None:
    _write_lease(tmp_path, host="elsewhere", pid=1)
    with pytest.raises(ls.CheckpointInUseError, match="on elsewhere"):
        ls.Lease.acquire(FileSystem(tmp_path.as_uri()), tmp_path.as_uri(), "insert_ck_events")


def test_a_lease_taken_over_is_noticed_at_the_next_renewal(tmp_path: Path) -> None:
    lease = ls.Lease.acquire(FileSystem(tmp_path.as_uri()), tmp_path.as_uri(), "a")
    assert lease.renew()
    _write_lease(tmp_path, token="the-new-writer")
    assert not lease.renew() and lease.lost
    lease.release()
    assert ls.read_lease(FileSystem(tmp_path.as_uri()), tmp_path.as_uri()).token == "the-new-writer"  # type: ignore[union-attr]


def test_an_old_default_checkpoint_moves_to_its_metastores_dir_only_when_its_sink_logged_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlext.jobs.insert import _move_legacy_checkpoint
    from tests.support.tables import keyed_table

    monkeypatch.setenv("SQLEXT_HOME", str(tmp_path / "home"))
    legacy = tmp_path / "home" / "checkpoints" / "insert_ck_events"
    new = tmp_path / "home" / "checkpoints" / "127.0.0.1_9083" / "insert_ck_events"
    _spark_progress(legacy)
    sink = keyed_table("ck", "events", tmp_path / "events")

    _move_legacy_checkpoint(sink, "insert_ck_events", new.as_uri())
    assert legacy.is_dir() and not new.exists(), "a sink without this insert's batches: not its checkpoint"

    table = (tmp_path / "events").as_uri()
    CommitLog(FileSystem(table), table).write(LogEntry("insert_ck_events", 0, State.COMPLETED))
    _move_legacy_checkpoint(sink, "insert_ck_events", new.as_uri())
    assert (new / "offsets" / "0").is_file() and not legacy.exists()


# -- the per-batch lease of format("sqlext") writers -----------------------------------------------------


def test_a_per_batch_lease_is_renewed_by_its_driver_and_refused_to_another_live_one(tmp_path: Path) -> None:
    home, fs = tmp_path.as_uri(), FileSystem(tmp_path.as_uri())
    driver = _live_pid()
    try:
        first = ls.claim_per_batch(fs, home, "sqlext_db_t", driver.pid, "jvm-a")
        renewed = ls.claim_per_batch(fs, home, "sqlext_db_t", driver.pid, "jvm-a")
        assert (renewed.token, renewed.started_ms) == ("jvm-a", first.started_ms)
        assert renewed.renewed_ms >= first.renewed_ms
        with pytest.raises(ls.CheckpointInUseError, match=f"writer in the Spark driver {driver.pid}"):
            ls.claim_per_batch(fs, home, "sqlext_db_t", os.getpid(), "jvm-b")
        assert ls.read_lease(fs, home).token == "jvm-a"  # type: ignore[union-attr]
    finally:
        driver.kill()
        driver.wait()
    # Its driver is gone: taken over at once, not after the timeout.
    assert ls.claim_per_batch(fs, home, "sqlext_db_t", os.getpid(), "jvm-b").token == "jvm-b"


def test_a_per_batch_lease_without_a_batch_for_its_timeout_is_taken_over(tmp_path: Path) -> None:
    silent = ls._now_ms() - int(ls.BATCH_LEASE_TIMEOUT_S * 1000) - 1000
    _write_lease(tmp_path, renewal=ls.BATCH_RENEWAL, renewed_ms=silent, token="jvm-a")
    home = tmp_path.as_uri()
    assert ls.claim_per_batch(FileSystem(home), home, "sqlext_db_t", os.getpid(), "jvm-b").token == "jvm-b"
    # Heartbeat leases keep their own, shorter timeout: a per-batch lease 40 s silent is still held.
    _write_lease(tmp_path, renewal=ls.BATCH_RENEWAL, renewed_ms=ls._now_ms() - 40_000, token="jvm-c")
    with pytest.raises(ls.CheckpointInUseError):
        ls.claim_per_batch(FileSystem(home), home, "sqlext_db_t", os.getpid(), "jvm-d")
