"""Partition registration in batches (issue #21): which partitions an add added, and exact statistics."""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.protocol import TBinaryProtocol
from thrift.transport import TTransport

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import PARALLEL_CALLS, PARTITION_BATCH, MetastoreClient
from sqlext.connectors.filesystem.commit import partition_commit
from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.policies import PartitionCommitContext, new_partition
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.io.fs import FileSystem
from sqlext.table import Column, TableDefinition, TableIdentifier

pytestmark = pytest.mark.hms


def _table(name: str, root: Path, policies: str = "metastore") -> TableDefinition:
    columns = (Column("id", "BIGINT"), Column("dt", "STRING"), Column("hr", "STRING"))
    options = {
        "connector": "filesystem",
        "path": root.as_uri(),
        "format": "parquet",
        "sink.partition-commit.policy.kind": policies,
    }
    return TableDefinition(TableIdentifier("reg_db", name), columns, options, partition_keys=("dt", "hr"))


def _partition(hms_table: ttypes.Table, hour: int) -> ttypes.Partition:
    sd = ttypes.StorageDescriptor(**{**hms_table.sd.__dict__})
    sd.location = f"{hms_table.sd.location}/dt=2026-11-22/hr={hour:03d}"
    return ttypes.Partition(
        values=["2026-11-22", f"{hour:03d}"], dbName="reg_db", tableName=hms_table.tableName, sd=sd, parameters={}
    )


def test_add_partitions_tells_which_it_added_when_some_existed(hms: MetastoreClient, tmp_path: Path) -> None:
    hms.create_database("reg_db")
    Catalog(hms).create_table(_table("added", tmp_path / "added"))
    hms_table = hms.get_table("reg_db", "added")
    assert hms_table is not None
    count = PARTITION_BATCH + 20  # two batches
    partitions = [_partition(hms_table, hour) for hour in range(count)]
    first = hms.add_partitions("reg_db", "added", partitions[:30], need_result=True)
    assert sorted(p.values[1] for p in first) == [f"{h:03d}" for h in range(30)]
    # 30 exist: the first batch adds the others of its own, the second batch all of its own.
    added = hms.add_partitions("reg_db", "added", partitions, need_result=True)
    assert sorted(p.values[1] for p in added) == [f"{h:03d}" for h in range(30, count)]
    assert len(hms.get_partition_names("reg_db", "added")) == count
    assert hms.add_partitions("reg_db", "added", partitions, need_result=True) == []


