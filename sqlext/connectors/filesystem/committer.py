"""The driver-side commit protocol of the filesystem sink (Flink's ``StreamingFileCommitter``).

For each batch ``N`` of a writing query ``Q`` (a micro-batch, Flink's checkpoint):

1. **stage** — Spark writes the batch's rows into ``<table>/_sqlext/staging/Q/N/`` (hidden from every
   reader); each task's commit renames its files into that directory (Hadoop's committer algorithm 2,
   ``STAGING_COMMITTER``), and the directory is listed only once Spark's job has succeeded;
2. **plan** — the staged files are listed, their final ``k=v`` locations and row counts computed, and
   the plan is recorded as ``N.requested`` in the table's commit log;
3. **move** — ``N.inflight`` is recorded, each staged file is renamed into its partition directory
   (``MOVE_THREADS`` at a time: its one rename by sqlext, so two in all with the task commit's), then
   ``N.completed`` is recorded and the staging directory removed;
4. **partition commit** — the batch's partitions join the trigger's pending set; the ready ones run
   the commit policies in order; the trigger state is saved in the query checkpoint and the
   committed partitions are added to ``N.completed``.

Failure cases and what a restart does (Spark replays batch ``N`` when step 4 had not returned):

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlext.catalog.formats import ltz_columns, prepare_write
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.connectors.filesystem.commitlog import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.compaction import Compactor
from sqlext.connectors.filesystem.escaping import parse_partition_path, partition_path
from sqlext.connectors.filesystem.files import count_rows, data_files, is_data_file
from sqlext.connectors.filesystem.policies import PartitionCommitContext
from sqlext.connectors.filesystem.settings import SPARK_DEFAULT_PARTITION, SinkSettings
from sqlext.connectors.filesystem.trigger import PartitionCommitTrigger, PendingPartition, TriggerState, create_trigger
from sqlext.errors import CommitError, MetastoreUnavailableError
from sqlext.faults import fault_point
from sqlext.io.fs import FileSystem, join

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("sqlext.commit")

#: How many files of a batch are moved at once (each move is a copy on an object store).
MOVE_THREADS = 8
#: How long one partition commit waits for an unreachable metastore before deferring.
METASTORE_WAIT_S = 10.0
#: Hadoop committers' dir of uncommitted task attempts, inside the output (staging) dir.
PENDING_DIR = "_temporary"
#: Write options of the staging write. Algorithm 2 is safe here though Hadoop deprecates it as a job's
#: final commit (MAPREDUCE-7282: a task commit is not atomic): its output dir is the batch's own hidden
#: staging dir, written afresh (``mode("overwrite")``) by every attempt of the batch, and sqlext lists it
#: only after Spark's job succeeded. Spark lets one attempt per task commit and fails the job when that
#: attempt dies during its commit (SPARK-39195), so a succeeded job's staging dir holds exactly the files of
#: the committed attempts; a failed job's partial files are never planned, and its replay overwrites them.
#: ``partitionOverwriteMode=static`` keeps that overwrite wiping the whole staging dir whatever the session's
#: mode (dynamic would keep a failed attempt's files in partitions the replay does not write).
STAGING_COMMITTER = {"mapreduce.fileoutputcommitter.algorithm.version": "2", "partitionOverwriteMode": "static"}


@dataclass(frozen=True)
class StagedFile:
    """A data file written into a hidden staging location, with its partition values (None: NULL)."""

    uri: str
    size: int
    values: list[str | None]
    rows: int | None


@dataclass(frozen=True)
class BatchInfo:
    """What Spark planned for a batch: the watermark it runs with and its timestamp."""

    watermark_ms: int | None
    batch_time_ms: int


def read_batch_info(checkpoint_fs: FileSystem, checkpoint: str, batch_id: int) -> BatchInfo:
    """Read the watermark and timestamp of a batch from Spark's offset log in the query checkpoint.

    Spark writes ``offsets/<batchId>`` before it runs the batch; its second line holds
    ``batchWatermarkMs`` (the watermark the batch runs with: the max event time seen by the previous
    batches minus the declared lateness) and ``batchTimestampMs``. Both are the same on a replay.
    """
    import json

    uri = join(checkpoint, "offsets", str(batch_id))
    try:
        metadata = json.loads(checkpoint_fs.read_text(uri).splitlines()[1])
    except (FileNotFoundError, IndexError, ValueError) as exc:
        raise CommitError(f"Cannot read Spark's offset log entry {uri}: {exc}") from exc
    watermark = int(metadata.get("batchWatermarkMs", 0))
    return BatchInfo(watermark if watermark > 0 else None, int(metadata.get("batchTimestampMs", 0)))


class BatchCommitter:
    """Commits the batches of one writing query into one table. One per running query, on the driver."""

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
        self.state_fs = FileSystem(state_dir)
        self.state_uri = join(state_dir, "sqlext", "trigger-state.json")
        # A short retry deadline: a batch waits this long for the metastore, then goes on writing and
        # leaves its partitions pending (retried at the next batch or tick).
        retry = RetryPolicy(deadline_s=METASTORE_WAIT_S)
        self.metastore = MetastoreClient(metastore_uri, retry) if metastore_uri else None
        self.spark = spark
        self.policies = settings.policies()
        self.trigger = self._restore_trigger()
        self._row_counts: dict[str, int] = {}
        self._bytes_per_row = self._initial_row_size()
        self.progress = InsertProgress()
        self._lock = threading.RLock()
        self._compactor = Compactor(settings.table, self.metastore, settings.compaction_file_size)
        self._compactions_recovered = False
        self._committed_here: set[str] = set()
        self._pool: ThreadPoolExecutor | None = None

    # -- trigger state ---------------------------------------------------------------------------

    def _restore_trigger(self) -> PartitionCommitTrigger:
        state = TriggerState()
        if self.state_fs.exists(self.state_uri):
            state = TriggerState.from_json(self.state_fs.read_json(self.state_uri))
        return create_trigger(
            self.settings.trigger,
            self.settings.delay,
            self.settings.extractor(),
            self.settings.keys,
            self.settings.time_zone,
            self.settings.idle_timeout,
            state,
        )

    def save_state(self) -> None:
        """Persist the trigger state (pending partitions, event-time high mark) in the state dir."""
        self.state_fs.write_json(self.state_uri, self.trigger.state.to_json())

    # -- the protocol ----------------------------------------------------------------------------

    def process_batch(
        self, rows: DataFrame, batch_id: int, info: BatchInfo, overwrite: bool = False, final: bool = False
    ) -> LogEntry:
        """Run the whole protocol for one batch (see the module docstring); ``overwrite`` replaces
        the partitions the batch writes (batch mode only); ``final``: the batch of a batch-mode insert,
        whose partitions are all committed without asking the trigger (as Flink's batch sink does, so
        no partition time is extracted)."""

        def stage() -> list[StagedFile]:
            staging = self.log.staging_dir(self.query_name, batch_id)
            self._stage(rows, staging)
            return self._list_staged(staging)

        return self.process(batch_id, info, stage, overwrite, final)

    def process(
        self,
        batch_id: int,
        info: BatchInfo,
        stage: Callable[[], list[StagedFile]],
        overwrite: bool = False,
        final: bool = False,
    ) -> LogEntry:
        """The protocol for a batch whose files ``stage`` writes (or has written) into hidden staging
        locations; ``stage`` is called only when the commit log has no record of the batch."""
        with self._lock:
            started = time.monotonic()
            entry = self.log.get(self.query_name, batch_id)
            if entry is None:
                staged = stage()
                fault_point("after-stage", batch_id)
                entry = self._plan(batch_id, staged, info)
                entry.operation = "overwrite" if overwrite else "append"
                entry.final = final
                self.log.write(entry)
                fault_point("after-plan", batch_id)
            elif entry.state is State.COMPLETED:
                self._check_same_mode(entry, final)
                log.info("%s: batch %d was committed before; not writing it again", self.query_name, batch_id)
                # A crash between recording `completed` and removing the staging dir leaves the dir behind.
                self.fs.delete_dir(self.log.staging_dir(entry.query, entry.batch))
            if entry.state is not State.COMPLETED:
                self._move(entry)
                fault_point("after-log", batch_id)
            committed = self.commit_partitions(entry, info.watermark_ms, end_of_input=final)
            self.progress.add(entry, len(committed))
            self.log.expire(self.query_name, self.settings.retained_batches)
            log.info(
                "%s: batch %d committed %s rows in %d files to %s; partitions committed: %s (%.2f s); "
                "totals: %d batches, %d rows%s, %d files, %d partition commits",
                self.query_name,
                batch_id,
                entry.rows if entry.rows_known else "an uncounted number of",
                len(entry.files),
                self.settings.path,
                ", ".join(committed) or "none",
                time.monotonic() - started,
                self.progress.batches,
                self.progress.rows,
                "" if self.progress.rows_known else " (and uncounted ones)",
                self.progress.files,
                self.progress.partitions_committed,
            )
            return entry

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
                self._roll_back(entry)
                return last
            if entry.state is not State.COMPLETED:
                log.warning(
                    "%s: finishing the overwrite of batch %d that a crashed run left in %s",
                    self.query_name,
                    last,
                    self.settings.path,
                )
                self._move(entry)
            uncommitted = entry.uncommitted_partitions
            if uncommitted and self.settings.partitioned:
                self.trigger.add(uncommitted.items(), entry.batch_time_ms)
                self.save_state()
            return last + 1

    def _roll_back(self, entry: LogEntry) -> None:
        """Undo an unfinished append: delete the files it moved, its staging dir, then its log entry (in
        that order, so that a crash while rolling back leaves an entry that the next run rolls back again)."""
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

    def _stage(self, rows: DataFrame, staging: str) -> None:
        writer_input = rows
        keys = list(self.settings.keys)
        if self.settings.parallelism:
            writer_input = (
                writer_input.repartition(self.settings.parallelism, *keys)
                if keys and self.settings.shuffle_by_partition
                else writer_input.repartition(self.settings.parallelism)
            )
        elif keys and self.settings.shuffle_by_partition:
            writer_input = writer_input.repartition(*keys)
        # Each format in the form every reader of the table's HMS descriptor reads (sqlext.catalog.formats).
        ltz = ltz_columns([(c.name, c.type) for c in self.settings.table.physical_columns])
        frame, spark_format, options = prepare_write(
            self.settings.format, self.settings.format_options, writer_input, keys, ltz
        )
        writer = frame.write.format(spark_format).mode("overwrite")
        if keys:
            writer = writer.partitionBy(*keys)
        # Hadoop's committer algorithm 2, for this write only (Spark passes write options into the job's
        # Hadoop configuration): a task's commit renames its files straight into the staging dir and the job
        # commit renames nothing, one rename per file instead of algorithm 1's two (see STAGING_COMMITTER).
        options.update(STAGING_COMMITTER)
        if self.settings.rolling_file_size:
            options["maxRecordsPerFile"] = str(max(1, int(self.settings.rolling_file_size / self._bytes_per_row)))
        writer.options(**options).save(staging)

    def _list_staged(self, staging: str) -> list[StagedFile]:
        """The data files Spark's writer left in ``staging`` (``k=v`` dirs, Spark's escaping)."""
        data = []
        for status in self.fs.list_files(staging):
            name = status.relative.rsplit("/", 1)[-1]
            if name.startswith(("_", ".")) or status.relative.startswith(PENDING_DIR + "/"):
                continue  # Spark's _SUCCESS marker, checksums, what a straggling task attempt wrote
            data.append((status, status.relative[: -len(name)].rstrip("/")))
        # Footers (or lines) read on the I/O pool: a batch of many small files has one per file.
        counts = self._move_pool().map(lambda found: count_rows(self.fs, found[0], self.settings.format), data)
        return [
            StagedFile(status.uri, status.size, self._partition_values(directory), rows)
            for (status, directory), rows in zip(data, counts, strict=True)
        ]

    def _plan(self, batch_id: int, staged: list[StagedFile], info: BatchInfo) -> LogEntry:
        files: list[PlannedFile] = []
        partitions: dict[str, list[str]] = {}
        for item in staged:
            values = item.values
            relative = partition_path(self.settings.keys, values, self.settings.default_partition_name)
            final = join(self.settings.path, relative, item.uri.rsplit("/", 1)[1])
            files.append(PlannedFile(item.uri, final, relative, item.size, item.rows))
            if relative:
                partitions[relative] = [self.settings.default_partition_name if v is None else v for v in values]
        self._learn_row_size(files)
        return LogEntry(
            query=self.query_name,
            batch=batch_id,
            state=State.REQUESTED,
            files=files,
            partitions=partitions,
            watermark_ms=info.watermark_ms,
            batch_time_ms=info.batch_time_ms,
        )

    def _partition_values(self, directory: str) -> list[str | None]:
        if not self.settings.keys:
            return []
        values = parse_partition_path(directory, self.settings.keys)
        return [None if value == SPARK_DEFAULT_PARTITION else value for value in values]

    def _initial_row_size(self) -> float:
        """Bytes per row to size files by before a batch has been measured: this query's last
        committed batch if there is one, else an uncompressed guess from the column types (files then
        come out smaller than the target, never larger)."""
        last = self.log.last_batch(self.query_name)
        entry = self.log.get(self.query_name, last) if last is not None else None
        if entry is not None and entry.rows:
            return sum(f.size for f in entry.files) / entry.rows
        return float(sum(_TYPE_WIDTH.get(c.type.split("(")[0].upper(), 32) for c in self.settings.table.data_columns))

    def _learn_row_size(self, files: list[PlannedFile]) -> None:
        rows = sum(f.rows or 0 for f in files)
        if rows:
            self._bytes_per_row = sum(f.size for f in files) / rows

    def _move(self, entry: LogEntry) -> None:
        self.log.transition(entry, State.INFLIGHT)
        if entry.operation == "overwrite" and self.settings.keys:
            self._swap_partitions(entry)
        elif entry.operation == "overwrite":
            self._replace_unpartitioned(entry)
        # In parallel: on an object store each move is a copy, and the files of a batch are independent.
        list(self._move_pool().map(lambda planned: self._move_file(entry, planned), entry.files))
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

    def _move_pool(self) -> ThreadPoolExecutor:
        # One pool for the committer's life: its threads (and their py4j connections) are reused by every batch.
        if self._pool is None:
            self._pool = ThreadPoolExecutor(MOVE_THREADS, thread_name_prefix=f"sqlext-move-{self.query_name}")
        return self._pool

    def _swap_partitions(self, entry: LogEntry) -> None:
        """INSERT OVERWRITE of a partitioned table: each written partition is replaced whole.

        The batch's new files of a partition sit in one directory: the staging dir Spark wrote them into
        (``k=v/...`` under the batch's staging dir) when it holds that partition's files alone, else a
        hidden sibling of the partition dir (``.<leaf>.sqlext-new``) they are first moved into. Then two
        renames swap directories: the old partition dir goes into the batch's hidden trash, the new one
        takes its name, so each new file is renamed once by sqlext, as in an append. A reader sees the old
        rows, or (for the instant between the two renames) none, or the new rows; never a mix, never a row
        twice. A restart finishes the swap from the plan: a new dir that is gone was swapped in already.
        (A table without partitions is replaced file by file.)
        """
        trash = join(self.settings.path, "_sqlext", "trash", entry.query, f"{entry.batch:020d}")
        by_partition: dict[str, list[PlannedFile]] = {}
        for planned in entry.files:
            by_partition.setdefault(planned.partition, []).append(planned)
        staged_dirs = self._staged_partition_dirs(entry, by_partition)
        for relative in sorted(by_partition):
            final_dir = join(self.settings.path, relative)
            new_dir = staged_dirs.get(relative) or self._gather(relative, by_partition[relative])
            if not self.fs.is_dir(new_dir):
                continue  # swapped before a crash
            self._drop_unplanned(new_dir, by_partition[relative])
            if self.fs.is_dir(final_dir):
                self.fs.move(final_dir, join(trash, relative))
                entry.replaced_files.append(final_dir)
            self.fs.move(new_dir, final_dir)
            fault_point("mid-move", entry.batch)
        self.log.write(entry)

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
        parent, _, leaf = relative.rpartition("/")
        return join(self.settings.path, parent, f".{leaf}.sqlext-new")

    def _replace_unpartitioned(self, entry: LogEntry) -> None:
        trash = join(self.settings.path, "_sqlext", "trash", entry.query, f"{entry.batch:020d}")
        new_files = {planned.final for planned in entry.files}
        for status in self.fs.list_files(self.settings.path, recursive=False):
            if is_data_file(status.relative) and status.uri not in new_files:
                self.fs.move(status.uri, join(trash, status.relative))
                entry.replaced_files.append(status.uri)
        self.log.write(entry)

    # -- partition commit ------------------------------------------------------------------------

    def commit_partitions(
        self, entry: LogEntry | None, watermark_ms: int | None, end_of_input: bool = False
    ) -> list[str]:
        """Add the batch's partitions to the pending set and commit those ready; return their paths."""
        if not self.settings.partitioned:
            return []
        with self._lock:
            now_ms = int(time.time() * 1000)
            if entry is not None:
                self.trigger.add(entry.partitions.items(), entry.batch_time_ms or now_ms)
            ready = self.trigger.all_pending() if end_of_input else self.trigger.ready(watermark_ms, now_ms)
            if ready:
                try:
                    self._run_policies(ready, entry.batch if entry else None)
                except MetastoreUnavailableError as exc:
                    # Files are committed already; the partitions stay pending and are retried at the
                    # next batch or tick, so writing goes on while the metastore is away.
                    log.warning(
                        "%s: metastore unavailable, %d partition(s) wait to be committed (%s): %s",
                        self.query_name,
                        len(ready),
                        ", ".join(p.path for p in ready[:5]),
                        exc,
                    )
                    ready = []
                fault_point("after-policies", entry.batch if entry else None)
                self.trigger.committed(p.path for p in ready)
            self.save_state()
            committed = [p.path for p in ready]
            if committed:
                self._record_commits(entry, committed, now_ms)
            return committed

    def _record_commits(self, entry: LogEntry | None, committed: list[str], now_ms: int) -> None:
        """Say in the commit log which partitions were committed: by the batch ``entry``, or, with no batch
        (end of input, a tick), on the query's latest entry with the time."""
        if entry is None:
            last = self.log.last_batch(self.query_name)
            entry = self.log.get(self.query_name, last) if last is not None else None
            if entry is None:
                return
            entry.committed_later.update(dict.fromkeys(committed, now_ms))
        else:
            entry.committed_partitions = sorted({*entry.committed_partitions, *committed})
        self.log.write(entry)

    def end_of_input(self) -> list[str]:
        """Commit every pending partition (Flink's end-of-input rule for bounded inserts).

        Raises :class:`MetastoreUnavailableError` when some could not be committed because the
        metastore did not answer; calling again later finishes the job."""
        committed = self.commit_partitions(None, None, end_of_input=True)
        if committed:
            log.info("%s: end of input; committed %s", self.query_name, ", ".join(committed))
        waiting = self.trigger.all_pending()
        if waiting:
            raise MetastoreUnavailableError(
                f"{self.query_name}: {len(waiting)} partition(s) of {self.settings.table.identifier} are "
                "written but not committed, because the metastore did not answer. Run the insert again: an "
                "append is undone and written again, an overwrite is redone, and every partition is committed."
            )
        return committed

    def tick(self) -> list[str]:
        """Commit what is ready without a batch (idle timeout, process-time delays passing)."""
        return self.commit_partitions(None, None)

    def _run_policies(self, ready: list[PendingPartition], batch: int | None) -> None:
        hms_table = None
        if self.metastore is not None:
            ident = self.settings.table.identifier
            hms_table = self.metastore.get_table(ident.database, ident.name)
            if hms_table is None:
                raise CommitError(f"Table {ident} is no longer in the metastore; cannot commit partitions.")
        self._compact(ready)
        # Listings and footer reads in parallel (the committer's I/O pool): on a 2,000-partition backfill
        # they took as long as the metastore's calls one after another.
        contexts = list(self._move_pool().map(lambda partition: self._context(partition, hms_table), ready))
        for index, policy in enumerate(self.policies):
            if index:
                fault_point("between-policies", batch)
            policy.commit_all(contexts)
        if self.spark is not None and hms_table is not None and self._may_be_cached(ready, contexts):
            self._refresh_spark_cache()
        self._committed_here.update(partition.path for partition in ready)

    def _compact(self, ready: list[PendingPartition]) -> None:
        """Finish compactions a crash interrupted (so no partition is left pointing at a compaction's
        work dir), then, with ``auto-compaction``, compact the partitions about to be committed for
        the first time (late data re-committing a partition is left to ``sqlext compact`` or the
        merging policy: compacting files readers already see means waiting for those readers)."""
        if not self._compactions_recovered:
            self._compactor.recover()
            self._compactions_recovered = True
        if not self.settings.auto_compaction:
            return
        try:
            entries = self._compactor.compact([(p.path, p.values) for p in ready], registered=False)
        except BaseException:
            self._compactions_recovered = False  # finish it before the next commit
            raise
        for planned in (planned for entry in entries for planned in entry.files):
            if planned.rows is not None:
                self._row_counts[planned.final] = planned.rows

    def _context(self, partition: PendingPartition, hms_table: Any) -> PartitionCommitContext:
        directory = join(self.settings.path, partition.path)
        files = data_files(self.fs, directory)
        rows: int | None = 0
        for status in files:
            count = self._row_counts.get(status.uri)
            if count is None:
                count = count_rows(self.fs, status, self.settings.format)
            if count is None:
                rows = None
                break
            self._row_counts[status.uri] = count
            rows = (rows or 0) + count
        return PartitionCommitContext(
            table=self.settings.table,
            keys=list(self.settings.keys),
            values=list(partition.values),
            path=directory,
            relative_path=partition.path,
            files=files,
            fs=self.fs,
            metastore=self.metastore,
            hms_table=hms_table,
            row_count=rows,
        )

    def _may_be_cached(self, ready: list[PendingPartition], contexts: list[PartitionCommitContext]) -> bool:
        """Whether this session may hold a stale file listing of a partition being committed.

        Spark asks the HMS for a table's partitions at every query and caches file listings by path,
        so a partition committed for the first time is seen without a refresh; one committed again
        (late data) may have its old listing cached. Refreshing costs half a second to a second per
        commit (profiled; the first one also starts Spark's Hive client), so it is done only then: when
        the metastore policy did not just add every partition, and, after a restart, when what was
        committed before is not known here."""
        if all(context.new_in_metastore for context in contexts):
            return False
        if not self._committed_here:
            return True
        return any(partition.path in self._committed_here for partition in ready)

    def _refresh_spark_cache(self) -> None:
        ident = self.settings.table.identifier
        try:
            self.spark.catalog.refreshTable(f"`{ident.database}`.`{ident.name}`")
        except Exception as exc:  # a cache refresh must never fail a commit
            log.debug("could not refresh Spark's cache of %s: %s", ident, exc)

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no batch is being written or committed and no tick commits; False after ``timeout_s``."""
        if not self._lock.acquire(timeout=timeout_s):
            return False
        self._lock.release()
        return True

    def close(self) -> None:
        if self.metastore is not None:
            self.metastore.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


#: Uncompressed bytes per value by Flink type name, for the first batch's file-size estimate.
_TYPE_WIDTH = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "INTEGER": 4,
    "BIGINT": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
    "DATE": 4,
    "TIMESTAMP": 12,
    "TIMESTAMP_LTZ": 12,
    "DECIMAL": 16,
}


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

    def add(self, entry: LogEntry, committed: int) -> None:
        self.batches += 1
        self.rows += entry.rows
        self.rows_known = self.rows_known and entry.rows_known
        self.files += len(entry.files)
        self.partitions_committed += committed
        self.last_batch = entry.batch
