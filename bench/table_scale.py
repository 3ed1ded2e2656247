"""Cost at scale (issue #60): does what sqlext does per batch, per poll and per command grow with the table?

    python -m bench.table_scale [--sizes 0,10000,100000] [--files-per-partition 10] [--batches 12] [--repeats 3]
        [--keep DIR | --reuse DIR] [--only insert,status,commits,poll,expiry,compact]
        [--hive-version 2.3] [--metastore-property KEY=VALUE ...] [--grow-chunk 100] [--grow-connections 2]

For each size, one table with the same DDL (hourly ``dt``/``hr`` parquet, ``partition-time`` + 1 h,
``metastore,success-file``) is grown to that many partitions as a backfill would leave it: each an hour of
2010 onwards, a directory of ``--files-per-partition`` small parquet files (hard links of one file, so a
million files cost no disk) and ``_SUCCESS``, registered directly in the metastore with its location and
statistics (:mod:`bench.table_growth`, which records where the growth's time went). ``--keep DIR`` grows into
DIR (the metastore home with its Derby database, ``DIR/scale_<size>``, ``DIR/growth.json``) and leaves it there;
a table already there is not grown again; ``--reuse DIR`` measures on what ``--keep`` left, restarting the
metastore on that home, and grows nothing. Before a steady insert a kept table is reset to its grown state (the
partitions measurements wrote dropped with their files, the commit log removed). ``--metastore-property`` adds a
Hive setting to the metastore (its ``hivemetastore-site.xml``), e.g. to turn on its notification log. Then,
on each table in turn (ABAB over ``--repeats`` rounds), the parts ``--only`` names (default all):

- a steady streaming insert of ``--batches`` micro-batches (one input file each, 6 minutes of 2026 event time)
  through sqlext's sink: per batch the committer's time, the metastore calls it made (counted by a
  listener on sqlext's metastore client) and their bytes (counted at the Thrift socket), the driver's memory
  after the run, the commit log's size in bytes and files;
- ``sqlext status`` and ``sqlext commits`` of the table (the functions the commands call);
- a steady poll of a streaming read of the table (``streaming-source.enable``, default ``read-recommits``,
  started at the steady insert's first day and caught up: the metastore calls and the next offset, as the
  source's ``latestOffset`` does them);
- the expiry scan (``partition.expiration-time`` set so that exactly the oldest partition expires;
  ``sqlext expire --dry-run``'s work; its first run per round cold, as a process's first scan, reported apart)
  and the compaction of one partition (``sqlext compact --partition`` naming every key).

The machine's load averages (start, grown, end) go into the result.

Each figure is reported per size with its ratio to the empty table's and the least-squares slope per 10,000
partitions (as ``bench/steady_state.py`` reports growth). Writes ``bench/results/<--result>.json`` (default
``table_scale``), with the growth's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from thrift.transport import TSocket

from bench.common import metastore, print_table, scratch_dir, spark_session, write_result
from bench.sink_throughput import _sink, events, partition_time_table
from bench.steady_state import write_steady_input
from bench.table_growth import BACKFILL_START, Growth, backfilled, grow, reset
from sqlext import listeners
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.sink import InsertPlan
from sqlext.table import TableDefinition

#: What can be measured (``--only``): the steady insert, the two commands, the poll, expiry, compaction.
PARTS = ("insert", "status", "commits", "poll", "expiry", "compact")
#: Partitions per ``add_partitions_req`` while a table grows, and the connections they are sent over.
GROW_CHUNK = 100
GROW_CONNECTIONS = 2
#: The metastore's heap: more room than the launcher's default 512 MB for a 100,000-partition table's growth and
#: listings.
METASTORE_HEAP = "2g"


class CallCounter(listeners.InsertListener):
    """Counts the metastore calls sqlext's client makes, and times each batch's commit."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.commit_s: dict[int, float] = {}
        #: Bytes sqlext's metastore sockets sent and received (``sent``, ``received``).
        self.bytes: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count_bytes(self, direction: str, count: int) -> None:
        with self._lock:
            self.bytes[direction] += count

    def metastore_call(self, call: str, outcome: str, seconds: float) -> None:
        self.calls[call] += 1

    def batch_committed(self, event: listeners.BatchCommitted) -> None:
        self.commit_s[event.batch] = self.commit_s.get(event.batch, 0.0) + event.commit_s

    def partitions_committed(self, event: listeners.PartitionsCommitted) -> None:
        if event.batch is not None:
            self.commit_s[event.batch] = self.commit_s.get(event.batch, 0.0) + event.seconds


