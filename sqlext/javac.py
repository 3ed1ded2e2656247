"""sqlext's Java classes: compiled once, when the package is built, into the jars of :data:`JARS`.

The build hook (``hatch_build.py`` at the repo's root: a wheel, an sdist's build, ``pip install -e .``) runs
:func:`build` with the JDK's ``javac --release 17`` against pyspark's jars and the compile-only stubs of
``java/stubs/`` (the few S3A classes the committer extends: hadoop-aws is on the class path only at run time),
and puts the jars in ``sqlext/_jars/``. At run time :func:`packaged_jar` finds a jar there and checks it was
built from the sources beside it (a checkout whose Java changed says how to rebuild: ``python -m sqlext.javac``).
Nothing is compiled at run time, so a JRE without the ``jdk.compiler`` module runs them all, except the Hive 3.1
metastore's launcher (``BoundHiveMetaStore3.java``): it is compiled by :func:`compiled` against the Hive 3.1 jars
fetched when that version is first started, as its Hive and Thrift 0.9 classes are in no jar of pyspark's.

This module uses the standard library and :mod:`sqlext.errors` only: the build hook imports it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from sqlext.errors import SqlextError

PACKAGE_DIR = Path(__file__).resolve().parent
#: Where the built jars are, in the package (a wheel's ``sqlext/_jars``; a checkout's, ignored by git).
JARS_DIR = PACKAGE_DIR / "_jars"
#: Each jar and its sources (relative to the package dir).
JARS: Mapping[str, tuple[str, ...]] = {
    "sqlext-csv.jar": ("connectors/filesystem/CsvRecordJoiner.java", "connectors/filesystem/CsvFields.java"),
    "sqlext-kafka.jar": ("connectors/kafka/ConfluentAvroFrames.java",),
    "sqlext-s3a-committer.jar": ("io/SqlextMagicCommitter.java", "io/SqlextMagicCommitterFactory.java"),
    "sqlext-hdfs-doas.jar": ("io/ImpersonatingFileSystem.java",),
    "sqlext-metastore.jar": (
        "catalog/metastore/BoundHiveMetaStore.java",
        "catalog/metastore/MetastoreThriftServer.java",
        "catalog/metastore/TxnTables.java",
    ),
}
#: The entry in each jar naming the digest of the sources it was built from (:func:`sources_digest`).
DIGEST_ENTRY = "META-INF/sqlext-sources.sha256"
REBUILD_HINT = "python -m sqlext.javac"


class JavaCompileError(SqlextError):
    """Sources did not compile; ``no_compiler``: the ``java`` given has no ``jdk.compiler`` module."""

    def __init__(self, message: str, no_compiler: bool) -> None:
        super().__init__(message)
        self.no_compiler = no_compiler


class MissingJarError(SqlextError):
    """A jar of sqlext's Java classes is not in the installation, or was built from other sources."""


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/sqlext`` (else ``~/.cache/sqlext``): shared by every sqlext home of the user."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "sqlext"


