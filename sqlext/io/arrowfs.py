"""The fallback backend of :class:`sqlext.io.fs.FileSystem` where no JVM is at hand: ``pyarrow.fs``.

It serves the Python processes Spark starts without a py4j gateway (the ``format("sqlext")`` writer's
executors and its driver-side commit, which runs in a Python worker) and the CLI's ``sqlext commits`` /
``sqlext compact`` when they run without a Spark session. It reads the same Hadoop keys as Spark, given as
``spark.hadoop.<key>`` (see :func:`configure`):

- ``file:`` — local files;
- ``viewfs://<name>/...`` — resolved through ``fs.viewfs.mounttable.<name>.link.<path>`` (longest link
  first) and ``...linkFallback`` to a target URI, served as below (Hadoop's own viewfs features beyond
  links — merge links, nfly, regex mounts — need the JVM);
- ``s3a://`` / ``s3://`` — pyarrow's S3 client with ``fs.s3a.access.key``, ``secret.key``, ``session.token``,
  ``endpoint``, ``endpoint.region``, ``path.style.access``, ``connection.ssl.enabled`` (per-bucket
  ``fs.s3a.bucket.<bucket>.<key>`` first); without keys, pyarrow's default AWS credential chain;
- ``hdfs://`` — pyarrow's libhdfs client (it needs ``libhdfs.so``, a JVM and ``CLASSPATH`` of its own); where
  it cannot load, the NameNode's WebHDFS API through fsspec (the ``webhdfs`` extra, :mod:`sqlext.io.webhdfs`)
  at ``dfs.namenode.http-address`` (or its per-nameservice forms), with SPNEGO where
  ``hadoop.security.authentication=kerberos`` (:mod:`sqlext.io.webhdfs_kerberos`: the login of
  ``spark.kerberos.principal`` / ``spark.kerberos.keytab``, else the ticket cache);
- anything else pyarrow parses (``gs://``, ``abfs://``) with pyarrow's own configuration.

Other schemes fail with :class:`sqlext.errors.FileSystemError` naming the scheme and what serves it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlparse

import pyarrow.fs as pafs

from sqlext.errors import FileSystemError
from sqlext.io import webhdfs, webhdfs_kerberos

HADOOP_PREFIX = "spark.hadoop."

_settings: dict[str, str] = {}
_lock = threading.Lock()


def carried(conf: Mapping[str, str]) -> dict[str, str]:
    """The keys of a Spark conf that a process without a JVM needs to reach the job's storage: its
    ``spark.hadoop.*`` keys and the job's Kerberos login (``spark.kerberos.principal`` / ``.keytab``)."""
    return {
        key: value
        for key, value in conf.items()
        if key.startswith(HADOOP_PREFIX) or (key in webhdfs_kerberos.LOGIN_KEYS and value)
    }


def hadoop_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """The Hadoop keys of a Spark conf (``spark.hadoop.<key>`` as ``<key>``) and its Kerberos login keys (as
    they are)."""
    found = {key[len(HADOOP_PREFIX) :]: value for key, value in conf.items() if key.startswith(HADOOP_PREFIX)}
    return found | {key: conf[key] for key in webhdfs_kerberos.LOGIN_KEYS if conf.get(key)}


def configure(conf: Mapping[str, str]) -> None:
    """Give the fallback the Hadoop settings of a Spark conf (its ``spark.hadoop.*`` keys, and the Kerberos
    login keys); idempotent."""
    with _lock:
        _settings.update(hadoop_settings(conf))


def settings() -> dict[str, str]:
    """The settings the fallback uses (bare Hadoop keys, and ``spark.kerberos.principal`` / ``.keytab``)."""
    with _lock:
        return dict(_settings)


def resolve_viewfs(uri: str, conf: Mapping[str, str]) -> str:
    """The target URI of a ``viewfs://`` URI through the mount table's links."""
    parsed = urlparse(uri)
    name = parsed.netloc or conf.get("fs.viewfs.mounttable.default.name.key", "default")
    prefix = f"fs.viewfs.mounttable.{name}.link."
    path = parsed.path or "/"
    links = sorted(
        ((k[len(prefix) :].rstrip("/") or "/", v) for k, v in conf.items() if k.startswith(prefix)),
        key=lambda kv: -len(kv[0]),
    )
    for link, target in links:
        if path == link or path.startswith(link.rstrip("/") + "/"):
            return target.rstrip("/") + path[len(link.rstrip("/")) :]
    fallback = conf.get(f"fs.viewfs.mounttable.{name}.linkFallback")
    if fallback:
        return fallback.rstrip("/") + path
    raise FileSystemError(
        f"{uri} is on no link of the viewfs mount table '{name}': set spark.hadoop.{prefix}<path>=<target URI> "
        f"(known links: {', '.join(link for link, _ in links) or 'none'})."
    )


