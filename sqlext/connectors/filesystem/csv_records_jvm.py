"""The csv source's record joining on the JVM: ``CsvRecordJoiner.java``, the twin of
:class:`sqlext.connectors.filesystem.csv_records.RecordJoiner`, run by ``Dataset.mapPartitions`` in the executors'
JVMs. It gives the same records by the same rules, without sending every line to a Python worker and back (the
Python pass cost a second or more per process to start its workers, and a copy of every line and its file's path).

The class is compiled at first use (:mod:`sqlext.javac`) against the running JVM's jars, loaded on the driver by a
class loader of its own, and added to the session's jars for the executors (``addJar``). A session without a JVM
of its own (Spark Connect), or a JVM with no Java compiler, joins records in Python instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlext import javac
from sqlext.catalog.csv_text import CsvTextForm

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("CsvRecordJoiner.java")
CLASS = "io.sqlext.csv.CsvRecordJoiner"
JAR = "sqlext-csv-records.jar"

_lock = threading.Lock()
#: SparkContext (its JVM object's id, its application) -> the joiner's class there, or None where it cannot load.
_loaded: dict[tuple[int, str], Any] = {}


def jvm_records(framed: DataFrame, width: int, form: CsvTextForm, hadoop: Mapping[str, str]) -> DataFrame | None:
    """``framed`` (the line, the carried columns, then the file and range columns) as one row per record: the
    record and the carried columns (``width`` columns in all, as the first ``width`` of ``framed``). None when
    the JVM cannot run the joiner (then the caller joins in Python)."""
    joiner_class = _joiner_class(framed)
    if joiner_class is None:
        return None
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame
    from pyspark.sql.types import StructType

    assert form.quote is not None
    context: Any = framed.sparkSession.sparkContext
    jvm = context._jvm
    joiner = joiner_class.getDeclaredConstructor(context._gateway.new_array(jvm.java.lang.Class, 0)).newInstance(None)
    settings = {
        "more": form.record_pattern(more_text=True),
        "last": form.record_pattern(more_text=False),
        "quote": form.quote,
        "escape": form.escape,
        "width": str(width),
        **hadoop,
    }
    for key, value in settings.items():
        joiner.set(key, value)
    schema = StructType(framed.schema.fields[:width])
    encoder = jvm.org.apache.spark.sql.Encoders.row(jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()))
    return ClassicFrame(framed._jdf.mapPartitions(joiner, encoder), framed.sparkSession)


def _joiner_class(frame: DataFrame) -> Any:
    """The joiner's class in the frame's JVM (compiled, loaded and added to the session's jars at first use), or
    None (no JVM here: Spark Connect; or it did not compile)."""
    if not hasattr(frame, "_jdf"):
        return None
    context = frame.sparkSession.sparkContext
    with _lock:
        # A new SparkContext (in the same JVM) needs the jar added again: its executors start without it.
        key = (id(context._jsc), context.applicationId)
        if key not in _loaded:
            _loaded[key] = _load(context)
        return _loaded[key]


def _load(context: Any) -> Any:
    jvm = context._jvm
    system = jvm.java.lang.System
    java = str(system.getProperty("java.home")) + "/bin/java"
    jars = sorted({Path(p) for p in str(system.getProperty("java.class.path")).split(":") if p.endswith(".jar")})
    try:
        classes = javac.compiled(java, "csv-records", [SOURCE], jars, JAR)
    except javac.JavaCompileError as exc:
        log.warning("csv records are joined in Python: sqlext's JVM joiner did not compile: %s", exc)
        return None
    jar = javac.jar_of(classes, JAR)
    urls = context._gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
    parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    loader = jvm.java.net.URLClassLoader(urls, parent)
    context._jsc.addJar(str(jar))
    log.info("csv records are joined on the JVM (%s)", jar)
    return jvm.java.lang.Class.forName(CLASS, True, loader)
