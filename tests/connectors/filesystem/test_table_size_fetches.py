"""A streaming read's poll, a lookup join's reload and the expiry scan on a table of many partitions, against
the real metastore: what they fetch of it must follow what they can read or expire, not the table's size."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.compaction.command import chosen_partitions, matching_partitions
from sqlext.connectors.filesystem.expiration import PartitionExpirer
from sqlext.connectors.filesystem.extractor import DefaultPartitionTimeExtractor, PartitionTimeExtractor
from sqlext.connectors.filesystem.streaming.offsets import initial_offset, next_offset, unread_names
from sqlext.connectors.filesystem.streaming.partitions import key_function, name_key_function, poll
from sqlext.connectors.filesystem.streaming.settings import StreamingSourceSettings
from sqlext.connectors.filesystem.streaming.spec import SourceSpec
from sqlext.jobs.lookup_join import newest_names
from sqlext.table import Column, TableDefinition, TableIdentifier

pytestmark = [pytest.mark.hms]

HOURS = 120
START = datetime(2026, 1, 1)


class Recording:
    """The session's real client, recording the partition names each ``get_partitions_by_names`` asks for."""

    def __init__(self, client: MetastoreClient) -> None:
        self.client = client
        self.fetched: list[str] = []

    def get_partition_names(self, database: str, table: str) -> list[str]:
        return self.client.get_partition_names(database, table)

    def get_partitions_by_names(self, database: str, table: str, names: Sequence[str]) -> list[Any]:
        self.fetched.extend(names)
        return self.client.get_partitions_by_names(database, table, names)


def _hour(index: int) -> tuple[str, str]:
    at = START + timedelta(hours=index)
    return at.strftime("%Y-%m-%d"), at.strftime("%H")


@pytest.fixture(scope="module")
def hourly(metastore: MetastoreSettings, tmp_path_factory: pytest.TempPathFactory) -> TableDefinition:
    """``poll_db.hourly``: 120 hourly partitions registered in the metastore."""
    with MetastoreClient(metastore.uri) as hms:
        return _register(hms, tmp_path_factory.mktemp("hourly"))


def _register(hms: MetastoreClient, path: Path) -> TableDefinition:
    table = TableDefinition(
        TableIdentifier("poll_db", "hourly"),
        (Column("id", "BIGINT"), Column("dt", "STRING"), Column("hr", "STRING")),
        {
            "connector": "filesystem",
            "path": path.as_uri(),
            "format": "parquet",
            "partition.time-extractor.timestamp-pattern": "$dt $hr:00:00",
        },
        ("dt", "hr"),
    )
    hms.create_database("poll_db")
    Catalog(hms).create_table(table)
    stored = hms.get_table("poll_db", "hourly")
    assert stored is not None
    partitions = []
    for index in range(HOURS):
        dt, hr = _hour(index)
        descriptor = ttypes.StorageDescriptor(**vars(stored.sd))
        descriptor.location = f"{path.as_uri()}/dt={dt}/hr={hr}"
        partitions.append(
            ttypes.Partition(
                values=[dt, hr],
                dbName="poll_db",
                tableName="hourly",
                sd=descriptor,
                parameters={"numFiles": "0", "totalSize": "0"},  # else the metastore lists each directory
            )
        )
    hms.add_partitions("poll_db", "hourly", partitions)
    return table


def _reading(table: TableDefinition, **options: str) -> tuple[SourceSpec, StreamingSourceSettings]:
    reading = TableDefinition(
        table.identifier,
        table.columns,
        {**table.options, "streaming-source.enable": "true", **options},
        table.partition_keys,
    )
    return SourceSpec.of_table(reading, "thrift://unused", {}), StreamingSourceSettings.from_table(reading)


def _read_names(spec: SourceSpec, settings: StreamingSourceSettings, start: dict[str, Any], found: Any) -> list[str]:
    end = next_offset(start, found, settings, key_function(spec, settings), lambda partition: ["part-0.parquet"])
    return [entry["p"] for entry in end.get("batch", [])]


