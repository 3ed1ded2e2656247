"""Step 3 of the commit protocol (:mod:`.committer`): a planned batch's files moved from their staging
dir into the table (or, written as pending uploads, published), what an overwrite replaces taken out
(:mod:`.overwrite`), and an unfinished append rolled back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from sqlext.connectors.filesystem.commit.overwrite import NEW_SUFFIX, Overwrite, hidden_sibling
from sqlext.connectors.filesystem.commit.uploads import BatchUploads
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import CommitError
from sqlext.faults import fault_point
from sqlext.io.fs import FileSystem, join

log = logging.getLogger("sqlext.commit")


class BatchMover:
    """Moves the planned files of one writing query's batches into place; ``pool`` gives the committer's
    I/O pool, and the row counts of moved files go into ``row_counts`` (read by the partition commit)."""

    def __init__(
        self,
        settings: SinkSettings,
        query_name: str,
        fs: FileSystem,
        log: CommitLog,
        pool: Callable[[], ThreadPoolExecutor],
        row_counts: dict[str, int],
        uploads: BatchUploads,
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.fs = fs
        self.log = log
        self._pool = pool
        self._row_counts = row_counts
        self._uploads = uploads
        self._overwrite = Overwrite(settings, fs, pool)

    def move(self, entry: LogEntry) -> None:
        """Step 3: record ``inflight`` (an overwrite's with the files or partition dirs it replaces), take out
        what an overwrite replaces, move the planned files into place, record ``completed`` and remove the
        staging dir. A batch written as pending uploads has its uploads completed instead (:mod:`.uploads`)."""
        # Uploads are completed only once the log says inflight: an entry that says so already is a restart.
        resumed = entry.state is State.INFLIGHT
        overwrite = entry.operation == "overwrite"
        if overwrite and not resumed:
            self._overwrite.list_replaced(entry)  # recorded with inflight, before anything in the table changes
        self.log.transition(entry, State.INFLIGHT)
        if overwrite and resumed:
            self._overwrite.remove_legacy_trash(entry)
        if entry.uploaded:
            if overwrite:
                self._overwrite.delete_replaced(entry)
            self._uploads.publish(entry, self._row_counts, resumed)
            fault_point("after-move", entry.batch)
            self.log.transition(entry, State.COMPLETED)
            self._uploads.clean(entry)
            return
        if overwrite and self._overwrite.swaps_dirs(entry):
            self._swap_partitions(entry)
        elif overwrite:
            self._overwrite.delete_replaced(entry)
        # In parallel: on an object store each move is a copy, and the files of a batch are independent.
        list(self._pool().map(lambda planned: self._move_file(entry, planned), entry.files))
        for planned in entry.files:
            if planned.rows is not None:
                self._row_counts[planned.final] = planned.rows
        fault_point("after-move", entry.batch)
        self.log.transition(entry, State.COMPLETED)
        self.fs.delete_dir(self.log.staging_dir(entry.query, entry.batch))

    def _move_file(self, entry: LogEntry, planned: PlannedFile) -> None:
        if self.fs.exists(planned.staged):
            self.fs.move(planned.staged, planned.final)
            fault_point("mid-move", entry.batch)
        elif not self.fs.exists(planned.final):
            raise CommitError(
                f"Batch {entry.batch} of {entry.query}: file {planned.staged} is neither staged nor at "
                f"{planned.final}; the commit log and the table directory disagree."
            )

    def _swap_partitions(self, entry: LogEntry) -> None:
        """INSERT OVERWRITE of a partitioned table from staged files: each written partition is replaced whole.

        The batch's new files of a partition sit in one directory: the staging dir Spark wrote them into
        (``k=v/...`` under the batch's staging dir) when it holds that partition's files alone, else a
        hidden sibling of the partition dir (``.<leaf>.sqlext-new``) they are first moved into. Then
        :meth:`Overwrite.swap_partitions` swaps directories by renames, so each new file is renamed once by
        sqlext, as in an append.
        """
        by_partition: dict[str, list[PlannedFile]] = {}
        for planned in entry.files:
            by_partition.setdefault(planned.partition, []).append(planned)
        staged_dirs = self._staged_partition_dirs(entry, by_partition)
        new_dirs = {}
        for relative in sorted(by_partition):
            new_dirs[relative] = staged_dirs.get(relative) or self._gather(relative, by_partition[relative])
            if self.fs.is_dir(new_dirs[relative]):
                self._drop_unplanned(new_dirs[relative], by_partition[relative])
        self._overwrite.swap_partitions(entry, new_dirs)

    def _staged_partition_dirs(self, entry: LogEntry, by_partition: dict[str, list[PlannedFile]]) -> dict[str, str]:
        """Each partition whose staged files all sit in one directory of the batch's staging dir that holds
        no other partition's files, and that directory (Spark's ``partitionBy`` layout)."""
        staging = self.log.staging_dir(entry.query, entry.batch) + "/"
        parents = {relative: {p.staged.rsplit("/", 1)[0] for p in files} for relative, files in by_partition.items()}
        owners: dict[str, int] = {}
        for dirs in parents.values():
            for directory in dirs:
                owners[directory] = owners.get(directory, 0) + 1
        return {
            relative: directory
            for relative, dirs in parents.items()
            if len(dirs) == 1 and (directory := next(iter(dirs))).startswith(staging) and owners[directory] == 1
        }

    def _gather(self, relative: str, files: list[PlannedFile]) -> str:
        """Move a partition's staged files into its hidden sibling dir; return that dir."""
        gathered = self._swap_dir(relative)
        for planned in files:
            if self.fs.exists(planned.staged):
                self.fs.move(planned.staged, join(gathered, planned.final.rsplit("/", 1)[1]))
        return gathered

    def _drop_unplanned(self, new_dir: str, files: list[PlannedFile]) -> None:
        """Delete what the writer left beside the planned files (Hadoop's local ``.crc`` checksums), so that
        the partition dir receives the batch's data files alone."""
        names = {planned.final.rsplit("/", 1)[1] for planned in files}
        for status in self.fs.list_files(new_dir, recursive=False):
            if status.relative not in names:
                self.fs.delete_file(status.uri)

    def _swap_dir(self, relative: str) -> str:
        return hidden_sibling(self.settings.path, relative, NEW_SUFFIX)

    def clean(self, entry: LogEntry) -> None:
        """Remove what a ``completed`` batch may have left behind a crash: its staging or manifest dir."""
        self.fs.delete_dir(self.log.staging_dir(entry.query, entry.batch))
        if entry.uploaded:
            self._uploads.clean(entry)

    def roll_back(self, entry: LogEntry) -> None:
        """Undo an unfinished append: delete the files it moved (or published), its staging dir (or abort its
        unpublished uploads), then its log entry (in that order, so that a crash while rolling back leaves an
        entry that the next run rolls back again)."""
        if entry.uploaded:
            self._uploads.discard(entry)
        moved = [planned.final for planned in entry.files if self.fs.exists(planned.final)]
        for final in moved:
            self.fs.delete_file(final)
        self.fs.delete_dir(self.log.staging_dir(entry.query, entry.batch))
        self.log.discard(entry)
        log.warning(
            "%s: rolled back batch %d that a crashed run left %s (%d of its %d files had been moved into %s); "
            "this run writes its rows",
            self.query_name,
            entry.batch,
            entry.state,
            len(moved),
            len(entry.files),
            self.settings.path,
        )
