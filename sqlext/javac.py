"""Java sources of sqlext compiled at first use, with the Java compiler of the ``java`` that runs them (the
``jdk.compiler`` module; Debian's ``openjdk-17-jre-headless`` has it), against the jars they run with, into a
cache directory named after the sources and those jars: no build tool, nothing compiled at install.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from sqlext.errors import SqlextError


class JavaCompileError(SqlextError):
    """Sources did not compile; ``no_compiler``: the ``java`` given has no ``jdk.compiler`` module."""

    def __init__(self, message: str, no_compiler: bool) -> None:
        super().__init__(message)
        self.no_compiler = no_compiler


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/sqlext`` (else ``~/.cache/sqlext``): shared by every sqlext home of the user."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "sqlext"


def compiled(java: str, name: str, sources: Sequence[Path], jars: Sequence[Path], check: str) -> Path:
    """The directory of the classes of ``sources`` compiled against ``jars``, named ``name-<digest>`` in the
    cache; compiled first when its file ``check`` (relative) is missing. Raises :class:`JavaCompileError`."""
    text = b"".join(path.read_bytes() for path in sources)
    key = hashlib.sha256(text + "|".join(jar.name for jar in jars).encode()).hexdigest()[:16]
    target = cache_dir() / f"{name}-{key}"
    if (target / check).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".compiling-"))
    try:
        compile_sources(java, jars, scratch, sources)
        scratch.rename(target)
    except OSError:
        if not (target / check).is_file():  # else a concurrent start compiled it first
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def compile_sources(java: str, jars: Sequence[Path], out: Path, sources: Sequence[Path]) -> None:
    """Compile ``sources`` for Java 17 into ``out``; raise :class:`JavaCompileError` with javac's output."""
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
    raise JavaCompileError(output, "jdk.compiler" in output and "not found" in output.lower())


def jar_of(classes: Path, name: str) -> Path:
    """The jar ``name`` in ``classes`` (a dir of :func:`compiled`) holding its classes; written first if missing."""
    jar = classes / name
    if not jar.is_file():
        scratch = jar.with_suffix(".tmp")
        with zipfile.ZipFile(scratch, "w") as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        scratch.rename(jar)
    return jar
