"""Every record sqlext persists carries a format version: each kind is read as written before versions were
recorded (version 1), as written now, and refused when a newer sqlext wrote it, with an error naming the
file, the version found, the newest this release reads and what to do; an insert's start refuses such state
before it writes anything. Without Spark or a metastore."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog import hms
from sqlext.connectors.filesystem.commit.partition_commit import trigger_state_uri
from sqlext.connectors.filesystem.commit.trigger import PendingPartition, TriggerState
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.streaming import offsets
from sqlext.errors import StateVersionError
from sqlext.gateway import passwords
from sqlext.io.fs import FileSystem
from sqlext.io.records import RecordFormat
from sqlext.jobs import checkpoint as ck
from sqlext.jobs import lease as ls
from sqlext.jobs.state_versions import refuse_newer_state
from sqlext.table import Column, TableDefinition, TableIdentifier

IDENTITY = ck.InsertIdentity(
    pipeline="insert_sv_events",
    metastore="thrift://127.0.0.1:9083",
    sink=ck.TableRef("sv.events", "a1"),
    sources=(ck.TableRef("sv.src", "s1"),),
    query="SELECT id, dt FROM __sqlext_sv_src AS src",
    sink_columns=("id", "dt"),
)
QUERY = IDENTITY.pipeline


def _entry(batch: int = 0, state: State = State.COMPLETED) -> LogEntry:
    planned = PlannedFile("file:/t/_sqlext/staging/a", "file:/t/dt=1/a", "dt=1", 10, 2)
    return LogEntry(QUERY, batch, state, [planned], {"dt=1": ["1"]}, watermark_ms=5)


def _assert_refused(error: StateVersionError, where: str, found: int = 2, newest: int = 1) -> None:
    message = str(error)
    assert where in message
    assert f"format version {found}, written by a newer sqlext" in message
    assert f"this release reads versions 1 to {newest}" in message
    assert "Upgrade sqlext" in message and "docs/resuming.md" in message
    assert error.value == str(found)


# -- the shared format -------------------------------------------------------------------------------


def test_a_format_stamps_its_version_and_reads_every_older_one() -> None:
    fmt = RecordFormat("sample record", 3)
    assert fmt.stamp({"a": 1}) == {"version": 3, "a": 1}
    assert fmt.checked({"version": 2, "a": 1}, "f") == {"a": 1}
    assert fmt.version_of({"a": 1}, "f") == 1  # written before versions were recorded
    with pytest.raises(StateVersionError) as refused:
        fmt.version_of({"version": 4}, "file:/x/f.json")
    _assert_refused(refused.value, "file:/x/f.json: the sample record", found=4, newest=3)


@pytest.mark.parametrize("bad", [0, -1, "2", 1.5, True, None])
def test_a_version_that_is_no_whole_number_is_refused(bad: Any) -> None:
    with pytest.raises(StateVersionError, match="expected a whole number from 1 to 1"):
        RecordFormat("sample record", 1).version_of({"version": bad}, "f")


def test_a_record_that_is_no_object_is_refused() -> None:
    with pytest.raises(StateVersionError, match="f: expected a sample record"):
        RecordFormat("sample record", 1).version_of([1, 2], "f")


# -- each record kind: unversioned, current and newer ----------------------------------------------------


def _write(path: Path, data: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path.as_uri()


def test_commit_log_entries(tmp_path: Path) -> None:
    log = CommitLog(FileSystem(tmp_path.as_uri()), tmp_path.as_uri())
    log.write(_entry(0))
    written = tmp_path / "_sqlext" / "log" / QUERY / f"{0:020d}.completed"
    assert json.loads(written.read_text())["version"] == 1
    assert log.get(QUERY, 0) == _entry(0)
    legacy = {k: v for k, v in _entry(1).to_json().items() if k != "version"}
    _write(written.with_name(f"{1:020d}.completed"), legacy)
    assert log.get(QUERY, 1) == _entry(1)
    uri = _write(written.with_name(f"{2:020d}.inflight"), {**_entry(2, State.INFLIGHT).to_json(), "version": 2})
    with pytest.raises(StateVersionError) as refused:
        list(log.entries(QUERY))
    _assert_refused(refused.value, f"{uri}: the commit log entry")


def test_trigger_state(tmp_path: Path) -> None:
    state = TriggerState({"dt=1": PendingPartition("dt=1", ["1"], 7)}, 8, 9, 3)
    data = state.to_json()
    assert data["version"] == 1
    assert TriggerState.from_json(data) == state
    assert TriggerState.from_json({k: v for k, v in data.items() if k != "version"}) == state
    with pytest.raises(StateVersionError) as refused:
        TriggerState.from_json({**data, "version": 2}, "file:/c/sqlext/trigger-state.json")
    _assert_refused(refused.value, "file:/c/sqlext/trigger-state.json: the trigger state")


def test_checkpoint_identity_and_the_tables_insert_record(tmp_path: Path) -> None:
    checkpoint = (tmp_path / "ck").as_uri()
    fs = FileSystem(checkpoint)
    ck.write_identity(fs, checkpoint, IDENTITY)
    assert ck.read_identity(fs, checkpoint) == IDENTITY
    uri = _write(tmp_path / "ck" / "sqlext" / "identity.json", {**IDENTITY.to_json(), "version": 2})
    with pytest.raises(StateVersionError) as refused:
        ck.read_identity(fs, checkpoint)
    _assert_refused(refused.value, f"{uri}: the checkpoint identity")

    table = (tmp_path / "table").as_uri()
    record = {"query": QUERY, "checkpoint": checkpoint, "identity": IDENTITY.to_json(), "started": "then"}
    _write(tmp_path / "table" / "_sqlext" / "inserts" / f"{QUERY}.json", record)  # unversioned
    assert [r.identity for r in ck.recorded_inserts(table)] == [IDENTITY]
    uri = _write(tmp_path / "table" / "_sqlext" / "inserts" / f"{QUERY}.json", {**record, "version": 2})
    with pytest.raises(StateVersionError) as refused:
        ck.recorded_inserts(table)
    _assert_refused(refused.value, f"{uri}: the insert record")


def _owner(**changes: Any) -> dict[str, Any]:
    now = int(time.time() * 1000)
    return {"host": socket.gethostname(), "pid": os.getpid(), "token": "t", "pipeline": QUERY, **changes} | {
        "started_ms": now,
        "renewed_ms": now,
    }


def test_the_lease_of_a_newer_sqlext_is_refused_not_taken_over(tmp_path: Path) -> None:
    checkpoint = (tmp_path / "ck").as_uri()
    fs = FileSystem(checkpoint)
    lease_file = tmp_path / "ck" / "sqlext" / "lease.json"
    _write(lease_file, _owner())  # unversioned
    owner = ls.read_lease(fs, checkpoint)
    assert owner is not None and owner.token == "t"
    _write(lease_file, {**_owner(pid=1 << 30), "version": 2})  # its process is gone: stale, were it readable
    before = lease_file.read_text()
    with pytest.raises(StateVersionError) as refused:
        ls.Lease.claim(fs, checkpoint, QUERY)
    _assert_refused(refused.value, f"{lease_file.as_uri()}: the lease")
    assert lease_file.read_text() == before


def test_a_running_insert_whose_lease_a_newer_sqlext_took_over_has_lost_it(tmp_path: Path) -> None:
    checkpoint = (tmp_path / "ck").as_uri()
    lease = ls.Lease.claim(FileSystem(checkpoint), checkpoint, QUERY)
    try:
        _write(tmp_path / "ck" / "sqlext" / "lease.json", {**_owner(token="theirs"), "version": 2})
        assert lease.renew() is False and lease.lost
    finally:
        lease.release()
    assert json.loads((tmp_path / "ck" / "sqlext" / "lease.json").read_text())["token"] == "theirs"


def test_a_lease_written_now_carries_its_version(tmp_path: Path) -> None:
    checkpoint = (tmp_path / "ck").as_uri()
    lease = ls.Lease.claim(FileSystem(checkpoint), checkpoint, QUERY)
    try:
        assert json.loads((tmp_path / "ck" / "sqlext" / "lease.json").read_text())["version"] == 1
    finally:
        lease.release()


def test_streaming_source_offsets() -> None:
    offset = {"order": "partition-name", "key": "", "seen": [], "batch": []}
    assert offsets.files_to_read(offset) == []  # unversioned: version 1
    with pytest.raises(StateVersionError) as refused:
        offsets.files_to_read({**offset, "v": 2})
    _assert_refused(refused.value, "offsets/ (the committed-partitions source's offset): the committed-partitions")


def test_the_http_report_marker_and_the_writers_files_are_versioned() -> None:
    from sqlext.connectors.filesystem.done_policies import REPORTED_FORMAT
    from sqlext.jobs.writer_claim import CHECKPOINT_ID_FORMAT, LOG_OWNER_FORMAT

    for fmt in (REPORTED_FORMAT, CHECKPOINT_ID_FORMAT, LOG_OWNER_FORMAT):
        with pytest.raises(StateVersionError, match="written by a newer sqlext"):
            fmt.loads(json.dumps({"version": fmt.version + 1}), "f")


def test_a_writers_checkpoint_id_written_as_bare_text_still_reads(tmp_path: Path) -> None:
    from sqlext.jobs.checkpoint import TableRef
    from sqlext.jobs.writer_claim import WriterClaim

    checkpoint = tmp_path / "ck"
    claim = WriterClaim("t", QUERY, str(tmp_path), "thrift://h:1", TableRef("sv.events", "a1"), checkpoint.as_uri())
    (checkpoint / "sqlext").mkdir(parents=True)
    (checkpoint / "sqlext" / "checkpoint-id").write_text("abc123\n")
    assert claim._checkpoint_id(checkpoint.as_uri()) == "abc123"
    (checkpoint / "sqlext" / "checkpoint-id").unlink()
    created = claim._checkpoint_id(checkpoint.as_uri())
    assert json.loads((checkpoint / "sqlext" / "checkpoint-id").read_text()) == {"id": created, "version": 1}
    assert claim._checkpoint_id(checkpoint.as_uri()) == created


def test_the_gateway_users_file(tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("# sqlext gateway users: written by 'sqlext gateway passwd'\nann:scrypt$1\n")  # unversioned
    assert passwords.read_users(users) == {"ann": "scrypt$1"}
    passwords.set_password(users, "bob", "secret")
    assert users.read_text().splitlines()[0].startswith("# sqlext gateway users, format 1:")
    assert set(passwords.read_users(users)) == {"ann", "bob"}
    users.write_text("# sqlext gateway users, format 2: written by 'sqlext gateway passwd'\nann:x\n")
    with pytest.raises(StateVersionError) as refused:
        passwords.set_password(users, "carl", "secret")
    _assert_refused(refused.value, f"{users}: the gateway users file")
    assert "carl" not in users.read_text()


def test_a_table_definition_of_a_newer_sqlext_is_refused() -> None:
    table = TableDefinition(TableIdentifier("sv", "events"), (Column("id", "BIGINT"),), {"connector": "print"})
    stored = ttypes.Table(dbName="sv", tableName="events", parameters=hms.definition_parameters(table))
    assert hms.from_hms(stored).columns == table.columns
    stored.parameters["sqlext.version"] = "2"
    with pytest.raises(StateVersionError) as refused:
        hms.from_hms(stored)
    _assert_refused(refused.value, "metastore table sv.events (parameter sqlext.version): the table definition")


# -- an insert's start: refused before anything is written ------------------------------------------------


def _insert_state(tmp_path: Path) -> tuple[str, str]:
    """A checkpoint and sink table as a stopped streaming insert leaves them (all of this release)."""
    checkpoint, table = (tmp_path / "ck").as_uri(), (tmp_path / "table").as_uri()
    ck.write_identity(FileSystem(checkpoint), checkpoint, IDENTITY)
    FileSystem(checkpoint).write_json(trigger_state_uri(checkpoint), TriggerState().to_json())
    _write(tmp_path / "ck" / "sqlext" / "lease.json", {**_owner(pid=1 << 30), "version": 1})
    log = CommitLog(FileSystem(table), table)
    log.write(_entry(0))
    log.write(_entry(1, State.INFLIGHT))
    offset = {"v": 1, "order": "partition-name", "key": "", "seen": [], "batch": []}
    (tmp_path / "ck" / "offsets").mkdir()
    (tmp_path / "ck" / "offsets" / "1").write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(offset)}\n-\n')
    return checkpoint, table


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _bump(path: Path, key: str = "version") -> Callable[[], None]:
    def bump() -> None:
        path.write_text(json.dumps({**json.loads(path.read_text()), key: 2}))

    return bump


@pytest.mark.parametrize(
    "newer",
    ["lease.json", "identity.json", "trigger-state.json", "inflight entry", "newest entry", "offsets"],
)
def test_an_insert_start_refuses_state_of_a_newer_sqlext_before_writing(tmp_path: Path, newer: str) -> None:
    checkpoint, table = _insert_state(tmp_path)
    refuse_newer_state(checkpoint, table, QUERY)  # this release's own state: accepted
    log_dir = tmp_path / "table" / "_sqlext" / "log" / QUERY
    if newer.endswith(".json"):
        _bump(tmp_path / "ck" / "sqlext" / newer)()
    elif newer == "inflight entry":
        _bump(log_dir / f"{1:020d}.inflight")()
    elif newer == "newest entry":
        (log_dir / f"{1:020d}.inflight").unlink()
        _bump(log_dir / f"{0:020d}.completed")()
    else:
        offsets_file = tmp_path / "ck" / "offsets" / "1"
        lines = offsets_file.read_text().splitlines()
        lines[2] = json.dumps({**json.loads(lines[2]), "v": 2})
        offsets_file.write_text("\n".join(lines) + "\n")
    before = _snapshot(tmp_path)
    with pytest.raises(StateVersionError, match="format version 2, written by a newer sqlext"):
        refuse_newer_state(checkpoint, table, QUERY)
    assert _snapshot(tmp_path) == before


def test_a_batch_inserts_log_of_a_newer_sqlext_is_refused(tmp_path: Path) -> None:
    checkpoint, table = (tmp_path / "ck").as_uri(), (tmp_path / "table").as_uri()
    log = CommitLog(FileSystem(table), table)
    entry = _entry(0)
    entry.query = QUERY + ".batch"
    log.write(entry)
    _bump(tmp_path / "table" / "_sqlext" / "log" / entry.query / f"{0:020d}.completed")()
    with pytest.raises(StateVersionError, match=f"{QUERY}.batch"):
        refuse_newer_state(checkpoint, table, QUERY)
    assert not (tmp_path / "ck").exists()
