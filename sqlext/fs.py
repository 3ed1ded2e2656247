"""The one filesystem interface of the commit path: list, move, delete, read and write small files.

Paths are URIs (``file:///...``, ``file:/...`` as the HMS writes them, ``hdfs://...``, ``s3://...``);
:class:`FileSystem` resolves them through ``pyarrow.fs``, which serves local files, HDFS (through
libhdfs) and S3 natively. Nothing in the commit path calls ``os.*`` on a path string.

Rename is the commit primitive. On local filesystems and HDFS it is atomic. On object stores it is a
copy then a delete: a crash in the middle can leave a file both staged and final. sqlext's commit log
records every planned move before the first one, so a restart finishes the moves (a final file that
exists is not copied again) and readers see partitions only once they are committed in the HMS; but a
plain directory listing of an object store can see a partly moved batch, so on object stores read
sqlext tables through the HMS.

As in Hadoop, a URI's path is taken literally: ``%`` in it is a character (Hive escapes ``/`` in a
partition value as ``%2F`` and ``%`` as ``%25``, and those are the directory names), never a URI escape.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlparse

import pyarrow.fs as pafs


@dataclass(frozen=True)
class FileStatus:
    """A file found by a listing: its full URI, its path relative to the listed dir, and its size."""

    uri: str
    relative: str
    size: int
    mtime_ms: int


def join(base: str, *parts: str) -> str:
    """Join URI path segments with ``/`` (no normalisation, no escaping: parts must be escaped)."""
    result = base.rstrip("/")
    for part in parts:
        if part:
            result = f"{result}/{part.strip('/')}"
    return result


def normalize(uri: str) -> str:
    """One spelling per location: ``file:/x`` and plain ``/x`` become ``file:///x``; no trailing ``/``."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return "file://" + (parsed.path.rstrip("/") or "/")
    return uri.rstrip("/")


class FileSystem:
    """File operations on one URI scheme/authority, resolved lazily per call."""

    def __init__(self, root: str) -> None:
        self.root = normalize(root)
        # pyarrow decodes the URI it is given and refuses spaces: hand it the path percent-encoded, so that
        # decoding gives back the literal path (partition dirs such as p=%252e, spaces, non-ASCII names).
        parsed = urlparse(self.root)
        self._fs, self._root_path = pafs.FileSystem.from_uri(parsed._replace(path=quote(parsed.path)).geturl())
        if not self.root.endswith(self._root_path):
            raise ValueError(f"Cannot split {root} into filesystem and path")
        self._prefix = self.root[: len(self.root) - len(self._root_path)]

    def _path(self, uri: str) -> str:
        normalized = normalize(uri)
        if not normalized.startswith(self._prefix):
            raise ValueError(f"{uri} is not on the filesystem of {self.root}")
        return normalized[len(self._prefix) :] or "/"

    def uri(self, path: str) -> str:
        return self._prefix + path

    def exists(self, uri: str) -> bool:
        return bool(self._fs.get_file_info(self._path(uri)).type != pafs.FileType.NotFound)

    def is_dir(self, uri: str) -> bool:
        return bool(self._fs.get_file_info(self._path(uri)).type == pafs.FileType.Directory)

    def mkdirs(self, uri: str) -> None:
        self._fs.create_dir(self._path(uri), recursive=True)

    def list_files(self, uri: str, recursive: bool = True) -> list[FileStatus]:
        """Files (not dirs) under ``uri``; empty when it does not exist."""
        base = self._path(uri).rstrip("/")
        selector = pafs.FileSelector(base, allow_not_found=True, recursive=recursive)
        found = []
        for info in self._fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                mtime = int(info.mtime.timestamp() * 1000) if info.mtime else 0
                relative = info.path[len(base) + 1 :]
                found.append(FileStatus(self.uri(info.path), relative, int(info.size or 0), mtime))
        return sorted(found, key=lambda status: status.relative)

    def list_dirs(self, uri: str) -> list[str]:
        """Names of the direct sub-directories of ``uri``."""
        selector = pafs.FileSelector(self._path(uri).rstrip("/"), allow_not_found=True)
        return sorted(
            info.base_name for info in self._fs.get_file_info(selector) if info.type == pafs.FileType.Directory
        )

    def move(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``, creating the target's parent dir."""
        target_path = self._path(target)
        self._fs.create_dir(target_path.rsplit("/", 1)[0], recursive=True)
        self._fs.move(self._path(source), target_path)

    def copy(self, source: str, target: str) -> None:
        """Copy a file (server-side where the store supports it), creating the target's parent dir."""
        target_path = self._path(target)
        self._fs.create_dir(target_path.rsplit("/", 1)[0], recursive=True)
        self._fs.copy_file(self._path(source), target_path)

    def delete_file(self, uri: str) -> None:
        info = self._fs.get_file_info(self._path(uri))
        if info.type == pafs.FileType.File:
            self._fs.delete_file(self._path(uri))

    def delete_dir(self, uri: str) -> None:
        if self.is_dir(uri):
            self._fs.delete_dir(self._path(uri))

    def read_bytes(self, uri: str) -> bytes:
        with self._fs.open_input_stream(self._path(uri)) as stream:
            return bytes(stream.read())

    def read_text(self, uri: str) -> str:
        return self.read_bytes(uri).decode("utf-8")

    def write_bytes(self, uri: str, data: bytes) -> None:
        """Write a whole file atomically where rename is atomic: a hidden temp file, then a rename."""
        path = self._path(uri)
        parent, _, name = path.rpartition("/")
        self._fs.create_dir(parent, recursive=True)
        temp = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"
        with self._fs.open_output_stream(temp) as stream:
            stream.write(data)
        self._fs.move(temp, path)

    def write_text(self, uri: str, text: str) -> None:
        self.write_bytes(uri, text.encode("utf-8"))

    def read_json(self, uri: str) -> Any:
        return json.loads(self.read_text(uri))

    def write_json(self, uri: str, value: Any) -> None:
        self.write_text(uri, json.dumps(value, indent=1, sort_keys=True))

    def open_output(self, uri: str) -> Any:
        """A new file to write (its parent dir created)."""
        path = self._path(uri)
        self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        return self._fs.open_output_stream(path)

    def open_input(self, uri: str) -> Any:
        """A seekable input file (for format readers such as pyarrow.parquet)."""
        return self._fs.open_input_file(self._path(uri))
