"""An insert's running totals (batches, rows, files, partition commits), logged with each batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlext.connectors.filesystem.commit_log import LogEntry


@dataclass
class InsertProgress:
    """Running totals of one insert, logged with each batch and readable from its RunningInsert."""

    batches: int = 0
    rows: int = 0
    #: False once a batch had files whose rows could not be counted (compressed csv/json).
    rows_known: bool = True
    files: int = 0
    partitions_committed: int = 0
    last_batch: int | None = None

    def add(self, entry: LogEntry, committed: int) -> bool:
        """Count a finished batch; False when it was counted already: Spark replays a batch that a restart's
        recovery finished (it had not recorded it), whose rows are in the table once and count once."""
        self.partitions_committed += committed
        if self.last_batch is not None and entry.batch <= self.last_batch:
            return False
        self.batches += 1
        self.rows += entry.rows
        self.rows_known = self.rows_known and entry.rows_known
        self.files += len(entry.files)
        self.last_batch = entry.batch
        return True
