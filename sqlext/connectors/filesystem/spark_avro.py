"""Spark's Avro data source (``format("avro")``, jar ``spark-avro``), which reads and writes the files of
``avro`` tables. It is not in pyspark: a session that reads or writes an avro table needs the jar on its
class path (``spark.jars`` with :func:`jar_paths`, ``spark.jars.packages`` with :data:`ARTIFACT`, or ``ADD
JAR``); without it the statement fails before anything runs, saying so (:func:`require`). Nothing else
needs it, so the default install stays without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlext.errors import ValidationError

#: pyspark 4.3.0's own version is not on Maven Central; 4.2.0 is the newest served and runs on Spark 4.3.0
#: (tests/connectors/filesystem/test_avro.py). ``spark.jars.packages`` takes this coordinate as it is.
ARTIFACT = "org.apache.spark:spark-avro_2.13:4.2.0"
PROVIDER_CLASS = "org.apache.spark.sql.avro.AvroFileFormat"


def jar_paths() -> list[Path]:
    """The jars Spark's Avro data source needs beyond pyspark's own (spark-avro alone: Avro itself, xz and
    Scala come with pyspark), fetched from Maven Central the first time (``sqlext.runtime.jars``): for ``spark.jars``
    or ``ADD JAR``."""
    import pyspark

    from sqlext.runtime import jars

    shipped = {_artifact_name(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    fetched = jars.fetch("spark-avro", [ARTIFACT])
    return [jar for jar in sorted(fetched.glob("*.jar")) if _artifact_name(jar) not in shipped]


def _artifact_name(jar: Path) -> str:
    return jar.name.rsplit("-", 1)[0]


def on_classpath(spark: Any) -> bool:
    """True when Spark finds its Avro data source from the calling thread (as ``format("avro")`` looks it up:
    a ``DataSourceRegister`` service of the thread's context class loader)."""
    try:
        jvm = spark._jvm
        conf = spark._jsparkSession.sessionState().conf()
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource("avro", conf)
    except Exception:  # no JVM (Spark Connect) or no such source: both mean "not on the class path"
        return False
    return True


def _session_loader(spark: Any) -> bool:
    """Make the class loader where ``ADD JAR`` put the Avro source the JVM thread's context class loader:
    Spark looks data sources up through the context class loader, and ``ADD JAR`` puts a jar into the
    session's artifact class loader (``spark.sql.artifact.isolation.enabled``) or the shared jar class loader,
    neither of which the thread that writes need have. True when the source is then loadable."""
    session = spark._jsparkSession
    for loader in _loaders(session):
        try:
            spark._jvm.java.lang.Class.forName(PROVIDER_CLASS, False, loader)
        except Exception:  # not in this one
            continue
        spark._jvm.java.lang.Thread.currentThread().setContextClassLoader(loader)
        return True
    return False


def _loaders(session: Any) -> list[Any]:
    found = []
    for get in (lambda: session.artifactManager().classloader(), lambda: session.sharedState().jarClassLoader()):
        try:
            found.append(get())
        except Exception:  # an older Spark without it
            continue
    return found


def require(spark: Any, table: object, doing: str) -> None:
    """Make Spark's Avro source loadable on the calling thread, or fail naming the table, the jar and how
    to add it (``doing``: what the statement does with the table's files, "read" or "write"). Call it on
    the thread that then reads or writes."""
    if getattr(spark, "_jvm", None) is None or on_classpath(spark) or _session_loader(spark):
        return  # Spark Connect: the server's class path is not visible here; Spark's own error names the source
    raise ValidationError(
        f"Table {table} has format 'avro', and Spark's Avro data source, which sqlext uses to {doing} avro "
        f"files, is not on this session's class path: it is the jar {ARTIFACT} (not part of pyspark). Start the "
        f"session with --conf spark.jars.packages={ARTIFACT}, or with --conf spark.jars=<the jars of "
        "sqlext.connectors.filesystem.spark_avro.jar_paths()>, or run ADD JAR '<path of spark-avro_2.13-4.2.0.jar>' "
        "before the statement.",
        value="avro",
    )