@pytest.mark.parametrize(
    ("order", "start_offset"),
    [("partition-name", "dt=2026-01-05/hr=18"), ("partition-time", "2026-01-05 18:00:00")],
)
def test_a_poll_fetches_only_the_partitions_at_or_past_its_offset(
    hms: MetastoreClient, hourly: TableDefinition, order: str, start_offset: str
) -> None:
    spec, settings = _reading(
        hourly,
        **{
            "streaming-source.partition-order": order,
            "streaming-source.consume-start-offset": start_offset,
            "streaming-source.read-recommits": "false",  # Flink's behaviour
        },
    )
    start = initial_offset(settings)
    narrow, whole = Recording(hms), Recording(hms)

    narrowed = poll(spec, narrow, unread_names(start, settings, name_key_function(spec, settings)))
    everything = poll(spec, whole)

    # 2026-01-05 18:00 is hour 114 of 120: six partitions from it on, the same ones either way.
    assert len(whole.fetched) == HOURS
    assert sorted(narrow.fetched) == [f"dt={dt}/hr={hr}" for dt, hr in map(_hour, range(114, HOURS))]
    assert _read_names(spec, settings, start, narrowed) == _read_names(spec, settings, start, everything)
    assert len(_read_names(spec, settings, start, narrowed)) == 6


@pytest.mark.parametrize("order", ["partition-name", "partition-time"])
def test_a_poll_watching_recommits_fetches_only_the_partitions_it_read_and_those_past_its_offset(
    hms: MetastoreClient, hourly: TableDefinition, order: str
) -> None:
    """``read-recommits`` (the default): a reader started at hour 114 that read hour 10 earlier (as if it had
    been started before and the table's older partitions were backfilled since) fetches hour 10 and hours
    114-119, not the 120, and reads hour 10's re-commit exactly as from a poll of every partition."""
    start_offset = "dt=2026-01-05/hr=18" if order == "partition-name" else "2026-01-05 18:00:00"
    spec, settings = _reading(
        hourly,
        **{"streaming-source.partition-order": order, "streaming-source.consume-start-offset": start_offset},
    )
    assert settings.read_recommits
    old_dt, old_hr = _hour(10)
    old = f"dt={old_dt}/hr={old_hr}"
    start = {**initial_offset(settings), "read": {old: {"sig": "as read before", "files": ["part-0.parquet"]}}}
    narrow, whole = Recording(hms), Recording(hms)

    narrowed = poll(spec, narrow, unread_names(start, settings, name_key_function(spec, settings)))
    everything = poll(spec, whole)

    assert len(whole.fetched) == HOURS
    assert sorted(narrow.fetched) == sorted([old, *(f"dt={dt}/hr={hr}" for dt, hr in map(_hour, range(114, HOURS)))])

    def files(partition: Any) -> list[str]:
        return ["part-0.parquet", "part-1.parquet"] if partition.name == old else ["part-0.parquet"]

    def read(found: Any) -> dict[str, Any]:
        end = next_offset(start, found, settings, key_function(spec, settings), files)
        end.pop("lag_ms")  # behind the newest commit fetched: commits it cannot read no longer count
        return end

    assert read(narrowed) == read(everything)
    batch = read(narrowed)["batch"]
    assert [(entry["p"], entry["files"]) for entry in batch if entry["p"] == old] == [(old, ["part-1.parquet"])]
    assert len(batch) == 7  # the six new hours and the re-commit's one new file


def test_a_poll_in_create_time_order_fetches_every_partition(hms: MetastoreClient, hourly: TableDefinition) -> None:
    spec, settings = _reading(hourly, **{"streaming-source.partition-order": "create-time"})
    recording = Recording(hms)

    poll(spec, recording, unread_names(initial_offset(settings), settings, name_key_function(spec, settings)))

    assert len(recording.fetched) == HOURS


def test_a_lookup_reload_fetches_only_the_newest_partition(hms: MetastoreClient, hourly: TableDefinition) -> None:
    spec, settings = _reading(hourly, **{"streaming-source.partition-order": "partition-time"})
    recording = Recording(hms)

    found = poll(spec, recording, newest_names(name_key_function(spec, settings)))

    dt, hr = _hour(HOURS - 1)
    assert recording.fetched == [f"dt={dt}/hr={hr}"]
    assert [partition.name for partition in found] == [f"dt={dt}/hr={hr}"]


