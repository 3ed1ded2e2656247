"""Class data sharing for the Spark driver JVMs that sqlext launches: the classes a driver loads, kept in a file.

A Spark driver loads and verifies tens of thousands of classes as it starts (Spark, Hive's client, Hadoop,
Parquet), the same ones at every start: seconds of each ``sqlext run``. The JDK's dynamic class data sharing
archive (JEP 350, Java 13 and later) keeps them in a file the next JVM maps in. It is written only when asked:
by ``sqlext warm-up`` (:mod:`sqlext.cli.warm_up`), or by the first driver of a Java, pyspark installation and
driver class path run with ``spark.sqlext.driver.class-sharing=true``, as it exits (``-XX:ArchiveClassesAtExit``;
that run is slower, by about 25 s on a 2-core machine, and the file is about 200 MB). Drivers start from it
(``-XX:SharedArchiveFile``) when it is there, unless the setting is ``false``. The archive lives in sqlext's cache
dir (:func:`sqlext.javac.cache_dir`), named after what it depends on, and goes when its pyspark installation does;
a JVM that finds an archive it cannot use starts as it would without one. A Java runtime without a base archive
(a jlink'd one made without ``--generate-cds-archive``) cannot write one: the driver then starts without, with a
warning. Only a JVM that sqlext itself launches gets it (under ``spark-submit`` the JVM is already running), and
not where the user's JVM options set class sharing themselves.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from sqlext.config import ClassSharing
from sqlext.javac import cache_dir
from sqlext.runtime.process import alive
from sqlext.spark.memory import SUBMIT_OPTS_ENV, jvm_process

log = logging.getLogger(__name__)

#: How long the process that writes the archive waits, at its exit, for its JVM to have written it.
WRITE_WAIT_S = 300.0
#: The Java runtime's own (base) archives, one of which a dynamic archive is written on top of.
BASE_ARCHIVES = ("classes.jsa", "classes_nocoops.jsa")
#: JVM options that mean the driver's class sharing is already set: sqlext then leaves it alone.
_USER_SHARING = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")


def archive_path(conf: Mapping[str, str], java: str | None = None) -> Path:
    """Where the archive of a driver with ``conf`` (and ``java``, default ``JAVA_HOME``'s or the one on the
    ``PATH``) is kept."""
    import pyspark

    java = java or _java()
    # The JVM maps an archive only for the very jar files it was written from: pyspark's, where they are. Other
    # entries on the class path (extraClassPath, SPARK_DIST_CLASSPATH) only make the JVM start without it.
    parts = [os.path.realpath(java), pyspark.__version__, _pyspark_dir(), conf.get("spark.driver.extraClassPath", "")]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return cache_dir() / "class-sharing" / f"spark-driver-{key}.jsa"


def share_classes(conf: Mapping[str, str], mode: ClassSharing) -> Path | None:
    """Make the driver JVM this process launches next start from the archive, or with ``mode`` WRITE write it when
    there is none yet (see the module docstring). Call it before the JVM starts; a no-op under ``spark-submit``.
    Returns the archive the JVM is to start from (None: none, or not launched here)."""
    from pyspark import SparkContext

    if mode is ClassSharing.OFF or SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    if _pending:
        return None  # this process's driver is already set to write it (``sqlext warm-up``)
    options = [*os.environ.get(SUBMIT_OPTS_ENV, "").split(), *conf.get("spark.driver.extraJavaOptions", "").split()]
    if any(marker in option for option in options if option not in _ours for marker in _USER_SHARING):
        return None  # the user's own class sharing settings
    archive = archive_path(conf)
    _remove_abandoned(archive)
    if archive.is_file():
        _set_options(f"-XX:SharedArchiveFile={archive}")
        log.info("the Spark driver starts from its class archive %s", archive)
        return archive
    if mode is not ClassSharing.WRITE:
        _set_options("")
        return None
    java_home = Path(os.path.realpath(_java())).parent.parent
    if not any((java_home / "lib" / "server" / name).is_file() for name in BASE_ARCHIVES):
        log.warning(
            "the Spark driver starts without a class archive: its Java runtime %s has no base CDS archive "
            "(lib/server/classes.jsa), which writing one needs (`java -Xshare:dump` makes it)",
            java_home,
        )
        _set_options("")
        return None
    archive.parent.mkdir(parents=True, exist_ok=True)
    scratch = _scratch(archive, os.getpid())
    _set_options(f"-XX:ArchiveClassesAtExit={scratch}")
    _pending[:] = [scratch, archive]
    atexit.register(_keep_archive, scratch, archive)
    log.info("the Spark driver's classes are written to %s as it exits, for later starts", archive)
    return None


def writing() -> Path | None:
    """The archive the driver JVM of this process is set to write as it exits, if any."""
    return _pending[1] if _pending else None


def write_now() -> Path | None:
    """End this process's driver JVM now, so that it writes the archive it is set to write, and put it in place;
    return it (None: none was to be written, or the JVM did not write it)."""
    if not _pending:
        return None
    scratch, archive = _pending
    atexit.unregister(_keep_archive)
    _pending.clear()
    _keep_archive(scratch, archive)
    return archive if archive.is_file() else None


def unusable(archive: Path) -> None:
    """The JVM did not start from ``archive``: remove it (the next start writes it again) and start without."""
    log.warning("the Spark driver did not start from its class archive %s: removed, starting without it", archive)
    archive.unlink(missing_ok=True)
    _set_options("")


def _set_options(option: str) -> None:
    # The JVM's own note when it cannot use an archive (another class path) goes nowhere: it then starts without.
    options = f"{option} {_QUIET}".split() if option else []
    kept = [o for o in os.environ.get(SUBMIT_OPTS_ENV, "").split() if o not in _ours]
    os.environ[SUBMIT_OPTS_ENV] = " ".join([*kept, *options])
    _ours.clear()
    _ours.update(options)


_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: The options sqlext put in ``SPARK_SUBMIT_OPTS`` (the others there are the user's).
_ours: set[str] = set()
#: The scratch file and the archive this process's driver JVM is to write as it exits (empty: none).
_pending: list[Path] = []


def _scratch(archive: Path, pid: int) -> Path:
    return archive.with_name(f"{archive.stem}.{pid}.jsa.tmp")


def _remove_abandoned(archive: Path) -> None:
    """Remove archives being written by processes that are gone (killed before their JVM wrote them whole), and
    archives of pyspark installations that are gone (a deleted venv's)."""
    for scratch in archive.parent.glob("*.jsa.tmp"):
        pid = scratch.name.split(".")[-3]
        if pid.isdigit() and not alive(int(pid)):
            scratch.unlink(missing_ok=True)
    for source in archive.parent.glob("*.source"):
        with contextlib.suppress(OSError):
            if not Path(source.read_text().strip()).is_dir():
                source.with_suffix(".jsa").unlink(missing_ok=True)
                source.unlink()


def _keep_archive(scratch: Path, archive: Path) -> None:
    """At this process's exit: end the JVM (it ends when its stdin closes), wait for it to have written the
    archive, and put the archive in its place if the JVM ended well."""
    proc = jvm_process()
    try:
        if proc is not None and proc.poll() is None:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=WRITE_WAIT_S)
        if proc is not None and proc.returncode == 0 and scratch.is_file() and not archive.exists():
            archive.with_suffix(".source").write_text(_pyspark_dir() + "\n")
            os.replace(scratch, archive)
            log.info("wrote the Spark driver's class archive %s", archive)
    except Exception as exc:  # a later start writes it again
        log.debug("no class archive kept: %s", exc)
    finally:
        scratch.unlink(missing_ok=True)


def _pyspark_dir() -> str:
    import pyspark

    return str(Path(pyspark.__file__).resolve().parent)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home:
        return str(Path(home) / "bin" / "java")
    return shutil.which("java") or "java"
