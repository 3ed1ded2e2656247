"""Start, inspect and stop a real Hive Metastore Thrift server: Hive 2.3 from the jars inside pyspark, or 3.1 / 4.x.

The default server is Hive 2.3's metastore (``org.apache.hadoop.hive.metastore.HiveMetaStore``, as shipped in
pyspark's ``jars/``), run by ``java`` as a detached process through :mod:`sqlext.catalog.metastore.bound`, which
binds it to one address: 127.0.0.1 unless told otherwise. ``version`` 3.1 or 4 runs a standalone metastore of that
version from jars fetched once from Maven Central, bound to the same address (:mod:`.versions`). Its Thrift API
has no authentication (anyone who reaches the port may create, alter and drop every database, table and
partition), so another address needs ``insecure_no_auth`` (``--insecure-no-auth``) and is logged as a warning.
Given a Kerberos principal and keytab it takes SASL GSSAPI logins only (:mod:`sqlext.catalog.metastore.secured`);
Hive 2.3 and 3.1 are then Hive's own ``HiveMetaStore`` main, which listens on every interface. With
``notifications`` it keeps Hive's notification log. Its state lives under a home directory:

- ``conf/hive-site.xml``  written from ``conf/hive-site.xml.template`` at every start;
- ``conf/package-sqlext.orm``  Hive 2.3 on Derby: DataNucleus mapping overrides (``versions.Release.derby_mapping``);
- ``conf/core-site.xml``  the Hadoop settings the metastore resolves table locations with (it checks and
  creates them): those of ``$HADOOP_CONF_DIR/core-site.xml`` (or ``hadoop_conf_dir``), overlaid with
  ``hadoop`` (``spark.sqlext.metastore.hadoop.<key>`` keys, ``--hadoop-conf KEY=VALUE``), e.g. a
  ``fs.viewfs.mounttable.*`` mount table, ``fs.defaultFS`` or ``fs.s3a.*`` credentials. Other files of that
  dir (``hdfs-site.xml``) are on the classpath as they are;
- ``metastore_db/``       the Derby database (Derby backend), with Hive's transaction tables (``HIVE_LOCKS``,
  ``TXNS``, ...) created before each start where missing (:mod:`sqlext.catalog.metastore.txn_tables`), which
  the lock and transaction calls need and DataNucleus does not create;
- ``warehouse/``          the default warehouse dir, unless another is given;
- ``hive-version`` and ``hive-release``  the Hive version and release that created the database: another
  version, or a release of it with another schema, is refused (:func:`versions.check_home`);
- ``metastore-<port>.pid`` and ``logs/metastore-<port>.log``.

``start`` returns once the server answers a Thrift call; ``stop`` stops only the process whose pid
file it wrote (and only if that pid is still a HiveMetaStore on that port).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from string import Template
from xml.sax.saxutils import escape

from sqlext import config as cfg
from sqlext.catalog.metastore import bound, kerberos, tls, txn_tables, versions
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.catalog.metastore.secured import ServerKerberos
from sqlext.catalog.metastore.tls import ServerTls
from sqlext.catalog.metastore.versions import HiveVersion
from sqlext.config import SqlextConfig
from sqlext.errors import ConfigError, JavaNotFoundError, MetastoreError
from sqlext.runtime import process
from sqlext.runtime.netbind import connect_host, is_loopback
from sqlext.runtime.paths import default_home, packaged_conf_dir

MAIN_CLASS = bound.MAIN_CLASS
#: The main class of metastores started by earlier sqlext versions (on every interface): still stopped.
HIVE_MAIN_CLASS = versions.HIVE_MAIN_CLASS
DEFAULT_PORT = 9083
#: For Hive's StringInternUtils (Java 17 refused it; an AvroSerDe table's get_fields dropped the connection).
JVM_OPENS = ("--add-opens=java.base/java.net=ALL-UNNAMED",)
DEFAULT_POSTGRES_JAR = Path("/usr/share/java/postgresql.jar")
#: The file in a Derby database's dir saying that its transaction tables were created (for which Hive version).
TXN_TABLES_MARKER = "sqlext-txn-tables"

log = logging.getLogger(__name__)


class Backend(StrEnum):
    """The database behind the metastore."""

    DERBY = "derby"
    POSTGRES = "postgres"


@dataclass(frozen=True)
class MetastoreSettings:
    """Everything needed to run one embedded metastore."""

    port: int = DEFAULT_PORT
    home: Path = field(default_factory=lambda: default_home() / "metastore")
    warehouse: str | None = None
    backend: Backend = Backend.DERBY
    jdbc_url: str | None = None
    user: str = "APP"
    password: str = "mine"
    jdbc_driver_jar: Path | None = None
    #: Hadoop settings (key, value) written into the metastore's core-site.xml.
    hadoop: tuple[tuple[str, str], ...] = ()
    #: A Hadoop conf dir (core-site.xml, hdfs-site.xml); default $HADOOP_CONF_DIR.
    hadoop_conf_dir: Path | None = None
    #: Class path entries after pyspark's jars: the filesystem jars its locations need (hadoop-aws for s3a://).
    classpath: tuple[str, ...] = ()
    #: The address the metastore listens on; not loopback needs ``insecure_no_auth``.
    host: str = "127.0.0.1"
    #: Allow a non-loopback ``host`` although the metastore has no authentication.
    insecure_no_auth: bool = False
    heap: str = "512m"
    startup_timeout_s: float = 180.0
    #: The Hive version run: 2.3 (pyspark's jars, the default), 3.1 or 4 (fetched from Maven Central).
    version: HiveVersion = HiveVersion.V2_3
    #: Kerberos (SASL GSSAPI) with this principal and keytab: Hive's hive.metastore.kerberos.principal and
    #: hive.metastore.kerberos.keytab.file; none: no authentication.
    kerberos_principal: str | None = None
    kerberos_keytab: Path | None = None
    #: TLS (Hive 4's metastore.use.SSL) with this keystore (``spark.sqlext.metastore.keystore.*``); none: plain.
    tls: ServerTls | None = None
    #: Keep the notification log (Hive's DbNotificationListener; its jar is fetched from Maven Central once).
    notifications: bool = False

    @classmethod
    def from_config(cls, config: SqlextConfig) -> MetastoreSettings:
        """Settings of the embedded metastore from the ``spark.sqlext.metastore.*`` keys."""
        v = config.values
        try:
            port = int(v.get(cfg.METASTORE_PORT, "9083"))
            backend = Backend(v.get(cfg.METASTORE_BACKEND, "derby"))
            version = versions.release(v.get(cfg.METASTORE_VERSION, HiveVersion.V2_3.value)).version
        except ValueError as exc:
            raise ConfigError(f"Invalid embedded metastore setting: {exc}.") from None
        home = Path(v[cfg.METASTORE_HOME]) if cfg.METASTORE_HOME in v else default_home() / "metastore"
        postgres = backend is Backend.POSTGRES
        return cls(
            port=port,
            home=home,
            warehouse=v.get(cfg.WAREHOUSE),
            backend=backend,
            jdbc_url=v.get(cfg.METASTORE_JDBC_URL),
            user=v.get(cfg.METASTORE_USER, "hive" if postgres else "APP"),
            password=v.get(cfg.METASTORE_PASSWORD, "hive" if postgres else "mine"),
            jdbc_driver_jar=Path(v[cfg.METASTORE_DRIVER_JAR]) if cfg.METASTORE_DRIVER_JAR in v else None,
            hadoop=tuple(
                sorted(
                    (k[len(cfg.METASTORE_HADOOP_PREFIX) :], val)
                    for k, val in v.items()
                    if k.startswith(cfg.METASTORE_HADOOP_PREFIX)
                )
            ),
            hadoop_conf_dir=Path(v[cfg.METASTORE_HADOOP_CONF_DIR]) if cfg.METASTORE_HADOOP_CONF_DIR in v else None,
            classpath=tuple(entry for entry in v.get(cfg.METASTORE_CLASSPATH, "").split(os.pathsep) if entry),
            version=version,
            kerberos_principal=v.get(kerberos.SERVER_PRINCIPAL) if v.get(kerberos.SERVER_KEYTAB) else None,
            kerberos_keytab=Path(v[kerberos.SERVER_KEYTAB]) if v.get(kerberos.SERVER_KEYTAB) else None,
            tls=ServerTls.from_values(v),
            notifications=cfg.conf_flag(v, cfg.METASTORE_NOTIFICATIONS),
        )

    def __post_init__(self) -> None:
        if (self.kerberos_principal is None) != (self.kerberos_keytab is None):
            raise MetastoreError(
                "A kerberized metastore needs both its principal and its keytab: give --kerberos-principal and "
                f"--kerberos-keytab, or set {kerberos.SERVER_PRINCIPAL} and {kerberos.SERVER_KEYTAB}.",
                option=kerberos.SERVER_KEYTAB if self.kerberos_keytab is None else kerberos.SERVER_PRINCIPAL,
            )
        secured = self.server_kerberos()
        if secured is not None:
            secured.check()
        if self.tls is not None:
            self.tls.check(self.version.value)
        if not 0 < self.port < 65536:
            raise MetastoreError(f"Invalid metastore port {self.port}: expected 1-65535.", value=str(self.port))
        if self.backend is Backend.POSTGRES and not self.jdbc_url:
            raise MetastoreError(
                "The PostgreSQL backend needs a JDBC URL (jdbc:postgresql://host:port/database): "
                "give --jdbc-url or set spark.sqlext.metastore.jdbc-url.",
                option="jdbc-url",
            )

    def server_kerberos(self) -> ServerKerberos | None:
        """Its Kerberos settings, when kerberized."""
        if self.kerberos_principal is None or self.kerberos_keytab is None:
            return None
        return ServerKerberos(self.kerberos_principal, self.kerberos_keytab)

    @property
    def uri(self) -> str:
        """Where clients on this machine reach it."""
        return f"thrift://{connect_host(self.host)}:{self.port}"

    def check_bind(self) -> None:
        """Refuse a non-loopback ``host`` unless ``insecure_no_auth`` says it is meant."""
        if self.insecure_no_auth or is_loopback(self.host):
            return
        raise MetastoreError(
            f"Refusing to start the Hive Metastore on {self.host}: its Thrift API has no authentication, so "
            f"anyone who reaches port {self.port} there could create, alter and drop every database, table and "
            "partition registered in it, or point a table at another location. Keep the default 127.0.0.1 "
            "(reach it from other machines through an SSH tunnel), or, on a network you trust, pass "
            "--insecure-no-auth.",
            option="host",
            value=self.host,
        )

    @property
    def warehouse_uri(self) -> str:
        return self.warehouse or (self.home / "warehouse").resolve().as_uri()

    @property
    def pid_file(self) -> Path:
        return self.home / f"metastore-{self.port}.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / f"metastore-{self.port}.log"

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    @property
    def derby_dir(self) -> Path:
        """The Derby database's dir (Derby backend)."""
        return self.home / "metastore_db"

    def connection(self) -> tuple[str, str, Path | None]:
        """(JDBC URL, driver class, extra driver jar) of the backend."""
        if self.backend is Backend.POSTGRES:
            assert self.jdbc_url is not None
            return self.jdbc_url, "org.postgresql.Driver", self.jdbc_driver_jar or DEFAULT_POSTGRES_JAR
        return (
            f"jdbc:derby:;databaseName={self.derby_dir.resolve()};create=true",
            "org.apache.derby.jdbc.EmbeddedDriver",
            None,
        )


