"""What the metrics endpoint costs: the steady-state insert of ``steady_state.py`` with and without
``spark.sqlext.metrics.port``, the endpoint scraped every second (``/metrics``) and its status page every 5 s
(``/``) while it runs.

    python -m bench.metrics_overhead [--batches 100] [--repeats 3]

Each repeat runs both variants on the same input into new tables, in alternating order. Reported: per variant
the median batch duration (Spark's ``triggerExecution`` of the batches with rows) and rows per second over the
whole insert, and the ratio with / without (issue #39's target: under 1% of throughput).

Prints a table and writes bench/results/metrics_overhead.json.
"""

from __future__ import annotations

import argparse
import shutil
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import median, metastore, print_table, scratch_dir, spark_session, write_result
from bench.sink_throughput import events, partition_time_table, run_sqlext_insert
from bench.steady_state import batch_durations, write_steady_input
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.metrics import serve


class Scraper:
    """Scrapes the endpoint as Prometheus (every second) and a browser on the status page (every 5 s) would."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.scrapes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        tick = 0
        while not self._stop.wait(1.0):
            paths = ["/metrics", "/"] if tick % 5 == 0 else ["/metrics"]
            for path in paths:
                with urllib.request.urlopen(self.base + path, timeout=10) as response:
                    response.read()
                self.scrapes += 1
            tick += 1


def run_once(
    spark: Any, client: MetastoreClient, uri: str, input_dir: Path, work: Path, metrics: bool
) -> dict[str, Any]:
    name = f"m{'on' if metrics else 'off'}_{work.name}"
    table = partition_time_table(name, work / "table")
    Catalog(client).create_table(table)
    rows = events(spark, input_dir, files_per_trigger=1)
    server = serve(0) if metrics else None
    started = time.perf_counter()
    try:
        if server is None:
            query = run_sqlext_insert(spark, table, uri, rows, work / "checkpoint")
            scrapes = 0
        else:
            with Scraper(server.url) as scraper:
                query = run_sqlext_insert(spark, table, uri, rows, work / "checkpoint")
            scrapes = scraper.scrapes
    finally:
        if server is not None:
            server.stop()
    elapsed = time.perf_counter() - started
    durations = batch_durations(query)
    total_rows = sum(p["numInputRows"] for p in query.recentProgress)
    return {"metrics": metrics, "seconds": elapsed, "batch_s": durations, "rows": total_rows, "scrapes": scrapes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--rows-per-batch", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    home = scratch_dir()
    runs: list[dict[str, Any]] = []
    with metastore(home) as hms, MetastoreClient(hms.uri) as client:
        spark = spark_session(hms.uri, home / "warehouse")
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(args.batches + 10))
        client.create_database("bench")
        write_steady_input(home / "input", args.batches, args.rows_per_batch, 6)
        run_once(spark, client, hms.uri, home / "input", home / "warmup", metrics=False)  # JIT, caches: untimed
        for repeat in range(args.repeats):
            for metrics in (False, True) if repeat % 2 == 0 else (True, False):
                work = home / f"r{repeat}_{'on' if metrics else 'off'}"
                runs.append(run_once(spark, client, hms.uri, home / "input", work, metrics))
                label = "on" if metrics else "off"
                print(f"  repeat {repeat}, metrics {label}: {runs[-1]['seconds']:.1f} s", flush=True)
        spark.stop()
    shutil.rmtree(home, ignore_errors=True)

    summary = {}
    for metrics in (False, True):
        mine = [r for r in runs if r["metrics"] is metrics]
        summary[metrics] = {
            "median_batch_s": median([d for r in mine for d in r["batch_s"]]),
            "rows_per_s": median([r["rows"] / r["seconds"] for r in mine]),
        }
    ratio = summary[True]["rows_per_s"] / summary[False]["rows_per_s"]
    print_table(
        ["variant", "median batch s", "rows/s (median of runs)"],
        [
            [f"metrics {'on' if m else 'off'}", f"{s['median_batch_s']:.3f}", f"{s['rows_per_s']:.0f}"]
            for m, s in summary.items()
        ],
    )
    print(f"throughput with / without the endpoint: {ratio:.3f}")
    path = write_result(
        "metrics_overhead",
        {"params": vars(args), "runs": runs, "summary": {str(k): v for k, v in summary.items()}, "ratio": ratio},
    )
    print(f"written {path}")


if __name__ == "__main__":
    main()
