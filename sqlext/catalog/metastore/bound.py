"""The programs that run a Hive 2.3 or 3.1 metastore on one address: ``BoundHiveMetaStore.java`` (2.3) and
``BoundHiveMetaStore3.java`` (3.1), next to this module, each with what both share (``MetastoreThriftServer.java``).

Hive 2.3's ``HiveMetaStore.main`` and 3.1's ``startMetaStore`` listen on every interface and have no
setting to change that (``metastore.thrift.bind.host`` exists from Hive 4). Each program serves the same
Hive classes with the server socket bound to the address given. The 2.3 one is built with the package, against
pyspark's jars (``sqlext-metastore.jar``, :mod:`sqlext.javac`). The 3.1 one is compiled at its first start
against the Hive 3.1 jars fetched then, with the Java compiler of the ``java`` that runs the metastore, into a
cache directory named after the sources and those jars: its Hive 3.1 classes and Thrift 0.9 (which
``MetastoreThriftServer.java`` is compiled against too) are in no jar the build has.
"""

from __future__ import annotations

from pathlib import Path

from sqlext import javac
from sqlext.errors import MetastoreError
from sqlext.runtime.paths import pyspark_jars_dir

MAIN_CLASS = "BoundHiveMetaStore"
SOURCE = Path(__file__).resolve().parent / f"{MAIN_CLASS}.java"
SHARED_SOURCE = SOURCE.with_name("MetastoreThriftServer.java")
#: The jar built with the package that holds the 2.3 launcher (and ``TxnTables``).
JAR = "sqlext-metastore.jar"


def classes_dir(java: str, source: Path = SOURCE, jars_dir: Path | None = None) -> Path:
    """The class path entry holding the compiled ``source`` (default ``BoundHiveMetaStore``: the packaged jar; another
    is compiled first if needed, against the jars of ``jars_dir``, default pyspark's)."""
    if source == SOURCE:
        try:
            return javac.packaged_jar(JAR)
        except javac.MissingJarError as exc:
            raise MetastoreError(f"Cannot start the embedded metastore's launcher: {exc.message}") from None
    jars = sorted((jars_dir or pyspark_jars_dir()).glob("*.jar"))
    try:
        return javac.compiled(java, "metastore-launcher", [source, SHARED_SOURCE], jars, f"{source.stem}.class")
    except javac.JavaCompileError as exc:
        if exc.no_compiler:
            raise MetastoreError(
                f"Cannot compile the embedded metastore's launcher ({source.name}), which Hive 3.1 needs: '{java}' "
                "has no Java compiler (module jdk.compiler). Install a full Java 17 runtime or JDK (Debian: "
                "openjdk-17-jre-headless, others: openjdk-17-jdk-headless), use Hive 2.3 (the default) or 4, or set "
                "spark.sqlext.metastore.uris to an existing metastore."
            ) from None
        raise MetastoreError(f"Cannot compile the embedded metastore's launcher {source}:\n{exc}") from None
