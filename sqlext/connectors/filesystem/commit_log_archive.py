"""The archive of a table's commit log: the completed entries the log no longer keeps, kept for the record.

As Hudi moves the instants its active timeline no longer keeps into ``.hoodie/archived`` (read by nothing on
the write path, by its history tools on demand), the commit log moves each entry it expires
(``sink.commit-log.retained-batches``) into ``<table path>/_sqlext/archive/<query>/``: first as the entry's
own file, then, once :data:`ENTRIES_PER_FILE` such files are there, merged into one file of JSON lines named by
its batch range (``<first>-<last>.archive``), as Hudi merges its small archive files. The archive keeps the
newest ``sink.commit-log.archive.retained-batches`` entries of a query (in whole merged files) and deletes
older merged files, so its size is bounded as the log's is.

Nothing a writer needs to recover is archived: only completed entries, which a restart does not finish, and
only those the log would have deleted. Each step writes before it deletes (an entry moved, then a merged file
written, then its parts deleted), so a crash leaves an entry in two places at worst, which readers take once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from sqlext.connectors.filesystem.commit_log import LogEntry
from sqlext.io.fs import FileSystem, join

ARCHIVE_DIR = "_sqlext/archive"
#: Entries per merged archive file (and loose entry files at most before they are merged).
ENTRIES_PER_FILE = 100
_LOOSE = re.compile(r"^(\d{20})\.completed$")
_MERGED = re.compile(r"^(\d{20})-(\d{20})\.archive$")


def table_archive(fs: FileSystem, table_path: str, retained: int) -> CommitLogArchive | None:
    """The archive of the table's log keeping ``retained`` entries a query, or None where it keeps none."""
    return CommitLogArchive(fs, table_path, retained) if retained > 0 else None


class CommitLogArchive:
    """The archive of one table's commit log (all queries writing it)."""

    def __init__(self, fs: FileSystem, table_path: str, retained: int) -> None:
        """``retained``: entries of each query the archive keeps at least
        (``sink.commit-log.archive.retained-batches``)."""
        self.fs = fs
        self.root = join(table_path, ARCHIVE_DIR)
        self.retained = retained

    def add(self, query: str, uri: str, batch: int) -> None:
        """Move the log's completed entry file ``uri`` (of ``batch``) into the archive, then merge and trim."""
        directory = join(self.root, query)
        self.fs.move(uri, join(directory, f"{batch:020d}.completed"))
        loose, _ = self._listing(query)
        if len(loose) >= ENTRIES_PER_FILE:
            self._merge(query, loose)
            self._trim(query, self._listing(query)[1])

    def entries(self, query: str) -> Iterator[LogEntry]:
        """The archived entries of ``query``, by batch (each once)."""
        loose, merged = self._listing(query)
        seen: set[int] = set()
        found: list[LogEntry] = []
        for _, uri in sorted(merged.items()):
            for line in self.fs.read_text(uri).splitlines():
                entry = LogEntry.from_json(json.loads(line), uri)
                if entry.batch not in seen:
                    seen.add(entry.batch)
                    found.append(entry)
        for batch, uri in sorted(loose.items()):
            if batch not in seen:
                try:
                    found.append(LogEntry.from_json(self.fs.read_json(uri), uri))
                except FileNotFoundError:  # merged since the listing: read with the merged file
                    continue
        yield from sorted(found, key=lambda entry: entry.batch)

    def queries(self) -> list[str]:
        return self.fs.list_dirs(self.root)

    def _listing(self, query: str) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
        """Loose entry files (batch -> URI) and merged files ((first, last) -> URI) of ``query``."""
        loose: dict[int, str] = {}
        merged: dict[tuple[int, int], str] = {}
        for status in self.fs.list_files(join(self.root, query), recursive=False):
            if match := _LOOSE.match(status.relative):
                loose[int(match.group(1))] = status.uri
            elif match := _MERGED.match(status.relative):
                merged[(int(match.group(1)), int(match.group(2)))] = status.uri
        return loose, merged

    def _merge(self, query: str, loose: dict[int, str]) -> None:
        batches = sorted(loose)
        lines = [json.dumps(self.fs.read_json(loose[batch]), sort_keys=True) for batch in batches]
        name = f"{batches[0]:020d}-{batches[-1]:020d}.archive"
        self.fs.write_text(join(self.root, query, name), "\n".join(lines) + "\n")
        for batch in batches:
            self.fs.delete_file(loose[batch])

    def _trim(self, query: str, merged: dict[tuple[int, int], str]) -> None:
        """Delete the oldest merged files but the newest that hold ``retained`` entries (rounded up to whole
        files of :data:`ENTRIES_PER_FILE`)."""
        kept = -(-self.retained // ENTRIES_PER_FILE)
        for range_ in sorted(merged)[: max(0, len(merged) - kept)]:
            self.fs.delete_file(merged[range_])
