"""The programs that run a Hive 2.3 or 3.1 metastore on one address: ``BoundHiveMetaStore.java`` (2.3) and
``BoundHiveMetaStore3.java`` (3.1), next to this module, each with what both share (``MetastoreThriftServer.java``).

Hive 2.3's ``HiveMetaStore.main`` and 3.1's ``startMetaStore`` listen on every interface and have no
setting to change that (``metastore.thrift.bind.host`` exists from Hive 4). Each program serves the same
Hive classes with the server socket bound to the address given. It is compiled once, against the jars it
runs with (pyspark's for 2.3, the fetched ones for 3.1), with the Java compiler of the ``java`` that runs
the metastore, into a cache directory named after the sources and the jars they were compiled against
(:mod:`sqlext.javac`).
"""

from __future__ import annotations

from pathlib import Path

from sqlext import javac
from sqlext.errors import MetastoreError
from sqlext.paths import pyspark_jars_dir

MAIN_CLASS = "BoundHiveMetaStore"
SOURCE = Path(__file__).resolve().parent / f"{MAIN_CLASS}.java"
SHARED_SOURCE = SOURCE.with_name("MetastoreThriftServer.java")


def classes_dir(java: str, source: Path = SOURCE, jars_dir: Path | None = None) -> Path:
    """The directory holding the compiled ``source`` (default ``BoundHiveMetaStore``, against pyspark's jars,
    else against the jars of ``jars_dir``), compiling it first if needed."""
    jars = sorted((jars_dir or pyspark_jars_dir()).glob("*.jar"))
    try:
        return javac.compiled(java, "metastore-launcher", [source, SHARED_SOURCE], jars, f"{source.stem}.class")
    except javac.JavaCompileError as exc:
        if exc.no_compiler:
            raise MetastoreError(
                f"Cannot compile the embedded metastore's launcher ({source.name}): '{java}' has no Java compiler "
                "(module jdk.compiler). Install a full Java 17 runtime or JDK (Debian: openjdk-17-jre-headless, "
                "others: openjdk-17-jdk-headless), or set spark.sqlext.metastore.uris to an existing metastore."
            ) from None
        raise MetastoreError(f"Cannot compile the embedded metastore's launcher {source}:\n{exc}") from None