def test_the_expiry_scan_fetches_only_the_partitions_old_enough_to_expire(
    hms: MetastoreClient, hourly: TableDefinition
) -> None:
    expiring = TableDefinition(
        hourly.identifier,
        hourly.columns,
        {**hourly.options, "partition.expiration-time": "1 h"},
        hourly.partition_keys,
    )
    recording = Recording(hms)
    now = START.replace(tzinfo=UTC) + timedelta(hours=2, minutes=30)  # hours 0 and 1 are over 1 h old

    expired = PartitionExpirer(expiring, recording).expired(now_ms=int(now.timestamp() * 1000))  # type: ignore[arg-type]

    assert [partition.path for partition in expired] == ["dt=2026-01-01/hr=00", "dt=2026-01-01/hr=01"]
    assert sorted(recording.fetched) == ["dt=2026-01-01/hr=00", "dt=2026-01-01/hr=01"]


class CountingExtractor(PartitionTimeExtractor):
    """The default extractor of ``$dt $hr:00:00``, counting the partitions it is asked for."""

    extracted: ClassVar[list[tuple[str, ...]]] = []

    def extract(self, keys: Sequence[str], values: Sequence[str]) -> datetime:
        CountingExtractor.extracted.append(tuple(values))
        return DefaultPartitionTimeExtractor("$dt $hr:00:00").extract(keys, values)


def test_the_expiry_scan_extracts_each_partition_time_once_per_process(
    hms: MetastoreClient, hourly: TableDefinition
) -> None:
    options = {
        **hourly.options,
        "partition.expiration-time": "1 h",
        "partition.time-extractor.kind": "custom",
        "partition.time-extractor.class": f"{__name__}.CountingExtractor",
    }
    expiring = TableDefinition(hourly.identifier, hourly.columns, options, hourly.partition_keys)
    now = START.replace(tzinfo=UTC) + timedelta(hours=2, minutes=30)  # hours 0 and 1 are over 1 h old
    CountingExtractor.extracted.clear()

    first = PartitionExpirer(expiring, hms).expired(now_ms=int(now.timestamp() * 1000))
    extracted_first = len(CountingExtractor.extracted)
    # A later scan (a fresh expirer, as 'sqlext expire' or the next check makes one) an hour on.
    later = PartitionExpirer(expiring, hms).expired(now_ms=int((now + timedelta(hours=1)).timestamp() * 1000))

    assert [p.path for p in first] == ["dt=2026-01-01/hr=00", "dt=2026-01-01/hr=01"]
    assert [p.path for p in later] == ["dt=2026-01-01/hr=00", "dt=2026-01-01/hr=01", "dt=2026-01-01/hr=02"]
    # The first scan extracts every name once (and the expired ones again from the fetched partitions);
    # the later one only the partitions it fetched.
    assert extracted_first == HOURS + 2
    assert len(CountingExtractor.extracted) - extracted_first == 3


class Listing:
    """The session's real client, recording whether the table's partitions were listed."""

    def __init__(self, client: MetastoreClient) -> None:
        self.client = client
        self.listed = 0

    def get_partition_names(self, database: str, table: str) -> list[str]:
        self.listed += 1
        return self.client.get_partition_names(database, table)

    def get_partitions_by_names(self, database: str, table: str, names: Sequence[str]) -> list[Any]:
        return self.client.get_partitions_by_names(database, table, names)


@pytest.mark.parametrize(
    ("filters", "lists"),
    [
        (["dt=2026-01-02", "hr=03", "hr=05", "hr=99"], 0),  # every key named: fetched by name (hr=99 is none)
        (["hr=03", "dt=2026-01-02", "dt=2030-01-01"], 0),
        (["hr=03"], 1),  # a key left open: the listing, matched
    ],
)
def test_compacting_named_partitions_fetches_them_without_listing_the_table(
    hms: MetastoreClient, hourly: TableDefinition, filters: list[str], lists: int
) -> None:
    listing = Listing(hms)

    chosen = chosen_partitions(listing, hourly, filters)  # type: ignore[arg-type]

    keys = hourly.partition_keys
    assert chosen == matching_partitions(hms.get_partition_names("poll_db", "hourly"), keys, filters)
    assert chosen and listing.listed == lists
