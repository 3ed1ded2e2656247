"""The programs that run a Hive 2.3 or 3.1 metastore on one address: ``BoundHiveMetaStore.java`` (2.3) and
``BoundHiveMetaStore3.java`` (3.1), next to this module, each with what both share (``MetastoreThriftServer.java``).

Hive 2.3's ``HiveMetaStore.main`` and 3.1's ``startMetaStore`` listen on every interface and have no
setting to change that (``metastore.thrift.bind.host`` exists from Hive 4). Each program serves the same
Hive classes with the server socket bound to the address given. It is compiled once, against the jars it
runs with (pyspark's for 2.3, the fetched ones for 3.1), with the Java compiler of the ``java`` that runs
the metastore (the ``jdk.compiler`` module; Debian's ``openjdk-17-jre-headless`` has it), into a cache
directory named after the sources and the jars they were compiled against.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sqlext.errors import MetastoreError
from sqlext.paths import pyspark_jars_dir

MAIN_CLASS = "BoundHiveMetaStore"
SOURCE = Path(__file__).resolve().parent / f"{MAIN_CLASS}.java"
SHARED_SOURCE = SOURCE.with_name("MetastoreThriftServer.java")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/sqlext`` (else ``~/.cache/sqlext``): shared by every sqlext home of the user."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "sqlext"


def classes_dir(java: str, source: Path = SOURCE, jars_dir: Path | None = None) -> Path:
    """The directory holding the compiled ``source`` (default ``BoundHiveMetaStore``, against pyspark's jars,
    else against the jars of ``jars_dir``), compiling it first if needed."""
    jars = sorted((jars_dir or pyspark_jars_dir()).glob("*.jar"))
    sources = [source, SHARED_SOURCE]
    text = b"".join(path.read_bytes() for path in sources)
    key = hashlib.sha256(text + "|".join(jar.name for jar in jars).encode()).hexdigest()[:16]
    target = cache_dir() / f"metastore-launcher-{key}"
    compiled = target / f"{source.stem}.class"
    if compiled.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".compiling-"))
    try:
        _compile(java, jars, scratch, sources)
        scratch.rename(target)
    except OSError:
        if not compiled.is_file():  # else a concurrent start compiled it first
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _compile(java: str, jars: list[Path], out: Path, sources: list[Path]) -> None:
    command = [
        java,
        "-m",
        "jdk.compiler/com.sun.tools.javac.Main",
        "--release",
        "17",
        "-nowarn",
        "-d",
        str(out),
        "-cp",
        os.pathsep.join(str(jar) for jar in jars),
        *(str(path) for path in sources),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return
    output = (result.stderr + result.stdout).strip()
    if "jdk.compiler" in output and "not found" in output.lower():
        raise MetastoreError(
            f"Cannot compile the embedded metastore's launcher ({sources[0].name}): '{java}' has no Java compiler "
            "(module jdk.compiler). Install a full Java 17 runtime or JDK (Debian: openjdk-17-jre-headless, "
            "others: openjdk-17-jdk-headless), or set spark.sqlext.metastore.uris to an existing metastore."
        )
    raise MetastoreError(f"Cannot compile the embedded metastore's launcher {sources[0]}:\n{output}")
