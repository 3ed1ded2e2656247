"""Step 3 of the commit protocol (:mod:`.committer`) for ``INSERT OVERWRITE``: the files a batch replaces
taken out of the table and its own put in their place. No file is moved aside into a trash dir first: on an
object store that is a server-side copy of each old file, for files nothing reads again.

How, by the way the batch was written:

- **pending uploads** (``s3a://`` with S3A's committer, :mod:`.uploads`): the batch's files are multipart
  uploads to their final keys, in the very dirs they replace, invisible until completed. The ``inflight``
  entry lists the files the batch replaces (:meth:`Overwrite.list_replaced`): the data files then in each
  partition the batch writes (a table without partitions: in the table's dir). Then every listed file is
  deleted (:meth:`Overwrite.delete_replaced`), and only then are the uploads completed. Each data file's
  bytes are sent once and never copied.
- **staged files** (``file:``, ``hdfs://``, object stores without S3A's committer), partitioned: partition
  by partition, the batch's new files sit in one hidden dir (:class:`~.moves.BatchMover`); the partition dir
  is renamed to its hidden sibling ``.<leaf>.sqlext-old``, the new dir takes the partition's name, and the
  old sibling is deleted (:meth:`Overwrite.swap_partitions`). The ``inflight`` entry lists the partition dirs
  replaced. Without partitions: the listed files deleted, then the new ones moved in, as above.

Why a crash at any point, restarted, ends with exactly the batch's rows in the partitions it overwrites and
the other partitions unchanged (a batch ``INSERT`` is settled before it runs again,
``BatchCommitter.settle_interrupted_statement``):

- before ``inflight`` nothing in the table has changed: the uploads are pending (an upload is visible only
  once sqlext completes it, and it completes none before ``inflight``), the staged files hidden. The rerun
  rolls a ``requested`` entry back (aborting its uploads) and writes the batch again;
- from ``inflight`` on, the log holds the plan and the replaced files, listed before any new file became
  visible, so the list never holds a new file. The restart does the same job again from the log without
  listing anything: it deletes the listed files still there (deleting a file that is gone does nothing),
  completes the uploads not yet published (or swaps in the partitions whose new dir is still there, and
  deletes any old sibling a crash left); then the partitions are committed. Only the partitions the batch
  writes are listed, so no other partition is touched.

What a reader through the HMS sees (the partition keeps its location): with pending uploads, the old files,
then fewer of them while they are deleted, then none, then the new files as their uploads complete; never an
old file with a new one, because every delete has returned before the first upload is completed. An object
store swaps no set of objects atomically (the copy-based swap of earlier versions, a copy and a delete per
file, showed the same partial states). With staged files on HDFS or a local disk: the old partition dir, or
for the instant between its two renames none, or the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from sqlext.connectors.filesystem.commit_log import LogEntry
from sqlext.connectors.filesystem.files import is_data_file
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.faults import fault_point
from sqlext.io.fs import FileSystem, join

#: Where earlier sqlext versions moved the partitions an overwrite replaced; a restart removes what it left.
LEGACY_TRASH_DIR = "_sqlext/trash"
#: The suffix of a partition dir's hidden sibling, where the old dir waits for the new one to take its name.
OLD_SUFFIX = ".sqlext-old"
#: The suffix of a partition dir's hidden sibling, where an overwrite gathers the partition's new files.
NEW_SUFFIX = ".sqlext-new"


def hidden_sibling(table_path: str, relative: str, suffix: str) -> str:
    """The hidden dir beside partition ``relative`` of the table: ``.<leaf><suffix>`` (readers skip ``.`` names)."""
    parent, _, leaf = relative.rpartition("/")
    return join(table_path, parent, f".{leaf}{suffix}")


class Overwrite:
    """Replaces what the overwriting batches of one query replace; ``pool`` gives the committer's I/O pool."""

    def __init__(self, settings: SinkSettings, fs: FileSystem, pool: Callable[[], ThreadPoolExecutor]) -> None:
        self.settings = settings
        self.fs = fs
        self._pool = pool

    def swaps_dirs(self, entry: LogEntry) -> bool:
        """Whether ``entry``'s partitions are replaced by renaming dirs (staged files of a partitioned table)
        rather than by deleting the files listed in its entry."""
        return bool(self.settings.keys) and not entry.uploaded

    def list_replaced(self, entry: LogEntry) -> None:
        """Set ``entry.replaced_files`` (before it is recorded ``inflight``, while no new file is visible): the
        partition dirs :meth:`swap_partitions` replaces, else the data files :meth:`delete_replaced` deletes."""
        dirs = sorted({join(self.settings.path, planned.partition) for planned in entry.files})
        if self.swaps_dirs(entry):
            entry.replaced_files = [directory for directory in dirs if self.fs.is_dir(directory)]
            return
        if not self.settings.keys:
            dirs = [self.settings.path]
        new_files = {planned.final.rsplit("/", 1)[1] for planned in entry.files}
        listings = self._pool().map(lambda directory: self.fs.list_files(directory, recursive=False), dirs)
        entry.replaced_files = [
            status.uri
            for found in listings
            for status in found
            if is_data_file(status.relative) and status.relative not in new_files
        ]

    def delete_replaced(self, entry: LogEntry) -> None:
        """Delete the files the ``inflight`` entry lists (those still there); returns once all are gone."""
        if not entry.replaced_files:
            return
        first, *others = entry.replaced_files
        self.fs.delete_file(first)
        fault_point("mid-replace", entry.batch)
        list(self._pool().map(self.fs.delete_file, others))

    def swap_partitions(self, entry: LogEntry, new_dirs: dict[str, str]) -> None:
        """Each partition (relative path) of ``new_dirs`` whose new dir is still there: the partition dir
        renamed to its hidden sibling, the new dir renamed to the partition's name; then every old sibling
        deleted. A new dir that is gone was swapped in before a crash."""
        for relative in sorted(new_dirs):
            new_dir, old_dir = new_dirs[relative], self._old_dir(relative)
            final_dir = join(self.settings.path, relative)
            if not self.fs.is_dir(new_dir):
                continue
            self.fs.delete_dir(old_dir)  # what a crash left between the two renames: the listed old files
            if self.fs.is_dir(final_dir):
                self.fs.move(final_dir, old_dir)
                fault_point("mid-replace", entry.batch)
            self.fs.move(new_dir, final_dir)
            fault_point("mid-move", entry.batch)
        for relative in sorted(new_dirs):
            self.fs.delete_dir(self._old_dir(relative))

    def remove_legacy_trash(self, entry: LogEntry) -> None:
        """Remove what an earlier sqlext version, interrupted in this overwrite, moved into its trash dir."""
        self.fs.delete_dir(join(self.settings.path, LEGACY_TRASH_DIR, entry.query, f"{entry.batch:020d}"))

    def _old_dir(self, relative: str) -> str:
        return hidden_sibling(self.settings.path, relative, OLD_SUFFIX)