@contextmanager
def counting() -> Iterator[CallCounter]:
    """A :class:`CallCounter` listening meanwhile, and counting the bytes of every Thrift socket of this process
    (the metastore client's, under its buffered transport)."""
    counter = CallCounter()
    read, write = TSocket.TSocket.read, TSocket.TSocket.write

    def counted_read(sock: TSocket.TSocket, size: int) -> bytes:
        received = read(sock, size)
        counter.count_bytes("received", len(received))
        return received

    def counted_write(sock: TSocket.TSocket, buffer: bytes) -> None:
        write(sock, buffer)
        counter.count_bytes("sent", len(buffer))

    listeners.add_listener(counter)
    TSocket.TSocket.read, TSocket.TSocket.write = counted_read, counted_write
    try:
        yield counter
    finally:
        TSocket.TSocket.read, TSocket.TSocket.write = read, write
        listeners.remove_listener(counter)


def _timed(action: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """Median seconds and metastore calls of ``action`` over ``repeats`` runs."""
    seconds, calls, transferred = [], [], []
    for _ in range(repeats):
        with counting() as counter:
            started = time.perf_counter()
            action()
            seconds.append(time.perf_counter() - started)
            calls.append(sum(counter.calls.values()))
            transferred.append(sum(counter.bytes.values()))
    return {
        "s": statistics.median(seconds),
        "first_s": seconds[0],
        "metastore_calls": statistics.median(calls),
        "metastore_bytes": statistics.median(transferred),
    }


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _dir_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file()) if directory.exists() else 0


def _dir_files(directory: Path) -> int:
    return sum(1 for path in directory.rglob("*") if path.is_file()) if directory.exists() else 0


def steady_insert(
    spark: Any, uri: str, table: TableDefinition, work: Path, batches: int, round_: int
) -> dict[str, Any]:
    """The steady streaming insert into ``table``: per-batch commit figures, memory, commit-log size."""
    input_dir = work / f"input-{table.identifier.name}-{round_}"
    # Each round writes a day of its own, so that no round's rows are late data for the round before.
    write_steady_input(input_dir, batches, rows=2000, minutes=6, start=datetime(2026, 11, 22) + timedelta(days=round_))
    # A query of its own per round (name and checkpoint), as a new insert of that table would be.
    name = f"{table.identifier.name}_round{round_}"
    plan = InsertPlan(name, (work / f"cp-{name}").as_uri(), available_now=True)
    with counting() as counter:
        query = _sink(spark, table, uri).start_stream(events(spark, input_dir, files_per_trigger=1), plan)
        running = running_insert(str(query.id))
        assert running is not None
        running.wait()
    table_dir = Path(table.options["path"].removeprefix("file://"))
    return {
        "commit_s": statistics.median(counter.commit_s.values()),
        # All the insert's calls, its start and end of input included: what must not grow with the table.
        "metastore_calls_per_batch": sum(counter.calls.values()) / batches,
        "metastore_calls": dict(counter.calls),
        "metastore_bytes_per_batch": sum(counter.bytes.values()) / batches,
        "metastore_bytes": dict(counter.bytes),
        "driver_python_rss_mb": _rss_mb(os.getpid()),
        "driver_jvm_rss_mb": _rss_mb(spark.sparkContext._gateway.proc.pid),
        "commit_log_bytes": _dir_bytes(table_dir / "_sqlext" / "log"),
        "commit_log_files": _dir_files(table_dir / "_sqlext" / "log"),
        "commit_log_archive_bytes": _dir_bytes(table_dir / "_sqlext" / "archive"),
    }


