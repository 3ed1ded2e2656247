"""Fetch every Maven artifact the tests use, all at once, before pytest starts: the resolutions run side by
side (most of their time is waiting on Maven Central), rather than one by one inside the tests. Each set is
fetched by the very function its tests call, so names and exclusions cannot drift.

``python -m tests.support.prefetch`` (``make jars``; ``make test`` runs it first).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from sqlext.catalog.metastore.versions import RELEASES
from sqlext.connectors.filesystem import spark_avro
from sqlext.connectors.kafka.spark_source import jar_paths
from sqlext.runtime import jars
from tests.support.flink import flink_avro_jar
from tests.support.kafka import broker_classpath
from tests.support.stores import hadoop_cloud_jars, hdfs_jars, prefetch_s3a_packages, s3a_jars
from tests.support.trino import trino_install


def jar_fetchers() -> dict[str, Callable[[], object]]:
    """What fetches each set of jars the tests use."""
    fetchers: dict[str, Callable[[], object]] = {
        "Kafka broker": broker_classpath,
        "Spark's Kafka source": jar_paths,
        "Spark's Avro data source": spark_avro.jar_paths,
        "Flink's avro format": flink_avro_jar,
        "S3A": s3a_jars,
        "Spark's hadoop-cloud committers": hadoop_cloud_jars,
        "S3A as spark.jars.packages (Spark's Ivy)": prefetch_s3a_packages,
        "HDFS mini cluster": hdfs_jars,
        "Trino server": trino_install,
    }
    for release in RELEASES.values():
        if release.downloads:
            fetchers[f"Hive metastore {release.version}"] = release.jars_dir
    return fetchers


def _timed(name: str, fetch: Callable[[], object]) -> str:
    started = time.monotonic()
    fetch()
    return f"{name} in {time.monotonic() - started:.0f} s"


def main() -> int:
    fetchers = jar_fetchers()
    print(f"prefetch: {len(fetchers)} sets of jars into {jars.cache_dir()}", flush=True)
    with ThreadPoolExecutor(max_workers=len(fetchers)) as pool:
        for line in pool.map(_timed, fetchers, fetchers.values()):
            print(f"prefetch: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
