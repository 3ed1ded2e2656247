"""The metastore of a session built by ``sqlext.spark_session()``: the configured one, or the embedded one.

An embedded metastore the session itself started (none answered on its port) is stopped when the Python process
exits, as a user expects of something a call started; ``keep_metastore=True`` (``sqlext run`` passes it: the
commands after a run, ``sqlext commits`` or the next run, use it) leaves it running and says so with how to stop
it. One that was already running is never stopped. Spark's own ``CREATE DATABASE`` puts a database under
``spark.sql.warehouse.dir`` (Spark's default: ``./spark-warehouse`` of the current directory): unless it is set,
it follows ``spark.sqlext.warehouse``, else the embedded metastore's own warehouse (``<home>/warehouse``)."""

from __future__ import annotations

import atexit
import logging
from dataclasses import dataclass

from sqlext.catalog.metastore import launcher
from sqlext.config import WAREHOUSE, SqlextConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionMetastore:
    """Where a session's catalog lives."""

    uri: str
    #: Where databases go that no location is given for (None: Spark's default, for an external metastore).
    warehouse: str | None
    #: The embedded metastore this session started, if it did.
    started: launcher.MetastoreSettings | None = None


def session_metastore(config: SqlextConfig, *, keep_metastore: bool = False) -> SessionMetastore:
    """The configured metastore, or the embedded one, started now if none answers (see the module's doc)."""
    if config.metastore_uris:
        return SessionMetastore(config.metastore_uris, config.get(WAREHOUSE))
    settings = launcher.MetastoreSettings.from_config(config)
    result = launcher.start(settings)
    metastore = SessionMetastore(result.uri, settings.warehouse_uri, None if result.already_running else settings)
    if metastore.started is not None:
        if keep_metastore:
            log.info(
                "The embedded Hive Metastore started at %s keeps running after this process; stop it with "
                "'sqlext metastore stop --port %d --home %s'",
                result.uri,
                settings.port,
                settings.home,
            )
        else:
            atexit.register(stop_started, settings)
    return metastore


def stop_started(settings: launcher.MetastoreSettings) -> None:
    """Stop the embedded metastore a session started (at the process's exit)."""
    if launcher.stop(settings):
        log.info("stopped the embedded Hive Metastore this process started at %s", settings.uri)