def commands(
    client: MetastoreClient, uri: str, table: TableDefinition, size: int, repeats: int, parts: set[str]
) -> dict[str, Any]:
    """Those of ``status``, ``commits``, a streaming read's poll, the expiry scan and one partition's compaction
    that ``parts`` names."""
    from sqlext.jobs.audit import commit_log_entries
    from sqlext.jobs.status import insert_statuses

    path = table.options["path"]
    measured: dict[str, Any] = {"size": size}
    if "status" in parts:
        measured["status"] = _timed(lambda: insert_statuses(path, str(table.identifier), None), repeats)
    if "commits" in parts:
        measured["commits"] = _timed(lambda: commit_log_entries(path, None), repeats)
    if "poll" in parts:
        measured["streaming_read_poll"] = _timed(_steady_poll(client, uri, table), repeats)
    if "expiry" in parts:
        measured.update(_expiry(client, table, repeats))
    if "compact" in parts:
        measured["compact_one_partition"] = _timed(_compaction(client, table), 1)
    return measured


def _steady_poll(client: MetastoreClient, uri: str, table: TableDefinition) -> Callable[[], Any]:
    """A steady poll of a reader started at the steady insert's first day (the same partitions on every table),
    with sqlext's default read-recommits, caught up by a first poll (untimed) of what is there: it looks for new
    partitions and re-commits of those it read."""
    from sqlext.connectors.filesystem.streaming.discovery import PartitionDiscovery
    from sqlext.connectors.filesystem.streaming.offsets import initial_offset, next_offset, unread_names
    from sqlext.connectors.filesystem.streaming.partitions import (
        compaction_merges,
        key_function,
        list_partition_files,
        name_key_function,
    )
    from sqlext.connectors.filesystem.streaming.settings import StreamingSourceSettings
    from sqlext.connectors.filesystem.streaming.spec import SourceSpec

    path = table.options["path"]
    reading = replace(
        table,
        options={
            **table.options,
            "streaming-source.enable": "true",
            "streaming-source.consume-start-offset": "dt=2026-11-22",
        },
    )
    spec = SourceSpec.of_table(reading, uri, {})
    settings = StreamingSourceSettings.from_table(reading)
    name_key = name_key_function(spec, settings)

    # As the source polls: one discovery for the reader's life (the notification log after its first poll,
    # where the metastore keeps one; else a listing every poll).
    discovery = PartitionDiscovery(spec)

    def poll_from(start: dict[str, Any]) -> dict[str, Any]:
        return next_offset(
            start,
            discovery.poll(client, unread_names(start, settings, name_key)),
            settings,
            key_function(spec, settings),
            lambda partition: list_partition_files(partition, "_SUCCESS"),
            lambda partition: compaction_merges(path, partition),
        )

    caught_up = poll_from(initial_offset(settings))
    return lambda: poll_from(caught_up)


def _expiry(client: MetastoreClient, table: TableDefinition, repeats: int) -> dict[str, Any]:
    """The expiry scan (``sqlext expire --dry-run``'s work) with exactly the oldest backfilled partition (or, on
    the empty table, none) past its expiration time."""
    from sqlext.connectors.filesystem import expiration
    from sqlext.connectors.filesystem.compaction.compactor import DEFAULT_READER_GRACE
    from sqlext.connectors.filesystem.expiration import PartitionExpirer

    oldest = BACKFILL_START + timedelta(hours=1)
    age = datetime.now(UTC).replace(tzinfo=None) - oldest + timedelta(minutes=30)
    expiring = replace(table, options={**table.options, "partition.expiration-time": f"{int(age.total_seconds())} s"})
    # Each round's first scan is a process's first (names' times not remembered, 'sqlext expire'): it lists the
    # table. The warm scans are the same expirer's later checks, as a running insert's committer makes them.
    # (Through getattr: expiry's name cache may change; without it every scan parses every name.)
    shared = getattr(getattr(expiration, "_NameTimes", None), "_shared", None)
    if shared is not None:
        shared.clear()
    expirer = PartitionExpirer(expiring, client, DEFAULT_READER_GRACE)
    cold = _timed(expirer.expired, 1)
    scan = _timed(expirer.expired, repeats)
    scan["first_s"] = cold["s"]
    scan["first_metastore_bytes"] = cold["metastore_bytes"]
    return {"expiry_scan": scan, "expired_partitions": len(expirer.expired())}


