"""The ``filesystem`` connector's sink: a Spark streaming query whose batches go through the
driver-side commit protocol (:mod:`sqlext.connectors.filesystem.commit.committer`).

Why ``foreachBatch`` + Spark's own partitioned writer: executors write the files in parallel with
Spark's fastest writers (the same code as Spark's file sink, with its INT96 timestamps that every
Hive reader can read), and the batch function runs on the driver, where the commit must happen
exactly once per batch. The watermark a batch commits with is the one that follows its rows
(:mod:`.event_time`), else the one Spark ran it with, from Spark's offset log (see ``read_batch_info``).
With ``sink.partition-commit.async`` (the default) ``foreachBatch`` returns once its batch is planned, and the
insert's background committer moves and commits it while Spark writes the next batch.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.commit.plan import BatchInfo, read_batch_info
from sqlext.connectors.filesystem.event_time import batch_end_watermark
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import MetastoreUnavailableError
from sqlext.io.fs import FileSystem, join
from sqlext.registry import explain_query_failure
from sqlext.sink import InsertPlan, TableSink
from sqlext.table import TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("sqlext.sink")

#: How often a running insert checks for partitions that became ready between batches.
TICK_INTERVAL_S = 5
#: How long a finished bounded insert keeps retrying its final partition commit.
END_OF_INPUT_WAIT_S = 600.0
#: How long stopping an insert waits for the batch in progress to be written and committed.
STOP_BATCH_WAIT_S = 300.0
#: What a pipeline's batch-mode inserts add to its name for their commit-log query and state dir.
BATCH_SUFFIX = ".batch"


def batch_plan(plan: InsertPlan) -> InsertPlan:
    """Where a batch-mode insert of ``plan``'s pipeline keeps its commit log and trigger state: apart from
    the pipeline's streaming insert, whose next batch id a batch insert would otherwise take (the resumed
    stream would then skip its batch as committed before) and whose pending partitions it would commit."""
    return replace(
        plan,
        query_name=plan.query_name + BATCH_SUFFIX,
        checkpoint_location=join(plan.checkpoint_location, "batch"),
    )


@dataclass
class RunningInsert:
    """A started streaming insert: its query, its committer, and the thread that watches it."""

    query: StreamingQuery
    committer: BatchCommitter
    bounded: bool
    finished: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    stopped: bool = False

    def stop(self, batch_wait_s: float = STOP_BATCH_WAIT_S) -> None:
        """Stop the query once the batch in progress is written and committed (with the overlapped commit,
        also the batch the background committer commits), so that no commit is cut short. A batch still
        running after ``batch_wait_s`` is interrupted: safe, since the restart finishes or redoes it, only
        noisier. Not an end of input: pending partitions stay pending and are committed when the insert runs
        again."""
        self.stopped = True
        if not self.committer.wait_idle(batch_wait_s):
            log.warning(
                "%s: the batch in progress has not finished after %.0f s; interrupting it (the next run of the "
                "insert finishes or redoes it)",
                self.name,
                batch_wait_s,
            )
        # A batch that starts between the wait and the stop is cancelled, most likely while it writes its
        # staged files; wherever it is cut, the restart finishes or redoes it. The watcher then waits for the
        # background committer, which may have been handed that batch.
        self.query.stop()

    def watch(self) -> None:
        """Tick the committer while the query runs; once it ended, wait for the background committer (its
        failure is the insert's), and on a clean end of a bounded input, commit all."""
        try:
            while not query_ended(self.query, TICK_INTERVAL_S):
                if self.committer.settings.partitioned:
                    self.committer.tick()
                self.committer.schema_watch.check()
            failure = self.query.exception()
            if failure is not None:
                explained = explain_query_failure(str(failure))
                log.error(
                    "%s: the query failed; nothing of its failed batch is committed: %s%s",
                    self.name,
                    failure,
                    f"\n{explained}" if explained else "",
                )
                # The batch the background committer may still commit was recorded by Spark: let it finish
                # (close() waits); its failure, if any, is what the query failed with or comes second.
                return
            self.committer.wait_committed()
            if self.bounded and not self.stopped:
                self._end_of_input()
        except BaseException as exc:  # reported through wait(); the thread must not die silently
            self.error = exc
            log.error("%s: committing the insert's last batch or partitions failed: %s", self.name, exc)
            if self.query.isActive:  # a failed tick: the insert must not run on committing nothing
                log.error("%s: stopping the insert; committed batches stay committed", self.name)
                try:
                    self.query.stop()
                except Exception as stop_failure:  # the error above is the insert's; this one only follows it
                    log.error("%s: stopping the query failed: %s", self.name, stop_failure)
        finally:
            self.committer.close()
            self.finished.set()

    def _end_of_input(self) -> None:
        """Commit all pending partitions, waiting out a metastore outage up to END_OF_INPUT_WAIT_S."""
        deadline = time.monotonic() + END_OF_INPUT_WAIT_S
        while True:
            try:
                self.committer.end_of_input()
                return
            except MetastoreUnavailableError:
                if time.monotonic() > deadline:
                    raise
                log.warning("%s: end of input waits for the metastore", self.committer.query_name)

    @property
    def name(self) -> str:
        return self.committer.query_name

    def wait_committed(self, timeout_s: float | None = None) -> bool:
        """Wait until the batches Spark has run are committed: with the overlapped commit, a batch Spark
        reported (``lastProgress``, ``processAllAvailable``) may still be committing. Raises the error of a
        failed commit; False after ``timeout_s``."""
        return self.committer.wait_committed(timeout_s)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the query ended and its last commits ran; re-raise a commit error that failed no batch of
        the query (a background commit after its last batch, the end-of-input commit; the query's own failure
        is ``query.exception()``)."""
        done = self.finished.wait(timeout_s)
        if self.error is not None:
            raise self.error
        return done


def query_ended(query: StreamingQuery, timeout_s: int) -> bool:
    """Wait up to ``timeout_s`` for the query to end; True once it ended, also when it failed (Spark's
    ``awaitTermination`` raises then; ``query.exception()`` says why)."""
    from pyspark.errors import StreamingQueryException

    try:
        return bool(query.awaitTermination(timeout_s))
    except StreamingQueryException:
        return True


#: Running inserts of this driver, by streaming query id.
RUNNING: dict[str, RunningInsert] = {}


def running_insert(query_id: str) -> RunningInsert | None:
    return RUNNING.get(query_id)


class FileSystemSink(TableSink):
    """Writes a table's rows into its ``path`` and commits its partitions into the HMS."""

    runs_batch_rows = True

    def __init__(self, context: Any) -> None:
        self.spark: SparkSession = context.spark
        self.table: TableDefinition = context.table
        # A temporary table has no HMS table: its partitions are its committed directories, as a Flink
        # filesystem table's are (Flink's ``metastore`` policy does nothing outside a Hive catalog).
        self.metastore_uri: str | None = None if self.table.temporary else _metastore_uri(context)
        self.settings = SinkSettings.from_table(self.table)
        if self.settings.format == "avro":
            from sqlext.connectors.filesystem.spark_avro import require

            require(self.spark, self.table.identifier, "write")

    def _committer(self, plan: InsertPlan) -> BatchCommitter:
        settings = replace(self.settings, gather_statistics=plan.gather_statistics)
        return BatchCommitter(settings, plan.query_name, plan.checkpoint_location, self.metastore_uri, self.spark)

    def start_stream(self, rows: DataFrame, plan: InsertPlan) -> StreamingQuery:
        committer = self._committer(plan)
        checkpoint_fs = FileSystem(plan.checkpoint_location)

        def recorded(batch_id: int) -> bool:
            """Whether Spark recorded the batch as done (in its checkpoint's commit log): it will not replay it."""
            return checkpoint_fs.exists(join(plan.checkpoint_location, "commits", str(batch_id)))

        # Before the query starts: what a crashed run left is recovered first, in the background.
        committer.commit_in_background(self.settings.commit_async, recorded)

        def on_batch(batch: DataFrame, batch_id: int) -> None:
            info = read_batch_info(checkpoint_fs, plan.checkpoint_location, batch_id)
            rows = plan.batch_rows(batch) if plan.batch_rows else batch
            end_watermark = partial(batch_end_watermark, self.spark, plan.query_name)
            committer.process_batch(rows, batch_id, info, end_watermark=end_watermark)

        writer = (
            rows.writeStream.foreachBatch(on_batch)
            .queryName(plan.query_name)
            .option("checkpointLocation", plan.checkpoint_location)
        )
        if plan.available_now:
            writer = writer.trigger(availableNow=True)
        elif plan.trigger_interval:
            writer = writer.trigger(processingTime=plan.trigger_interval)
        try:
            query = writer.start()
        except BaseException:
            committer.close()  # the recovery finishes before the caller gives up the checkpoint
            raise
        running = RunningInsert(query, committer, plan.available_now)
        RUNNING[str(query.id)] = running
        threading.Thread(target=running.watch, name=f"sqlext-{plan.query_name}", daemon=True).start()
        log.info(
            "%s: streaming insert into %s started (query id %s)",
            plan.query_name,
            self.table.identifier,
            query.id,
        )
        return query

    def write_batch(self, rows: DataFrame, plan: InsertPlan) -> None:
        committer = self._committer(batch_plan(plan))
        try:
            batch_id = committer.settle_interrupted_statement()
            info = BatchInfo(None, int(time.time() * 1000))
            entry = committer.process_batch(rows, batch_id, info, overwrite=plan.overwrite, final=True)
            committer.end_of_input()
            log.info(
                "%s: batch insert wrote %s rows into %s", plan.query_name, entry.rows_described, self.table.identifier
            )
        finally:
            committer.close()


def _metastore_uri(context: Any) -> str | None:
    for holder in (context.catalog, context.config):
        for name in ("metastore_uri", "metastore_uris"):
            value = getattr(holder, name, None)
            if isinstance(value, str) and value:
                return value
    return None
