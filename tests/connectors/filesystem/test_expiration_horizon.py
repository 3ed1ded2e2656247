"""Partition expiration by ``values-time`` between full listings, on a real HMS: a running insert's expirer
takes the due partitions from its horizon of the oldest ones (``expiration_horizon``) and lists the table's
partition names only at its first check, when the horizon no longer covers the cutoff, and every
``FULL_LISTING_EVERY`` checks; what it expires is what a fresh expirer (a full listing) finds."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext import listeners
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import expiration, expiration_horizon
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.connectors.filesystem.expiration import EXPIRATION_WRITER, PartitionExpirer
from sqlext.connectors.filesystem.files import data_files
from sqlext.connectors.filesystem.policies import MetastorePolicy, PartitionCommitContext
from sqlext.io.fs import FileSystem
from sqlext.table import TableDefinition
from tests.support.tables import create_in_hms, events_table

pytestmark = [pytest.mark.hms]

START = datetime(2026, 1, 1)
HOUR_MS = 3600 * 1000
#: The tables' ``partition.expiration-time``.
AGE = timedelta(days=1)
OPTIONS = {"partition.expiration-time": "1 d", "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00"}


def _at(hour: int) -> datetime:
    return START + timedelta(hours=hour)


def _name(hour: int) -> str:
    return f"dt={_at(hour):%Y-%m-%d}/hr={_at(hour):%H}"


def _when_due(hour: int) -> int:
    """The first millisecond (UTC, the default watermark zone) at which ``hour``'s partition is past ``AGE``."""
    return int((_at(hour).replace(tzinfo=UTC) + AGE).timestamp() * 1000) + 1


def _register(hms: MetastoreClient, table: TableDefinition, hours: Sequence[int], logged: str | None) -> None:
    """A parquet file in each hour's partition, registered in the HMS; ``logged``: the commit log says it was
    ``committed`` or is ``pending`` (written, not committed), or (None) nothing: an outside writer's."""
    root = table.options["path"]
    fs = FileSystem(root)
    hms_table = hms.get_table(table.identifier.database, table.identifier.name)
    contexts = []
    for hour in hours:
        directory = Path(root.removeprefix("file://")) / _name(hour)
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [hour]}), directory / f"part-{time.time_ns()}.parquet")
        uri, values = f"{root}/{_name(hour)}", [f"{_at(hour):%Y-%m-%d}", f"{_at(hour):%H}"]
        contexts.append(
            PartitionCommitContext(
                table, ["dt", "hr"], values, uri, _name(hour), data_files(fs, uri), fs, hms, hms_table, 1
            )
        )
    if logged != "pending":
        MetastorePolicy().commit_all(contexts)
    if logged is not None:
        log = CommitLog(fs, root)
        entry = LogEntry(
            "q",
            (log.last_batch("q") or 0) + 1,
            State.COMPLETED,
            partitions={c.relative_path: c.values for c in contexts},
        )
        if logged == "committed":
            entry.committed_partitions, entry.completed_ms = list(entry.partitions), int(time.time() * 1000)
        log.write(entry)


def _listed(hms: MetastoreClient, table: TableDefinition) -> list[str]:
    return sorted(hms.get_partition_names(table.identifier.database, table.identifier.name))


class Listings(listeners.InsertListener):
    """Counts the ``get_partition_names`` calls of sqlext's metastore clients."""

    def __init__(self) -> None:
        self.count = 0

    def metastore_call(self, call: str, outcome: str, seconds: float) -> None:
        if call == "get_partition_names":
            self.count += 1

    def during(self, action: Callable[[], Any]) -> int:
        """How many listings ``action`` made."""
        before = self.count
        action()
        return self.count - before


@pytest.fixture
def listings() -> Iterator[Listings]:
    counter = Listings()
    listeners.add_listener(counter)
    yield counter
    listeners.remove_listener(counter)


@pytest.fixture
def table(hms: MetastoreClient, tmp_path: Path, request: pytest.FixtureRequest) -> TableDefinition:
    name = request.node.name.removeprefix("test_")[:40]
    created = events_table("horizon_db", name, tmp_path / "table", **OPTIONS)
    create_in_hms(hms, created)
    return created


