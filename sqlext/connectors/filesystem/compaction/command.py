"""``sqlext compact``: the committed partitions of a table compacted on demand, in chunks that share one
reader grace, with a progress bar (the command's side of :mod:`.compaction`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.commit_log import LogEntry
from sqlext.connectors.filesystem.compaction.compactor import DEFAULT_READER_GRACE, Compactor
from sqlext.connectors.filesystem.compaction.merge import check_mergeable
from sqlext.connectors.filesystem.compaction.plan import target_size_of
from sqlext.connectors.filesystem.escaping import parse_partition_path
from sqlext.errors import ValidationError
from sqlext.table import TableDefinition

#: ``sqlext compact`` swaps this many partitions per reader grace.
PARTITIONS_PER_SWAP = 32


def matching_partitions(names: Iterable[str], keys: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The HMS partition names matching ``k=v`` filters (several values of one key: any of them)."""
    accepted: dict[str, set[str]] = {}
    for item in wanted:
        key, sep, value = item.partition("=")
        if not sep or key not in keys:
            raise ValidationError(
                f"--partition '{item}': expected <key>=<value> with a partition key of the table ({', '.join(keys)})."
            )
        accepted.setdefault(key, set()).add(value)
    chosen = []
    for name in names:
        spec = dict(zip(keys, parse_partition_path(name, keys), strict=True))
        if all(spec[key] in values for key, values in accepted.items()):
            chosen.append(name)
    return chosen


@dataclass
class CompactionSummary:
    """What one ``sqlext compact`` run did."""

    partitions: int = 0
    compacted: int = 0
    files_before: int = 0
    files_after: int = 0

    def add(self, entry: LogEntry) -> None:
        self.compacted += 1
        self.files_before += len(entry.replaced_files)
        self.files_after += len(entry.files)


def compact_table(
    table: TableDefinition,
    metastore: MetastoreClient,
    partition_filters: Sequence[str] = (),
    target_size: int | None = None,
    reader_grace: timedelta = DEFAULT_READER_GRACE,
    show_progress: bool = True,
) -> CompactionSummary:
    """Compact the committed partitions of ``table`` (those the HMS lists, narrowed by ``k=v``
    filters), first finishing any compaction a crash interrupted. Partitions go in chunks that share
    one reader grace; at the end it waits the grace once more and removes the work dirs."""
    from tqdm import tqdm

    compactor = Compactor(table, metastore, target_size or target_size_of(table), reader_grace)
    check_mergeable(table, compactor.format)
    compactor.recover()
    ident, keys = table.identifier, table.partition_keys
    names = matching_partitions(metastore.get_partition_names(ident.database, ident.name), keys, partition_filters)
    summary = CompactionSummary(partitions=len(names))
    with tqdm(total=len(names), desc=f"compacting {ident}", unit="partition", disable=not show_progress) as bar:
        for start in range(0, len(names), PARTITIONS_PER_SWAP):
            chunk = [(name, parse_partition_path(name, keys)) for name in names[start : start + PARTITIONS_PER_SWAP]]
            for entry in compactor.compact(chunk):
                summary.add(entry)
            bar.update(len(chunk))
            bar.set_postfix(files=f"{summary.files_before}->{summary.files_after}")
    if summary.compacted:
        compactor.wait_for_readers(summary.compacted)
        compactor.remove_expired()
    return summary
