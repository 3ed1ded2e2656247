"""Growing ``bench/table_scale.py``'s tables as a backfill leaves them, fast, and keeping them for later runs.

Each backfilled partition is an hour of 2010 onwards: a directory of small parquet files (hard links of one
sample file, so a million files cost no disk) and ``_SUCCESS``, registered in the metastore with its location and
statistics (``numFiles``, ``totalSize``, ``numRows``). The main thread makes each chunk's files and partition
objects while ``connections`` threads, each with a connection of its own, send the chunks before it as
``add_partitions_req`` with ``needResult`` false (the metastore returns nothing, and the client decodes
nothing): registration and the file system work overlap, and at most two chunks per connection wait.

:class:`Growth` records where the time went: the main thread's file work and object building, the time it waited
for a free sender, the senders' summed call time, this process's CPU and the metastore JVM's (Derby runs inside
it, so its CPU is the metastore's and the database's together).
"""

from __future__ import annotations

import itertools
import os
import shutil
import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.table import TableDefinition

BACKFILL_START = datetime(2010, 1, 1)
#: The first day the measurements write (``table_scale.steady_insert``); partitions from it on are not backfill.
MEASURED_FROM = "2026-01-01"
#: Hard links made of one sample file before a fresh one is written: ext4 allows 65,000 links per inode.
LINKS_PER_SAMPLE = 60_000
#: The growing clients' patience: on a loaded machine the embedded Derby metastore may take minutes for a chunk.
GROW_RETRY = RetryPolicy(deadline_s=1800, socket_timeout_s=900)


@dataclass
class Growth:
    """Where one table's growth spent its time (seconds)."""

    partitions: int
    chunk: int
    connections: int
    wall_s: float = 0.0
    #: Main thread: directories, hard links and ``_SUCCESS`` files.
    files_s: float = 0.0
    #: Main thread: the Thrift partition objects.
    build_s: float = 0.0
    #: Main thread: waiting for a sender to be free (registration slower than the files).
    waiting_s: float = 0.0
    #: Sum over the senders of their ``add_partitions_req`` calls (encode, send, the metastore's work, reply).
    calls_s: float = 0.0
    call_s: list[float] = field(default_factory=list)
    client_cpu_s: float = 0.0
    metastore_cpu_s: float = 0.0
    load_average: tuple[float, ...] = ()

    def summary(self) -> dict[str, Any]:
        """The figures, with the median call and the rates, without every call's time."""
        figures = {key: value for key, value in asdict(self).items() if key != "call_s"}
        figures["median_call_s"] = statistics.median(self.call_s) if self.call_s else 0.0
        figures["partitions_per_s"] = self.partitions / self.wall_s if self.wall_s else 0.0
        return figures


def hour_spec(index: int) -> tuple[str, str]:
    """The ``dt``, ``hr`` values of the ``index``-th backfilled hour."""
    at = BACKFILL_START + timedelta(hours=index)
    return at.strftime("%Y-%m-%d"), at.strftime("%H")


def _samples(stem: Path) -> Iterator[Path]:
    """Fresh copies of the one-row sample file that every backfilled data file is a hard link of."""
    for number in itertools.count():
        sample = stem.with_name(f"{stem.name}-{number}.parquet")
        if not sample.exists():
            table = pa.table({"id": [0], "user_id": ["u"], "amount": [0.0], "ts": [datetime(2010, 1, 1)]})
            pq.write_table(table, sample)
        yield sample


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Senders:
    """``connections`` threads sending chunks as ``add_partitions_req``, each on a connection of its own."""

    def __init__(self, uri: str, table: TableDefinition, connections: int, growth: Growth) -> None:
        self._uri, self._table, self._growth = uri, table, growth
        self._local = threading.local()
        self._clients: list[MetastoreClient] = []
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(connections, thread_name_prefix="grow")
        self._pending: list[Future[None]] = []
        self._limit = 2 * connections

    def send(self, chunk: list[Any]) -> None:
        """Queue ``chunk``, first waiting while every sender has two chunks."""
        began = time.perf_counter()
        while len(self._pending) >= self._limit:
            self._pending.pop(0).result()
        self._growth.waiting_s += time.perf_counter() - began
        self._pending.append(self._pool.submit(self._add, chunk))

    def finish(self) -> None:
        """Wait for every chunk sent; close the connections."""
        began = time.perf_counter()
        for future in self._pending:
            future.result()
        self._growth.waiting_s += time.perf_counter() - began
        self._pool.shutdown()
        for client in self._clients:
            client.close()

    def _add(self, chunk: list[Any]) -> None:
        from hmsclient.genthrift.hive_metastore import ttypes

        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = MetastoreClient(self._uri, GROW_RETRY)
            with self._lock:
                self._clients.append(client)
        identifier = self._table.identifier
        request = ttypes.AddPartitionsRequest(
            dbName=identifier.database, tblName=identifier.name, parts=chunk, ifNotExists=False, needResult=False
        )
        began = time.perf_counter()
        client.call("add_partitions_req", request)
        took = time.perf_counter() - began
        with self._lock:
            self._growth.calls_s += took
            self._growth.call_s.append(took)