@dataclass(frozen=True)
class MetastoreStatus:
    """What ``status`` found at a port."""

    uri: str
    answering: bool
    pid: int | None
    ours: bool

    def describe(self) -> str:
        if self.answering and self.ours:
            return f"running at {self.uri} (pid {self.pid})"
        if self.answering:
            return f"a metastore not started from this home answers at {self.uri}"
        if self.pid is not None:
            return f"process {self.pid} started from this home is alive but does not answer at {self.uri}"
        return f"not running at {self.uri}"


@dataclass(frozen=True)
class StartResult:
    uri: str
    pid: int | None
    already_running: bool


def find_java() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise JavaNotFoundError(
            "Java is required to run the embedded Hive Metastore, but no 'java' was found on PATH "
            "and JAVA_HOME is unset. Install Java 17 (e.g. 'apt-get install openjdk-17-jre-headless') "
            "or set spark.sqlext.metastore.uris to an existing metastore."
        )
    return found


def status(settings: MetastoreSettings) -> MetastoreStatus:
    """Report whether a metastore answers at the settings' port and whether this home started it."""
    pid = _live_pid(settings)
    return MetastoreStatus(settings.uri, _answers(settings, timeout_s=5.0), pid, pid is not None)


def start(settings: MetastoreSettings) -> StartResult:
    """Start the metastore and wait until it answers a Thrift call; a no-op if one already answers.

    Raises :class:`JavaNotFoundError` without Java, :class:`MetastoreError` when the port is held by
    something that is not a metastore or the server dies on start (with the tail of its log).
    """
    settings.check_bind()
    current = status(settings)
    if current.answering:
        return StartResult(settings.uri, current.pid, already_running=True)
    if current.pid is not None:
        # Ours, alive, not answering yet: a concurrent start; wait for it rather than start twice.
        return _wait_until_answering(settings, current.pid)
    if process.port_open(connect_host(settings.host).strip("[]"), settings.port):
        raise MetastoreError(
            f"Port {settings.port} on {settings.host} is taken by a process that is not a Hive Metastore; "
            "choose another port (--port) or stop that process."
        )
    java = find_java()
    versions.check_home(settings.home, settings.version)
    if not is_loopback(settings.host):
        log.warning(
            "The Hive Metastore listens on %s:%d without authentication: anyone who reaches it can create, "
            "alter and drop every database, table and partition registered in it (--insecure-no-auth).",
            settings.host,
            settings.port,
        )
    command = _command(settings, java)
    _create_txn_tables(settings, java)
    pid = process.spawn(command, settings.log_file, settings.home)
    settings.pid_file.write_text(str(pid))
    return _wait_until_answering(settings, pid)


