"""Partition expiration on a real HMS through ``sqlext expire``: values-time, update-time, a crash mid-expiry.
A running streaming insert expiring at its check interval shares the insert of test_mark_done.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.cli.main import main
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.connectors.filesystem.done_policies import DonePartitionPolicy
from sqlext.connectors.filesystem.expiration import EXPIRATION_WRITER
from sqlext.connectors.filesystem.factory import FileSystemTableFactory
from sqlext.connectors.filesystem.files import data_files
from sqlext.connectors.filesystem.policies import MetastorePolicy, PartitionCommitContext
from sqlext.errors import OptionError
from sqlext.faults import EXIT_CODE
from sqlext.io.fs import FileSystem
from sqlext.table import TableDefinition
from tests.support.tables import create_in_hms, events_table

REPO = Path(__file__).resolve().parents[3]
NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0, tzinfo=None)


def _name(at: datetime) -> str:
    return f"dt={at:%Y-%m-%d}/hr={at:%H}"


def _commit(hms: MetastoreClient, table: TableDefinition, hours: list[datetime], committed_ms: int | None) -> None:
    """Write a parquet file into each hour's partition and commit it as the sink does (metastore and done
    partitions, a commit-log entry); ``committed_ms`` None: written by a batch, not committed (pending)."""
    root = table.options["path"]
    fs = FileSystem(root)
    contexts = []
    for at in hours:
        directory = Path(root.removeprefix("file://")) / _name(at)
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [1, 2, 3]}), directory / f"part-{time.time_ns()}.parquet")
        uri = f"{root}/{_name(at)}"
        hms_table = hms.get_table(table.identifier.database, table.identifier.name)
        values = [f"{at:%Y-%m-%d}", f"{at:%H}"]
        files = data_files(fs, uri)
        context = PartitionCommitContext(table, ["dt", "hr"], values, uri, _name(at), files, fs, hms, hms_table, 3)
        contexts.append(context)
    log = CommitLog(fs, root)
    batch = (log.last_batch("q") or 0) + 1
    entry = LogEntry("q", batch, State.COMPLETED, partitions={c.relative_path: c.values for c in contexts})
    if committed_ms is not None:
        MetastorePolicy().commit_all(contexts)
        DonePartitionPolicy().commit_all(contexts)
        entry.committed_partitions, entry.completed_ms = list(entry.partitions), committed_ms
    log.write(entry)


def _listed(hms: MetastoreClient, table: TableDefinition) -> list[str]:
    return sorted(hms.get_partition_names(table.identifier.database, table.identifier.name))


def _has_files(table: TableDefinition, at: datetime) -> bool:
    return any(Path(table.options["path"].removeprefix("file://"), _name(at)).glob("part-*"))


@pytest.mark.hms
def test_sqlext_expire_drops_partitions_older_than_their_values_say_and_leaves_pending_ones(
    metastore: MetastoreSettings, hms: MetastoreClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = events_table("expire_db", "by_values", tmp_path / "table", **{"partition.expiration-time": "2 d"})
    create_in_hms(hms, table)
    old = [NOW - timedelta(days=3, hours=h) for h in (2, 1)]
    late = NOW - timedelta(days=3)
    new = NOW - timedelta(days=1)
    _commit(hms, table, [*old, late, new], committed_ms=int(time.time() * 1000))
    _commit(hms, table, [late], committed_ms=None)  # late data for it written, not committed yet
    before = _listed(hms, table)
    command = ["expire", "expire_db.by_values", "--metastore-uri", metastore.uri]

    assert main([*command, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[2] for line in out.splitlines() if line.startswith("would")] == [_name(at) for at in old]
    assert _listed(hms, table) == before, "a dry run changes nothing"

    assert main([*command, "--reader-grace", "0 s"]) == 0
    assert f"expire_db.by_values: {len(old)} partition(s) expired" in capsys.readouterr().out
    assert _listed(hms, table) == sorted([_name(late), _name(late) + ".done", _name(new), _name(new) + ".done"])
    assert not any(Path(tmp_path, "table", _name(at)).exists() for at in old), "expired files left"
    assert not any(Path(tmp_path, "table", _name(at) + ".done").exists() for at in old)
    assert _has_files(table, late) and _has_files(table, new)
    [entry] = CommitLog(FileSystem(table.options["path"]), table.options["path"]).entries(EXPIRATION_WRITER)
    assert entry.state is State.COMPLETED and entry.committed_partitions == [_name(at) for at in old]

    assert main(["commits", "expire_db.by_values", "--metastore-uri", metastore.uri]) == 0
    [shown] = [line for line in capsys.readouterr().out.splitlines() if line.startswith(EXPIRATION_WRITER)]
    assert " expire " in shown and _name(old[0]) in shown
    page = tmp_path / "timeline.html"
    assert main(["commits", "expire_db.by_values", "--html", str(page), "--metastore-uri", metastore.uri]) == 0
    assert page.read_text().count('data-kind="expired"') == len(old)


@pytest.mark.hms
def test_update_time_expiry_killed_after_the_drop_leaves_no_partition_without_files_and_finishes_on_rerun(
    metastore: MetastoreSettings, hms: MetastoreClient, tmp_path: Path
) -> None:
    options = {"partition.expiration-time": "1 h", "partition.expiration-strategy": "update-time"}
    table = events_table("expire_db", "by_update", tmp_path / "table", **options)
    create_in_hms(hms, table)
    stale, fresh = NOW - timedelta(hours=5), NOW - timedelta(days=30)  # values say nothing here: commits do
    _commit(hms, table, [stale], committed_ms=int(time.time() * 1000) - 3 * 3600 * 1000)
    _commit(hms, table, [fresh], committed_ms=int(time.time() * 1000))
    command = [sys.executable, "-m", "sqlext.cli", "expire", "expire_db.by_update", "--reader-grace", "0 s"]
    command += ["--metastore-uri", metastore.uri]
    env = {**os.environ, "PYTHONPATH": str(REPO), "SQLEXT_FAULT": "after-expiry-drop"}

    killed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == EXIT_CODE, killed.stderr[-3000:]
    assert _listed(hms, table) == sorted([_name(fresh), _name(fresh) + ".done"])
    assert _has_files(table, stale), "dropped from the HMS first, files still there"

    env.pop("SQLEXT_FAULT")
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert not Path(tmp_path, "table", _name(stale)).exists()
    assert _listed(hms, table) == sorted([_name(fresh), _name(fresh) + ".done"]) and _has_files(table, fresh)


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("partition.expiration-time", "0 s", "greater than 0"),
        ("partition.expiration-time", "a week", "duration"),
        ("partition.expiration-check-interval", "-1 h", ""),
        ("partition.expiration-strategy", "values", "values-time"),
    ],
)
def test_bad_expiration_options_are_refused_naming_the_option_and_what_is_allowed(
    tmp_path: Path, option: str, value: str, says: str
) -> None:
    with pytest.raises(OptionError) as raised:
        FileSystemTableFactory().validate(events_table("db", "t", tmp_path, **{option: value}))
    assert raised.value.option == option and value in raised.value.message
    assert says in raised.value.message