def _compaction(client: MetastoreClient, table: TableDefinition) -> Callable[[], Any]:
    """``sqlext compact --partition`` of the newest partition, naming every key."""
    from sqlext.connectors.filesystem.compaction.command import compact_table

    newest = Catalog(client).get_table(table.identifier)
    last_written = sorted(client.get_partition_names(table.identifier.database, table.identifier.name))[-1]
    return lambda: compact_table(newest, client, last_written.split("/"), None, timedelta(0), show_progress=False)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(x, y)`` points."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


def report(results: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per figure: the median per size, its ratio to the smallest size's, and the slope per 10,000."""
    figures = {
        "batch commit s": lambda r: r["insert"]["commit_s"],
        "metastore calls per batch": lambda r: r["insert"]["metastore_calls_per_batch"],
        "metastore bytes per batch": lambda r: r["insert"]["metastore_bytes_per_batch"],
        "driver JVM RSS MB": lambda r: r["insert"]["driver_jvm_rss_mb"],
        "driver Python RSS MB": lambda r: r["insert"]["driver_python_rss_mb"],
        "commit log bytes": lambda r: r["insert"]["commit_log_bytes"],
        "commit log files": lambda r: r["insert"]["commit_log_files"],
        "status s": lambda r: r["commands"]["status"]["s"],
        "commits s": lambda r: r["commands"]["commits"]["s"],
        "streaming read poll s": lambda r: r["commands"]["streaming_read_poll"]["s"],
        "streaming read poll metastore calls": lambda r: r["commands"]["streaming_read_poll"]["metastore_calls"],
        "streaming read poll metastore bytes": lambda r: r["commands"]["streaming_read_poll"]["metastore_bytes"],
        "expiry scan s": lambda r: r["commands"]["expiry_scan"]["s"],
        "expiry scan metastore bytes": lambda r: r["commands"]["expiry_scan"]["metastore_bytes"],
        # The process's first scan of a table parses every partition name; later ones only the new names.
        "expiry scan, first of the process (cold), s": lambda r: r["commands"]["expiry_scan"]["first_s"],
        "compact one partition s": lambda r: r["commands"]["compact_one_partition"]["s"],
    }
    sizes = sorted(results)
    summary: dict[str, Any] = {}
    rows = []
    for figure, pick in figures.items():
        try:
            medians = {size: statistics.median(pick(r) for r in results[size]) for size in sizes}
        except KeyError:  # a part not measured (--only)
            continue
        base = medians[sizes[0]] or 1e-9
        growth = slope([(size / 10_000, value) for size, value in medians.items()])
        summary[figure] = {"by_size": medians, "ratio_to_smallest": medians[sizes[-1]] / base, "slope_per_10k": growth}
        rows.append(
            [figure, *(f"{medians[s]:.4g}" for s in sizes), f"{medians[sizes[-1]] / base:.2f}x", f"{growth:.4g}"]
        )
    print_table(["figure", *(f"{s:,} partitions" for s in sizes), "largest / smallest", "slope per 10k"], rows)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,10000,100000", help="table sizes in partitions, comma-separated")
    parser.add_argument("--files-per-partition", type=int, default=10)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--result", default="table_scale")
    parser.add_argument("--only", default=",".join(PARTS), help=f"parts to measure, comma-separated: {PARTS}")
    state = parser.add_mutually_exclusive_group()
    state.add_argument("--keep", type=Path, help="grow into DIR and leave the metastore home and tables there")
    state.add_argument("--reuse", type=Path, help="measure the tables --keep left in DIR, growing none")
    parser.add_argument("--hive-version", default="2.3", help="the metastore's Hive version: 2.3, 3.1 or 4")
    parser.add_argument(
        "--metastore-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Hive setting of the metastore (hivemetastore-site.xml); repeatable",
    )
    parser.add_argument(
        "--notifications",
        action="store_true",
        help="the metastore keeps its notification log (Hive 3.1), which a streaming read's steady poll reads",
    )
    parser.add_argument("--grow-chunk", type=int, default=GROW_CHUNK, help="partitions per add_partitions_req")
    parser.add_argument("--grow-connections", type=int, default=GROW_CONNECTIONS)
    parser.add_argument("--metastore-heap", default=METASTORE_HEAP, help="the metastore JVM's -Xmx")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    parts = set(args.only.split(","))
    unknown = parts - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}: choose from {PARTS}")
    properties = dict(item.split("=", 1) for item in args.metastore_property)

    work = scratch_dir()
    home = args.reuse or args.keep or work
    home.mkdir(parents=True, exist_ok=True)
    load = {"start": os.getloadavg()}
    growth: dict[int, dict[str, Any]] = {}
    with (
        metastore(home, args.hive_version, properties, args.metastore_heap, args.notifications) as settings,
        MetastoreClient(settings.uri) as client,
    ):
        metastore_pid = launcher.status(settings).pid
        spark = spark_session(settings.uri, work / "warehouse")
        tables = {}
        for size in sizes:
            table, grown = _table(client, home, size, args, settings.uri, metastore_pid, "insert" in parts)
            tables[size] = table
            if grown is not None:
                growth[size] = grown.summary()
        load["grown"] = os.getloadavg()
        results: dict[int, list[dict[str, Any]]] = {size: [] for size in sizes}
        for round_ in range(args.repeats):
            order = sizes if round_ % 2 == 0 else list(reversed(sizes))  # ABAB: neither size always goes first
            for size in order:
                print(f"round {round_ + 1}: bench.scale_{size}", flush=True)
                measured: dict[str, Any] = {}
                if "insert" in parts:
                    measured["insert"] = steady_insert(spark, settings.uri, tables[size], work, args.batches, round_)
                measured["commands"] = commands(client, settings.uri, tables[size], size, 3, parts)
                results[size].append(measured)
        summary = report(results)
        spark.stop()
    load["end"] = os.getloadavg()
    result = {
        "args": {**vars(args), "keep": str(args.keep), "reuse": str(args.reuse)},
        "load_average": load,
        "growth": growth or _kept_growth(home),
        "metastore_properties": properties,
        "summary": summary,
        "runs": results,
    }
    if args.keep:
        _record_growth(home, growth)
    path = write_result(args.result, result)
    print(f"wrote {path}")


