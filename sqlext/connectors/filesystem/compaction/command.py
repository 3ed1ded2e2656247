"""``sqlext compact``: the committed partitions of a table compacted on demand, in chunks that share one
reader grace, with a progress bar (the command's side of :mod:`.compaction`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.commit_log import LogEntry
from sqlext.connectors.filesystem.compaction.compactor import DEFAULT_READER_GRACE, Compactor
from sqlext.connectors.filesystem.compaction.merge import check_mergeable
from sqlext.connectors.filesystem.compaction.plan import target_size_of
from sqlext.connectors.filesystem.escaping import parse_partition_path, partition_path
from sqlext.errors import ValidationError
from sqlext.options import Options
from sqlext.table import TableDefinition

#: ``sqlext compact`` swaps this many partitions per reader grace.
PARTITIONS_PER_SWAP = 32
#: At most this many partitions named by ``--partition`` filters are fetched by name, rather than listed.
_NAMED_AT_MOST = 1000


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


def chosen_partitions(metastore: MetastoreClient, table: TableDefinition, wanted: Sequence[str]) -> list[str]:
    """The names of the HMS partitions of ``table`` that match the ``k=v`` filters, in name order. Filters
    that give every partition key its values name the partitions outright: those are fetched by name, so that
    compacting one partition of a table of 100,000 costs the same as on a small one; other filters (or none)
    are matched against the table's listing."""
    ident, keys = table.identifier, table.partition_keys
    accepted: dict[str, list[str]] = {}
    for item in wanted:
        key, _, value = item.partition("=")
        accepted.setdefault(key, []).append(value)
    named = [dict.fromkeys(accepted.get(key, [])) for key in keys]
    combinations = 1
    for values in named:
        combinations *= len(values)
    if not 0 < combinations <= _NAMED_AT_MOST or any("" in values for values in named):
        return matching_partitions(metastore.get_partition_names(ident.database, ident.name), keys, wanted)
    matching_partitions([], keys, wanted)  # the same refusal of a filter that names no partition key
    default_name = Options(table.options).get(fso.PARTITION_DEFAULT_NAME)
    hms_keys = [key.lower() for key in keys]  # as the HMS names partitions
    try:
        names = [partition_path(hms_keys, list(values), default_name) for values in itertools.product(*named)]
    except ValidationError:  # a value no partition can have (too long for a path)
        return matching_partitions(metastore.get_partition_names(ident.database, ident.name), keys, wanted)
    found = metastore.get_partitions_by_names(ident.database, ident.name, names)
    return sorted(partition_path(hms_keys, list(partition.values), default_name) for partition in found)


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
    names = chosen_partitions(metastore, table, partition_filters)
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
