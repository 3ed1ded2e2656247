"""Data files of a partition: which names readers skip, and row counts from file footers."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from sqlext.fs import FileStatus, FileSystem

log = logging.getLogger("sqlext.commit")


def data_files(fs: FileSystem, directory: str) -> list[FileStatus]:
    """The files of a partition directory that readers read."""
    return [f for f in fs.list_files(directory, recursive=False) if is_data_file(f.relative)]


def is_data_file(name: str) -> bool:
    """Readers skip names starting with ``_`` or ``.`` (success files, checksums, staging)."""
    return not name.rsplit("/", 1)[-1].startswith(("_", "."))


def count_rows(fs: FileSystem, status: FileStatus, file_format: str) -> int | None:
    """Rows in a data file from its footer (parquet, orc); None for formats without one."""
    try:
        if file_format == "parquet":
            import pyarrow.parquet as pq

            with fs.open_input(status.uri) as handle:
                return int(pq.ParquetFile(handle).metadata.num_rows)
        if file_format == "orc":
            import pyarrow.orc as orc

            with fs.open_input(status.uri) as handle:
                return int(orc.ORCFile(handle).nrows)
    except OSError as exc:
        log.warning("cannot read the footer of %s: %s", status.uri, exc)
    return None


def total_rows(counts: Iterable[int | None]) -> int | None:
    """The sum of row counts, or None when any is unknown."""
    total = 0
    for count in counts:
        if count is None:
            return None
        total += count
    return total


def count_all_rows(fs: FileSystem, files: Sequence[FileStatus], file_format: str) -> int | None:
    """Rows in all ``files`` from their footers; None when a file's format has no row count."""
    return total_rows(count_rows(fs, status, file_format) for status in files)
