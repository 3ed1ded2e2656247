"""sqlext's own configuration: ``spark.sqlext.*`` keys of the Spark conf, then a conf file, then defaults.

The conf file is ``$SQLEXT_CONF`` if set, else the shipped ``conf/sqlext-defaults.conf``. Keys are the
same in all three places, so ``spark-submit --conf spark.sqlext.metastore.uris=thrift://...`` and a line
``spark.sqlext.metastore.uris = thrift://...`` in the file mean the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sqlext.errors import ConfigError
from sqlext.options import parse_duration
from sqlext.runtime.paths import default_home, packaged_conf_dir

PREFIX = "spark.sqlext."

METASTORE_URIS = PREFIX + "metastore.uris"
METASTORE_PORT = PREFIX + "metastore.port"
METASTORE_HOME = PREFIX + "metastore.home"
METASTORE_BACKEND = PREFIX + "metastore.backend"
METASTORE_VERSION = PREFIX + "metastore.version"
METASTORE_JDBC_URL = PREFIX + "metastore.jdbc-url"
METASTORE_USER = PREFIX + "metastore.user"
METASTORE_PASSWORD = PREFIX + "metastore.password"
METASTORE_DRIVER_JAR = PREFIX + "metastore.jdbc-driver-jar"
METASTORE_RETRY_DEADLINE = PREFIX + "metastore.retry.deadline"
METASTORE_HADOOP_PREFIX = PREFIX + "metastore.hadoop."
METASTORE_HADOOP_CONF_DIR = PREFIX + "metastore.hadoop-conf-dir"
METASTORE_CLASSPATH = PREFIX + "metastore.classpath"
METASTORE_NOTIFICATIONS = PREFIX + "metastore.notifications"
#: Spark keys that put jars (a filesystem's: hadoop-aws for s3a://) on the driver's class path.
CLASSPATH_KEYS = frozenset({"spark.jars", "spark.jars.packages", "spark.driver.extraClassPath"})
WAREHOUSE = PREFIX + "warehouse"
CHECKPOINT_ROOT = PREFIX + "checkpoint.root"
SESSION_PREFIX = PREFIX + "session."
METRICS_PORT = PREFIX + "metrics.port"
METRICS_HOST = PREFIX + "metrics.host"
DRIVER_CLASS_SHARING = PREFIX + "driver.class-sharing"

#: Every key sqlext reads, with its meaning (the reference in docs/configuration.md is written from this).
KEYS: dict[str, str] = {
    METASTORE_URIS: "Hive Metastore URIs (thrift://host:port[,...]). Unset: start the embedded metastore.",
    METASTORE_PORT: "Port of the embedded metastore (default 9083).",
    METASTORE_HOME: "Home dir of the embedded metastore (default $SQLEXT_HOME/metastore).",
    METASTORE_BACKEND: "Database of the embedded metastore: derby (default) or postgres.",
    METASTORE_VERSION: "Hive version of the embedded metastore: 2.3 (default, pyspark's jars), 3.1 or 4 (fetched).",
    METASTORE_JDBC_URL: "JDBC URL of the embedded metastore's PostgreSQL database.",
    METASTORE_USER: "Database user of the embedded metastore.",
    METASTORE_PASSWORD: "Database password of the embedded metastore.",
    METASTORE_DRIVER_JAR: "JDBC driver jar (default /usr/share/java/postgresql.jar for postgres).",
    METASTORE_RETRY_DEADLINE: "How long metastore calls retry transport errors (default 60 s). Unset, a session's "
    "first connection refused (nothing listens at the URI) is an error at once.",
    METASTORE_HADOOP_PREFIX + "<key>": "A Hadoop setting of the embedded metastore (its core-site.xml), e.g. "
    "spark.sqlext.metastore.hadoop.fs.viewfs.mounttable.c.link./data=hdfs://nn/data.",
    METASTORE_HADOOP_CONF_DIR: "Hadoop conf dir of the embedded metastore (default $HADOOP_CONF_DIR).",
    METASTORE_CLASSPATH: "Extra class path of the embedded metastore (entries joined by ':', a dir/* takes its jars): "
    "the filesystem jars its table locations need, e.g. hadoop-aws and the AWS SDK for s3a:// tables.",
    METASTORE_NOTIFICATIONS: "true: the embedded metastore keeps Hive's notification log (DbNotificationListener, "
    "its jar fetched once from Maven Central), which streaming reads of its tables poll instead of listing them.",
    WAREHOUSE: "Warehouse location (URI) for databases created by sqlext.",
    CHECKPOINT_ROOT: (
        "Root of the checkpoints of sqlext's streaming inserts (default $SQLEXT_HOME/checkpoints/<metastore>)."
    ),
    METRICS_PORT: "Port of the Prometheus endpoint (/metrics) and live status page (/) of a process running inserts. "
    "Unset: none; 0: a free port, logged.",
    METRICS_HOST: "Address the metrics endpoint listens on (default 127.0.0.1; 0.0.0.0 for every interface).",
    DRIVER_CLASS_SHARING: "Whether a Spark driver JVM that sqlext launches starts from a class data sharing archive "
    "of the classes Spark loads: existing (default: the archive `sqlext warm-up` wrote, if any; none is written), "
    "true (also write one, about 200 MB in ~/.cache/sqlext/class-sharing, as a driver that found none exits) or "
    "false (never; docs/operations.md).",
    SESSION_PREFIX + "<key>": "A sqlext session option (as SET '<key>' = '...'), e.g. execution.runtime-mode.",
    PREFIX + "gateway.*": (
        "The gateway's authentication, authorization, admins and TLS (declared in sqlext.gateway.security.KEYS)."
    ),
}


def conf_flag(values: Mapping[str, str], key: str) -> bool:
    """A ``true``/``false`` setting of a Spark conf or sqlext config (any case, spaces around; default false);
    another value is an error naming the key."""
    raw = values.get(key, "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"Invalid value for '{key}': '{raw}'. Expected true or false.", option=key, value=raw)
    return raw == "true"


class ClassSharing(StrEnum):
    """The values of ``spark.sqlext.driver.class-sharing`` (:mod:`sqlext.spark.class_sharing`)."""

    #: Start from the archive when there is one; write none.
    EXISTING = "existing"
    #: Start from the archive; a driver that finds none writes it as it exits.
    WRITE = "true"
    #: Neither.
    OFF = "false"


def read_conf_file(path: Path) -> dict[str, str]:
    """Read ``key = value`` lines (``#`` comments, blank lines ignored)."""
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not stripped:
            continue
        key, sep, value = stripped.partition("=")
        if not sep:
            key, _, value = stripped.partition(" ")
        if not key.strip():
            raise ConfigError(f"{path}:{number}: expected 'key = value', got '{line}'.")
        values[key.strip()] = value.strip()
    return values


def conf_file() -> Path:
    explicit = os.environ.get("SQLEXT_CONF")
    return Path(explicit) if explicit else packaged_conf_dir() / "sqlext-defaults.conf"


@dataclass(frozen=True)
class SqlextConfig:
    """The resolved ``spark.sqlext.*`` settings."""

    values: Mapping[str, str]

    @classmethod
    def load(cls, spark_conf: Mapping[str, str] | None = None) -> SqlextConfig:
        """Merge the conf file under the ``spark.sqlext.*`` keys of ``spark_conf``."""
        path = conf_file()
        merged = read_conf_file(path) if path.is_file() else {}
        merged.update({k: v for k, v in (spark_conf or {}).items() if k.startswith(PREFIX)})
        return cls(merged)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    @property
    def metastore_uris(self) -> str | None:
        """Configured external metastore URIs, or None for the embedded one."""
        return self.values.get(METASTORE_URIS) or None

    @property
    def retry_deadline_s(self) -> float:
        """How long metastore calls retry transport errors (``spark.sqlext.metastore.retry.deadline``)."""
        raw = self.values.get(METASTORE_RETRY_DEADLINE, "60 s")
        try:
            return parse_duration(raw).total_seconds()
        except ValueError as exc:
            raise ConfigError(
                f"Invalid value for '{METASTORE_RETRY_DEADLINE}': '{raw}'. Expected {exc}.",
                option=METASTORE_RETRY_DEADLINE,
                value=raw,
            ) from None

    @property
    def retry_deadline_configured(self) -> bool:
        """Whether ``spark.sqlext.metastore.retry.deadline`` was given: then a metastore not listening yet is
        waited for; else one that refuses the first connection fails at once."""
        return METASTORE_RETRY_DEADLINE in self.values

    @property
    def driver_class_sharing(self) -> ClassSharing:
        """How a driver JVM that sqlext launches uses a class data sharing archive
        (``spark.sqlext.driver.class-sharing``, :mod:`sqlext.spark.class_sharing`)."""
        raw = self.values.get(DRIVER_CLASS_SHARING, ClassSharing.EXISTING.value)
        try:
            return ClassSharing(raw.strip().lower())
        except ValueError:
            allowed = ", ".join(mode.value for mode in ClassSharing)
            raise ConfigError(
                f"Invalid value for '{DRIVER_CLASS_SHARING}': '{raw}'. Expected one of: {allowed}.",
                option=DRIVER_CLASS_SHARING,
                value=raw,
            ) from None

    @property
    def home(self) -> Path:
        return default_home()

    @property
    def metrics_port(self) -> int | None:
        """The metrics endpoint's port (``spark.sqlext.metrics.port``): None when unset (no endpoint), 0 for
        any free port."""
        raw = (self.values.get(METRICS_PORT) or "").strip()
        if not raw:
            return None
        if not raw.isdigit() or int(raw) > 65535:
            raise ConfigError(
                f"Invalid value for '{METRICS_PORT}': '{raw}'. Expected a port number from 0 to 65535 "
                "(0: any free port, logged), or leave it unset for no metrics endpoint.",
                option=METRICS_PORT,
                value=raw,
            )
        return int(raw)

    @property
    def metrics_host(self) -> str:
        """The address the metrics endpoint listens on (``spark.sqlext.metrics.host``, default 127.0.0.1)."""
        return (self.values.get(METRICS_HOST) or "").strip() or "127.0.0.1"