def test_a_backfill_registers_every_partition_with_exact_statistics_in_batched_calls(
    hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hms.create_database("reg_db", if_not_exists=True)
    root = tmp_path / "tree"
    expected = {}
    for hour in range(250):
        directory = root / "dt=2026-11-22" / f"hr={hour:02d}"
        directory.mkdir(parents=True)
        for index in range(hour % 3 + 1):
            pq.write_table(pa.table({"id": list(range(hour + index))}), directory / f"part-{index}.parquet")
        (directory / "_SUCCESS").write_bytes(b"")  # not a data file
        files = sorted(directory.glob("part-*.parquet"))
        expected[f"dt=2026-11-22/hr={hour:02d}"] = (
            str(len(files)),
            str(sum(f.stat().st_size for f in files)),
            str(sum(hour + i for i in range(len(files)))),
        )
    table = _table("backfill", root)
    Catalog(hms).create_table(table)
    calls: list[str] = []
    call = MetastoreClient.call
    monkeypatch.setattr(
        MetastoreClient, "call", lambda self, name, *a, **k: calls.append(name) or call(self, name, *a, **k)
    )
    committer = BatchCommitter(SinkSettings.from_table(table), "backfill", (tmp_path / "state").as_uri(), hms.uri)
    try:
        committer.trigger.add(((name, name.replace("dt=", "").split("/hr=")) for name in expected), now_ms=0)
        committer.end_of_input()
    finally:
        committer.close()
    monkeypatch.undo()
    assert calls.count("add_partitions_req") == -(-len(expected) // PARTITION_BATCH), calls
    assert len(calls) < 10, f"not a call per partition: {calls}"
    stored = hms.get_partitions_by_names("reg_db", "backfill", list(expected))
    assert len(stored) == 250
    for partition in stored:
        name = f"dt={partition.values[0]}/hr={partition.values[1]}"
        params = partition.parameters
        assert (params["numFiles"], params["totalSize"], params["numRows"]) == expected[name], name


def test_batched_calls_go_over_several_connections_in_order_and_a_failed_chunk_stops_the_rest(
    hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hms.create_database("reg_db", if_not_exists=True)
    Catalog(hms).create_table(_table("lanes", tmp_path / "lanes"))
    hms_table = hms.get_table("reg_db", "lanes")
    assert hms_table is not None
    partitions = [_partition(hms_table, hour) for hour in range(PARTITION_BATCH * 6)]
    callers: list[int] = []
    call = MetastoreClient.call
    monkeypatch.setattr(
        MetastoreClient, "call", lambda self, name, *a: callers.append(id(self)) or call(self, name, *a)
    )
    with MetastoreClient(hms.uri) as client:
        added = client.add_partitions("reg_db", "lanes", partitions, need_result=True)
        assert len(set(callers)) == PARALLEL_CALLS, "the chunks were not spread over the connections"
        assert [p.values for p in added] == [p.values for p in partitions]
        stored = client.get_partitions_by_names("reg_db", "lanes", [f"dt=2026-11-22/hr={h:03d}" for h in range(600)])
        assert sorted(p.values[1] for p in stored) == [f"{h:03d}" for h in range(600)]

        more = [_partition(hms_table, hour) for hour in range(600, 600 + PARTITION_BATCH * 8)]
        more[PARTITION_BATCH].values = ["2026-11-22"]  # one value for two keys: the metastore refuses the chunk
        with pytest.raises(ttypes.MetaException):
            client.add_partitions("reg_db", "lanes", more)
    names = set(hms.get_partition_names("reg_db", "lanes"))
    # The first chunk was under way when the refused one failed; the refused chunk added nothing.
    assert {f"dt=2026-11-22/hr={h:03d}" for h in range(600, 600 + PARTITION_BATCH)} <= names
    assert not {f"dt=2026-11-22/hr={h:03d}" for h in range(600 + PARTITION_BATCH, 600 + 2 * PARTITION_BATCH)} & names


def _backfill(hms: MetastoreClient, root: Path, name: str, state: Path) -> None:
    table = _table(name, root)
    Catalog(hms).create_table(table)
    committer = BatchCommitter(SinkSettings.from_table(table), "backfill", state.as_uri(), hms.uri)
    try:
        names = [p.relative_to(root).as_posix() for p in sorted(root.glob("dt=*/hr=*"))]
        committer.trigger.add(((n, n.replace("dt=", "").split("/hr=")) for n in names), now_ms=0)
        committer.end_of_input()
    finally:
        committer.close()


def _write_hours(root: Path, hours: int) -> None:
    for hour in range(hours):
        directory = root / "dt=2026-11-22" / f"hr={hour:02d}"
        directory.mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(10))}), directory / "part-0.parquet")


