"""A streaming read that finds new partitions in the metastore's notification log (issue #60): on a Hive 3.1
metastore keeping the log, polls after the first read the events, not the table's names, and the offsets are
those a listing gives; a gap in the log (events cleaned before they were read) falls back to a listing."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext import listeners
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.catalog.metastore.versions import RELEASES, HiveVersion
from sqlext.connectors.filesystem.streaming.offsets import files_to_read, unread_names
from sqlext.connectors.filesystem.streaming.partition_stream import CommittedPartitionReader
from sqlext.connectors.filesystem.streaming.partitions import name_key_function, poll
from sqlext.connectors.filesystem.streaming.spec import SourceSpec
from sqlext.table import Column, TableDefinition, TableIdentifier
from tests.support.waiting import free_port, wait_for

pytestmark = pytest.mark.skipif(
    not RELEASES[HiveVersion.V3_1].is_fetched(), reason="Hive 3.1's metastore jars are not fetched (make jars)"
)


class Calls(listeners.InsertListener):
    """The metastore calls made while it listens."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def metastore_call(self, call: str, outcome: str, seconds: float) -> None:
        self.made.append(call)


#: Hive 3.1's metastore logs through log4j 1 (its conf dir is first on its class path): the audit logger's
#: lines, one a call with the call's name and table (``cmd=source:<ip> get_partition_names : tbl=hive.db.t``), go to
#: ``logs/audit.log``.
_AUDIT_LOG4J = """log4j.rootLogger=WARN, console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.logger.org.apache.hadoop.hive.metastore.HiveMetaStore.audit=INFO, audit
log4j.additivity.org.apache.hadoop.hive.metastore.HiveMetaStore.audit=false
log4j.appender.audit=org.apache.log4j.FileAppender
log4j.appender.audit.File={path}
log4j.appender.audit.layout=org.apache.log4j.PatternLayout
log4j.appender.audit.layout.ConversionPattern=%m%n
"""


def _start(home: Path, **hadoop: str) -> MetastoreSettings:
    settings = MetastoreSettings(
        port=free_port(), home=home, version=HiveVersion.V3_1, notifications=True, hadoop=tuple(hadoop.items())
    )
    settings.conf_dir.mkdir(parents=True, exist_ok=True)
    (settings.conf_dir / "log4j.properties").write_text(_AUDIT_LOG4J.format(path=home / "logs" / "audit.log"))
    launcher.start(settings)
    return settings


def _audited(settings: MetastoreSettings, call: str, table: str) -> int:
    """How many ``call``s of ``table`` (``db.name``) the metastore logged in its audit log."""
    audit = settings.home / "logs" / "audit.log"
    lines = audit.read_text().splitlines() if audit.is_file() else []
    return sum(1 for line in lines if f" {call} : tbl=hive.{table}" in line)


@pytest.fixture(scope="module")
def events_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetastoreSettings]:
    settings = _start(tmp_path_factory.mktemp("events-metastore"))
    yield settings
    launcher.stop(settings)


def _table(client: MetastoreClient, database: str, path: Path) -> TableDefinition:
    table = TableDefinition(
        TableIdentifier(database, "hourly"),
        (Column("id", "BIGINT"), Column("dt", "STRING"), Column("hr", "STRING")),
        {
            "connector": "filesystem",
            "path": path.as_uri(),
            "format": "parquet",
            "streaming-source.enable": "true",
            "streaming-source.monitor-interval": "1 ms",
        },
        partition_keys=("dt", "hr"),
    )
    if client.get_database(database) is None:
        client.create_database(database)
    Catalog(client).create_table(table)
    return table


def _commit(client: MetastoreClient, table: TableDefinition, hour: str, ids: range, file: str = "part-0") -> None:
    """Write a file into the partition of ``hour`` and add it to the metastore, or alter it (a re-commit)."""
    directory = Path(table.options["path"].removeprefix("file://")) / "dt=2026-12-02" / f"hr={hour}"
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(list(ids), pa.int64())}), directory / f"{file}.parquet")
    files = len(list(directory.glob("*.parquet")))
    db, name = table.identifier.database, table.identifier.name
    hms_table = client.get_table(db, name)
    assert hms_table is not None
    descriptor = ttypes.StorageDescriptor(**vars(hms_table.sd))
    descriptor.location = f"file://{directory}"  # as_uri() would escape the "="
    partition = ttypes.Partition(
        values=["2026-12-02", hour], dbName=db, tableName=name, sd=descriptor, parameters={"numFiles": str(files)}
    )
    if files == 1:
        client.add_partitions(db, name, [partition])
    else:
        client.alter_partitions(db, name, [partition])


def _ids(end: dict[str, Any]) -> list[int]:
    return [i for file in files_to_read(end) for i in pq.read_table(file.uri.removeprefix("file://"))["id"].to_pylist()]


class Reading:
    """A streaming read's driver side, polled as Spark polls it, with the rows of every batch it planned."""

    def __init__(self, table: TableDefinition, uri: str) -> None:
        self.spec = SourceSpec.of_table(table, uri, {})
        self.reader = CommittedPartitionReader(self.spec, None)
        self.offset = self.reader.initialOffset()
        self.rows: Counter[int] = Counter()

    def next_batch(self) -> list[int]:
        time.sleep(0.01)  # past the monitor interval
        end = self.reader.latestOffset(self.offset)
        read = _ids(end) if end != self.offset else []
        self.rows.update(read)
        self.offset = end
        return sorted(read)

    def listed(self, client: MetastoreClient) -> list[Any]:
        """What a full listing gives for the names the next poll wants."""
        wanted = unread_names(self.offset, self.spec.settings(), name_key_function(self.spec, self.spec.settings()))
        return sorted(poll(self.spec, client, wanted), key=lambda p: p.name)

    def stop(self) -> None:
        self.reader.stop()