def stop(settings: MetastoreSettings, timeout_s: float = 30.0) -> bool:
    """Stop the metastore this home started on this port; return False if there was none."""
    pid = _live_pid(settings)
    if pid is None:
        settings.pid_file.unlink(missing_ok=True)
        return False
    process.stop_group(pid, timeout_s)
    settings.pid_file.unlink(missing_ok=True)
    return True


def _command(settings: MetastoreSettings, java: str) -> list[str]:
    release = versions.release(settings.version)
    jars_dir = release.jars_dir()
    settings.home.mkdir(parents=True, exist_ok=True)
    secured = settings.server_kerberos()
    listener, listener_classpath = release.notification_listener() if settings.notifications else ((), ())
    security = listener + (secured.hive_properties() if secured is not None else ())
    if settings.tls is not None:
        security += settings.tls.hive_properties()
    _write_hive_site(settings, release.host_properties(settings.host) + _mapping(settings, release) + security)
    jdbc_url, _, driver_jar = settings.connection()
    classpath = [str(settings.conf_dir.resolve())]
    hadoop_dir = _hadoop_conf_dir(settings)
    if hadoop_dir is not None:
        classpath.append(str(hadoop_dir.resolve()))
    own_main = secured is not None and release.bound_source is not None
    if release.bound_source is not None and not own_main:
        classpath.append(str(bound.classes_dir(java, release.bound_source, jars_dir)))
    classpath += [str(jars_dir / "*"), *listener_classpath, *settings.classpath]
    if driver_jar is not None:
        if not driver_jar.is_file():
            raise MetastoreError(
                f"JDBC driver jar {driver_jar} not found for {jdbc_url}; install Debian's "
                "libpostgresql-jdbc-java or give --jdbc-driver-jar.",
                value=str(driver_jar),
            )
        classpath.append(str(driver_jar))
    log4j = packaged_conf_dir() / "log4j2.properties"
    return [
        java,
        f"-Xmx{settings.heap}",
        # Without this selector Hive's log4j2 setup looks for the LMAX disruptor and dies.
        "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
        f"-Dlog4j2.configurationFile={log4j.resolve().as_uri()}",
        f"-Dderby.stream.error.file={(settings.home / 'logs' / 'derby.log').resolve()}",
        *JVM_OPENS,
        *(secured.jvm_options() if secured is not None else ()),
        "-cp",
        os.pathsep.join(classpath),
        # Kerberized, 2.3 and 3.1 run Hive's own server (it has SASL, the bound launcher does not), which listens
        # on every interface: each connection authenticates.
        HIVE_MAIN_CLASS if own_main else release.main_class,
        *(() if release.bind_host_key or own_main else ("--host", settings.host)),
        "-p",
        str(settings.port),
    ]


