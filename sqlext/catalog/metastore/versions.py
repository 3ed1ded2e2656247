"""The Hive Metastore versions the launcher starts: 2.3 from pyspark's jars, 3.1 and 4.x from Maven Central.

Each :class:`Release` says where its jars come from, which program serves it on one address, and the
settings it needs beyond ``conf/hive-site.xml.template``:

- **2.3** (the default, nothing to download): Hive 2.3's metastore inside pyspark's ``jars/``, run by
  ``BoundHiveMetaStore.java`` (Hive 2.3 has no bind-host setting).
- **3.1**: ``org.apache.hive:hive-standalone-metastore:3.1.3`` with its dependencies (~53 MB), run by
  ``BoundHiveMetaStore3.java`` (Hive 3.1 has no bind-host setting either).
- **4**: ``org.apache.hive:hive-standalone-metastore-server:4.0.1`` (the newest Maven Central serves; 4.1+
  are not published as a standalone server) with its dependencies and Hadoop 3.3.6's ``hadoop-hdfs``
  (~111 MB), run by Hive's own ``HiveMetaStore`` with ``metastore.thrift.bind.host``.

The schema is created on first start by DataNucleus (``datanucleus.schema.autoCreateAll``), not by Hive's
``schematool`` (its scripts are in the binary tarballs Maven Central serves beside the jars,
``hive-standalone-metastore:3.1.3:tar.gz:bin`` and ``hive-standalone-metastore-server:4.0.1:tar.gz:bin``,
which sqlext does not fetch; Hive 2.3's come only with Hive's own distribution). DataNucleus
does not create Hive's transaction tables (the lock and transaction calls need them): sqlext creates each
version's before each start, from its DDL in ``txn/`` (:mod:`sqlext.catalog.metastore.txn_tables`).
A home's database holds one version's schema, so a home remembers the version that created it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sqlext.errors import MetastoreError
from sqlext.runtime import jars
from sqlext.runtime.paths import pyspark_jars_dir

HIVE_MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
_HERE = Path(__file__).resolve().parent
#: The file in a metastore home naming the Hive version whose schema its database holds.
VERSION_FILE = "hive-version"
#: Beside it: the exact Hive release that created the database (a home without it is of the release sqlext
#: ran of that version when it was written, the one :data:`RELEASES` names: none other had been run).
RELEASE_FILE = "hive-release"


class HiveVersion(StrEnum):
    """The metastore versions ``sqlext metastore start --version`` knows."""

    V2_3 = "2.3"
    V3_1 = "3.1"
    V4 = "4"


#: Settings the standalone metastores (3.1, 4) need: the default expression proxy and housekeeping
#: tasks are classes of Hive's query engine (hive-exec), which a standalone metastore does not ship.
_STANDALONE_PROPERTIES = (
    ("metastore.expression.proxy", "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy"),
    ("metastore.task.threads.always", "org.apache.hadoop.hive.metastore.events.EventCleanerTask"),
)


#: The SerDes whose tables' columns the metastore answers ``get_fields``/``get_schema`` with from its own
#: store: each version's default list plus Hive's AvroSerDe. Otherwise the metastore runs the table's SerDe
#: to read them, which a standalone metastore cannot (3.1: "Storage schema reading not supported"; 4:
#: "SerDeStorageSchemaReader class not found"), and Trino asks for an avro table's fields that way. sqlext
#: stores an avro table's columns as the types the AvroSerDe reads its schema as, so the answers agree.
_STANDALONE_SERDES_KEY = "metastore.serdes.using.metastore.for.schema"
_AVRO_SERDE = "org.apache.hadoop.hive.serde2.avro.AvroSerDe"
_HIVE_SERDE = "org.apache.hadoop.hive.serde2"
_SERDES_2_3_AND_3_1 = (
    "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
    f"{_HIVE_SERDE}.lazy.LazySimpleSerDe",
    f"{_HIVE_SERDE}.columnar.ColumnarSerDe",
    f"{_HIVE_SERDE}.dynamic_type.DynamicSerDe",
    f"{_HIVE_SERDE}.MetadataTypedColumnsetSerDe",
    f"{_HIVE_SERDE}.columnar.LazyBinaryColumnarSerDe",
    "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
    f"{_HIVE_SERDE}.lazybinary.LazyBinarySerDe",
)
_SERDES_4 = (
    *(s for s in _SERDES_2_3_AND_3_1 if not s.endswith(".DynamicSerDe")),
    f"{_HIVE_SERDE}.OpenCSVSerde",
    "org.apache.iceberg.mr.hive.HiveIcebergSerDe",
)


#: Listeners called inside each DDL's transaction: the event is written (and its id taken) as part of it.
_LISTENERS_KEY = "hive.metastore.transactional.event.listeners"
_DB_NOTIFICATION_LISTENER = "org.apache.hive.hcatalog.listener.DbNotificationListener"
#: Hive 3.0+ serves the log only to its superusers (proxy users) by default: an embedded metastore has none.
_EVENTS_API_AUTH = "hive.metastore.event.db.notification.api.auth"
_HCATALOG_SERVER_EXTENSIONS = "org.apache.hive.hcatalog:hive-hcatalog-server-extensions"


def _schema_from_metastore(key: str, defaults: tuple[str, ...]) -> tuple[str, str]:
    return (key, ",".join((*defaults, _AVRO_SERDE)))


@dataclass(frozen=True)
class Release:
    """One metastore version: its jars, the program that serves it, and its extra settings."""

    version: HiveVersion
    #: The exact Hive version run.
    full_version: str
    #: Maven coordinates fetched with their dependencies (none: pyspark's own jars).
    coordinates: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    #: The main class run.
    main_class: str = HIVE_MAIN_CLASS
    #: Java source of a launcher that binds the server socket itself (versions without a bind-host setting).
    bound_source: Path | None = None
    #: The setting that binds the server to one address, when the version has one.
    bind_host_key: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    #: DataNucleus mapping overrides (a ``package-<name>.orm`` file) for the Derby backend, named by
    #: ``datanucleus.mapping`` and found on the class path.
    derby_mapping: Path | None = None
    #: The jar of Hive's ``DbNotificationListener`` (the notification log), at this version; none: not published.
    listener_coordinate: str | None = None

    @property
    def downloads(self) -> bool:
        """True when the jars come from Maven Central rather than pyspark."""
        return bool(self.coordinates)

    def jars_dir(self) -> Path:
        """The directory of this version's jars, fetched from Maven Central the first time."""
        if not self.coordinates:
            return pyspark_jars_dir()
        return jars.fetch(f"hive-metastore-{self.version}", self.coordinates, exclude=self.exclude)

    def is_fetched(self) -> bool:
        """True when starting this version needs no download."""
        return not self.coordinates or jars.is_fetched(
            f"hive-metastore-{self.version}", self.coordinates, exclude=self.exclude
        )

    def notification_listener(self) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
        """The settings that make the metastore keep its notification log, and the class path of its jar
        (fetched from Maven Central the first time, without dependencies: the metastore's jars have them)."""
        if self.listener_coordinate is None:
            raise MetastoreError(
                f"sqlext knows no DbNotificationListener jar for Hive {self.full_version}; "
                f"use --version {HiveVersion.V3_1.value} for a metastore with notifications.",
                option="version",
                value=self.version.value,
            )
        jar_dir = jars.fetch(f"hive-listener-{self.version}", (self.listener_coordinate,), transitive=False)
        return ((_LISTENERS_KEY, _DB_NOTIFICATION_LISTENER), (_EVENTS_API_AUTH, "false")), (str(jar_dir / "*"),)

    def host_properties(self, host: str) -> tuple[tuple[str, str], ...]:
        """The settings of this version, with the bind host where the version has a setting for it."""
        bind = ((self.bind_host_key, host),) if self.bind_host_key else ()
        return self.properties + bind


