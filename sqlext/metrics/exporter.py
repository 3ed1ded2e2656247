"""The metrics: what the listeners hear, as Prometheus counters, histograms and gauges.

Per insert (labels ``table``, ``query``): rows, files, bytes, batches, partitions committed, late rows and
compactions (counters); commit and batch durations (histograms); pending partitions, the age of the
oldest, the last successful commit and the watermark (gauges, computed when scraped, so an age grows
between batches). Per process: metastore call attempts by call and outcome, and their durations.

Counters start at 0 in each process (Prometheus' ``rate`` and ``increase`` take a reset in their stride);
the totals that matter are in the commit log (``sqlext status``, ``sqlext commits``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sqlext.listeners import BatchCommitted, InsertListener, InsertRef, PartitionsCommitted

#: Seconds: a commit or batch takes from a fraction of a second to minutes (a backfill's thousands of partitions).
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
METASTORE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LABELS = ("table", "query")


@dataclass
class LiveInsert:
    """What this process knows of one insert since it started here (for the gauges and the status page)."""

    insert: InsertRef
    running: bool = True
    batches: int = 0
    last_batch: int | None = None
    last_commit_ms: int | None = None
    watermark_ms: int | None = None
    pending: int = 0
    oldest_pending_ms: int | None = None
    metastore_unavailable: bool = False


class InsertMetrics(InsertListener):
    """Listens to every insert and metastore call of the process; :attr:`registry` is what is scraped."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self.inserts: dict[InsertRef, LiveInsert] = {}

        def counter(name: str, text: str) -> Counter:
            return Counter(name, text, LABELS, registry=self.registry)

        self.rows = counter("sqlext_rows_written", "Rows committed (visible) in the sink table.")
        self.files = counter("sqlext_files_written", "Data files committed in the sink table.")
        self.bytes = counter("sqlext_bytes_written", "Bytes of the data files committed.")
        self.batches = counter("sqlext_batches", "Batches through the commit protocol (replays of a crash included).")
        self.partitions = counter("sqlext_partitions_committed", "Partition commits (late-data re-commits included).")
        self.late_rows = counter("sqlext_late_rows", "Rows written into partitions committed before (late data).")
        self.compactions = counter("sqlext_compactions", "Compactions run by auto-compaction before a commit.")
        self.commit_seconds = Histogram(
            "sqlext_commit_duration_seconds",
            "From a batch's files written to its files and ready partitions committed.",
            LABELS,
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "sqlext_batch_duration_seconds",
            "A batch from the start of its write to the end of its commit.",
            LABELS,
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.metastore_calls = Counter(
            "sqlext_metastore_calls",
            "Metastore call attempts; outcome: ok, exception (answered with an error), error (no answer).",
            ("call", "outcome"),
            registry=self.registry,
        )
        self.metastore_seconds = Histogram(
            "sqlext_metastore_call_seconds",
            "Duration of metastore call attempts.",
            ("call",),
            buckets=METASTORE_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_Gauges(self))

    def _live(self, insert: InsertRef) -> LiveInsert:
        live = self.inserts.get(insert)
        if live is None:
            live = self.inserts[insert] = LiveInsert(insert)
        live.running = True
        return live

    def batch_committed(self, event: BatchCommitted) -> None:
        labels = (event.insert.table, event.insert.query)
        self.rows.labels(*labels).inc(event.rows)
        self.files.labels(*labels).inc(event.files)
        self.bytes.labels(*labels).inc(event.bytes)
        self.batches.labels(*labels).inc()
        self.commit_seconds.labels(*labels).observe(event.commit_s)
        self.batch_seconds.labels(*labels).observe(event.write_s + event.commit_s)
        with self._lock:
            live = self._live(event.insert)
            live.batches += 1
            live.last_batch = event.batch
            if event.completed_ms is not None:
                live.last_commit_ms = max(live.last_commit_ms or 0, event.completed_ms)
            if event.watermark_ms is not None:
                live.watermark_ms = event.watermark_ms

    def partitions_committed(self, event: PartitionsCommitted) -> None:
        labels = (event.insert.table, event.insert.query)
        self.partitions.labels(*labels).inc(len(event.committed))
        self.late_rows.labels(*labels).inc(event.late_rows)
        self.compactions.labels(*labels).inc(event.compactions)
        with self._lock:
            live = self._live(event.insert)
            live.pending = event.pending
            live.oldest_pending_ms = event.oldest_pending_ms
            live.metastore_unavailable = event.metastore_unavailable

    def insert_stopped(self, insert: InsertRef) -> None:
        with self._lock:
            if insert in self.inserts:
                self.inserts[insert].running = False

    def metastore_call(self, call: str, outcome: str, seconds: float) -> None:
        self.metastore_calls.labels(call, outcome).inc()
        self.metastore_seconds.labels(call).observe(seconds)

    def snapshot(self) -> list[LiveInsert]:
        """The inserts seen so far, by table and query (copies)."""
        with self._lock:
            ordered = sorted(self.inserts.items(), key=lambda item: (item[0].table, item[0].query))
            return [LiveInsert(**vars(live)) for _, live in ordered]


class _Gauges(Collector):
    """The per-insert gauges, computed from the live state when scraped."""

    def __init__(self, metrics: InsertMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[GaugeMetricFamily]:
        return list(self._families(now_ms=0, inserts=[]))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self._families(int(time.time() * 1000), self.metrics.snapshot())

    @staticmethod
    def _families(now_ms: int, inserts: list[LiveInsert]) -> Iterator[GaugeMetricFamily]:
        pending = GaugeMetricFamily(
            "sqlext_partitions_pending", "Partitions written, not yet committed.", labels=LABELS
        )
        oldest = GaugeMetricFamily(
            "sqlext_oldest_pending_partition_age_seconds",
            "Since the oldest pending partition was first written (0: none pending).",
            labels=LABELS,
        )
        last = GaugeMetricFamily(
            "sqlext_last_successful_commit_timestamp_seconds",
            "When the last batch's files were committed (the commit log's completed time), Unix seconds.",
            labels=LABELS,
        )
        watermark = GaugeMetricFamily(
            "sqlext_watermark_timestamp_seconds", "The watermark of the last batch, Unix seconds.", labels=LABELS
        )
        for live in inserts:
            labels = [live.insert.table, live.insert.query]
            pending.add_metric(labels, live.pending)
            age = (now_ms - live.oldest_pending_ms) / 1000 if live.oldest_pending_ms is not None else 0.0
            oldest.add_metric(labels, max(0.0, age))
            if live.last_commit_ms is not None:
                last.add_metric(labels, live.last_commit_ms / 1000)
            if live.watermark_ms is not None:
                watermark.add_metric(labels, live.watermark_ms / 1000)
        yield from (pending, oldest, last, watermark)
