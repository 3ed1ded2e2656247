"""Hive's transaction tables in the embedded metastore's database, created before each start.

The lock and transaction calls of the metastore's Thrift API (``lock``, ``check_lock``, ``unlock``,
``show_locks``, ``heartbeat``, ``open_txns``, ``commit_txn``, ...; Apache Iceberg's Hive catalog takes a
``lock`` on every commit) read and write tables (``TXNS``, ``HIVE_LOCKS``, ``NEXT_LOCK_ID``,
``COMPACTION_QUEUE``, ...) that Hive's ``schematool`` scripts create and that no class of Hive's object model
maps, so DataNucleus's ``datanucleus.schema.autoCreateAll`` never creates them. Without them each of those calls
fails (``lock`` answers "Internal error processing lock"; the metastore logs "Table/View 'NEXT_LOCK_ID' does not
exist").

Before the metastore's JVM starts, :func:`ensure` runs ``TxnTables.java`` (plain JDBC, on the backend's driver and
the connection of the home's ``hive-site.xml``) over the release's DDL, ``txn/hive-<version>.<backend>.sql``
beside this module (written from Hive's own schema scripts; each file names the one it follows). It
creates, in one database transaction, each table the database lacks, with its indexes and first rows: a new
home gets all of them, a home made before sqlext created them gets them at its next start, a home that has
them is left as it is, and a failed statement rolls back every table of that run and fails the start with
an error naming the table.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from sqlext import javac
from sqlext.errors import MetastoreError

log = logging.getLogger(__name__)

_HERE = Path(__file__).resolve().parent
#: The jar built with the package that holds ``TxnTables.java`` (:mod:`sqlext.javac`).
JAR = "sqlext-metastore.jar"
DDL_DIR = _HERE / "txn"
#: How long creating the tables may take (a JVM start, a Derby boot, a dozen statements).
TIMEOUT_S = 120.0


def ddl_file(version: str, backend: str) -> Path:
    """The DDL of ``version``'s transaction tables on ``backend`` (``derby``, ``postgres``)."""
    path = DDL_DIR / f"hive-{version}.{backend}.sql"
    if not path.is_file():
        raise MetastoreError(f"sqlext has no DDL for Hive {version}'s transaction tables on {backend}: {path}.")
    return path


def ensure(java: str, hive_site: Path, ddl: Path, driver_classpath: Sequence[str], derby_log: Path) -> tuple[str, ...]:
    """Create the tables of ``ddl`` that the database of ``hive_site`` lacks; return those created.

    ``driver_classpath`` holds the JDBC driver's jars. Raises :class:`MetastoreError` with the program's
    message (naming the table) when a statement fails, nothing of this run being left created.
    """
    classes = _compiled()
    derby_log.parent.mkdir(parents=True, exist_ok=True)
    command = [
        java,
        "-Xmx128m",
        # A short run: the C1 compiler and the serial collector start it about a third faster (1.0 s against 1.5).
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        f"-Dderby.stream.error.file={derby_log}",
        "-cp",
        os.pathsep.join([str(classes), *driver_classpath]),
        "TxnTables",
        str(hive_site),
        str(ddl),
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise MetastoreError(
            f"Creating Hive's transaction tables ({ddl.name}) did not finish within {TIMEOUT_S:g} s."
        ) from None
    if result.returncode != 0:
        raise MetastoreError(
            "The embedded Hive Metastore was not started: " + (result.stderr.strip() or result.stdout.strip())
        )
    created = tuple(line.removeprefix("created ") for line in result.stdout.splitlines() if line.startswith("created "))
    if created:
        log.info("Created Hive's transaction tables %s (%s).", ", ".join(created), ddl.name)
    return created


def _compiled() -> Path:
    try:
        return javac.packaged_jar(JAR)
    except javac.MissingJarError as exc:
        raise MetastoreError(f"Cannot create Hive's transaction tables: {exc.message}") from None
