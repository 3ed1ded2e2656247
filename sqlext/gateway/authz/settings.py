"""What authorization is configured with: admins, where tables may live, which settings are denied,
and the server's own files, which no table may point at.

Locations are compared as URIs: a bare path is a ``file:`` one; ``.`` and ``..`` are resolved before
comparing, and a prefix matches whole path segments only (``file:/data`` covers ``file:/data/x``, not
``file:/database``).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sqlext.config import CHECKPOINT_ROOT, WAREHOUSE
from sqlext.gateway.security import ALLOWED_LOCATIONS, AUTHORIZATION, DENIED_SETTINGS, GatewaySecurity
from sqlext.runtime.paths import default_home, packaged_conf_dir

#: Settings no user but an admin may read or change: ``SET`` of these changes what the server may do
#: (catalogs with arbitrary classes, file access, log redaction, where checkpoints go, Hadoop's
#: filesystem classes). A key ending in ``.`` covers every key under it.
BUILT_IN_DENIED_SETTINGS = (
    "spark.sqlext.gateway.",
    "spark.sqlext.",
    "spark.sql.catalog.",
    "spark.sql.defaultCatalog",
    "spark.sql.runSQLOnFiles",
    "spark.sql.redaction.",
    "spark.sql.legacy.",
    "spark.sql.warehouse.dir",
    "spark.sql.streaming.checkpointLocation",
    "spark.sql.streaming.stateStore.",
    "spark.sql.sources.",
    "spark.sql.artifact.",
    "spark.sql.scripting.",
    "spark.sql.execution.pyspark.",
    "spark.sql.queryExecutionListeners",
    "spark.sql.extensions",
    "spark.hadoop.",
    "fs.",
    "hadoop.",
    "hive.",
    "javax.jdo.",
    "datanucleus.",
    "mapreduce.",
    "mapred.",
)

#: Keys under a denied prefix that users may still set: they change how a statement runs, not what it
#: may touch.
ALLOWED_SETTINGS = frozenset(
    {"hive.exec.dynamic.partition", "hive.exec.dynamic.partition.mode", "spark.sql.sources.partitionoverwritemode"}
)

#: Providers a user may create tables with (``CREATE TABLE ... USING``): file formats and Hive.
FILE_PROVIDERS = frozenset({"parquet", "orc", "csv", "json", "text", "avro", "hive", "xml"})


def normalize(location: str) -> str:
    """``scheme://authority/path`` with ``.``/``..`` resolved; a bare path is a ``file:`` URI."""
    parts = urlsplit(location.strip())
    scheme = parts.scheme.lower() if len(parts.scheme) > 1 else "file"  # "C:" is no scheme
    path = parts.path if len(parts.scheme) > 1 else location.strip()
    path = posixpath.normpath("/" + path.lstrip("/")) if path else "/"
    authority = parts.netloc if len(parts.scheme) > 1 else ""
    return f"{scheme}://{authority}{path.rstrip('/') or '/'}"


def under(location: str, prefix: str) -> bool:
    """Whether normalized ``location`` is ``prefix`` or below it (whole segments)."""
    return location == prefix or location.startswith(prefix.rstrip("/") + "/")


@dataclass(frozen=True)
class AuthorizationSettings:
    """Authorization of one gateway: ``enabled`` (off: every user may do anything, as before), its
    admins, the location prefixes tables may have, the denied settings and the protected paths."""

    enabled: bool = True
    admins: frozenset[str] = frozenset()
    allowed_locations: tuple[str, ...] = ()
    denied_settings: tuple[str, ...] = BUILT_IN_DENIED_SETTINGS
    protected: tuple[str, ...] = ()
    #: Locations under a protected path that tables may still have (the warehouse, the checkpoints).
    carved_out: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, values: Mapping[str, str], security: GatewaySecurity | None = None) -> AuthorizationSettings:
        """Read the ``spark.sqlext.gateway.*`` keys (and the warehouse) of a merged sqlext config."""
        from sqlext.errors import ConfigError

        security = security or GatewaySecurity.of(values)
        raw_enabled = values.get(AUTHORIZATION, "true").strip().lower()
        if raw_enabled not in ("true", "false"):
            raise ConfigError(
                f"Invalid value for '{AUTHORIZATION}': '{raw_enabled}'. Expected 'true' or 'false'.",
                option=AUTHORIZATION,
                value=raw_enabled,
            )
        warehouses = [w for w in (values.get(WAREHOUSE), values.get("spark.sql.warehouse.dir")) if w]
        listed = [item.strip() for item in values.get(ALLOWED_LOCATIONS, "").split(",") if item.strip()]
        allowed = tuple(normalize(item) for item in (listed or warehouses or [str(Path.cwd() / "spark-warehouse")]))
        extra_denied = tuple(item.strip() for item in values.get(DENIED_SETTINGS, "").split(",") if item.strip())
        carved = [*warehouses, *([values[CHECKPOINT_ROOT]] if values.get(CHECKPOINT_ROOT) else [])]
        return cls(
            enabled=raw_enabled == "true",
            admins=security.admins,
            allowed_locations=allowed,
            denied_settings=BUILT_IN_DENIED_SETTINGS + extra_denied,
            protected=tuple(normalize(str(p)) for p in (*_server_files(security), *_server_keytabs(values))),
            carved_out=tuple(normalize(item) for item in carved),
        )

    def is_admin(self, user: str) -> bool:
        return user in self.admins

    def setting_denied(self, key: str) -> bool:
        """Whether ``key`` is on the deny list (case-insensitive, as Spark's keys are matched)."""
        lowered = key.strip().lower()
        if lowered in ALLOWED_SETTINGS:
            return False
        return any(
            lowered.startswith(item.lower()) if item.endswith(".") else lowered == item.lower()
            for item in self.denied_settings
        )

    def protected_path(self, location: str) -> str | None:
        """The server's own path ``location`` falls under, if any (the warehouse and checkpoints excepted)."""
        normalized = normalize(location)
        if any(under(normalized, carved) for carved in self.carved_out):
            owned = [p for p in self.protected if under(normalized, p)]
            # Inside the warehouse only paths protected in their own right (the users file, TLS key) count.
            return next((p for p in owned if not any(under(c, p) for c in self.carved_out)), None)
        return next((p for p in self.protected if under(normalized, p)), None)

    def location_allowed(self, location: str) -> bool:
        normalized = normalize(location)
        return any(under(normalized, prefix) for prefix in self.allowed_locations)


def _server_files(security: GatewaySecurity) -> Iterable[Path]:
    """The gateway's home and conf, its users file and TLS files, Spark's and Hadoop's conf dirs."""
    yield default_home()
    yield packaged_conf_dir().resolve()
    for path in (security.users_file, security.ssl_certfile, security.ssl_keyfile, security.kerberos_keytab):
        if path is not None:
            yield path.resolve()
    for variable in ("SQLEXT_CONF_DIR", "SPARK_CONF_DIR", "HADOOP_CONF_DIR"):
        if os.environ.get(variable):
            yield Path(os.environ[variable]).resolve()


#: The keys naming keytabs of the server's own logins (the job's, the embedded metastore's).
_KEYTAB_KEYS = ("spark.kerberos.keytab", "spark.sqlext.metastore.kerberos.keytab.file")


def _server_keytabs(values: Mapping[str, str]) -> Iterable[Path]:
    """The keytabs the server logs in with: no table option may name them (a Kafka login as the server)."""
    for key in _KEYTAB_KEYS:
        if values.get(key):
            yield Path(values[key]).expanduser().resolve()
