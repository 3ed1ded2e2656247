"""A real Trino for tests: one coordinator-only node on loopback whose only plugin is the Hive connector,
fetched once from Maven Central (:data:`SERVER`, ``sqlext.runtime.jars``: its ``lib`` and ``plugin/hive`` kept) and run
on the newer JDK installed beside the default Java 17 (Trino 476 needs Java 24 or later); started once per
test session by the fixture :func:`trino`, with a catalog ``hive`` on the session's metastore.
:meth:`TrinoServer.add_catalog` adds a catalog on any other metastore (Trino runs with dynamic catalogs).

File system: the legacy Hadoop one (``fs.hadoop.enabled``), whose ``LocalFileSystem`` reads the ``file:``
locations of sqlext's tables and partitions. Trino 476's native local file system (``fs.native-local.enabled``,
``local.location``) was tried first: it takes ``file:`` locations but lists a directory's files as
``local:///...``, and the Hive connector then finds no file in any partition (every query read 0 rows, with no
error). The Hadoop file system lives in ``plugin/hive/hdfs/``, which only the full server tarball carries
(821 MB; the ``trino-server-core`` tarball plus the ``trino-hive`` plugin zip, 452 MB, lack it).
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.runtime import jars
from tests.support.daemons import start_daemon, stop_daemon
from tests.support.waiting import free_port

VERSION = "476"
#: The server with every plugin (821 MB); of it ``lib/`` (90 MB) and ``plugin/hive/`` (280 MB) are kept.
SERVER = f"io.trino:trino-server:{VERSION}"
#: The oldest Java Trino 476 starts on.
MIN_JAVA = 24
#: Where JDKs are installed; the newest of at least MIN_JAVA runs Trino (``SQLEXT_TRINO_JAVA_HOME`` wins).
JDK_ROOTS = (Path("/usr/lib/jvm"), Path("/opt"), Path("/opt/java"))
_JVM_OPTIONS = [
    "-Xmx1G",
    "-XX:+UseG1GC",
    "-XX:+ExitOnOutOfMemoryError",
    # C1 only: a test's queries are small, and the JIT's C2 compiles would take the 2 cores at start-up.
    "-XX:TieredStopAtLevel=1",
    "-Djdk.attach.allowAttachSelf=true",
    "-XX:+EnableDynamicAgentLoading",
    "--enable-native-access=ALL-UNNAMED",
    "-Dfile.encoding=UTF-8",
]


class TrinoQueryFailed(Exception):
    """A query Trino ran and failed: the query, Trino's error and the chain of its causes."""


@dataclass(frozen=True)
class TrinoInstall:
    """Trino's jars (``lib``) and a plugin directory holding the Hive connector alone (``plugins``)."""

    lib: Path
    plugins: Path


def trino_install() -> TrinoInstall:
    """Trino's jars and its Hive plugin, fetched and unpacked the first time."""
    root = f"trino-server-{VERSION}"
    unpacked = jars.fetch_archive("trino-server", SERVER, "tar.gz", keep=[f"{root}/lib/", f"{root}/plugin/hive/"])
    return TrinoInstall(unpacked / root / "lib", unpacked / root / "plugin")


def _java_major(home: Path) -> int:
    """The major version a JDK's ``release`` file names (0 if it names none)."""
    try:
        text = (home / "release").read_text()
    except OSError:
        return 0
    found = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def trino_java(environ: Mapping[str, str] | None = None) -> Path | None:
    """The ``java`` that runs Trino: ``$SQLEXT_TRINO_JAVA_HOME``'s, else the newest JDK of at least
    :data:`MIN_JAVA` under :data:`JDK_ROOTS`; None if there is none."""
    explicit = (environ if environ is not None else os.environ).get("SQLEXT_TRINO_JAVA_HOME")
    homes = [Path(explicit)] if explicit else [h for root in JDK_ROOTS if root.is_dir() for h in root.iterdir()]
    usable = [(h, _java_major(h)) for h in homes if (h / "bin" / "java").is_file() and _java_major(h) >= MIN_JAVA]
    if not usable:
        return None
    home, _ = max(usable, key=lambda pair: (pair[1], pair[0].name))
    return home / "bin" / "java"


def hive_catalog_properties(metastore_uri: str) -> dict[str, str]:
    """A Hive catalog on ``metastore_uri`` that reads sqlext's ``file:`` locations (see the module's
    docstring) and timestamps at microseconds, as Spark writes them (Trino's default, milliseconds,
    rounds them: a difference of Trino's configuration, not of the files), and ORC columns by name, as every
    other reader finds them (Trino's default, by position, reads the values of another column after an
    ``ALTER TABLE`` dropped or inserted one: seen in ``test_trino.py``)."""
    return {
        "hive.metastore.uri": metastore_uri,
        "fs.hadoop.enabled": "true",
        "hive.timestamp-precision": "MICROSECONDS",
        "hive.orc.use-column-names": "true",
    }