def _table(
    client: MetastoreClient,
    home: Path,
    size: int,
    args: argparse.Namespace,
    uri: str,
    metastore_pid: int | None,
    resetting: bool,
) -> tuple[TableDefinition, Growth | None]:
    """``bench.scale_<size>`` under ``home``: created and grown, or, kept from an earlier run, checked (and, before
    a steady insert, reset to its grown state); with the growth when grown."""
    catalog = Catalog(client)
    table = partition_time_table(f"scale_{size}", home / f"scale_{size}")
    if client.get_database("bench") is None:
        client.create_database("bench")
    if client.get_table("bench", table.identifier.name) is not None:
        found = len(backfilled(client.get_partition_names("bench", table.identifier.name)))
        if found != size:
            raise SystemExit(
                f"bench.{table.identifier.name} in {home} has {found:,} backfilled partitions, not {size:,}"
            )
        dropped = reset(client, table) if resetting else 0
        print(f"reusing bench.scale_{size} ({size:,} partitions; {dropped} measured ones dropped)", flush=True)
        return table, None
    if args.reuse:
        raise SystemExit(f"--reuse {home}: no table bench.{table.identifier.name} there (grow it with --keep)")
    catalog.create_table(table)
    print(f"growing bench.scale_{size} to {size:,} partitions", flush=True)
    grown = grow(
        uri,
        table,
        home / f"scale_{size}",
        size,
        args.files_per_partition,
        args.grow_chunk,
        args.grow_connections,
        metastore_pid,
    )
    print(f"  grown in {grown.wall_s:.0f} s: {grown.summary()}", flush=True)
    return table, grown


def _record_growth(home: Path, growth: dict[int, dict[str, Any]]) -> None:
    """Add this run's growths to ``home``'s record of them (``growth.json``)."""
    kept = {**_kept_growth(home), **{str(size): figures for size, figures in growth.items()}}
    (home / "growth.json").write_text(json.dumps(kept, indent=1, sort_keys=True))


def _kept_growth(home: Path) -> dict[str, Any]:
    record = home / "growth.json"
    return dict(json.loads(record.read_text())) if record.is_file() else {}


if __name__ == "__main__":
    main()
