"""The driver-side commit protocol of the filesystem sink (Flink's ``StreamingFileCommitter``).

For each batch ``N`` of a writing query ``Q`` (a micro-batch, Flink's checkpoint):

1. **stage** — Spark writes the batch's rows into ``<table>/_sqlext/staging/Q/N/`` (hidden from every
   reader); each task's commit renames its files into that directory (Hadoop's committer algorithm 2,
   ``STAGING_COMMITTER``), and the directory is listed only once Spark's job has succeeded;
2. **plan** — the staged files are listed, their final ``k=v`` locations and row counts computed, and
   the plan is recorded as ``N.requested`` in the table's commit log;
3. **move** — ``N.inflight`` is recorded, each staged file is renamed into its partition directory
   (``IO_THREADS`` at a time: its one rename by sqlext, so two in all with the task commit's), then
   ``N.completed`` is recorded and the staging directory removed;
4. **partition commit** — the batch's partitions join the trigger's pending set; the ready ones run
   the commit policies in order; the trigger state, which also records ``N`` as the latest batch whose
   partitions it took in, is saved in the query checkpoint and the committed partitions are added to
   ``N.completed``.

On ``s3a://`` (with S3A's and Spark's hadoop-cloud jars), a batch has no staging dir and no move
(:mod:`.uploads`): in step 1 Spark writes each file as a multipart upload to its final key that its job
commit does not complete, step 2 records the uploads from the tasks' manifests, and step 3 completes them.
An ``INSERT OVERWRITE`` takes out what it replaces in step 3, before its files appear (:mod:`.overwrite`).

**The overlapped commit** (a streaming insert with ``sink.partition-commit.async``, the default): steps 3-4
of batch ``N`` run on the insert's background committer (:mod:`.background`), and ``foreachBatch`` returns
once ``N`` is planned, so Spark writes batch ``N+1`` (step 1) while ``N`` is moved and committed, as Flink
commits a checkpoint while the next one's data flows. Batch ``N+1`` is planned (step 2) only once ``N``'s
commit has finished, so the log orders every batch as before and at most one batch's commit is outstanding:
a stream whose commits fall behind waits in ``foreachBatch``. The insert's stop, its end of input and its
5-second tick wait for the outstanding commit. Without it (``'false'``), and always in batch mode and for
``format("sqlext")``, ``foreachBatch`` (or the writer's commit) returns once step 4 is done.

Failure cases and what a restart does (Spark replays batch ``N`` when its ``foreachBatch`` had not returned;
with the overlapped commit that is up to step 2, without it up to step 4):

- a task attempt that fails, or loses to a speculative twin: its files stay in Spark's hidden
  ``_temporary`` attempt dir, never renamed into staging (one attempt per task may commit), and go with
  it at the job's end; an attempt that dies while committing fails Spark's job, which is the next case;
- crash during 1 (or a failed write): nothing recorded; the replay writes the staging dir again
  (overwrite) — no file of the failed attempt is ever visible;
- crash after 2 or during 3: the replay finds ``requested``/``inflight`` and finishes the moves from
  the plan (a file already at its final place is not moved again), without writing again;
- crash after 3: the replay finds ``completed`` and writes nothing (it removes the staging dir, in case the
  crash came before that); it runs step 4 again;
- crash during 4: policies are idempotent, so partitions committed before the crash are committed
  again (same HMS partition, same statistics, same success file) and the rest for the first time.

The overlapped commit adds the crashes after Spark recorded ``N`` as done, which Spark does not replay. Before
anything else (before its first batch is planned, and before its end of input when no batch comes), the
restart's background committer recovers from the commit log (:meth:`BatchCommitter.recover`):

- crash after 2 or during 3 of a recorded batch (``requested``/``inflight``): the moves are finished from
  the plan, then step 4 runs with the watermark the entry recorded;
- crash after 3 or during 4 of a recorded batch, before the trigger state took in its partitions (the
  state's latest batch is older than ``N``): its partitions are added from the log entry and step 4 runs,
  committing them again or for the first time, as above;
- crash while ``N+1`` is written or planned, ``N``'s commit cut short: ``N`` is recovered as above, then
  Spark replays ``N+1``; its plan is written only after ``N``'s commit finished, so the replay finds no
  entry of it and writes it again, or (crash after its plan) finds its entry once the recovery is done;
- a commit that fails (an error, not a crash): the insert fails with that error at its next batch (whose
  ``foreachBatch`` raises it, so Spark does not record that batch), or at its stop or end of input; no
  later batch is planned or committed, and the restart recovers ``N`` as after a crash.

So every row is visible exactly once, and every partition is committed at least once and in the
HMS exactly once. A batch is never half-visible to HMS readers: partitions appear in the HMS only in
step 4, after every file of the batch is in place.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlext import faults, listeners
from sqlext.catalog.locations import unmark_made_dir
from sqlext.connectors.filesystem.commit.background import BackgroundCommits
from sqlext.connectors.filesystem.commit.moves import BatchMover
from sqlext.connectors.filesystem.commit.partition_commit import PartitionCommitter
from sqlext.connectors.filesystem.commit.plan import BatchInfo, BatchPlanner, StagedFile
from sqlext.connectors.filesystem.commit.progress import InsertProgress
from sqlext.connectors.filesystem.commit.schema_watch import SchemaWatch
from sqlext.connectors.filesystem.commit.trigger import PartitionCommitTrigger
from sqlext.connectors.filesystem.commit.uploads import BatchUploads
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, State
from sqlext.connectors.filesystem.commit_log_archive import table_archive
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import CommitError
from sqlext.faults import fault_point
from sqlext.io.fs import FileSystem, join
from sqlext.io.pool import io_pool

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("sqlext.commit")

#: How long a fault point of the overlapped steps waits for Spark to record its batch (crash tests only).
RECORD_WAIT_S = 120.0


class BatchCommitter:
    """Commits the batches of one writing query into one table. One per running query, on the driver.

    It drives the protocol; :class:`BatchPlanner` stages and plans a batch (steps 1-2), :class:`BatchMover`
    moves its files (step 3), :class:`PartitionCommitter` commits its partitions (step 4). A streaming insert's
    committer runs steps 3-4 on its background committer (:meth:`commit_in_background`)."""

    def __init__(
        self,
        settings: SinkSettings,
        query_name: str,
        state_dir: str,
        metastore_uri: str | None,
        spark: Any = None,
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.fs = FileSystem(settings.path)
        self.log = CommitLog(self.fs, settings.path)
        self._archive = table_archive(self.fs, settings.path, settings.archived_batches)
        self._row_counts: dict[str, int] = {}
        #: Held while the commit state (log, trigger, files in the table) changes: by a batch's plan, its
        #: moves and partition commit, and a tick.
        self._lock = threading.RLock()
        #: Held while a batch is in :meth:`process` (Spark's ``foreachBatch``).
        self._in_batch = threading.Lock()
        self._background: BackgroundCommits | None = None
        self._overlap = False
        self._batch_recorded: Callable[[int], bool] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.schema_watch = SchemaWatch(settings.table, query_name, metastore_uri)
        self._partitions = PartitionCommitter(
            settings,
            query_name,
            self.fs,
            self.log,
            state_dir,
            metastore_uri,
            spark,
            self._lock,
            self._move_pool,
            self._row_counts,
            self.schema_watch,
        )
        self._planner = BatchPlanner(settings, query_name, self.fs, self.log, self._move_pool)
        self._uploads = BatchUploads(settings, query_name, self.fs, self.log, self._planner, self._move_pool)
        self._mover = BatchMover(
            settings, query_name, self.fs, self.log, self._move_pool, self._row_counts, self._uploads
        )
        self.progress = InsertProgress()
        self.insert = self._partitions.insert
        self._wrote = False  # whether this committer moved a batch's files into the table (unmark_made_dir)

    # -- trigger state ---------------------------------------------------------------------------

    @property
    def trigger(self) -> PartitionCommitTrigger:
        """The partition commit trigger: the pending partitions and when they are ready."""
        return self._partitions.trigger

    def save_state(self) -> None:
        """Persist the trigger state (pending partitions, event-time high mark) in the state dir."""
        self._partitions.save_state()

    # -- the protocol ----------------------------------------------------------------------------

    def commit_in_background(self, overlap: bool, batch_recorded: Callable[[int], bool]) -> None:
        """Run the moves and partition commits of this insert's batches on its background committer, beginning
        with :meth:`recover`. ``overlap``: :meth:`process` returns once its batch is planned, and the batch is
        committed while Spark writes the next (else once it is committed). ``batch_recorded(N)``: whether
        Spark has recorded batch ``N`` as done (a fault point of the overlapped steps waits for it)."""
        self._background = BackgroundCommits(self.query_name)
        self._overlap = overlap
        self._batch_recorded = batch_recorded
        self._background.submit(self.recover, "recovering the batches a crashed run left unfinished")

    def process_batch(
        self,
        rows: DataFrame,
        batch_id: int,
        info: BatchInfo,
        overwrite: bool = False,
        final: bool = False,
        end_watermark: Callable[[], int | None] | None = None,
    ) -> LogEntry:
        """Run the whole protocol for one batch (see the module docstring); ``overwrite`` replaces
        the partitions the batch writes (batch mode only); ``final``: the batch of a batch-mode insert,
        whose partitions are all committed without asking the trigger (as Flink's batch sink does, so
        no partition time is extracted); ``end_watermark``: once the rows are written, the watermark that
        follows them (:mod:`sqlext.connectors.filesystem.event_time`), which the batch then commits with."""

        def stage() -> list[StagedFile]:
            # On s3a:// a batch (an append or an overwrite) is written as pending uploads to the files' final
            # keys (no copy), elsewhere into the hidden staging dir.
            if self._uploads.applies(rows):
                return self._uploads.stage(rows, batch_id)
            staging = self.log.staging_dir(self.query_name, batch_id)
            self._planner.stage(rows, staging)
            return self._planner.list_staged(staging)

        return self.process(batch_id, info, stage, overwrite, final, end_watermark)

    def process(
        self,
        batch_id: int,
        info: BatchInfo,
        stage: Callable[[], list[StagedFile]],
        overwrite: bool = False,
        final: bool = False,
        end_watermark: Callable[[], int | None] | None = None,
    ) -> LogEntry:
        """The protocol for a batch whose files ``stage`` writes (or has written) into hidden staging
        locations; ``stage`` is called only when the commit log has no record of the batch, and runs while
        the background committer still commits the previous batch. The batch's partitions are committed
        with the watermark its log entry records: the one after its rows when ``end_watermark`` knows it
        (recorded before any file moves, so a replay decides the same), else the one Spark ran it with.
        Returns the batch's entry as planned: with the overlapped commit, its moves and partition commit
        may still be running."""
        with self._in_batch:
            started = time.monotonic()
            entry = None
            if self.log.recorded(self.query_name, batch_id):
                # A replay: the background committer may be finishing this very batch (a restart's recovery),
                # so its entry is read once that is done, never while it is being rewritten.
                self.wait_committed()
                entry = self.log.get(self.query_name, batch_id)
            written = started
            if entry is None:
                staged = stage()
                written = time.monotonic()
                fault_point("after-stage", batch_id)
                info = _after_rows(info, end_watermark() if end_watermark else None)
                # Back-pressure and order: planned only once the previous batch is committed.
                self.wait_committed()
                with self._lock:
                    entry = self._planner.plan(batch_id, staged, info)
                    if not final:  # before anything is recorded or moved (a batch insert asks no trigger)
                        self.trigger.check(entry.partitions.items())
                    entry.pending_partitions = sorted(self.trigger.state.pending)
                    entry.operation = "overwrite" if overwrite else "append"
                    entry.final = final
                    self.log.write(entry)
                fault_point("after-plan", batch_id)
            elif entry.state is State.COMPLETED:
                self._check_same_mode(entry, final)
                log.info("%s: batch %d was committed before; not writing it again", self.query_name, batch_id)
            if self._background is None:
                self._finish(entry, final, started, written)
            else:
                planned = entry
                self._background.submit(
                    lambda: self._finish(planned, final, started, written, handed_off=True),
                    f"the commit of batch {batch_id}",
                )
                if not self._overlap:
                    self.wait_committed()
            return entry

    def _finish(self, planned: LogEntry, final: bool, started: float, written: float, handed_off: bool = False) -> None:
        """Steps 3-4 of a planned batch: move its files unless the log says ``completed``, commit its
        partitions. ``started``, ``written``: when its write began and ended (monotonic clock);
        ``handed_off``: run by the background committer for :meth:`process`."""
        batch = planned.batch
        if handed_off and self._overlap and faults.armed(faults.BACKGROUND_POINTS, batch):
            self._await_spark_record(batch)
        with self._lock:
            began = time.monotonic()
            # Read again when handed off: a tick may have recorded its commits on the entry meanwhile.
            entry = self.log.get(self.query_name, batch) if handed_off else planned
            if entry is None:
                raise CommitError(
                    f"Batch {batch} of '{self.query_name}' is no longer in the commit log of {self.settings.path}"
                )
            if handed_off:
                fault_point("after-handoff", batch)
            if entry.state is not State.COMPLETED:
                self._mover.move(entry)
                fault_point("after-log", batch)
                if self._partitions.lists_partitions:
                    self._partitions.forget_spark_listing()  # the batch's files are there to read now
                if not self._wrote:
                    unmark_made_dir(self.fs, self.settings.path)  # something is written there now
                    self._wrote = True
            else:
                # A replay or a restart's recovery: a crash between recording `completed` and removing the
                # staging (or manifest) dir leaves the dir behind.
                self._mover.clean(entry)
            committed = self.commit_partitions(entry, entry.watermark_ms, end_of_input=final)
            counted = self.progress.add(entry, len(committed))
            if counted and listeners.listening():
                listeners.report_batch(_batch_event(self.insert, entry, written - started, time.monotonic() - written))
            self.log.expire(self.query_name, self.settings.retained_batches, archive=self._archive)
            if not counted:
                log.info(
                    "%s: batch %d, finished earlier in this run, replayed by Spark: nothing written again; "
                    "partitions committed: %s",
                    self.query_name,
                    batch,
                    ", ".join(committed) or "none",
                )
                return
            log.info(
                "%s: batch %d committed %s rows in %d files to %s; partitions committed: %s (%.2f s); "
                "totals: %d batches, %d rows%s, %d files, %d partition commits",
                self.query_name,
                batch,
                entry.rows_described,
                len(entry.files),
                self.settings.path,
                ", ".join(committed) or "none",
                time.monotonic() - began,
                self.progress.batches,
                self.progress.rows,
                "" if self.progress.rows_known else " (and uncounted ones)",
                self.progress.files,
                self.progress.partitions_committed,
            )

    def _await_spark_record(self, batch: int) -> None:
        """For crash tests: let Spark record ``batch`` as done before a fault point of its overlapped steps,
        so that the crash is of a batch Spark will not replay (bounded: the fault is reached anyway)."""
        recorded = self._batch_recorded
        deadline = time.monotonic() + RECORD_WAIT_S
        while recorded is not None and not recorded(batch) and time.monotonic() < deadline:
            time.sleep(0.05)

    def recover(self) -> list[int]:
        """Finish what a crashed (or stopped) run left to its background committer; return those batches.

        Spark does not replay a batch whose ``foreachBatch`` returned, which with the overlapped commit is
        before its files moved and its partitions were committed. So this query's batches in the log that
        are not ``completed`` are moved from their plans, and those the trigger state has not taken in (newer
        than its latest batch) get their partitions added and committed with their own watermark. Entries of
        a batch-mode insert (only old logs hold them under a streaming name) are left to :meth:`process`."""
        with self._lock:
            last_added = self.trigger.state.last_batch
            recover = [
                batch
                for batch, state in sorted(self.log.states(self.query_name).items())
                if state is not State.COMPLETED
                or (self.settings.partitioned and last_added is not None and batch > last_added)
            ]
            finished = []
            for batch in recover:
                entry = self.log.get(self.query_name, batch)
                if entry is None or entry.final:
                    continue
                log.warning(
                    "%s: finishing batch %d, which an earlier run left %s%s",
                    self.query_name,
                    batch,
                    entry.state,
                    "" if entry.state is not State.COMPLETED else " with its partitions not yet committed",
                )
                now = time.monotonic()
                self._finish(entry, False, now, now)
                finished.append(batch)
            return finished

    def wait_committed(self, timeout_s: float | None = None) -> bool:
        """Wait until what the background committer runs is done; raise the failure of a background commit
        (every time: nothing is committed after a batch whose commit failed); False after ``timeout_s``."""
        return self._background is None or self._background.wait(timeout_s)

    def _check_same_mode(self, entry: LogEntry, final: bool) -> None:
        """A streaming batch must not take a batch-mode insert's entry for its own replay, or its rows are lost.
        Only logs of sqlext before batch inserts logged apart (:data:`sink.BATCH_SUFFIX`) hold such entries."""
        if entry.final and not final:
            raise CommitError(
                f"Batch {entry.batch} of '{self.query_name}' in the commit log of {self.settings.path} was written "
                "by a batch-mode INSERT (earlier sqlext versions logged both under the pipeline's name), not by "
                "this streaming insert: its own rows for that batch are not in the table, so it stops rather than "
                f"skip them. Move that batch's files out of {join(self.log.root, self.query_name)} (the batch "
                "insert's rows stay in the table; only its log entry goes) and start the insert again."
            )

    def settle_interrupted_statement(self) -> int:
        """Before a batch-mode insert: settle what a crashed earlier run of the query left; return the batch
        id to write. A batch INSERT is all or nothing, and users run a failed one again, so:

        - an append whose statement did not finish (its batch not completed, or a partition it wrote not
          committed) is rolled back: its moved files deleted, its staging dir and log entry dropped. The
          rerun writes its rows, once, and commits their partitions;
        - an overwrite whose moves began is finished: the rerun replaces the same partitions again;
        - partitions that a completed overwrite wrote but did not commit are committed with this run's, as
          the end of input does.
        """
        with self._lock:
            last = self.log.last_batch(self.query_name)
            entry = self.log.get(self.query_name, last) if last is not None else None
            if last is None or entry is None:
                return 0
            unfinished_append = entry.operation == "append" and (
                entry.state is not State.COMPLETED or (entry.final and bool(entry.uncommitted_partitions))
            )
            if unfinished_append or entry.state is State.REQUESTED:
                self._mover.roll_back(entry)
                return last
            if entry.state is not State.COMPLETED:
                log.warning(
                    "%s: finishing the overwrite of batch %d that a crashed run left in %s",
                    self.query_name,
                    last,
                    self.settings.path,
                )
                self._mover.move(entry)
            uncommitted = entry.uncommitted_partitions
            if uncommitted and self.settings.partitioned:
                self.trigger.add(uncommitted.items(), entry.batch_time_ms)
                self.save_state()
            return last + 1

    def _move_pool(self) -> ThreadPoolExecutor:
        # One pool for the committer's life: its threads (and their py4j connections) are reused by every batch.
        if self._pool is None:
            self._pool = io_pool(f"sqlext-move-{self.query_name}")
        return self._pool

    # -- partition commit ------------------------------------------------------------------------

    def commit_partitions(
        self, entry: LogEntry | None, watermark_ms: int | None, end_of_input: bool = False
    ) -> list[str]:
        """Add the batch's partitions to the pending set and commit those ready; return their paths."""
        return self._partitions.commit_partitions(entry, watermark_ms, end_of_input)

    def end_of_input(self) -> list[str]:
        """Once the last batch is committed, commit every pending partition (Flink's end-of-input rule for
        bounded inserts); see :meth:`PartitionCommitter.end_of_input`."""
        self.wait_committed()
        return self._partitions.end_of_input()

    def tick(self) -> list[str]:
        """Commit what is ready without a batch (idle timeout, process-time delays passing); nothing after a
        background commit failed (the insert fails with it at its next batch, stop or end of input)."""
        if self._background is not None and self._background.failed:
            return []
        return self._partitions.tick()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no batch is being written or committed (also by the background committer) and no tick
        commits; False after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        if not self._in_batch.acquire(timeout=timeout_s):
            return False
        self._in_batch.release()
        if self._background is not None and not self._background.idle(max(0.0, deadline - time.monotonic())):
            return False
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        self._lock.release()
        return True

    def close(self) -> None:
        """Wait for the background committer's work (its failure is :meth:`wait_committed`'s to raise), then
        release the committer's threads and metastore connection."""
        if self._background is not None:
            self._background.close()
        self._partitions.close()
        listeners.report_stopped(self.insert)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _batch_event(
    insert: listeners.InsertRef, entry: LogEntry, write_s: float, commit_s: float
) -> listeners.BatchCommitted:
    return listeners.BatchCommitted(
        insert,
        entry.batch,
        entry.rows,
        len(entry.files),
        sum(f.size for f in entry.files),
        entry.watermark_ms,
        entry.completed_ms,
        write_s,
        commit_s,
    )


def _after_rows(info: BatchInfo, end_watermark: int | None) -> BatchInfo:
    """``info`` with the watermark that follows the batch's rows, when it is known and ahead."""
    if end_watermark is None or end_watermark <= (info.watermark_ms or 0):
        return info
    return replace(info, watermark_ms=end_watermark)
