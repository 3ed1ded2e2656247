"""sqlext's Java classes in a running Spark session: a jar built with the package (:mod:`sqlext.javac`), loaded
on the driver by a class loader of its own and added to the session's jars, so that the executors load it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def context_key(context: Any) -> tuple[int, str]:
    """What a jar added to a running SparkContext is remembered by: its JVM object and its application (a new
    SparkContext in the same process, which may reuse the object's id, starts without the jars)."""
    return id(context._jsc), str(context.applicationId)


def added_jar(context: Any, jar: Path, parent: Any) -> Any:
    """A class loader of ``jar`` on the driver (over ``parent``), the jar added to the session's jars."""
    jvm = context._jvm
    urls = context._gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, parent)
    context._jsc.addJar(str(jar))
    return loader
