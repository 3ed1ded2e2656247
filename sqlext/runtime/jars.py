"""Maven artifacts fetched on demand: a Hive metastore of another version, a Kafka broker, a storage
connector, a Trino server. Nothing in the default install needs them; they are resolved with their
dependencies, once, into a cache directory, by the Ivy that ships with pyspark (no Maven installation
needed). An archive artifact (a ``tar.gz`` or ``zip``, such as Trino's server and plugins) is fetched alone
and kept unpacked (:func:`fetch_archive`).

The cache is ``$SQLEXT_JARS_DIR``, else ``$XDG_CACHE_HOME/sqlext/jars``, else ``~/.cache/sqlext/jars``;
each set of artifacts gets a directory of its own, complete once its ``.complete`` marker exists, so
that an interrupted fetch is fetched again rather than used half-done.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlext.errors import SqlextError
from sqlext.runtime.paths import pyspark_jars_dir

log = logging.getLogger(__name__)

COMPLETE_MARKER = ".complete"


class JarFetchError(SqlextError):
    """Artifacts could not be resolved or downloaded."""


@dataclass(frozen=True)
class Artifact:
    """A Maven coordinate, ``group:artifact:version``."""

    group: str
    name: str
    version: str

    @classmethod
    def parse(cls, coordinate: str) -> Artifact:
        parts = coordinate.split(":")
        if len(parts) != 3 or not all(parts):
            raise JarFetchError(f"'{coordinate}' is not a Maven coordinate: expected group:artifact:version.")
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"


def cache_dir() -> Path:
    """Where fetched artifacts are kept (see the module's docstring)."""
    explicit = os.environ.get("SQLEXT_JARS_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home).expanduser().resolve() / "sqlext" / "jars"


def fetched_dir(name: str, coordinates: Sequence[str], exclude: Sequence[str] = (), transitive: bool = True) -> Path:
    """The directory the artifacts ``coordinates`` (with their dependencies unless not ``transitive``, less
    ``exclude``) are fetched into; its name is ``name`` plus a digest of them, so a new version or exclusion
    never reuses an old one."""
    key = "\n".join(
        [*sorted(coordinates), *(f"-{pair}" for pair in sorted(exclude)), *([] if transitive else ["intransitive"])]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return cache_dir() / f"{name}-{digest}"


def is_fetched(name: str, coordinates: Sequence[str], exclude: Sequence[str] = (), transitive: bool = True) -> bool:
    """True when :func:`fetch` has completed for these artifacts."""
    return (fetched_dir(name, coordinates, exclude, transitive) / COMPLETE_MARKER).is_file()


def fetch(
    name: str,
    coordinates: Sequence[str],
    exclude: Sequence[str] = (),
    timeout_s: float = 1800,
    transitive: bool = True,
) -> Path:
    """The jars of ``coordinates`` and their runtime dependencies in one directory, downloaded from Maven
    Central the first time (later calls return at once). ``exclude`` names ``group:artifact`` pairs left
    out with their dependencies; ``transitive=False`` fetches the jars of ``coordinates`` alone. Raises
    :class:`JarFetchError` naming the artifacts and Ivy's report."""
    artifacts = [Artifact.parse(c) for c in coordinates]
    target = fetched_dir(name, coordinates, exclude, transitive)
    if (target / COMPLETE_MARKER).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        log.info("fetching %s from Maven Central into %s", ", ".join(map(str, artifacts)), target)
        _retrieve(artifacts, exclude, staging, name, timeout_s, transitive=transitive)
        (staging / COMPLETE_MARKER).write_text("\n".join(map(str, artifacts)) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    jars = sorted(target.glob("*.jar"))
    log.info("fetched %d jars (%.1f MB) into %s", len(jars), sum(j.stat().st_size for j in jars) / 1e6, target)
    return target


#: The archive types :func:`fetch_archive` unpacks.
ARCHIVE_TYPES = ("tar.gz", "zip")


def fetch_archive(name: str, coordinate: str, ext: str, keep: Sequence[str] = (), timeout_s: float = 1800) -> Path:
    """The archive artifact ``coordinate`` of type ``ext`` (``tar.gz`` or ``zip``; its dependencies are not
    fetched) unpacked into a directory of its own, downloaded from Maven Central the first time (later
    calls return at once). ``keep`` keeps only the archive's entries below those paths (``dir/lib/``). The
    archive itself is not kept, nor Ivy's copy of it. Raises :class:`JarFetchError` as :func:`fetch` does."""
    if ext not in ARCHIVE_TYPES:
        raise JarFetchError(f"Archive type '{ext}' of {coordinate} is not supported: expected one of {ARCHIVE_TYPES}.")
    artifact = Artifact.parse(coordinate)
    target = fetched_dir(name, [f"{coordinate}@{ext}", *(f"keep={path}" for path in keep)])
    if (target / COMPLETE_MARKER).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        log.info("fetching %s (%s) from Maven Central into %s", artifact, ext, target)
        _retrieve([artifact], (), staging, name, timeout_s, archive=ext)
        archive = staging / f"{artifact.name}-{artifact.version}.{ext}"
        unpack(archive, staging, keep)
        archive.unlink()
        (staging / COMPLETE_MARKER).write_text(f"{artifact}@{ext}\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        # Ivy keeps a copy of every artifact it resolves; an archive's is hundreds of MB, used once.
        shutil.rmtree(cache_dir() / ".ivy-cache" / name, ignore_errors=True)
    log.info("fetched and unpacked %s into %s", artifact, target)
    return target


def unpack(archive: Path, into: Path, keep: Sequence[str] = ()) -> None:
    """Unpack a ``.tar.gz`` or ``.zip`` into ``into``: the entries below the paths ``keep``, or all. No
    entry may land outside ``into`` (tar: Python's ``data`` filter; zip: ``zipfile``'s own name checks)."""
    wanted = tuple(keep) or ("",)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(into, [n for n in zipped.namelist() if n.startswith(wanted)])
        return
    with tarfile.open(archive, "r:gz") as tarred:
        members = tarred.getmembers()
        kept = {m.name for m in members if m.name.startswith(wanted)}
        # A hard link kept whose target is not (Trino's plugins share jars that way) gets the target's data:
        # the target is unpacked too (in archive order, so in one pass), then removed.
        targets = {m.linkname for m in members if m.name in kept and m.islnk()} - kept
        tarred.extractall(into, [m for m in members if m.name in kept or m.name in targets], filter="data")
    for name in sorted(targets, reverse=True):
        (into / name).unlink()
        for parent in (into / name).parents:
            if parent == into or any(parent.iterdir()):
                break
            parent.rmdir()


def classpath(directory: Path) -> str:
    """A Java class path of every jar in ``directory``."""
    return os.pathsep.join(str(jar) for jar in sorted(directory.glob("*.jar")))


def _ivy_jar() -> Path:
    found = sorted(pyspark_jars_dir().glob("ivy-*.jar"))
    if not found:
        raise JarFetchError(f"No Ivy jar in {pyspark_jars_dir()}: sqlext fetches artifacts with pyspark's Ivy.")
    return found[-1]


def _ivy_file(artifacts: Sequence[Artifact], exclude: Sequence[str], archive: str = "", transitive: bool = True) -> str:
    if archive:  # the one file of that type, without the module's dependencies
        dependencies = "\n".join(
            f'    <dependency org="{a.group}" name="{a.name}" rev="{a.version}" conf="default->default" '
            f'transitive="false">\n      <artifact name="{a.name}" type="{archive}" ext="{archive}"/>\n'
            "    </dependency>"
            for a in artifacts
        )
    else:
        intransitive = "" if transitive else ' transitive="false"'
        dependencies = "\n".join(
            f'    <dependency org="{a.group}" name="{a.name}" rev="{a.version}" conf="default->default"{intransitive}/>'
            for a in artifacts
        )
    exclusions = "\n".join(
        f'    <exclude org="{pair.split(":")[0]}" module="{pair.split(":")[1]}"/>' for pair in exclude
    )
    return f"""<ivy-module version="2.0">
  <info organisation="sqlext" module="fetch"/>
  <configurations><conf name="default"/></configurations>
  <dependencies>
{dependencies}
{exclusions}
  </dependencies>
</ivy-module>
"""


#: Ivy settings for an archive: Maven Central (ibiblio's default root) without reading POMs. Trino's POMs
#: import a hundred BOMs through their parents; resolving them took Ivy two minutes for one file.
_ARCHIVE_SETTINGS = """<ivysettings>
  <settings defaultResolver="central"/>
  <resolvers><ibiblio name="central" m2compatible="true" usepoms="false"/></resolvers>
</ivysettings>
"""


def _retrieve(
    artifacts: Sequence[Artifact],
    exclude: Sequence[str],
    target: Path,
    name: str,
    timeout_s: float,
    archive: str = "",
    transitive: bool = True,
) -> None:
    java = shutil.which("java") or (Path(os.environ.get("JAVA_HOME", "")) / "bin" / "java").as_posix()
    ivy_file = target / "ivy.xml"
    ivy_file.write_text(_ivy_file(artifacts, exclude, archive, transitive))
    settings: list[str] = []
    if archive:
        settings_file = target / "ivysettings.xml"
        settings_file.write_text(_ARCHIVE_SETTINGS)
        settings = ["-settings", str(settings_file)]
    command = [
        java,
        "-jar",
        str(_ivy_jar()),
        *settings,
        "-ivy",
        str(ivy_file),
        "-confs",
        "default",
        "-cache",
        # One Ivy cache per set: Ivy does not lock its cache, and sets may be fetched at the same time.
        str(cache_dir() / ".ivy-cache" / name),
        "-retrieve",
        f"{target}/[artifact]-[revision](-[classifier]).[ext]",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JarFetchError(f"Could not fetch {', '.join(map(str, artifacts))}: {exc}") from exc
    ivy_file.unlink()
    if archive:
        (target / "ivysettings.xml").unlink()
    if done.returncode != 0 or not any(target.glob(f"*.{archive or 'jar'}")):
        report = "\n".join([line for line in (done.stdout + done.stderr).splitlines() if line.strip()][-15:])
        raise JarFetchError(
            f"Could not fetch {', '.join(map(str, artifacts))} from Maven Central (Ivy exit {done.returncode}):\n"
            f"{report}"
        )