def sources_digest(sources: Sequence[Path]) -> str:
    """What a jar records of the sources it was built from: a digest of their names and text."""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build(javac: str, class_path: Sequence[Path], out_dir: Path, package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """Compile the sources of every jar of :data:`JARS` (under ``package_dir``) in one ``javac`` run against
    ``class_path`` and the stubs, and write the jars into ``out_dir``; return them. Each jar is replaced whole,
    so a concurrent reader sees the old one or the new one. Raises :class:`JavaCompileError`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sqlext-javac-") as scratch:
        classes = Path(scratch)
        sources = {name: [package_dir / path for path in relative] for name, relative in JARS.items()}
        _javac(javac, class_path, classes, [p for paths in sources.values() for p in paths], package_dir.parent)
        jar_of_stem = {path.stem: name for name, paths in sources.items() for path in paths}
        members: dict[str, list[Path]] = {name: [] for name in JARS}
        for path in sorted(classes.rglob("*.class")):
            # A class file is its source's top-level class or one nested in it (Outer$Inner.class).
            stem = path.stem.split("$")[0]
            if stem not in jar_of_stem:
                raise JavaCompileError(f"{path.name} is of no source of {', '.join(JARS)}", False)
            members[jar_of_stem[stem]].append(path)
        built = []
        for name, paths in members.items():
            jar, partial = out_dir / name, out_dir / f".{name}.{os.getpid()}.tmp"
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
                out.writestr(DIGEST_ENTRY, sources_digest(sources[name]) + "\n")
                for path in paths:
                    out.write(path, path.relative_to(classes).as_posix())
            os.replace(partial, jar)
            built.append(jar)
    return built


def _javac(javac: str, class_path: Sequence[Path], out: Path, sources: Sequence[Path], root: Path) -> None:
    command = [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-d", str(out)]
    # The stubs resolve what the class path lacks; -implicit:none keeps their classes out of the jars.
    command += ["-sourcepath", str(root / "java" / "stubs"), "-implicit:none"]
    command += ["-cp", os.pathsep.join(str(jar) for jar in class_path)]
    result = subprocess.run([*command, *(str(p) for p in sources)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise JavaCompileError(f"javac failed:\n{(result.stderr + result.stdout).strip()}", False)


def packaged_jar(name: str) -> Path:
    """The jar ``name`` of :data:`JARS` in this installation. Raises :class:`MissingJarError` when it is not
    there or was built from other sources than those beside this module (a checkout whose Java changed)."""
    return _checked(name, JARS_DIR)


@cache
def _checked(name: str, jars_dir: Path) -> Path:
    jar = jars_dir / name
    if not jar.is_file():
        raise MissingJarError(
            f"sqlext's Java classes ({name}) are missing from {jars_dir}: this installation was not built by "
            f"sqlext's build hook (hatch_build.py). Reinstall sqlext, or in a checkout run `{REBUILD_HINT}` "
            "(it needs a JDK 17 or later)."
        )
    sources = [PACKAGE_DIR / path for path in JARS[name]]
    if all(path.is_file() for path in sources):
        with zipfile.ZipFile(jar) as archive:
            recorded = archive.read(DIGEST_ENTRY).decode().strip()
        if recorded != sources_digest(sources):
            raise MissingJarError(
                f"{jar} was built from other sources than {', '.join(p.name for p in sources)}: "
                f"rebuild it with `{REBUILD_HINT}` (or `pip install -e .` again)."
            )
    return jar


def find_javac() -> str:
    """The JDK's ``javac``: ``$JAVA_HOME/bin/javac``, else the one on the ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "javac") if home else shutil.which("javac")
    if not found or not Path(found).is_file():
        raise JavaCompileError(
            "Building sqlext's Java classes needs a JDK 17 or later (javac): none at "
            f"{'$JAVA_HOME/bin/javac' if home else 'javac on the PATH'}. Install one (Debian: openjdk-17-jdk-headless) "
            "or set JAVA_HOME.",
            True,
        )
    return found


def build_class_path() -> list[Path]:
    """What the sources compile against: the jars of the pyspark installed where the build runs."""
    try:
        import pyspark
    except ImportError:
        raise JavaCompileError(
            "Building sqlext's Java classes needs pyspark installed where the build runs (its jars are what they "
            "compile against); it is in the build requirements of pyproject.toml.",
            False,
        ) from None
    return sorted((Path(pyspark.__file__).resolve().parent / "jars").glob("*.jar"))


def compiled(java: str, name: str, sources: Sequence[Path], jars: Sequence[Path], check: str) -> Path:
    """The directory of the classes of ``sources`` compiled at run time against ``jars`` with the ``jdk.compiler``
    module of ``java``, named ``name-<digest>`` in the cache; compiled first when its file ``check`` (relative) is
    missing. Only for the Hive 3.1 launcher (see the module docstring). Raises :class:`JavaCompileError`."""
    text = b"".join(path.read_bytes() for path in sources)
    key = hashlib.sha256(text + "|".join(jar.name for jar in jars).encode()).hexdigest()[:16]
    target = cache_dir() / f"{name}-{key}"
    if (target / check).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".compiling-"))
    try:
        _run_time_javac(java, jars, scratch, sources)
        scratch.rename(target)
    except OSError:
        if not (target / check).is_file():  # else a concurrent start compiled it first
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _run_time_javac(java: str, jars: Sequence[Path], out: Path, sources: Sequence[Path]) -> None:
    command = [java, "-m", "jdk.compiler/com.sun.tools.javac.Main", "--release", "17", "-nowarn", "-d", str(out)]
    command += ["-cp", os.pathsep.join(str(jar) for jar in jars), *(str(path) for path in sources)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return
    output = (result.stderr + result.stdout).strip()
    raise JavaCompileError(output, "jdk.compiler" in output and "not found" in output.lower())


def main() -> int:
    """``python -m sqlext.javac``: build the jars into this checkout's ``sqlext/_jars`` (as the build hook does
    for ``pip install -e .``)."""
    try:
        for jar in build(find_javac(), build_class_path(), JARS_DIR):
            print(jar)
    except JavaCompileError as exc:
        print(f"sqlext: error: {exc.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