def test_a_lone_writer_lists_each_partition_once_and_with_another_writers_log_lists_again(
    hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Statistics are listed again after they are stored only where another query also writes the table (it
    has a commit log there): a file it moved in after our listing is then counted."""
    hms.create_database("reg_db", if_not_exists=True)
    listed: list[str] = []
    list_files = FileSystem.list_files

    def counting(self: FileSystem, uri: str, recursive: bool = True) -> list[Any]:
        found = list_files(self, uri, recursive)
        if "/hr=" in uri:
            listed.append(uri.rstrip("/").rsplit("/", 1)[1])
            late = Path(uri.removeprefix("file:").removeprefix("//")) / "part-late.parquet"
            if late.parent.name == "hr=00" and late.parent.parent.parent.name == "busy" and not late.exists():
                pq.write_table(pa.table({"id": list(range(5))}), late)  # another writer's file, after our listing
        return found

    monkeypatch.setattr(FileSystem, "list_files", counting)
    _write_hours(tmp_path / "lone", 12)
    _backfill(hms, tmp_path / "lone", "lone", tmp_path / "state-lone")
    assert sorted(listed) == [f"hr={h:02d}" for h in range(12)], "a partition was listed more than once"

    busy = tmp_path / "busy"
    _write_hours(busy, 3)
    (busy / "_sqlext" / "log" / "other_writer").mkdir(parents=True)
    _backfill(hms, busy, "busy", tmp_path / "state-busy")
    hour_zero = hms.get_partitions_by_names("reg_db", "busy", ["dt=2026-11-22/hr=00"])[0].parameters
    assert (hour_zero["numFiles"], hour_zero["numRows"]) == ("2", "15")


def _encoded(partition: ttypes.Partition, protocol: type[TBinaryProtocol.TBinaryProtocol]) -> bytes:
    buffer = TTransport.TMemoryBuffer()
    partition.write(protocol(buffer))
    return bytes(buffer.getvalue())


def test_a_new_partition_is_sent_as_with_a_deep_copy_of_the_table_descriptor(
    hms: MetastoreClient, tmp_path: Path
) -> None:
    hms.create_database("reg_db", if_not_exists=True)
    table = _table("shallow", tmp_path / "shallow")
    Catalog(hms).create_table(table)
    hms_table = hms.get_table("reg_db", "shallow")
    assert hms_table is not None
    columns, table_location = copy.deepcopy(hms_table.sd.cols), hms_table.sd.location

    def built(hour: str) -> ttypes.Partition:
        path = f"{table.options['path']}/dt=2026-11-22/hr={hour}"
        context = PartitionCommitContext(
            table,
            ["dt", "hr"],
            ["2026-11-22", hour],
            path,
            f"dt=2026-11-22/hr={hour}",
            [],
            FileSystem(path),
            hms,
            hms_table,
            row_count=0,
        )
        return new_partition(hms_table, context)

    first, second = built("00"), built("01")
    deep = copy.deepcopy(first)
    deep.sd = copy.deepcopy(hms_table.sd)
    deep.sd.location = first.sd.location
    # Same bytes as a deep copy, in the pure-Python codec and in the C one the client uses.
    for protocol in (TBinaryProtocol.TBinaryProtocol, TBinaryProtocol.TBinaryProtocolAccelerated):
        assert _encoded(first, protocol) == _encoded(deep, protocol)
    assert (first.sd.location, second.sd.location, hms_table.sd.location) == (
        f"{table.options['path']}/dt=2026-11-22/hr=00",
        f"{table.options['path']}/dt=2026-11-22/hr=01",
        table_location,
    )
    # A partition following a change of columns gets a list of its own: the table and the others keep theirs.
    first.sd.cols = [*columns, ttypes.FieldSchema("added", "string", None)]
    assert (hms_table.sd.cols, second.sd.cols) == (columns, columns)


# -- the commit in chunks: the next chunk's files read while the metastore commits one -------------------------

CHUNK = 10


def _chunks_of(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commit in chunks of ``size`` partitions (none growing)."""
    monkeypatch.setattr(partition_commit, "COMMIT_CHUNK", size)
    monkeypatch.setattr(partition_commit, "COMMIT_CHUNK_MAX", size)


def _hour(uri: str) -> int | None:
    """The hour of a partition directory being listed (None for anything else)."""
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    return int(name.removeprefix("hr=")) if name.startswith("hr=") else None


def _chunked_committer(hms: MetastoreClient, root: Path, name: str, state: Path, policies: str) -> BatchCommitter:
    """A backfill committer of every hour under ``root``, not yet committing."""
    table = _table(name, root, policies)
    Catalog(hms).create_table(table)
    committer = BatchCommitter(SinkSettings.from_table(table), "backfill", state.as_uri(), hms.uri)
    names = [p.relative_to(root).as_posix() for p in sorted(root.glob("dt=*/hr=*"))]
    committer.trigger.add(((n, n.replace("dt=", "").split("/hr=")) for n in names), now_ms=0)
    return committer


def _stored_hours(hms: MetastoreClient, table: str) -> list[int]:
    return sorted(int(name.rsplit("hr=", 1)[1]) for name in hms.get_partition_names("reg_db", table))


def _assert_every_hour_stored_once_with_its_statistics(hms: MetastoreClient, table: str, hours: int) -> None:
    names = [f"dt=2026-11-22/hr={h:02d}" for h in range(hours)]
    assert sorted(hms.get_partition_names("reg_db", table)) == names
    stored = hms.get_partitions_by_names("reg_db", table, names)
    assert len(stored) == hours
    for partition in stored:
        assert (partition.parameters["numFiles"], partition.parameters["numRows"]) == ("1", "10"), partition.values


def test_the_next_chunks_files_are_read_while_the_metastore_commits_a_chunk(
    hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunk 0's ``add_partitions_req`` is held until chunk 1's files are being listed, and chunk 1's listings are
    held until the metastore answered chunk 0's add: both can go on only if they overlap (reading everything first,
    or reading a chunk only after committing the one before, waits out both timeouts and fails)."""
    hms.create_database("reg_db", if_not_exists=True)
    _chunks_of(CHUNK, monkeypatch)
    _write_hours(tmp_path / "overlap", 3 * CHUNK)
    committer = _chunked_committer(hms, tmp_path / "overlap", "overlap", tmp_path / "state", "metastore")
    chunk_one_listed, chunk_zero_added = threading.Event(), threading.Event()
    events: list[str] = []
    held_at_chunk_zero: list[int] = []
    list_files, call = FileSystem.list_files, MetastoreClient.call

    def listing(self: FileSystem, uri: str, recursive: bool = True) -> list[Any]:
        hour = _hour(uri)
        if hour is not None and CHUNK <= hour < 2 * CHUNK:
            events.append(f"list {hour}")
            chunk_one_listed.set()
            assert chunk_zero_added.wait(30), "chunk 0 was not committed while chunk 1 was being read"
        return list_files(self, uri, recursive)

    def calling(self: MetastoreClient, name: str, *args: Any) -> Any:
        if name != "add_partitions_req" or args[0].parts[0].values[1] != "00":
            return call(self, name, *args)
        assert chunk_one_listed.wait(30), "chunk 1 was not being read while chunk 0 was committed"
        result = call(self, name, *args)
        events.append("chunk 0 added")
        held_at_chunk_zero.extend(_stored_hours(hms, "overlap"))
        chunk_zero_added.set()
        return result

    monkeypatch.setattr(FileSystem, "list_files", listing)
    monkeypatch.setattr(MetastoreClient, "call", calling)
    try:
        committed = committer.end_of_input()
    finally:
        committer.close()
    monkeypatch.undo()
    assert len(committed) == 3 * CHUNK
    assert held_at_chunk_zero == list(range(CHUNK)), "the metastore held more than chunk 0 at its answer"
    assert events.index("chunk 0 added") > 0 and events[0].startswith("list"), events
    assert sorted(int(e.split()[1]) for e in events if e.startswith("list")) == list(range(CHUNK, 2 * CHUNK))
    _assert_every_hour_stored_once_with_its_statistics(hms, "overlap", 3 * CHUNK)


def test_a_metastore_error_in_a_chunk_stops_the_commit_there_after_the_next_chunks_reads_end(
    hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metastore refuses chunk 1's add (once) while chunk 2's files are being read: the error is raised once
    those reads ended, chunk 0 alone is committed (in the metastore and by its success files), and calling again
    commits every partition once with its statistics."""
    hms.create_database("reg_db", if_not_exists=True)
    _chunks_of(CHUNK, monkeypatch)
    root = tmp_path / "refused"
    _write_hours(root, 3 * CHUNK)
    committer = _chunked_committer(hms, root, "refused", tmp_path / "state", "metastore,success-file")
    chunk_two_read, refused = threading.Event(), threading.Event()
    started: list[int] = []
    ended: list[int] = []
    list_files, call = FileSystem.list_files, MetastoreClient.call

    def listing(self: FileSystem, uri: str, recursive: bool = True) -> list[Any]:
        hour = _hour(uri)
        if hour is None or hour < 2 * CHUNK:
            return list_files(self, uri, recursive)
        started.append(hour)
        chunk_two_read.set()
        assert refused.wait(30), "chunk 1's add never failed"
        found = list_files(self, uri, recursive)
        ended.append(hour)
        return found

    def calling(self: MetastoreClient, name: str, *args: Any) -> Any:
        if name == "add_partitions_req" and args[0].parts[0].values[1] == f"{CHUNK:02d}" and not refused.is_set():
            assert chunk_two_read.wait(30), "chunk 2's files were not read while chunk 1 was committed"
            refused.set()
            raise ttypes.MetaException("refused by the test")
        return call(self, name, *args)

    monkeypatch.setattr(FileSystem, "list_files", listing)
    monkeypatch.setattr(MetastoreClient, "call", calling)
    with pytest.raises(ttypes.MetaException, match="refused by the test"):
        committer.end_of_input()
    assert started and sorted(ended) == sorted(started), f"reads left running: {started} started, {ended} ended"
    assert _stored_hours(hms, "refused") == list(range(CHUNK))
    success = sorted(int(p.parent.name.removeprefix("hr=")) for p in root.glob("dt=*/hr=*/_SUCCESS"))
    assert success == list(range(CHUNK)), "a chunk after the refused one was committed"
    assert len(committer.trigger.all_pending()) == 3 * CHUNK

    try:
        assert len(committer.end_of_input()) == 3 * CHUNK
    finally:
        committer.close()
    monkeypatch.undo()
    _assert_every_hour_stored_once_with_its_statistics(hms, "refused", 3 * CHUNK)
    assert len(list(root.glob("dt=*/hr=*/_SUCCESS"))) == 3 * CHUNK


class SimulatedCrash(BaseException):
    """What the fault point raises here instead of ending the process (the state on disk is what a kill leaves)."""


def test_a_crash_between_chunks_then_a_rerun_commits_every_partition_once(
    hms: MetastoreClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hms.create_database("reg_db", if_not_exists=True)
    _chunks_of(CHUNK, monkeypatch)
    root = tmp_path / "crashed"
    _write_hours(root, 3 * CHUNK)

    def crash(name: str, batch: int | None = None) -> None:
        if name == "between-chunks":
            raise SimulatedCrash(name)

    crashed = _chunked_committer(hms, root, "crashed", tmp_path / "state", "metastore,success-file")
    with monkeypatch.context() as patched:
        patched.setattr(partition_commit, "fault_point", crash)
        with pytest.raises(SimulatedCrash):
            crashed.end_of_input()
    crashed.close()
    assert _stored_hours(hms, "crashed") == list(range(CHUNK)), "the crash fell after chunk 0 only"

    restarted = BatchCommitter(crashed.settings, "backfill", (tmp_path / "state").as_uri(), hms.uri)
    names = [p.relative_to(root).as_posix() for p in sorted(root.glob("dt=*/hr=*"))]
    restarted.trigger.add(((n, n.replace("dt=", "").split("/hr=")) for n in names), now_ms=0)
    try:
        assert len(restarted.end_of_input()) == 3 * CHUNK
    finally:
        restarted.close()
    _assert_every_hour_stored_once_with_its_statistics(hms, "crashed", 3 * CHUNK)
    assert len(list(root.glob("dt=*/hr=*/_SUCCESS"))) == 3 * CHUNK
