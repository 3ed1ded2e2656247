"""sqlext's Java classes in a running Spark session: compiled at first use (:mod:`sqlext.javac`) by the driver
JVM's own ``java`` against its own class path, put in a jar, loaded on the driver by a class loader of their own
and added to the session's jars, so that the executors load them too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlext import javac


def context_key(context: Any) -> tuple[int, str]:
    """What a jar added to a running SparkContext is remembered by: its JVM object and its application (a new
    SparkContext in the same process, which may reuse the object's id, starts without the jars)."""
    return id(context._jsc), str(context.applicationId)


def compiled_jar(context: Any, name: str, sources: Sequence[Path], jar: str, extra: Iterable[Path] = ()) -> Path:
    """The jar ``jar`` of ``sources`` compiled against the driver JVM's jars (and ``extra``), in the cache dir
    ``name-<digest>``. Raises :class:`javac.JavaCompileError`."""
    system = context._jvm.java.lang.System
    java = str(system.getProperty("java.home")) + "/bin/java"
    class_path = [Path(p) for p in str(system.getProperty("java.class.path")).split(os.pathsep) if p]
    jars = sorted({*extra, *(p for p in class_path if p.suffix == ".jar")})
    return javac.jar_of(javac.compiled(java, name, sources, jars, jar), jar)


def added_jar(context: Any, jar: Path, parent: Any) -> Any:
    """A class loader of ``jar`` on the driver (over ``parent``), the jar added to the session's jars."""
    jvm = context._jvm
    urls = context._gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, parent)
    context._jsc.addJar(str(jar))
    return loader
