"""Starting the Spark driver JVM that this process's sessions run on, and using the seconds it takes.

Launching the driver (``spark-submit`` starting a JVM, which then opens the py4j gateway) takes seconds in which
this process only waits for the JVM to say its port. ``sqlext run`` imports the modules its statements need
(the SQL parser and sqlglot, the session extension, the insert, the connectors, Spark's own lazily imported
helpers) in those seconds, on a thread of its own, instead of before the launch or after it. Imports only: the
thread runs no statement, opens no connection, and a module it fails to import is imported again, and its error
raised, where the run needs it.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from sqlext.config import SqlextConfig
from sqlext.spark import class_sharing

log = logging.getLogger(__name__)


def start_driver(conf: Mapping[str, str], *, meanwhile: Iterable[str] = ()) -> None:
    """Start the driver JVM with ``conf`` (its launch settings, such as ``spark.driver.memory``, apply only now),
    unless this process has one already (launched before, or under ``spark-submit``, whose JVM is this process's
    parent); import the modules ``meanwhile`` while it starts. The JVM starts from the driver's class archive
    when there is one (:mod:`sqlext.spark.class_sharing`), and again without it when it could not."""
    from pyspark import SparkConf

    importer = _import_beside(list(meanwhile))
    try:
        launch = SparkConf(loadDefaults=False).setAll(list(conf.items()))
        shared = class_sharing.share_classes(conf, SqlextConfig.load(conf).driver_class_sharing)
        try:
            _ensure_jvm(launch)
        except Exception:
            if shared is None:
                raise
            class_sharing.unusable(shared)
            _ensure_jvm(launch)
    finally:
        if importer is not None:
            importer.join()  # no import left running beside the caller's own


def _import_beside(modules: list[str]) -> threading.Thread | None:
    if not modules:
        return None
    thread = threading.Thread(target=_import_all, args=(modules,), name="sqlext-imports", daemon=True)
    thread.start()
    return thread


def _import_all(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # imported again where it is needed, which raises there
            log.debug("importing %s while the driver starts failed: %s", name, exc)


def _ensure_jvm(launch: Any) -> None:
    """Start the driver JVM, unless there is one, in a session of its own: a signal to this process's group (a
    supervisor's SIGTERM to the group, Ctrl-C) reaches this process, which stops the queries cleanly, and not
    the JVM under them. The JVM still ends with this process: it exits when its stdin, a pipe from here, closes."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    gateway = None
    if SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        gateway = launch_gateway(conf=launch, popen_kwargs={"start_new_session": True})
    SparkContext._ensure_initialized(gateway=gateway, conf=launch)
