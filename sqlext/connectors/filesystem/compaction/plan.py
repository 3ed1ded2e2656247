"""Compaction's plan (:mod:`.compaction`): a partition's files smaller than the target size grouped, in
name order, into groups of files of one shape, each to be merged into one file; and the table's target size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.compaction.merge import SourceFile
from sqlext.connectors.filesystem.files import total_rows
from sqlext.options import Options
from sqlext.table import TableDefinition


@dataclass(frozen=True)
class MergeGroup:
    """Files merged into one, in this order."""

    sources: tuple[SourceFile, ...]

    @property
    def size(self) -> int:
        return sum(source.status.size for source in self.sources)

    @property
    def rows(self) -> int | None:
        return total_rows(source.rows for source in self.sources)


def plan_groups(files: Sequence[SourceFile], target_size: int) -> list[MergeGroup]:
    """Group the files smaller than ``target_size``, in the given order, into groups of at most
    ``target_size`` bytes of files of one shape; groups of one file are left out (nothing to merge)."""
    groups: list[MergeGroup] = []
    current: list[SourceFile] = []

    def close() -> None:
        if len(current) > 1:
            groups.append(MergeGroup(tuple(current)))
        current.clear()

    for source in files:
        if source.status.size >= target_size:
            continue
        if current and (
            source.shape != current[0].shape or sum(f.status.size for f in current) + source.status.size > target_size
        ):
            close()
        current.append(source)
    close()
    return groups


def target_size_of(table: TableDefinition) -> int:
    """The table's ``compaction.file-size``, or its rolling file size."""
    options = Options(table.options)
    return int(options.get(fso.COMPACTION_FILE_SIZE) or options.get(fso.ROLLING_FILE_SIZE))
