"""The local Spark session of the tests and of the driver processes they start (tests/support/*_job.py)."""

from __future__ import annotations

import os
import sys
from typing import Any

from sqlext.runtime.paths import packaged_conf_dir


def local_session(conf: dict[str, str], hive: bool = True, shuffle_partitions: int = 2) -> Any:
    """A ``local[2]`` session: no UI, Python workers on this interpreter, sqlext's log4j setup, ``conf`` on
    top; with Hive support (the HMS of ``spark.hadoop.hive.metastore.uris``) unless ``hive`` is False."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers (UDFs, Python data sources) must run this interpreter, with this venv's packages.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")
        # A Python worker (UDFs, Python data sources) that connects back late on a loaded machine is given up
        # on after this (Spark's default 15 s failed streaming sources' starts under test load).
        .config("spark.python.authenticate.socketTimeout", "120s")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j}")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    if hive:
        builder = builder.enableHiveSupport()
    return builder.getOrCreate()