def s3_options(conf: Mapping[str, str], bucket: str) -> dict[str, Any]:
    """pyarrow ``S3FileSystem`` arguments from the ``fs.s3a.*`` keys (per-bucket keys first)."""

    def get(key: str) -> str | None:
        return conf.get(f"fs.s3a.bucket.{bucket}.{key}") or conf.get(f"fs.s3a.{key}")

    options: dict[str, Any] = {}
    if get("access.key") and get("secret.key"):
        options["access_key"] = get("access.key")
        options["secret_key"] = get("secret.key")
        if get("session.token"):
            options["session_token"] = get("session.token")
    endpoint = get("endpoint")
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"//{endpoint}")
        options["endpoint_override"] = parsed.netloc + parsed.path.rstrip("/")
        secure = (get("connection.ssl.enabled") or "true").lower() != "false"
        options["scheme"] = parsed.scheme or ("https" if secure else "http")
    elif (get("connection.ssl.enabled") or "").lower() == "false":
        options["scheme"] = "http"
    if get("endpoint.region"):
        options["region"] = get("endpoint.region")
    if (get("path.style.access") or "false").lower() != "true" and endpoint:
        options["force_virtual_addressing"] = True
    return options


def default_credentials_note(uri: str, conf: Mapping[str, str]) -> str | None:
    """For an ``s3a://`` URI this process has no ``fs.s3a`` credential keys for: where its credentials come from
    instead, and how to give them (None otherwise). A Spark Connect session does not show the credential keys
    to its clients, so ``sqlext.register`` cannot pass them to the Python workers of a ``format("sqlext")`` or
    SDP sink on Connect."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("s3a", "s3", "s3n") or "access_key" in s3_options(conf, parsed.netloc):
        return None
    return (
        "This Python worker was given no fs.s3a credential keys (a Spark Connect session does not show them to "
        "its clients), so pyarrow took the AWS default credential chain: give the environment of Spark's "
        "executors AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (spark.executorEnv.AWS_ACCESS_KEY_ID=..., or the "
        "Connect server's own environment), AWS_PROFILE, or an instance role; see docs/object-stores.md."
    )


def no_filesystem_message(uri: str, scheme: str, cause: BaseException) -> str:
    """Why ``uri`` cannot be reached without a JVM, and what would reach it. pyarrow's own error is cut to its
    first line: without libjvm or libhdfs it lists every path it tried, dozens of lines."""
    reason = next((line.strip() for line in str(cause).splitlines() if line.strip()), type(cause).__name__)
    if scheme == "hdfs":
        return (
            f"Cannot reach {uri} from this Python process ({reason}). Where no JVM of its own is at hand "
            "(format('sqlext')'s and SDP sinks' writers in Spark's Python workers, streaming reads of committed "
            "partitions, Spark Connect clients, the CLI with SQLEXT_FS=pyarrow), sqlext reaches hdfs:// through "
            f"the NameNode's WebHDFS API: install the 'webhdfs' extra ({webhdfs.EXTRA_HINT}) and set "
            f"spark.hadoop.{webhdfs.HTTP_ADDRESS_KEY} to the NameNode's HTTP address. Or give those processes "
            "pyarrow's HDFS client: JAVA_HOME (a JDK with lib/server/libjvm.so), Hadoop's native libhdfs.so "
            "(ARROW_LIBHDFS_DIR, or HADOOP_HOME/lib/native) and CLASSPATH holding Hadoop's client jars and "
            "configuration (`hadoop classpath --glob`). See docs/object-stores.md."
        )
    return (
        f"No filesystem for {uri} in this process ({reason}). Without a JVM sqlext serves file:, viewfs:// "
        "(mount table links), s3a:// and hdfs:// (libhdfs or WebHDFS); run this where a Spark session is "
        "active to use Spark's Hadoop filesystems for every scheme."
    )


class ArrowBackend:
    """File operations on full URIs through pyarrow, configured from the fallback's Hadoop settings."""

    def __init__(self) -> None:
        self._conf = settings()
        self._cache: dict[tuple[str, str], pafs.FileSystem] = {}

    def _resolve(self, uri: str) -> tuple[pafs.FileSystem, str]:
        parsed = urlparse(uri)
        scheme = parsed.scheme or "file"
        if scheme == "viewfs":
            return self._resolve(resolve_viewfs(uri, self._conf))
        if scheme == "file":
            return self._filesystem(scheme, "", lambda: pafs.LocalFileSystem()), parsed.path or "/"
        if scheme in ("s3a", "s3", "s3n"):
            bucket = parsed.netloc
            fs = self._filesystem("s3", bucket, lambda: pafs.S3FileSystem(**s3_options(self._conf, bucket)))
            return fs, f"{bucket}{parsed.path}"
        if scheme == "hdfs":
            return self._filesystem(scheme, parsed.netloc, lambda: self._hdfs(uri)), parsed.path or "/"
        # pyarrow decodes the URI it is given and refuses spaces: hand it the path percent-encoded, so that
        # decoding gives back the literal path.
        try:
            fs, path = pafs.FileSystem.from_uri(parsed._replace(path=quote(parsed.path)).geturl())
        except Exception as exc:  # pyarrow's ArrowInvalid / OSError: an unknown scheme or no libhdfs
            raise FileSystemError(no_filesystem_message(uri, scheme, exc)) from exc
        return fs, path

    def _hdfs(self, uri: str) -> pafs.FileSystem:
        """pyarrow's libhdfs client of ``uri``'s NameNode; where it cannot load, WebHDFS (if installed)."""
        parsed = urlparse(uri)
        try:
            fs, _ = pafs.FileSystem.from_uri(parsed._replace(path="/").geturl())
            return fs
        except Exception as exc:  # pyarrow's OSError: no libjvm, no libhdfs, no CLASSPATH
            if not webhdfs.available():
                raise FileSystemError(no_filesystem_message(uri, "hdfs", exc)) from exc
        return webhdfs.filesystem(uri, self._conf)

    def _filesystem(self, scheme: str, authority: str, build: Any) -> pafs.FileSystem:
        key = (scheme, authority)
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def kind(self, uri: str) -> str | None:
        fs, path = self._resolve(uri)
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            return None
        return "dir" if info.type == pafs.FileType.Directory else "file"

    def mkdirs(self, uri: str) -> None:
        fs, path = self._resolve(uri)
        fs.create_dir(path, recursive=True)

    def list_files(self, uri: str, recursive: bool) -> list[tuple[str, int, int]]:
        fs, base = self._resolve(uri)
        base = base.rstrip("/")
        found = []
        for info in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=recursive)):
            if info.type == pafs.FileType.File:
                mtime = int(info.mtime.timestamp() * 1000) if info.mtime else 0
                found.append((info.path[len(base) + 1 :], int(info.size or 0), mtime))
        return found

    def list_dirs(self, uri: str) -> list[str]:
        fs, base = self._resolve(uri)
        selector = pafs.FileSelector(base.rstrip("/"), allow_not_found=True)
        return [info.base_name for info in fs.get_file_info(selector) if info.type == pafs.FileType.Directory]

    def rename(self, source: str, target: str) -> None:
        fs, src = self._resolve(source)
        _, dst = self._resolve(target)
        fs.create_dir(dst.rsplit("/", 1)[0], recursive=True)
        fs.move(src, dst)

    def copy(self, source: str, target: str) -> None:
        fs, src = self._resolve(source)
        _, dst = self._resolve(target)
        fs.create_dir(dst.rsplit("/", 1)[0], recursive=True)
        fs.copy_file(src, dst)

    def delete(self, uri: str, recursive: bool) -> None:
        fs, path = self._resolve(uri)
        if recursive:
            fs.delete_dir(path)
        else:
            fs.delete_file(path)

    def read_bytes(self, uri: str) -> bytes:
        fs, path = self._resolve(uri)
        with fs.open_input_stream(path) as stream:
            return bytes(stream.read())

    def write_new(self, uri: str, data: bytes) -> None:
        with self.open_output(uri) as out:
            out.write(data)

    def open_input(self, uri: str) -> Any:
        fs, path = self._resolve(uri)
        return fs.open_input_file(path)

    def open_output(self, uri: str) -> Any:
        fs, path = self._resolve(uri)
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        return fs.open_output_stream(path)
