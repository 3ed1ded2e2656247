"""The driver's backend of :class:`sqlext.io.fs.FileSystem`: Spark's own Hadoop ``FileSystem`` through py4j.

Every URI Spark can write (``hdfs://``, ``viewfs://``, ``s3a://``, ``abfs://``, ``gs://``, ``file:``) resolves
here exactly as it does for Spark: ``new Path(uri).getFileSystem(sc.hadoopConfiguration())``, with Spark's
``spark.hadoop.*`` keys, ``core-site.xml``, credentials and mount tables. It is used wherever a JVM is at hand:
the process of a running ``SparkContext`` (``sqlext run``, ``spark.sql`` with the extension, the gateway).

Hadoop's ``rename`` returns ``False`` instead of raising; here a failed rename raises :class:`OSError` naming
both paths, and a rename onto an existing file replaces it (as a POSIX rename does) through
``FileContext.rename(..., OVERWRITE)``, atomic where the store's rename is (HDFS). Hadoop's local filesystem
writes ``.<name>.crc`` checksum sidecars; listings skip them, and sqlext's own local files are written through
the raw local filesystem so it makes none. Bytes of files that resolve to local paths (``file:``, or a
``viewfs://`` mount on ``file:``) are read and written by pyarrow directly: py4j copies every byte otherwise.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from typing import Any

from sqlext.errors import FileSystemError
from sqlext.io import hadoop_security

_CHECKSUM = re.compile(r"^\..*\.crc$")
_NOT_FOUND = "java.io.FileNotFoundException"
_ALREADY_EXISTS = "org.apache.hadoop.fs.FileAlreadyExistsException"
_CHANGED = "org.apache.hadoop.fs.s3a.RemoteFileChangedException"
#: The gateway's doAs hdfs:// FileSystem (sqlext.gateway.impersonation), which acts as the caller's user.
IMPERSONATING_CLASS = "io.sqlext.hdfs.ImpersonatingFileSystem"
#: The Spark local property naming the user the gateway's doAs acts as (sqlext.gateway.impersonation).
DOAS_USER_PROPERTY = "sqlext.doAs.user"
#: How often a whole-file read starts again when the file was replaced while it was read.
READ_ATTEMPTS = 3


class FileChangedError(OSError):
    """A file was replaced while it was read: an object store's read of one version (S3A asks for the ETag it
    opened, and the store answers 412 once another write replaced the object)."""


def active_hadoop_conf() -> tuple[Any, Any] | None:
    """``(jvm, hadoopConfiguration)`` of this process's running SparkContext, or None without one."""
    try:
        from pyspark import SparkContext
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    context = SparkContext._active_spark_context
    if context is None or context._jsc is None or context._jvm is None:
        return None
    return context._jvm, context._jsc.hadoopConfiguration()


def _spark_local_property(key: str) -> str | None:
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or context._jsc is None:
        return None
    value = context._jsc.getLocalProperty(key)
    return str(value) if value else None


@contextlib.contextmanager
def _acting_as(user: str | None) -> Iterator[None]:
    """This thread's doAs user set to ``user`` meanwhile (nothing without one)."""
    if user is None:
        yield
        return
    from pyspark import SparkContext

    jsc = SparkContext._active_spark_context._jsc  # type: ignore[union-attr]
    before = jsc.getLocalProperty(DOAS_USER_PROPERTY)
    jsc.setLocalProperty(DOAS_USER_PROPERTY, user)
    try:
        yield
    finally:
        jsc.setLocalProperty(DOAS_USER_PROPERTY, before)