def test_polls_after_the_first_read_the_log_not_the_names_and_read_each_row_once(
    events_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    with MetastoreClient(events_metastore.uri) as client:
        table = _table(client, "events_read", tmp_path / "hourly")
        _commit(client, table, "00", range(0, 10))
        _commit(client, table, "01", range(10, 20))
        reading = Reading(table, events_metastore.uri)
        calls = Calls()
        try:
            assert reading.next_batch() == list(range(20))  # the first poll lists the table
            assert reading.reader._discovery.last_id is not None  # and reads the log from then on
            listeners.add_listener(calls)
            _commit(client, table, "02", range(20, 30))
            _commit(client, table, "03", range(30, 40))
            assert reading.next_batch() == list(range(20, 40))
            assert reading.next_batch() == []  # nothing new: the same offset
            _commit(client, table, "01", range(40, 45), file="part-1")  # late data: ALTER_PARTITION, numFiles 2
            assert reading.next_batch() == list(range(40, 45))
            assert calls.made.count("get_partition_names") == 0  # adds and alters: read from the log
            client.drop_partition("events_read", "hourly", ["2026-12-02", "00"])
            _commit(client, table, "04", range(45, 50))
            assert reading.next_batch() == list(range(45, 50))
            listeners.remove_listener(calls)
            assert reading.reader._polled == reading.listed(client)
        finally:
            listeners.remove_listener(calls)
            reading.stop()
    assert reading.rows == Counter(range(50))  # every row once
    made = Counter(calls.made)
    assert made["get_partition_names"] == 1, made  # the drop's: a name left out may be wanted again
    assert made["get_next_notification"] >= 4, made
    assert "dt=2026-12-02/hr=00" not in reading.reader._discovery.names  # the drop was applied


def test_a_gap_in_the_log_is_listed_over_and_loses_nothing(tmp_path: Path) -> None:
    # Events live 2 s, and the metastore's cleaner removes them every second.
    settings = _start(
        tmp_path / "metastore",
        **{
            "hive.metastore.event.db.listener.timetolive": "2s",
            "hive.metastore.event.db.listener.clean.interval": "1s",
        },
    )
    calls = Calls()
    try:
        with MetastoreClient(settings.uri) as client:
            table = _table(client, "events_gap", tmp_path / "hourly")
            _commit(client, table, "00", range(0, 10))
            reading = Reading(table, settings.uri)
            assert reading.next_batch() == list(range(10))
            seen = reading.reader._discovery.last_id
            assert seen is not None
            _commit(client, table, "01", range(10, 20))
            _commit(client, table, "02", range(20, 30))
            # Both commits' events are cleaned before the reader polls again.
            request = ttypes.NotificationEventRequest(seen, 100)
            wait_for(lambda: not client.call("get_next_notification", request).events, 60, what="events cleaned")
            listeners.add_listener(calls)
            assert reading.next_batch() == list(range(10, 30))
            listeners.remove_listener(calls)
            assert reading.reader._discovery.last_id is not None  # listed, then on the log again
            reading.stop()
    finally:
        listeners.remove_listener(calls)
        launcher.stop(settings)
    assert reading.rows == Counter(range(30))
    assert Counter(calls.made)["get_partition_names"] == 1


@pytest.mark.spark
def test_a_spark_streaming_query_reads_new_partitions_from_the_log_after_one_listing(
    spark: Any, events_metastore: MetastoreSettings, tmp_path: Path
) -> None:
    from sqlext.connectors.filesystem.streaming.source import register
    from sqlext.connectors.filesystem.streaming.spec import FORMAT_NAME

    with MetastoreClient(events_metastore.uri) as client:
        table = _table(client, "events_spark", tmp_path / "hourly")
        _commit(client, table, "00", range(0, 10))
        spec = SourceSpec.of_table(table, events_metastore.uri, {})
        register(spark)
        frame = spark.readStream.format(FORMAT_NAME).schema(spec.schema_ddl()).option("spec", spec.to_json()).load()
        query = (
            frame.writeStream.format("memory")
            .queryName("events_spark_rows")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )

        def ids() -> list[int]:
            return sorted(row.id for row in spark.sql("SELECT id FROM events_spark_rows").collect())

        try:
            wait_for(lambda: ids() == list(range(10)), 120, what="the first partition read")
            for hour, rows in (("01", range(10, 20)), ("02", range(20, 30)), ("03", range(30, 40))):
                _commit(client, table, hour, rows)
                wait_for(lambda rows=rows: ids() == list(range(rows.stop)), 120, what=f"hour {hour} read")
            _commit(client, table, "01", range(40, 45), file="part-1")  # a re-commit: ALTER_PARTITION
            wait_for(lambda: ids() == list(range(45)), 120, what="the re-commit read")
        finally:
            query.stop()
    assert ids() == list(range(45))  # every row once
    # The source's process listed the table once (its first poll); after it, each partition the log named was
    # fetched by name, once: the first poll's, three new ones and the re-commit (the metastore's audit log).
    assert _audited(events_metastore, "get_partition_names", "events_spark.hourly") == 1
    assert _audited(events_metastore, "get_partitions_by_names", "events_spark.hourly") == 5
