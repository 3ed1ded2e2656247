"""What the ``sqlext`` commands share: their ``--conf`` pairs, the metastore a reading command reaches, and
a table's storage made reachable from the CLI process."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sqlext.catalog.metastore import launcher
from sqlext.config import CLASSPATH_KEYS, METASTORE_URIS, SqlextConfig
from sqlext.errors import SqlextError

if TYPE_CHECKING:
    from sqlext.catalog.metastore.client import MetastoreClient


def reach_storage(location: str, command_conf: Mapping[str, str]) -> None:
    """Make a table's filesystem reachable from this CLI process, with the Spark conf's Hadoop keys.

    ``file:`` tables are served by pyarrow. Any other scheme (``hdfs://``, ``viewfs://``, ``s3a://``, ...) by
    Spark's Hadoop FileSystem: a local Spark JVM is started for it (a few seconds), configured with
    ``--conf`` and the conf file, so the CLI reaches exactly what ``sqlext run`` reaches. ``SQLEXT_FS=pyarrow``
    uses the JVM-less fallback instead (file:, viewfs links, s3a, hdfs through libhdfs or WebHDFS).
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


def parse_conf(pairs: Sequence[str] | None) -> dict[str, str]:
    conf = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SqlextError(f"Invalid --conf '{pair}': expected key=value.")
        conf[key.strip()] = value.strip()
    return conf


def command_conf(args: argparse.Namespace) -> dict[str, str]:
    """A command's ``--conf`` pairs, with ``--metastore-uri`` as ``spark.sqlext.metastore.uris``."""
    conf = parse_conf(args.conf)
    if args.metastore_uri:
        conf[METASTORE_URIS] = args.metastore_uri
    return conf


def metastore_uri(conf: Mapping[str, str]) -> str:
    """The metastore a command that only reads or stops reaches: ``--metastore-uri`` / ``--conf`` / the conf
    file, else the embedded one's address, which is never started here: when it does not answer, says so."""
    config = SqlextConfig.load(conf)
    if config.metastore_uris:
        return config.metastore_uris
    embedded = launcher.MetastoreSettings.from_config(config)
    if not launcher.status(embedded).answering:
        raise SqlextError(
            f"No metastore at {embedded.uri}: spark.sqlext.metastore.uris is not set and the embedded metastore "
            "does not run. Give --metastore-uri thrift://host:port, or start it with 'sqlext metastore start'."
        )
    return embedded.uri


def metastore_client(conf: Mapping[str, str]) -> MetastoreClient:
    """A client of the metastore :func:`metastore_uri` names, retrying as a session's catalog does: a URI where
    nothing listens is an error at once, naming it, unless ``spark.sqlext.metastore.retry.deadline`` is set."""
    from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy

    return MetastoreClient(metastore_uri(conf), RetryPolicy.configured(SqlextConfig.load(conf)))
