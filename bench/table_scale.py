"""Cost at scale (issue #60): does what sqlext does per batch, per poll and per command grow with the table?

    python -m bench.table_scale [--sizes 0,10000,100000] [--files-per-partition 10] [--batches 12] [--repeats 3]

For each size, one table with the same DDL (hourly ``dt``/``hr`` parquet, ``partition-time`` + 1 h,
``metastore,success-file``) is grown to that many partitions as a backfill would leave it: each an hour of
2010 onwards, a directory of ``--files-per-partition`` small parquet files (hard links of one file, so a
million files cost no disk) and ``_SUCCESS``, registered directly in the metastore with its statistics. Then,
on each table in turn (ABAB over ``--repeats`` rounds):

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
partitions (as ``bench/steady_state.py`` reports growth). Writes ``bench/results/table_scale.json``.
"""

from __future__ import annotations

import argparse
import itertools
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

import pyarrow as pa
import pyarrow.parquet as pq
from thrift.transport import TSocket

from bench.common import metastore, print_table, scratch_dir, spark_session, write_result
from bench.sink_throughput import events, partition_time_table, run_sqlext_insert
from bench.steady_state import write_steady_input
from sqlext import listeners
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.table import TableDefinition

BACKFILL_START = datetime(2010, 1, 1)
#: Partitions registered per metastore call while the table grows.
GROW_CHUNK = 500
#: Hard links made of one sample file before a fresh one is written: ext4 allows 65,000 links per inode.
LINKS_PER_SAMPLE = 60_000
#: The growing client's patience: on a loaded machine the embedded Derby metastore takes minutes for a chunk.
GROW_RETRY = RetryPolicy(deadline_s=1800, socket_timeout_s=900)


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


def _hour_spec(index: int) -> tuple[str, str]:
    at = BACKFILL_START + timedelta(hours=index)
    return at.strftime("%Y-%m-%d"), at.strftime("%H")


def _samples(stem: Path) -> Iterator[Path]:
    """Fresh copies of the one-row sample file that every backfilled data file is a hard link of."""
    for number in itertools.count():
        sample = stem.with_name(f"{stem.name}-{number}.parquet")
        pq.write_table(pa.table({"id": [0], "user_id": ["u"], "amount": [0.0], "ts": [datetime(2010, 1, 1)]}), sample)
        yield sample


def grow(client: MetastoreClient, table: TableDefinition, table_dir: Path, size: int, files: int) -> None:
    """``size`` backfilled partitions of ``files`` files each, on disk and in the metastore."""
    from hmsclient.genthrift.hive_metastore import ttypes

    samples = _samples(table_dir.parent / f"{table_dir.name}-sample")
    sample = next(samples)
    file_bytes = sample.stat().st_size
    links = 0
    hms_table = client.get_table(table.identifier.database, table.identifier.name)
    assert hms_table is not None
    chunk: list[Any] = []
    for index in range(size):
        dt, hr = _hour_spec(index)
        directory = table_dir / f"dt={dt}" / f"hr={hr}"
        directory.mkdir(parents=True)
        for number in range(files):
            if links == LINKS_PER_SAMPLE:
                sample, links = next(samples), 0
            os.link(sample, directory / f"part-{number:05d}.parquet")
            links += 1
        (directory / "_SUCCESS").touch()
        descriptor = ttypes.StorageDescriptor(**vars(hms_table.sd))
        descriptor.location = directory.as_uri()
        parameters = {"numFiles": str(files), "totalSize": str(files * file_bytes), "numRows": str(files)}
        chunk.append(
            ttypes.Partition(
                values=[dt, hr],
                dbName=table.identifier.database,
                tableName=table.identifier.name,
                sd=descriptor,
                parameters=parameters,
            )
        )
        if len(chunk) == GROW_CHUNK or index == size - 1:
            client.add_partitions(table.identifier.database, table.identifier.name, chunk)
            chunk = []
            print(f"  grown {index + 1:,} of {size:,} partitions ({datetime.now(UTC):%H:%M:%S} UTC)", flush=True)


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
    with counting() as counter:
        run_sqlext_insert(
            spark,
            table,
            uri,
            events(spark, input_dir, files_per_trigger=1),
            work / f"cp-{table.identifier.name}-{round_}",
        )
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


