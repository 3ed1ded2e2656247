"""Steps 1 and 3 of the commit protocol (:mod:`.committer`) for a batch written as pending uploads on
``s3a://`` (S3A's magic committer, :mod:`sqlext.io.s3magic`): no staging dir, no move.

1. **stage** — the uploads a crashed attempt of the batch left (named by its manifests under the batch's
   ``__magic_job-*`` dir) are aborted and the dir removed; before a run's first write, so are the uploads
   under the table no manifest or plan names (:meth:`BatchUploads.abort_unnamed`); Spark appends the batch's
   rows to the table, each file a multipart upload to its final ``k=v/part-...`` key that its job commit does
   not complete; the uploads are read from the task manifests (``.pendingset``) and planned like staged
   files, each with its upload (``PlannedFile.upload``);
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
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.compaction.compactor import COMPACTION_WRITER
from sqlext.connectors.filesystem.files import readers_see
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.faults import fault_point
from sqlext.io import s3magic
from sqlext.io.fs import FileStatus, FileSystem, join

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
        log: CommitLog,
        planner: BatchPlanner,
        pool: Callable[[], ThreadPoolExecutor],
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.fs = fs
        self.log = log
        self._planner = planner
        self._pool = pool
        self._uploads: s3magic.Uploads | None = None
        self._unnamed_aborted = False

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
        if not self._unnamed_aborted:
            self.abort_unnamed()
            self._unnamed_aborted = True
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

    def abort_unnamed(self) -> list[str]:
        """Abort the uploads under the table's visible dirs that neither a manifest nor a plan of this query's
        unfinished batches names, and return their keys: those of an earlier run's tasks killed mid-write (a
        task writes its manifest after its last part), which :meth:`_abort_attempt` cannot see. Run before this
        run's first write, while the background committer may still publish (never abort) the planned ones.

        Only where no other query has a commit log on the table, since another writer's uploads in flight are
        named by no plan of ours. Every writer makes its log dir before its first write, and the uploads are
        listed before the log dirs: an upload listed was started after its writer's log dir was made, so that
        writer is seen. Compaction writes in a hidden dir, so its log does not count. Where another writer
        exists, unnamed uploads are left to the bucket's lifecycle rule (docs/object-stores.md)."""
        self.fs.mkdirs(join(self.log.root, self.query_name))
        operations = self._operations()
        in_progress = operations.in_progress()
        others = [query for query in self.log.queries() if query not in (self.query_name, COMPACTION_WRITER)]
        if others:
            log.info("%s: uploads of killed tasks are left to the bucket: %s also write here", self.query_name, others)
            return []
        planned = self._unfinished_files()
        table = self.settings.path.rstrip("/")
        key = table.split("://", 1)[1].partition("/")[2]
        prefix = f"{key}/" if key else ""
        unnamed = [
            upload
            for upload in in_progress
            if upload["destinationKey"].startswith(prefix)
            and readers_see(upload["destinationKey"][len(prefix) :])
            and f"{table}/{upload['destinationKey'][len(prefix) :]}" not in planned
        ]
        if unnamed:
            log.warning(
                "%s: aborting %d uploads under %s that an earlier run's killed tasks left (no manifest or plan names "
                "them): %s",
                self.query_name,
                len(unnamed),
                table,
                ", ".join(upload["destinationKey"] for upload in unnamed[:5]) + (" ..." if len(unnamed) > 5 else ""),
            )
            list(self._pool().map(operations.abort, unnamed))
        return [upload["destinationKey"] for upload in unnamed]

    def _unfinished_files(self) -> set[str]:
        """The final URIs of the files this query's batches not yet ``completed`` planned (an entry is completed
        after every one of its uploads was, so none of a completed entry's is still in progress)."""
        return {
            planned.final
            for batch, state in self.log.states(self.query_name).items()
            if state is not State.COMPLETED
            for entry in [self.log.get(self.query_name, batch)]
            if entry is not None
            for planned in entry.files
        }

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
                planned.rows = self.settings.count_rows(self.fs, status)
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
