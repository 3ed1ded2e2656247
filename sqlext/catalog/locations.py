"""A table's directory at CREATE TABLE. Hive's create makes the location of every table it creates, external
ones too (and Spark's Hive reader of an unpartitioned text table fails where it is missing), so a table whose
``path`` did not exist gets an empty directory there. sqlext marks such a directory (``_sqlext/made-at-create``,
which readers skip as they skip every ``_`` name), so that a source can tell it from a directory something was
written into: as in Flink, a source whose path does not exist (a typo) fails naming it, rather than reading
an empty directory. A sink's first committed batch removes the mark."""

from __future__ import annotations

import json
import logging
import time

from sqlext.errors import FileSystemError
from sqlext.io.fs import FileSystem, join
from sqlext.table import TableDefinition

log = logging.getLogger("sqlext.catalog")

#: The mark of a directory the metastore made at CREATE TABLE, relative to the table's path.
MADE_MARK = "_sqlext/made-at-create"


def missing_path(table: TableDefinition) -> bool:
    """Whether the table's ``path`` does not exist (False when it cannot be told: no path, no answer).

    Raises :class:`FileSystemError` naming the table and the path when this process cannot reach the path's
    filesystem (a kerberized WebHDFS without a ticket, in a process with no JVM): its inserts and reads
    could not either, so the CREATE fails before the metastore is asked, with the fix."""
    path = table.options.get("path") if table.connector == "filesystem" else None
    if not path:
        return False
    try:
        return not FileSystem(path).exists(path)
    except FileSystemError as exc:
        raise FileSystemError(
            f"Cannot create {table.identifier} at {path}: this process cannot reach the path, so neither could "
            f"the table's inserts and reads. {exc} Nothing was created.",
            option=exc.option,
            value=path,
        ) from exc
    except (OSError, ValueError):
        return False  # the metastore's create names what is wrong with the path


def mark_made_dir(table: TableDefinition) -> None:
    """Mark the empty directory the metastore made at the table's path (see the module docstring)."""
    path = table.options["path"]
    fs = FileSystem(path)
    try:
        if fs.is_dir(path) and not fs.list_dirs(path) and not fs.list_files(path, recursive=False):
            fs.write_text(join(path, MADE_MARK), json.dumps({"table": str(table.identifier), "at_ms": _now_ms()}))
    except (OSError, ValueError) as exc:  # the table is created; only a typo in its path goes unnoticed
        log.debug("could not mark the directory the metastore made at %s: %s", path, exc)


def unmark_made_dir(fs: FileSystem, path: str) -> None:
    """Remove the mark once something is written at ``path`` (a sink's first committed batch)."""
    fs.delete_file(join(path, MADE_MARK))


def made_and_unwritten(path: str) -> bool:
    """Whether ``path`` is a directory the metastore made at CREATE TABLE that nothing was written into since:
    nothing in it but the mark."""
    fs = FileSystem(path)
    own = join(path, "_sqlext")
    if fs.list_dirs(path) != ["_sqlext"] or fs.list_files(path, recursive=False) or fs.list_dirs(own):
        return False
    return [status.relative for status in fs.list_files(own, recursive=False)] == [MADE_MARK.split("/", 1)[1]]


def _now_ms() -> int:
    return int(time.time() * 1000)
