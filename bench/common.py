"""Shared pieces of the benchmarks: a real metastore, a Spark session on it, input data, results."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pyarrow as pa
import pyarrow.parquet as pq

from sqlext.catalog.metastore import launcher, versions
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.runtime.paths import packaged_conf_dir

RESULTS = Path(__file__).resolve().parent / "results"
EVENT_DDL = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def metastore(
    home: Path,
    version: str = "2.3",
    properties: Mapping[str, str] | None = None,
    heap: str = "512m",
    notifications: bool = False,
) -> Iterator[MetastoreSettings]:
    """A real embedded HMS (Hive ``version``, ``heap`` its -Xmx; ``notifications``: keeping its notification
    log) for the benchmark's lifetime, its home ``home/metastore`` (a home kept from an earlier run is restarted
    as it is), with ``properties`` added to its Hive settings."""
    settings = MetastoreSettings(
        port=free_port(),
        home=home / "metastore",
        version=versions.release(version).version,
        heap=heap,
        notifications=notifications,
    )
    write_metastore_site(settings, properties or {})
    launcher.start(settings)
    try:
        yield settings
    finally:
        launcher.stop(settings)


def write_metastore_site(settings: MetastoreSettings, properties: Mapping[str, str]) -> Path:
    """``properties`` as the metastore's ``hivemetastore-site.xml`` (none: an empty one), in its conf dir.

    The launcher writes ``hive-site.xml`` afresh at every start and has no setting for other Hive properties; the
    metastore also reads ``hivemetastore-site.xml`` from its class path (Hive 2.3's ``HiveConf`` with
    ``setLoadMetastoreConfig``, 3.1's and 4's ``MetastoreConf``), after ``hive-site.xml``, and the conf dir is
    first on that class path.
    """
    lines = "".join(
        f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>\n"
        for key, value in properties.items()
    )
    settings.conf_dir.mkdir(parents=True, exist_ok=True)
    path = settings.conf_dir / "hivemetastore-site.xml"
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{lines}</configuration>\n')
    return path


def spark_session(metastore_uri: str, warehouse: Path, cores: int = 2, extra: Mapping[str, str] | None = None) -> Any:
    """A local Spark session on ``cores`` cores with Hive support on the metastore (plus ``extra`` settings:
    jars, a catalog, extensions)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
    builder = SparkSession.builder
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = (
        builder.master(f"local[{cores}]")
        .appName("sqlext-bench")
        .config("spark.hadoop.hive.metastore.uris", metastore_uri)
        .config("spark.sql.warehouse.dir", warehouse.as_uri())
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", str(cores * 2))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j}")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_events(directory: Path, rows: int, hours: int, files: int, start: datetime) -> None:
    """``rows`` events spread evenly over ``hours`` hours in ``files`` parquet files (mtime-ordered)."""
    directory.mkdir(parents=True, exist_ok=True)
    per_file = rows // files
    span = timedelta(hours=hours)
    for index in range(files):
        first = index * per_file
        count = per_file if index < files - 1 else rows - first
        ids = pa.array(range(first, first + count), pa.int64())
        offsets_us = [int(span.total_seconds() * 1e6 * (i / rows)) for i in range(first, first + count)]
        base_us = int(start.timestamp() * 1e6)
        table = pa.table(
            {
                "id": ids,
                "user_id": pa.array([f"user-{i % 1000}" for i in range(first, first + count)]),
                "amount": pa.array([i * 0.01 for i in range(first, first + count)]),
                "ts": pa.array([base_us + o for o in offsets_us], pa.timestamp("us")),
            }
        )
        path = directory / f"part-{index:05d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now().isoformat(timespec="seconds"),
    }


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **result}, indent=1, sort_keys=True))
    return path


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="sqlext-bench-"))