def commands(client: MetastoreClient, uri: str, table: TableDefinition, size: int, repeats: int) -> dict[str, Any]:
    """``status``, ``commits``, a streaming read's poll, the expiry scan and one partition's compaction."""
    from sqlext.connectors.filesystem import expiration
    from sqlext.connectors.filesystem.compaction.command import compact_table
    from sqlext.connectors.filesystem.compaction.compactor import DEFAULT_READER_GRACE
    from sqlext.connectors.filesystem.expiration import PartitionExpirer
    from sqlext.connectors.filesystem.streaming.offsets import initial_offset, next_offset, unread_names
    from sqlext.connectors.filesystem.streaming.partitions import (
        compaction_merges,
        key_function,
        list_partition_files,
        name_key_function,
        poll,
    )
    from sqlext.connectors.filesystem.streaming.settings import StreamingSourceSettings
    from sqlext.connectors.filesystem.streaming.spec import SourceSpec
    from sqlext.jobs.audit import commit_log_entries
    from sqlext.jobs.status import insert_statuses

    path = table.options["path"]
    name = str(table.identifier)
    # A reader started at the steady insert's first day (the same partitions on every table), with sqlext's
    # default read-recommits: its first poll (untimed) reads what is there; a steady poll from that offset
    # looks for new partitions and re-commits of those it read.
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

    def poll_from(start: dict[str, Any]) -> dict[str, Any]:
        return next_offset(
            start,
            poll(spec, client, unread_names(start, settings, name_key)),
            settings,
            key_function(spec, settings),
            lambda partition: list_partition_files(partition, "_SUCCESS"),
            lambda partition: compaction_merges(path, partition),
        )

    caught_up = poll_from(initial_offset(settings))

    # Exactly the oldest backfilled partition (or, on the empty table, none) is past its expiration time.
    oldest = BACKFILL_START + timedelta(hours=1)
    age = datetime.now(UTC).replace(tzinfo=None) - oldest + timedelta(minutes=30)
    expiring = replace(table, options={**table.options, "partition.expiration-time": f"{int(age.total_seconds())} s"})
    newest = Catalog(client).get_table(table.identifier)
    last_written = sorted(client.get_partition_names(table.identifier.database, table.identifier.name))[-1]
    compacted = last_written.split("/")

    # Each round's first scan parses every name, as a process's first scan does ('sqlext expire'); the others
    # find the names' times remembered, as a running insert's later checks do.
    expiration._NameTimes._shared.clear()
    return {
        "status": _timed(lambda: insert_statuses(path, name, None), repeats),
        "commits": _timed(lambda: commit_log_entries(path, None), repeats),
        "streaming_read_poll": _timed(lambda: poll_from(caught_up), repeats),
        "expiry_scan": _timed(lambda: PartitionExpirer(expiring, client, DEFAULT_READER_GRACE).expired(), repeats),
        "compact_one_partition": _timed(
            lambda: compact_table(newest, client, compacted, None, timedelta(0), show_progress=False), 1
        ),
        "expired_partitions": len(PartitionExpirer(expiring, client, DEFAULT_READER_GRACE).expired()),
        "size": size,
    }


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
        medians = {size: statistics.median(pick(r) for r in results[size]) for size in sizes}
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
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    work = scratch_dir()
    load = {"start": os.getloadavg()}
    with metastore(work) as settings, MetastoreClient(settings.uri) as client:
        spark = spark_session(settings.uri, work / "warehouse")
        catalog = Catalog(client)
        client.create_database("bench")
        tables = {}
        for size in sizes:
            table = partition_time_table(f"scale_{size}", work / f"scale_{size}")
            catalog.create_table(table)
            print(f"growing bench.scale_{size} to {size:,} partitions", flush=True)
            with MetastoreClient(settings.uri, GROW_RETRY) as growing:
                grow(growing, table, work / f"scale_{size}", size, args.files_per_partition)
            tables[size] = table
        load["grown"] = os.getloadavg()
        results: dict[int, list[dict[str, Any]]] = {size: [] for size in sizes}
        for round_ in range(args.repeats):
            order = sizes if round_ % 2 == 0 else list(reversed(sizes))  # ABAB: neither size always goes first
            for size in order:
                print(f"round {round_ + 1}: bench.scale_{size}", flush=True)
                measured = {"insert": steady_insert(spark, settings.uri, tables[size], work, args.batches, round_)}
                measured["commands"] = commands(client, settings.uri, tables[size], size, repeats=3)
                results[size].append(measured)
        summary = report(results)
        spark.stop()
    load["end"] = os.getloadavg()
    result = {"args": vars(args), "load_average": load, "summary": summary, "runs": results}
    path = write_result(args.result, result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
