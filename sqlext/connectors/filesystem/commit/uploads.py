"""Steps 1 and 3 of the commit protocol (:mod:`.committer`) for a batch written as pending uploads on
``s3a://`` (S3A's magic committer, :mod:`sqlext.io.s3magic`): no staging dir, no move.

1. **stage** — the uploads a crashed attempt of the batch left (named by its manifests under the batch's
   ``__magic_job-*`` dir) are aborted and the dir removed; Spark appends the batch's rows to the table, each
   file a multipart upload to its final ``k=v/part-...`` key that its job commit does not complete; the
   uploads are read from the task manifests (``.pendingset``) and planned like staged files, each with its
   upload (``PlannedFile.upload``);
3. **publish** — each planned upload is completed (its object appears whole at its final key), unless its
   object is already there with the planned size (looked for only on a restart after a crash in this step);
   rows are counted from the published files' footers; after ``completed`` the manifests are deleted.

Exactly once: an upload becomes visible only when sqlext completes it, and sqlext completes only uploads its
log planned; a batch not planned is written again after its old uploads are aborted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from sqlext.connectors.filesystem.commit.plan import BatchPlanner, StagedFile
from sqlext.connectors.filesystem.commit_log import LogEntry, PlannedFile
from sqlext.connectors.filesystem.files import count_rows
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.faults import fault_point
from sqlext.io import s3magic
from sqlext.io.fs import FileStatus, FileSystem

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("sqlext.commit")

#: The schemes whose batches are written as pending uploads (when the classes are there).
UPLOAD_SCHEMES = ("s3a",)


class BatchUploads:
    """Writes and publishes the batches of one writing query into one ``s3a://`` table as pending uploads;
    ``pool`` gives the committer's I/O pool."""

    def __init__(
        self,
        settings: SinkSettings,
        query_name: str,
        fs: FileSystem,
        planner: BatchPlanner,
        pool: Callable[[], ThreadPoolExecutor],
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.fs = fs
        self._planner = planner
        self._pool = pool
        self._uploads: s3magic.Uploads | None = None

    def applies(self, rows: DataFrame) -> bool:
        """Whether this table's batches are written as pending uploads in ``rows``' session."""
        if self.settings.path.split("://", 1)[0] not in UPLOAD_SCHEMES:
            return False
        context = getattr(getattr(rows, "sparkSession", None), "sparkContext", None)
        return context is not None and s3magic.available(context)

    def stage(self, rows: DataFrame, batch: int) -> list[StagedFile]:
        """Step 1: abort what an earlier attempt of ``batch`` left, write ``rows`` as pending uploads, return
        them as the batch's files."""
        directory = s3magic.magic_dir(self.settings.path, self.query_name, batch)
        self._abort_attempt(directory, batch)
        self._planner.stage(rows, self.settings.path, s3magic.write_options(self.query_name, batch))
        uploads = s3magic.pending_uploads(self.fs, directory)
        if not uploads:  # an empty batch: nothing to plan or publish, so nothing would remove the dir
            self.fs.delete_dir(directory)
        return self._planner.list_uploads(uploads)

    def _abort_attempt(self, directory: str, batch: int) -> None:
        abandoned = s3magic.abandoned_uploads(self.fs, directory)
        if abandoned:
            log.warning(
                "%s: aborting %d uploads of batch %d that an earlier attempt left unplanned; writing it again",
                self.query_name,
                len(abandoned),
                batch,
            )
            uploads = self._operations()
            list(self._pool().map(uploads.abort, abandoned))
        self.fs.delete_dir(directory)

    def publish(self, entry: LogEntry, row_counts: dict[str, int], resumed: bool) -> None:
        """Step 3 (the log says ``inflight``): complete the planned uploads, count their rows. ``resumed``: the
        log said ``inflight`` before, so a crash may have published some (they are listed, and skipped)."""
        uploads = self._operations()
        published = self._published(entry) if resumed else {}

        def publish_file(planned: PlannedFile) -> None:
            assert planned.upload is not None
            if published.get(planned.final) != planned.size:
                uploads.complete(planned.upload)
                fault_point("mid-move", entry.batch)
            if planned.rows is None:
                status = FileStatus(planned.final, planned.final.rsplit("/", 1)[1], planned.size, 0)
                planned.rows = count_rows(self.fs, status, self.settings.format)
            if planned.rows is not None:
                row_counts[planned.final] = planned.rows

        list(self._pool().map(publish_file, entry.files))
        self._planner.learn_row_size(entry.files)

    def _published(self, entry: LogEntry) -> dict[str, int]:
        """The objects in the batch's partition dirs, URI -> size (one listing a dir): a planned file there
        with its planned size was published before a crash (an upload completes once, and only sqlext
        completes these)."""
        directories = {planned.final.rpartition("/")[0] for planned in entry.files}
        listings = self._pool().map(lambda directory: self.fs.list_files(directory, recursive=False), directories)
        return {status.uri: status.size for found in listings for status in found}

    def discard(self, entry: LogEntry) -> None:
        """Roll back: abort the planned uploads not published (the published files are deleted by the
        caller), remove the manifests."""
        published = self._published(entry)
        unpublished = [p.upload for p in entry.files if p.upload is not None and published.get(p.final) != p.size]
        if unpublished:
            list(self._pool().map(self._operations().abort, unpublished))
        self.clean(entry)

    def clean(self, entry: LogEntry) -> None:
        """Remove the batch's manifest dir (once it is ``completed``, or rolled back)."""
        self.fs.delete_dir(s3magic.magic_dir(self.settings.path, entry.query, entry.batch))

    def _operations(self) -> s3magic.Uploads:
        if self._uploads is None:
            self._uploads = s3magic.Uploads(self.settings.path)
        return self._uploads