@contextlib.contextmanager
def java_errors(action: str) -> Iterator[None]:
    """Java's IO exceptions as Python's: FileNotFoundError for a missing path, OSError otherwise."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    try:
        yield
    except (Py4JJavaError, CapturedException) as exc:
        # pyspark turns a Java exception into one of its own, keeping the original as _origin.
        java = exc.java_exception if isinstance(exc, Py4JJavaError) else getattr(exc, "_origin", None)
        name = str(java.getClass().getName()) if java is not None else type(exc).__name__
        message = f"{action}: {name}: {java.getMessage() if java is not None else exc}"
        chain = _chain_text(java) if java is not None else message
        hint = hadoop_security.explain(chain)
        if hint is not None:
            raise FileSystemError(f"{action}: {hint} (Hadoop said: {_last_cause(java) or message})") from None
        denied = hadoop_security.permission_denied(chain)
        if denied is not None:
            raise PermissionError(f"{action}: {denied}") from None
        if name == _NOT_FOUND:
            raise FileNotFoundError(message) from None
        if name == _CHANGED or "Status Code: 412" in message:
            raise FileChangedError(message) from None
        raise OSError(message) from None


def _causes(java: Any) -> list[Any]:
    found: list[Any] = []
    while java is not None and len(found) < 20:
        found.append(java)
        java = java.getCause()
    return found


def _chain_text(java: Any) -> str:
    """The messages of a Java exception and its causes (Hadoop wraps a refusal in IOExceptions)."""
    return " | ".join(f"{cause.getClass().getName()}: {cause.getMessage()}" for cause in _causes(java))


def _last_cause(java: Any) -> str:
    causes = _causes(java)
    return f"{causes[-1].getClass().getName()}: {causes[-1].getMessage()}" if causes else ""


class HadoopBackend:
    """File operations on full URIs through the Hadoop FileSystem Spark uses for them."""

    def __init__(self, jvm: Any, conf: Any) -> None:
        self._jvm = jvm
        self._conf = conf
        self._fs_cache: dict[tuple[str, str], Any] = {}
        # The gateway's doAs: the user this thread acts as, kept for the filesystems opened later, from any thread
        # (a commit's pool, a lease's heartbeat): each binds its user when it is opened.
        self._user = _spark_local_property(DOAS_USER_PROPERTY)

    # -- resolution ------------------------------------------------------------------------------

    def _jpath(self, uri: str) -> Any:
        # Path(String) quotes '%' and spaces itself: the URI's path is taken literally, as Hadoop does.
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def _fs(self, path: Any) -> Any:
        uri = path.toUri()
        key = (str(uri.getScheme()), str(uri.getAuthority()))
        if key not in self._fs_cache:
            with java_errors(f"Cannot open the filesystem of {path.toString()}"), _acting_as(self._user):
                fs = path.getFileSystem(self._conf)
                # Spark's shared LocalFileSystem writes .crc sidecars; its raw filesystem does not, and
                # using it leaves the shared instance (and Spark's own checksummed files) untouched.
                if _scheme(fs) == "file":
                    with contextlib.suppress(Exception):  # already raw: no such method
                        fs = fs.getRawFileSystem()
                self._fs_cache[key] = fs
        return self._fs_cache[key]

    def _status(self, uri: str) -> Any | None:
        path = self._jpath(uri)
        try:
            with java_errors(f"Cannot stat {uri}"):
                return self._fs(path).getFileStatus(path)
        except FileNotFoundError:
            return None

    def _local_path(self, uri: str) -> str | None:
        """The local path ``uri`` resolves to (through mount tables), or None when it is not local."""
        path = self._jpath(uri)
        fs = self._fs(path)
        if _scheme(fs) == "file":
            return str(path.toUri().getPath())
        if _scheme(fs) != "viewfs":
            return None
        with java_errors(f"Cannot resolve {uri}"):
            parent = fs.resolvePath(path.getParent())
        resolved = parent.toUri()
        if resolved.getScheme() != "file":
            return None
        return f"{str(resolved.getPath()).rstrip('/')}/{path.getName()}"

    # -- operations ------------------------------------------------------------------------------

    def kind(self, uri: str) -> str | None:
        """``"file"``, ``"dir"`` or None when nothing is there."""
        status = self._status(uri)
        if status is None:
            return None
        return "dir" if status.isDirectory() else "file"

    def mkdirs(self, uri: str) -> None:
        path = self._jpath(uri)
        with java_errors(f"Cannot create directory {uri}"):
            if not self._fs(path).mkdirs(path):
                raise OSError(f"Cannot create directory {uri}")

    def list_files(self, uri: str, recursive: bool) -> list[tuple[str, int, int]]:
        """``(relative path, size, mtime ms)`` of the files under ``uri``; empty when it does not exist."""
        base = self._jpath(uri)
        fs = self._fs(base)
        found: list[tuple[str, int, int]] = []
        try:
            with java_errors(f"Cannot list {uri}"):
                self._walk(fs, base, "", recursive, found)
        except FileNotFoundError:
            return []
        return found

    def _walk(self, fs: Any, path: Any, prefix: str, recursive: bool, found: list[tuple[str, int, int]]) -> None:
        # Relative names come from each child's name, never from the paths a listing returns: a mount
        # table (viewfs) may answer with its target's paths.
        for status in fs.listStatus(path):
            name = str(status.getPath().getName())
            if status.isDirectory():
                if recursive:
                    self._walk(fs, status.getPath(), f"{prefix}{name}/", recursive, found)
            elif not _CHECKSUM.match(name):
                found.append((prefix + name, int(status.getLen()), int(status.getModificationTime())))

    def list_dirs(self, uri: str) -> list[str]:
        path = self._jpath(uri)
        try:
            with java_errors(f"Cannot list {uri}"):
                statuses = self._fs(path).listStatus(path)
                return [str(s.getPath().getName()) for s in statuses if s.isDirectory()]
        except FileNotFoundError:
            return []

    def rename(self, source: str, target: str) -> None:
        """Rename; a file onto an existing file replaces it. Raises when the rename did not happen."""
        src, dst = self._jpath(source), self._jpath(target)
        fs = self._fs(src)
        if self.kind(target) == "dir":
            # Hadoop moves a source *into* an existing directory; a POSIX rename refuses.
            raise IsADirectoryError(f"Cannot rename {source} to {target}: the target is a directory")
        try:
            with java_errors(f"Cannot rename {source} to {target}"):
                fs.mkdirs(dst.getParent())
                if fs.rename(src, dst):
                    return
        except OSError as exc:
            # S3A raises where HDFS returns False for an existing target: both are replaced below.
            if _ALREADY_EXISTS not in str(exc):
                raise
        source_kind, target_kind = self.kind(source), self.kind(target)
        if source_kind is None:
            raise FileNotFoundError(f"Cannot rename {source} to {target}: the source does not exist")
        if source_kind == "file" and target_kind == "file":
            self.replace(source, target)
            return
        raise OSError(f"Cannot rename {source} to {target} (the filesystem refused it; target is {target_kind})")

    def replace(self, source: str, target: str) -> None:
        """Rename a file onto an existing one: ``FileContext.rename`` with ``OVERWRITE``."""
        jvm = self._jvm
        src, dst = self._jpath(source), self._jpath(target)
        with java_errors(f"Cannot replace {target} with {source}"):
            fs = self._fs(dst)
            if str(fs.getClass().getName()) == IMPERSONATING_CLASS:
                # The gateway's doAs (sqlext.gateway.impersonation): a FileContext would act as the gateway.
                fs.renameOverwrite(src, dst)
                return
            context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(dst.toUri(), self._conf)
            rename = jvm.org.apache.hadoop.fs.Options.Rename
            options = _java_array(rename, [rename.OVERWRITE])
            context.rename(src, dst, options)

    def copy(self, source: str, target: str) -> None:
        src, dst = self._jpath(source), self._jpath(target)
        with java_errors(f"Cannot copy {source} to {target}"):
            src_fs, dst_fs = self._fs(src), self._fs(dst)
            dst_fs.mkdirs(dst.getParent())
            if not self._jvm.org.apache.hadoop.fs.FileUtil.copy(src_fs, src, dst_fs, dst, False, True, self._conf):
                raise OSError(f"Cannot copy {source} to {target}")

    def delete(self, uri: str, recursive: bool) -> None:
        path = self._jpath(uri)
        with java_errors(f"Cannot delete {uri}"):
            self._fs(path).delete(path, recursive)

    def read_bytes(self, uri: str) -> bytes:
        local = self._local_path(uri)
        if local is not None:
            return _local_read(local, uri)
        path = self._jpath(uri)
        # A small file rewritten in place (a commit log entry, a state file) can be replaced between the open
        # and the read: the read then starts again, on the new version, which is the one a reader wants.
        for _ in range(READ_ATTEMPTS - 1):
            with contextlib.suppress(FileChangedError):
                return self._read_whole(path, uri)
        return self._read_whole(path, uri)

    def _read_whole(self, path: Any, uri: str) -> bytes:
        with java_errors(f"Cannot read {uri}"):
            stream = self._fs(path).open(path)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()

    def write_new(self, uri: str, data: bytes) -> None:
        """Write a whole file (created or overwritten), its parent dir created."""
        with self.open_output(uri) as out:
            out.write(data)

    def open_input(self, uri: str) -> Any:
        import pyarrow as pa

        local = self._local_path(uri)
        if local is not None:
            try:
                return pa.OSFile(local, "rb")
            except FileNotFoundError:
                raise FileNotFoundError(f"Cannot read {uri}: no such file") from None
        path = self._jpath(uri)
        with java_errors(f"Cannot open {uri}"):
            fs = self._fs(path)
            size = int(fs.getFileStatus(path).getLen())
            stream = fs.open(path)
        return pa.PythonFile(_JavaInput(stream, size, uri), mode="r")

    def open_output(self, uri: str) -> Any:
        import pyarrow as pa

        path = self._jpath(uri)
        with java_errors(f"Cannot create {uri}"):
            fs = self._fs(path)
            fs.mkdirs(path.getParent())
        local = self._local_path(uri)
        if local is not None:
            return pa.OSFile(local, "wb")
        with java_errors(f"Cannot create {uri}"):
            stream = fs.create(path, True)
        # Buffered: each py4j call costs a round trip; writers emit many small pieces.
        return pa.PythonFile(io.BufferedWriter(_JavaOutput(stream, uri), 8 << 20), mode="w")


def _scheme(fs: Any) -> str:
    # FileSystem.getScheme is not implemented by every filesystem (RawLocalFileSystem): its URI's is.
    return str(fs.getUri().getScheme())


def _local_read(path: str, uri: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"Cannot read {uri}: no such file") from None


def _java_array(java_class: Any, values: list[Any]) -> Any:
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    assert gateway is not None
    array = gateway.new_array(java_class, len(values))
    for index, value in enumerate(values):
        array[index] = value
    return array


class _JavaInput(io.RawIOBase):
    """A seekable reader over a Hadoop ``FSDataInputStream`` (for pyarrow's format readers)."""

    def __init__(self, stream: Any, size: int, uri: str) -> None:
        self._stream = stream
        self._size = size
        self._uri = uri
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        wanted = min(len(buffer), self._size - self._position)
        if wanted <= 0:
            return 0
        with java_errors(f"Cannot read {self._uri}"):
            self._stream.seek(self._position)
            data = bytes(self._stream.readNBytes(wanted))
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            with java_errors(f"Cannot close {self._uri}"):
                self._stream.close()
        super().close()


class _JavaOutput(io.RawIOBase):
    """A writer into a Hadoop ``FSDataOutputStream``; the file is complete once closed."""

    def __init__(self, stream: Any, uri: str) -> None:
        self._stream = stream
        self._uri = uri

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        with java_errors(f"Cannot write {self._uri}"):
            self._stream.write(bytearray(chunk))
        return len(chunk)

    def close(self) -> None:
        if not self.closed:
            with java_errors(f"Cannot close {self._uri}"):
                self._stream.close()
        super().close()