RELEASES: dict[HiveVersion, Release] = {
    HiveVersion.V2_3: Release(
        HiveVersion.V2_3,
        "2.3.10",
        main_class="BoundHiveMetaStore",
        bound_source=_HERE / "BoundHiveMetaStore.java",
        # Hive 2.3's default pool is BoneCP, which pyspark's jars lack (they have HikariCP): the transaction
        # handler, which every drop and every lock call reaches, died on it and dropped the connection.
        properties=(
            ("datanucleus.connectionPoolingType", "HikariCP"),
            _schema_from_metastore("hive.serdes.using.metastore.for.schema", _SERDES_2_3_AND_3_1),
        ),
        # Ids of new partitions in blocks of 1,000, not 5 (see the file; bench/README.md, "pipelined" registration).
        derby_mapping=_HERE / "package-sqlext.orm",
        listener_coordinate=f"{_HCATALOG_SERVER_EXTENSIONS}:2.3.10",
    ),
    HiveVersion.V3_1: Release(
        HiveVersion.V3_1,
        "3.1.3",
        coordinates=(
            "org.apache.hive:hive-standalone-metastore:3.1.3",
            # log4j-core comes without the API it was built against.
            "org.apache.logging.log4j:log4j-api:2.17.1",
        ),
        main_class="BoundHiveMetaStore3",
        bound_source=_HERE / "BoundHiveMetaStore3.java",
        properties=(*_STANDALONE_PROPERTIES, _schema_from_metastore(_STANDALONE_SERDES_KEY, _SERDES_2_3_AND_3_1)),
        listener_coordinate=f"{_HCATALOG_SERVER_EXTENSIONS}:3.1.3",
    ),
    HiveVersion.V4: Release(
        HiveVersion.V4,
        "4.0.1",
        coordinates=(
            "org.apache.hive:hive-standalone-metastore-server:4.0.1",
            "org.apache.logging.log4j:log4j-api:2.18.0",
            # The HMS handler loads HDFS classes (SnapshotException) on every create_database.
            "org.apache.hadoop:hadoop-hdfs:3.3.6",
        ),
        # Its pom asks for hadoop-client-api/-runtime at a version Maven Central does not have (2.7.3).
        exclude=("org.apache.hadoop:hadoop-client-api", "org.apache.hadoop:hadoop-client-runtime"),
        bind_host_key="metastore.thrift.bind.host",
        properties=(*_STANDALONE_PROPERTIES, _schema_from_metastore(_STANDALONE_SERDES_KEY, _SERDES_4)),
    ),
}