def test_warm_checks_list_the_names_once_every_full_listing_interval_and_expire_what_a_full_listing_does(
    hms: MetastoreClient, table: TableDefinition, listings: Listings
) -> None:
    _register(hms, table, range(40), "committed")
    expirer = PartitionExpirer(table, hms)
    checks = 2 * expiration.FULL_LISTING_EVERY + 2  # listings at checks 1, N + 1 and 2N + 1

    made = 0
    for check in range(checks):
        now = _when_due(check // 2)  # one more partition due every other check
        before = listings.count
        warm = expirer.expired(now)
        made += listings.count - before
        fresh = PartitionExpirer(table, hms).expired(now)
        assert [p.path for p in warm] == [p.path for p in fresh] == [_name(h) for h in range(check // 2 + 1)]

    assert made == 3


def test_the_horizon_is_listed_again_when_the_cutoff_passes_it_and_each_check_expires_what_is_due(
    hms: MetastoreClient, table: TableDefinition, listings: Listings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(expiration_horizon, "HORIZON_SIZE", 3)
    _register(hms, table, range(10), "committed")
    expirer = PartitionExpirer(table, hms, reader_grace=timedelta(0))

    made = []
    for hour in range(10):
        made.append(listings.during(lambda: expirer.expire(_when_due(hour))))  # noqa: B023
        assert _listed(hms, table) == [_name(h) for h in range(hour + 1, 10)]
        assert not any(Path(table.options["path"].removeprefix("file://"), _name(h)).exists() for h in range(hour + 1))

    # 3 kept per listing, one expired per check: the cutoff passes the bound at hours 3, 6 and 9.
    assert made == [1, 0, 0, 1, 0, 0, 1, 0, 0, 1]
    log = CommitLog(FileSystem(table.options["path"]), table.options["path"])
    assert [e.committed_partitions for e in log.entries(EXPIRATION_WRITER)][-3:] == [[_name(h)] for h in (7, 8, 9)]


def test_an_old_partition_from_outside_expires_at_the_next_full_listing_and_a_late_commit_at_the_next_check(
    hms: MetastoreClient, table: TableDefinition, listings: Listings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(expiration, "FULL_LISTING_EVERY", 4)
    _register(hms, table, range(10, 20), "committed")
    expirer = PartitionExpirer(table, hms, reader_grace=timedelta(0))
    now = _when_due(12)
    assert listings.during(lambda: expirer.expire(now)) == 1
    assert _listed(hms, table) == [_name(h) for h in range(13, 20)]

    _register(hms, table, [2], None)  # another writer's backfill: in the HMS, not in the commit log
    _register(hms, table, [5], "committed")  # a late commit of sqlext's, in the commit log
    assert listings.during(lambda: expirer.expire(now + 1)) == 0  # check 2: the late commit is in the horizon
    assert _listed(hms, table) == [_name(h) for h in (2, *range(13, 20))]
    for _ in range(2):  # checks 3 and 4: the outside partition is not known yet
        assert listings.during(lambda: expirer.expire(now + 1)) == 0
        assert _name(2) in _listed(hms, table)

    assert listings.during(lambda: expirer.expire(now + 1)) == 1  # check 5 lists the names again
    assert _listed(hms, table) == [_name(h) for h in range(13, 20)]
    assert not Path(table.options["path"].removeprefix("file://"), _name(2)).exists()


class Fetches:
    """The session's client, recording the names each ``get_partitions_by_names`` asks for."""

    def __init__(self, client: MetastoreClient) -> None:
        self.client = client
        self.fetched: list[list[str]] = []

    def get_partitions_by_names(self, database: str, table: str, names: Sequence[str]) -> list[Any]:
        self.fetched.append(list(names))
        return self.client.get_partitions_by_names(database, table, names)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def test_a_partition_dropped_by_someone_else_leaves_the_horizon(
    hms: MetastoreClient, table: TableDefinition, listings: Listings
) -> None:
    _register(hms, table, range(6), "committed")
    fetches = Fetches(hms)
    expirer = PartitionExpirer(table, fetches, reader_grace=timedelta(0))  # type: ignore[arg-type]
    assert listings.during(lambda: expirer.expired(_when_due(0) - 1)) == 1  # first check: nothing due yet

    hms.drop_partition(table.identifier.database, table.identifier.name, [f"{_at(0):%Y-%m-%d}", f"{_at(0):%H}"])
    found = []
    for _ in range(2):  # hour 0 is fetched once, found gone, and not fetched again
        assert listings.during(lambda: found.append([p.path for p in expirer.expired(_when_due(1))])) == 0

    assert found == [[_name(1)], [_name(1)]]
    assert fetches.fetched == [[_name(0), _name(1)], [_name(1)]]
    assert _listed(hms, table) == [_name(h) for h in range(1, 6)]


def test_pending_partitions_are_never_dropped_and_expire_at_the_check_after_their_commit(
    hms: MetastoreClient, table: TableDefinition, listings: Listings
) -> None:
    _register(hms, table, range(8), "committed")
    _register(hms, table, [1], "pending")  # late rows written into hour 1, not committed yet
    held = {_name(2)}  # pending in the running insert's trigger
    expirer = PartitionExpirer(table, hms, reader_grace=timedelta(0), pending=lambda: set(held))

    made = 0
    for check in range(5):
        made += listings.during(lambda: expirer.expire(_when_due(4) + check))  # noqa: B023
        assert _listed(hms, table) == [_name(h) for h in (1, 2, 5, 6, 7)]
        assert all(any(Path(table.options["path"].removeprefix("file://"), _name(h)).glob("part-*")) for h in (1, 2))

    _register(hms, table, [1], "committed")
    held.clear()
    made += listings.during(lambda: expirer.expire(_when_due(4) + 5))
    assert _listed(hms, table) == [_name(h) for h in (5, 6, 7)]
    assert made == 1, "one listing, at the first check"