def grow(
    uri: str,
    table: TableDefinition,
    table_dir: Path,
    size: int,
    files: int,
    chunk: int,
    connections: int,
    metastore_pid: int | None,
) -> Growth:
    """``size`` backfilled partitions of ``files`` files each, on disk and in the metastore; where the time went."""
    from hmsclient.genthrift.hive_metastore import ttypes

    growth = Growth(size, chunk, connections)
    started, client_cpu = time.perf_counter(), time.process_time()
    metastore_cpu = cpu_s(metastore_pid) if metastore_pid else 0.0
    samples = _samples(table_dir.parent / f"{table_dir.name}-sample")
    sample = next(samples)
    file_bytes = sample.stat().st_size
    links = 0
    with MetastoreClient(uri, GROW_RETRY) as client:
        hms_table = client.get_table(table.identifier.database, table.identifier.name)
    assert hms_table is not None
    parameters = {"numFiles": str(files), "totalSize": str(files * file_bytes), "numRows": str(files)}
    senders = _Senders(uri, table, connections, growth)
    pending: list[Any] = []
    try:
        for index in range(size):
            began = time.perf_counter()
            dt, hr = hour_spec(index)
            directory = table_dir / f"dt={dt}" / f"hr={hr}"
            directory.mkdir(parents=True)
            for number in range(files):
                if links == LINKS_PER_SAMPLE:
                    sample, links = next(samples), 0
                os.link(sample, directory / f"part-{number:05d}.parquet")
                links += 1
            (directory / "_SUCCESS").touch()
            built = time.perf_counter()
            growth.files_s += built - began
            descriptor = ttypes.StorageDescriptor(**vars(hms_table.sd))
            # As Hive writes a location: not percent-encoded (as_uri would make '=' %3D, a directory the metastore
            # does not find and makes anew, each of its levels a process on a machine without Hadoop's native code).
            descriptor.location = f"file://{directory.resolve()}"
            pending.append(
                ttypes.Partition(
                    values=[dt, hr],
                    dbName=table.identifier.database,
                    tableName=table.identifier.name,
                    sd=descriptor,
                    parameters=dict(parameters),
                )
            )
            growth.build_s += time.perf_counter() - built
            if len(pending) == chunk or index == size - 1:
                senders.send(pending)
                pending = []
                if (index + 1) % max(chunk, 10_000 // chunk * chunk) == 0 or index == size - 1:
                    print(f"  sent {index + 1:,} of {size:,} partitions ({time.perf_counter() - started:.0f} s)")
    finally:
        senders.finish()
    growth.wall_s = time.perf_counter() - started
    growth.client_cpu_s = time.process_time() - client_cpu
    growth.metastore_cpu_s = (cpu_s(metastore_pid) - metastore_cpu) if metastore_pid else 0.0
    growth.load_average = os.getloadavg()
    return growth


def backfilled(names: list[str]) -> list[str]:
    """The backfilled partitions among partition names (the measurements write from :data:`MEASURED_FROM` on)."""
    return [name for name in names if name.split("/")[0].removeprefix("dt=") < MEASURED_FROM]


def reset(client: MetastoreClient, table: TableDefinition) -> int:
    """Back to the grown state: drop (with their files) the partitions the measurements wrote and remove the commit
    log; return how many partitions were dropped."""
    identifier = table.identifier
    names = client.get_partition_names(identifier.database, identifier.name)
    backfill = set(backfilled(names))
    table_dir = Path(table.options["path"].removeprefix("file://"))
    dropped = 0
    for name in names:
        if name in backfill:
            continue
        values = [part.split("=", 1)[1] for part in name.split("/")]
        client.drop_partition(identifier.database, identifier.name, values)
        shutil.rmtree(table_dir / name, ignore_errors=True)
        dropped += 1
    for leftover in table_dir.glob("dt=*"):
        if leftover.name.removeprefix("dt=") >= MEASURED_FROM:
            shutil.rmtree(leftover, ignore_errors=True)
    shutil.rmtree(table_dir / "_sqlext", ignore_errors=True)
    return dropped