def _config(port: int) -> dict[str, str]:
    return {
        "coordinator": "true",
        "node-scheduler.include-coordinator": "true",
        "node.environment": "sqlext_tests",
        "node.id": str(uuid.uuid4()),
        "node.bind-ip": "127.0.0.1",
        "node.internal-address": "127.0.0.1",
        "http-server.http.port": str(port),
        "discovery.uri": f"http://127.0.0.1:{port}",
        "catalog.management": "dynamic",
        "catalog.store": "memory",
        "query.max-memory": "512MB",
    }


@dataclass
class TrinoServer:
    """One Trino node (coordinator and worker) on loopback: its home (config, log) and port."""

    home: Path
    port: int
    java: Path
    install: TrinoInstall
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log(self) -> Path:
        return self.home / "server.log"

    def start(self, timeout_s: float = 300) -> None:
        """Start the server and wait until it answers ``SELECT 1``."""
        etc = self.home / "etc"
        etc.mkdir(parents=True, exist_ok=True)
        settings = {**_config(self.port), "plugin.dir": str(self.install.plugins)}
        (etc / "config.properties").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        command = [
            str(self.java),
            *_JVM_OPTIONS,
            f"-Dconfig={etc / 'config.properties'}",
            "-cp",
            f"{self.install.lib}/*",
            "io.trino.server.TrinoServer",
        ]
        self.process = start_daemon(command, self.log, self.answers, "Trino", timeout_s, cwd=self.home)

    def stop(self) -> None:
        stop_daemon(self.process)

    def connect(self, catalog: str = "hive", schema: str = "default", attempts: int = 3) -> Any:
        """A DB-API connection of Trino's own Python client."""
        import trino

        return trino.dbapi.connect(
            host="127.0.0.1",
            port=self.port,
            user="sqlext-tests",
            catalog=catalog,
            schema=schema,
            max_attempts=attempts,
            request_timeout=60,
        )

    def query(self, sql: str, catalog: str = "hive", attempts: int = 3) -> list[list[Any]]:
        """Every row ``sql`` returns (a statement that returns none gives ``[]``). A failed query raises
        :class:`TrinoQueryFailed`, with the chain of Trino's causes (the server logs none of them)."""
        import trino

        connection = self.connect(catalog, attempts=attempts)
        try:
            cursor = connection.cursor()
            cursor.execute(sql)
            return [list(row) for row in cursor.fetchall()]
        except trino.exceptions.TrinoQueryError as exc:
            causes = " / ".join(_causes(exc.failure_info or {})) or "none given"
            raise TrinoQueryFailed(f"{sql}\n{exc.error_name}: {exc.message}\ncauses: {causes}") from exc
        finally:
            connection.close()

    def answers(self) -> bool:
        """True once the server runs queries (before, it refuses connections, then answers that it is
        still starting)."""
        import requests
        import trino

        try:
            return self.query("SELECT 1", catalog="system", attempts=1) == [[1]]
        except (requests.RequestException, trino.exceptions.Error, trino.exceptions.HttpError, TrinoQueryFailed):
            return False

    def add_catalog(self, name: str, metastore_uri: str) -> None:
        """A Hive catalog ``name`` on ``metastore_uri`` (:func:`hive_catalog_properties`)."""
        properties = ", ".join(f"\"{k}\" = '{v}'" for k, v in hive_catalog_properties(metastore_uri).items())
        self.query(f"CREATE CATALOG {name} USING hive WITH ({properties})", catalog="system")

    def stats(self, relation: str, catalog: str = "hive") -> dict[str | None, list[Any]]:
        """``SHOW STATS FOR relation`` by column name (the summary row is under None)."""
        return {row[0]: row[1:] for row in self.query(f"SHOW STATS FOR {relation}", catalog)}


def _causes(failure: Mapping[str, Any]) -> list[str]:
    """The type and message of each cause in a Trino failure's chain."""
    causes = []
    cause = failure.get("cause")
    while cause:
        causes.append(f"{cause.get('type')}: {cause.get('message')}")
        cause = cause.get("cause")
    return causes


@pytest.fixture(scope="module")
def trino(metastore: MetastoreSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrinoServer]:
    """A Trino server for the module, with the catalog ``hive`` on the session's metastore. Not kept for the
    session: the worker's later tests need not share its two cores with an idle Trino JVM."""
    java = trino_java()
    if java is None:
        roots = ", ".join(map(str, JDK_ROOTS))
        pytest.skip(f"Trino {VERSION} needs Java {MIN_JAVA}+: none under {roots} (or set SQLEXT_TRINO_JAVA_HOME)")
    server = TrinoServer(tmp_path_factory.mktemp("trino"), free_port(), java, trino_install())
    try:
        server.start()
        server.add_catalog("hive", metastore.uri)
        yield server
    finally:
        server.stop()