def release(version: HiveVersion | str) -> Release:
    """The release of a version (``"2.3"``, ``"3.1"``, ``"4"``); lists the known ones for another."""
    try:
        return RELEASES[HiveVersion(str(version))]
    except ValueError:
        known = ", ".join(v.value for v in HiveVersion)
        raise MetastoreError(
            f"Unknown Hive Metastore version '{version}'. Supported versions: {known}.",
            option="version",
            value=str(version),
        ) from None


def main_classes() -> tuple[str, ...]:
    """Every main class a metastore started by sqlext may run (to recognise its process)."""
    return tuple(dict.fromkeys([*(r.main_class for r in RELEASES.values()), HIVE_MAIN_CLASS]))


def check_home(home: Path, version: HiveVersion) -> None:
    """Refuse to start ``version`` on a home whose database another version created, or another release of
    it with another schema (Hive's schema is that of its major.minor release: 4.0.x share one, 4.1 alters
    it); record both otherwise."""
    marker = home / VERSION_FILE
    current = release(version).full_version
    # A database without the file was made by an sqlext that only ran Hive 2.3.
    legacy = (home / "metastore_db").is_dir() and HiveVersion.V2_3.value
    if marker.is_file() or legacy:
        recorded = marker.read_text().strip() if marker.is_file() else str(legacy)
        if recorded != version.value:
            raise MetastoreError(
                f"The metastore home {home} holds a Hive {recorded} metastore database; Hive {version.value} "
                f"cannot use it. Start it with --version {recorded}, or give another --home.",
                option="version",
                value=version.value,
            )
        created_by = _recorded_release(home, version)
        if _schema(created_by) != _schema(current):
            raise MetastoreError(
                f"The metastore home {home} holds a database of Hive {created_by}; this sqlext runs Hive "
                f"{current}, whose metastore schema differs, and would change it in place. Start it with the "
                f"sqlext release that created it, or give another --home (sqlext does not upgrade a metastore "
                "database).",
                option="version",
                value=version.value,
            )
        return
    home.mkdir(parents=True, exist_ok=True)
    marker.write_text(version.value + "\n")
    (home / RELEASE_FILE).write_text(current + "\n")


def _recorded_release(home: Path, version: HiveVersion) -> str:
    recorded = home / RELEASE_FILE
    return recorded.read_text().strip() if recorded.is_file() else release(version).full_version


def _schema(full_version: str) -> tuple[str, ...]:
    return tuple(full_version.split(".")[:2])
