"""A table's storage made reachable from a CLI process (``sqlext commits``, ``compact``, ``expire``)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlext.config import CLASSPATH_KEYS


def reach_storage(location: str, command_conf: Mapping[str, str]) -> None:
    """Make a table's filesystem reachable from this CLI process, with the Spark conf's Hadoop keys.

    ``file:`` tables are served by pyarrow. Any other scheme (``hdfs://``, ``viewfs://``, ``s3a://``, ...) by
    Spark's Hadoop FileSystem: a local Spark JVM is started for it (a few seconds), configured with
    ``--conf`` and the conf file, so the CLI reaches exactly what ``sqlext run`` reaches. ``SQLEXT_FS=pyarrow``
    uses the JVM-less fallback instead (file:, viewfs links, s3a, hdfs through libhdfs).
    """
    import os
    from urllib.parse import urlparse

    from sqlext.config import conf_file, read_conf_file
    from sqlext.io import arrowfs
    from sqlext.io.fs import BACKEND_ENV

    path = conf_file()
    conf = {**(read_conf_file(path) if path.is_file() else {}), **command_conf}
    arrowfs.configure(conf)
    if (urlparse(location).scheme or "file") == "file" or os.environ.get(BACKEND_ENV, "").lower() == "pyarrow":
        return
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("sqlext-storage").config("spark.ui.enabled", "false")
    for key, value in conf.items():
        # The storage's jars (hadoop-aws for s3a://) come with the same keys as for ``sqlext run``.
        if key.startswith(arrowfs.HADOOP_PREFIX) or key in CLASSPATH_KEYS:
            builder = builder.config(key, value)
    builder.getOrCreate().sparkContext.setLogLevel("ERROR")
