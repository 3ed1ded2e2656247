"""The program that runs Hive 2.3's metastore on one address: ``BoundHiveMetaStore.java``, next to this module.

Hive 2.3's ``HiveMetaStore.main`` listens on every interface and has no setting to change that
(``hive.metastore.thrift.bind.host`` exists from Hive 4). ``BoundHiveMetaStore`` serves the same Hive
classes with the server socket bound to the address given. It is compiled once, against pyspark's jars,
with the Java compiler of the ``java`` that runs the metastore (the ``jdk.compiler`` module; Debian's
``openjdk-17-jre-headless`` has it), into a cache directory named after the source and the jars it was
compiled against.
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


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/sqlext`` (else ``~/.cache/sqlext``): shared by every sqlext home of the user."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "sqlext"


def classes_dir(java: str) -> Path:
    """The directory holding the compiled ``BoundHiveMetaStore``, compiling it first if needed."""
    jars = sorted(pyspark_jars_dir().glob("*.jar"))
    key = hashlib.sha256(SOURCE.read_bytes() + "|".join(jar.name for jar in jars).encode()).hexdigest()[:16]
    target = cache_dir() / f"metastore-launcher-{key}"
    if (target / f"{MAIN_CLASS}.class").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".compiling-"))
    try:
        _compile(java, jars, scratch)
        scratch.rename(target)
    except OSError:
        if not (target / f"{MAIN_CLASS}.class").is_file():  # else a concurrent start compiled it first
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _compile(java: str, jars: list[Path], out: Path) -> None:
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
        str(SOURCE),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return
    output = (result.stderr + result.stdout).strip()
    if "jdk.compiler" in output and "not found" in output.lower():
        raise MetastoreError(
            f"Cannot compile the embedded metastore's launcher ({SOURCE.name}): '{java}' has no Java compiler "
            "(module jdk.compiler). Install a full Java 17 runtime or JDK (Debian: openjdk-17-jre-headless, "
            "others: openjdk-17-jdk-headless), or set spark.sqlext.metastore.uris to an existing metastore."
        )
    raise MetastoreError(f"Cannot compile the embedded metastore's launcher {SOURCE}:\n{output}")
