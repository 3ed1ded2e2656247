"""Data files of a partition: which names readers skip, and their row counts."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from sqlext.io.fs import FileStatus, FileSystem

log = logging.getLogger("sqlext.commit")


def data_files(fs: FileSystem, directory: str) -> list[FileStatus]:
    """The files of a partition directory that readers read."""
    return [f for f in fs.list_files(directory, recursive=False) if is_data_file(f.relative)]


def is_data_file(name: str) -> bool:
    """Readers skip names starting with ``_`` or ``.`` (success files, checksums, staging)."""
    return not name.rsplit("/", 1)[-1].startswith(("_", "."))


def readers_see(relative: str) -> bool:
    """Whether a path below a table (``dt=1/part-0``) is one readers read: no dir or file on the way is one they
    skip (sqlext's ``_sqlext/``, compaction's work files, hidden swap dirs)."""
    return all(is_data_file(part) for part in relative.split("/"))


#: Text formats whose files sqlext writes one row a line (csv escapes line breaks, json lines, raw).
LINE_FORMATS = ("csv", "json", "raw", "debezium-json", "canal-json", "maxwell-json")
#: Names of compressed text files, whose lines are not counted without decompressing them.
_COMPRESSED = (".gz", ".bz2", ".deflate", ".snappy", ".lz4", ".zst", ".zstd", ".xz")
_CHUNK = 1 << 20


def count_rows(fs: FileSystem, status: FileStatus, file_format: str) -> int | None:
    """Rows in a data file: from its footer (parquet, orc), its blocks' headers (avro), or its lines (csv,
    json, raw: one row a line as sqlext writes them); None when it cannot be known (another format, a
    compressed text file)."""
    try:
        if file_format == "parquet":
            import pyarrow.parquet as pq

            with fs.open_input(status.uri) as handle:
                return int(pq.ParquetFile(handle).metadata.num_rows)
        if file_format == "orc":
            import pyarrow.orc as orc

            with fs.open_input(status.uri) as handle:
                return int(orc.ORCFile(handle).nrows)
        if file_format == "avro":
            with fs.open_input(status.uri) as handle:
                return count_avro_records(handle)
        if file_format in LINE_FORMATS and not status.relative.lower().endswith(_COMPRESSED):
            return _count_lines(fs, status)
    except OSError as exc:
        log.warning("cannot count the rows of %s: %s", status.uri, exc)
    return None


def _count_lines(fs: FileSystem, status: FileStatus) -> int:
    """Lines of a text file; a last line without a line break counts too."""
    lines, last = 0, b"\n"
    with fs.open_input(status.uri) as handle:
        while chunk := handle.read(_CHUNK):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


_AVRO_MAGIC = b"Obj\x01"
_AVRO_SYNC = 16


def count_avro_records(handle: Any) -> int:
    """Records in an Avro object container file (``handle``: seekable, at its start), from the header of
    each block (its record count and byte size), the blocks' data skipped unread: Avro's own
    ``DataFileReader`` counts the same way. OSError for a file that is not one."""
    if handle.read(4) != _AVRO_MAGIC:
        raise OSError("not an Avro object container file (no 'Obj\\x01' magic)")
    while (entries := _avro_long(handle)) != 0:  # the header's metadata map, in blocks of entries
        if entries < 0:
            _avro_long(handle)  # the block's size in bytes
        for _ in range(abs(entries) * 2):  # key and value, each as length and bytes
            _skip(handle, _avro_long(handle))
    _skip(handle, _AVRO_SYNC)
    records = 0
    while True:
        try:
            count = _avro_long(handle)
        except EOFError:
            return records
        records += count
        _skip(handle, _avro_long(handle) + _AVRO_SYNC)


def _avro_long(handle: Any) -> int:
    """An Avro ``long``: a zig-zag varint; EOFError at the end of the file."""
    shift = value = 0
    while True:
        byte = handle.read(1)
        if not byte:
            if shift:
                raise OSError("an Avro file ends inside a number")
            raise EOFError
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7


def _skip(handle: Any, size: int) -> None:
    if size < 0:
        raise OSError(f"a negative size ({size}) in an Avro file")
    handle.seek(size, 1)


def total_rows(counts: Iterable[int | None]) -> int | None:
    """The sum of row counts, or None when any is unknown."""
    total = 0
    for count in counts:
        if count is None:
            return None
        total += count
    return total


def count_all_rows(fs: FileSystem, files: Sequence[FileStatus], file_format: str) -> int | None:
    """Rows in all ``files`` (see :func:`count_rows`); None when one file's count cannot be known."""
    return total_rows(count_rows(fs, status, file_format) for status in files)