def _mapping(settings: MetastoreSettings, release: versions.Release) -> tuple[tuple[str, str], ...]:
    """Put the release's DataNucleus mapping overrides (Derby backend) in the conf dir, which is first on the
    metastore's class path; return the setting that names them."""
    if release.derby_mapping is None or settings.backend is not Backend.DERBY:
        return ()
    settings.conf_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(release.derby_mapping, settings.conf_dir / release.derby_mapping.name)
    name = release.derby_mapping.stem.removeprefix("package-")
    return (("datanucleus.mapping", name),)


def _create_txn_tables(settings: MetastoreSettings, java: str) -> tuple[str, ...]:
    """Create Hive's transaction tables the database lacks, through the ``hive-site.xml`` just written (the lock and
    transaction calls need them; DataNucleus does not create them); return those created."""
    release = versions.release(settings.version)
    # A Derby database that got them says so in a file of its own dir, which goes with it: the check is a JVM
    # run (about 1 s) that a start need not repeat. A PostgreSQL database is checked at every start.
    marker = settings.derby_dir / TXN_TABLES_MARKER if settings.backend is Backend.DERBY else None
    done = marker is not None and marker.is_file() and marker.read_text().strip() == release.version.value
    if done and not settings.notifications:  # the notification log's sequence: homes made before may lack it
        return ()
    _, _, driver_jar = settings.connection()
    drivers = [str(driver_jar)] if driver_jar is not None else [str(j) for j in release.jars_dir().glob("derby*.jar")]
    created = txn_tables.ensure(
        java,
        (settings.conf_dir / "hive-site.xml").resolve(),
        txn_tables.ddl_file(release.version.value, settings.backend.value),
        drivers,
        (settings.home / "logs" / "derby.log").resolve(),
    )
    if marker is not None:
        marker.write_text(release.version.value + "\n")
    return created


def _write_hive_site(settings: MetastoreSettings, extra: tuple[tuple[str, str], ...] = ()) -> None:
    jdbc_url, driver_class, _ = settings.connection()
    template = Template((packaged_conf_dir() / "hive-site.xml.template").read_text())
    values = {
        "connection_url": jdbc_url,
        "driver_class": driver_class,
        "user": settings.user,
        "password": settings.password,
        "warehouse": settings.warehouse_uri,
        "port": str(settings.port),
    }
    settings.conf_dir.mkdir(parents=True, exist_ok=True)
    xml = template.substitute({key: escape(value) for key, value in values.items()})
    lines = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n" for k, v in extra)
    xml = xml.replace("</configuration>", lines + "</configuration>")
    (settings.conf_dir / "hive-site.xml").write_text(xml)
    _write_core_site(settings)


def _hadoop_conf_dir(settings: MetastoreSettings) -> Path | None:
    explicit = settings.hadoop_conf_dir or (
        Path(os.environ["HADOOP_CONF_DIR"]) if os.environ.get("HADOOP_CONF_DIR") else None
    )
    return explicit if explicit is not None and explicit.is_dir() else None


def _write_core_site(settings: MetastoreSettings) -> None:
    """The conf dir comes first on the classpath, so its core-site.xml is the one Hadoop reads: it holds the
    Hadoop conf dir's properties overlaid with the explicit settings (none: no file, the dir's own is read)."""
    target = settings.conf_dir / "core-site.xml"
    secured = settings.server_kerberos()
    if not settings.hadoop and secured is None:
        target.unlink(missing_ok=True)
        return
    properties: dict[str, str] = {}
    hadoop_dir = _hadoop_conf_dir(settings)
    if hadoop_dir is not None and (hadoop_dir / "core-site.xml").is_file():
        properties.update(_read_properties(hadoop_dir / "core-site.xml"))
    properties.update(dict(settings.hadoop))
    properties.update(dict(secured.hadoop_properties() if secured is not None else ()))
    lines = ['<?xml version="1.0"?>', "<configuration>"]
    for key, value in properties.items():
        lines.append(f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>")
    lines.append("</configuration>")
    target.write_text("\n".join(lines) + "\n")


def _read_properties(path: Path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise MetastoreError(f"Cannot read the Hadoop settings in {path}: {exc}.", value=str(path)) from None
    return {
        prop.findtext("name", "").strip(): prop.findtext("value", "") or ""
        for prop in root.iter("property")
        if prop.findtext("name")
    }


def _wait_until_answering(settings: MetastoreSettings, pid: int) -> StartResult:
    deadline = time.monotonic() + settings.startup_timeout_s
    while time.monotonic() < deadline:
        if not process.alive(pid):
            settings.pid_file.unlink(missing_ok=True)
            raise MetastoreError(
                f"The Hive Metastore died on start (see {settings.log_file}). "
                f"Last lines:\n{process.log_tail(settings.log_file)}"
            )
        if _answers(settings, timeout_s=2.0):
            return StartResult(settings.uri, pid, already_running=False)
        time.sleep(0.25)
    stop(settings)
    raise MetastoreError(
        f"The Hive Metastore did not answer at {settings.uri} within {settings.startup_timeout_s:g} s "
        f"and was stopped (see {settings.log_file}). Last lines:\n{process.log_tail(settings.log_file)}"
    )


def _answers(settings: MetastoreSettings, timeout_s: float) -> bool:
    """True when a Hive Metastore answers a Thrift call at the settings' URI (as itself, when kerberized)."""
    retry = RetryPolicy(deadline_s=0.0, socket_timeout_s=timeout_s)
    try:
        secured = settings.server_kerberos()
        auth = secured.own_auth() if secured is not None else kerberos.MetastoreAuth()
        own_tls = tls.MetastoreTls(enabled=True, verify=False) if settings.tls is not None else tls.MetastoreTls()
        with MetastoreClient(settings.uri, retry, auth, own_tls) as client:
            client.get_all_databases()
    except Exception:  # refused, reset, or a Thrift peer that is not a metastore
        return False
    return True


def _live_pid(settings: MetastoreSettings) -> int | None:
    """The pid in this home's pid file, if that process is alive and is our metastore on that port."""
    pids = (process.live_pid(settings.pid_file, main, str(settings.port)) for main in versions.main_classes())
    return next((pid for pid in pids if pid is not None), None)
