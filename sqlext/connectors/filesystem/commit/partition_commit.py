"""Step 4 of the commit protocol (:mod:`.committer`): a batch's partitions join the trigger's pending set,
and the ready ones are compacted (``auto-compaction``) and committed by the commit policies in order.

The trigger state (pending partitions, event-time high mark, the latest batch it took in) is kept in the
query checkpoint; a metastore that does not answer leaves the ready partitions pending, retried at the next
batch or tick.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlext import listeners
from sqlext.catalog.metastore.client import PARALLEL_CALLS, PARTITION_BATCH, MetastoreClient, RetryPolicy
from sqlext.catalog.spark_reads import lists_partitions
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.commit.schema_watch import SchemaWatch
from sqlext.connectors.filesystem.commit.trigger import (
    PartitionCommitTrigger,
    PendingPartition,
    TriggerState,
    create_trigger,
)
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry
from sqlext.connectors.filesystem.compaction.compactor import Compactor
from sqlext.connectors.filesystem.expiration import PartitionExpirer
from sqlext.connectors.filesystem.files import data_files
from sqlext.connectors.filesystem.policies import PartitionCommitContext
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.errors import CommitError, MetastoreUnavailableError
from sqlext.faults import fault_point
from sqlext.io.fs import FileSystem, join
from sqlext.io.pool import map_in_chunks, submit_in_chunks

log = logging.getLogger("sqlext.commit")

#: How long one partition commit waits for an unreachable metastore before deferring.
METASTORE_WAIT_S = 10.0
#: Ready partitions the policies commit at a time (the first chunk: one batched metastore call on each of the
#: client's connections); the next chunk's directories are listed and its footers read while the policies commit
#: this one. Each chunk is twice the one before, up to ``COMMIT_CHUNK_MAX``: the metastore waits for the first
#: chunk's reads only, and a chunk's end (its slowest call, the policies' own calls after it) comes less often.
COMMIT_CHUNK = PARTITION_BATCH * PARALLEL_CALLS
COMMIT_CHUNK_MAX = 8 * COMMIT_CHUNK


def trigger_state_uri(checkpoint: str) -> str:
    """Where a query's trigger state (its pending partitions) is kept in its checkpoint."""
    return join(checkpoint, "sqlext", "trigger-state.json")


class PartitionCommitter:
    """Commits the partitions of one writing query's batches, under the committer's ``lock``; ``pool`` gives
    the committer's I/O pool, ``row_counts`` the row counts of files known already."""

    def __init__(
        self,
        settings: SinkSettings,
        query_name: str,
        fs: FileSystem,
        log: CommitLog,
        state_dir: str,
        metastore_uri: str | None,
        spark: Any,
        lock: threading.RLock,
        pool: Callable[[], ThreadPoolExecutor],
        row_counts: dict[str, int],
        schema_watch: SchemaWatch | None = None,
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.fs = fs
        self.log = log
        self.state_fs = FileSystem(state_dir)
        self.state_uri = trigger_state_uri(state_dir)
        # A short retry deadline: a batch waits this long for the metastore, then goes on writing and
        # leaves its partitions pending (retried at the next batch or tick).
        retry = RetryPolicy(deadline_s=METASTORE_WAIT_S)
        self.metastore = MetastoreClient(metastore_uri, retry) if metastore_uri else None
        self.spark = spark
        #: Whether Spark finds the table's partitions by listing it (no ``metastore`` policy).
        self.lists_partitions = lists_partitions(settings.table)
        self.policies = settings.policies()
        self.trigger = self._restore_trigger()
        self._row_counts = row_counts
        self._lock = lock
        self._pool = pool
        self._compactor = Compactor(settings.table, self.metastore, settings.compaction_file_size)
        self._compactions_recovered = False
        self._committed_here: set[str] = set()
        self._expirer = self._create_expirer()
        self._schema_watch = schema_watch
        #: The insert, as the listeners (:mod:`sqlext.listeners`) are told about it.
        self.insert = listeners.InsertRef(str(settings.table.identifier), query_name, settings.path)

    # -- trigger state ---------------------------------------------------------------------------

    def _restore_trigger(self) -> PartitionCommitTrigger:
        state = TriggerState()
        if self.state_fs.exists(self.state_uri):
            state = TriggerState.from_json(self.state_fs.read_json(self.state_uri), self.state_uri)
        return create_trigger(
            self.settings.trigger,
            self.settings.delay,
            self.settings.commit_extractor(),
            self.settings.keys,
            self.settings.time_zone,
            self.settings.idle_timeout,
            state,
        )

    def save_state(self) -> None:
        """Persist the trigger state (pending partitions, event-time high mark) in the state dir."""
        self.state_fs.write_json(self.state_uri, self.trigger.state.to_json())

    # -- partition commit ------------------------------------------------------------------------

    def commit_partitions(
        self, entry: LogEntry | None, watermark_ms: int | None, end_of_input: bool = False
    ) -> list[str]:
        """Add the batch's partitions to the pending set and commit those ready; return their paths."""
        if not self.settings.partitioned:
            return []
        with self._lock:
            began, now_ms = time.monotonic(), int(time.time() * 1000)
            late_rows = self._late_rows(entry) if listeners.listening() else 0
            if entry is not None:
                self.trigger.add(
                    entry.partitions.items(), entry.batch_time_ms or now_ms, arrived_ms=now_ms, batch=entry.batch
                )
            ready = self.trigger.all_pending() if end_of_input else self.trigger.ready(watermark_ms, now_ms)
            compactions, unavailable = 0, False
            if ready:
                try:
                    compactions = self._run_policies(ready, entry.batch if entry else None)
                except MetastoreUnavailableError as exc:
                    unavailable = True
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
            committed = [p.path for p in ready]
            if committed:
                # Recorded before the trigger state is saved: a crash in between commits the partitions
                # again after the restart, and the log keeps the first record's time.
                self._record_commits(entry, committed)
            self.save_state()
            if listeners.listening():
                self._report(entry, committed, late_rows, compactions, unavailable, time.monotonic() - began)
            return committed

    def _report(
        self,
        entry: LogEntry | None,
        committed: list[str],
        late_rows: int,
        compactions: int,
        unavailable: bool,
        seconds: float,
    ) -> None:
        """Tell the listeners (:mod:`sqlext.listeners`) what this commit round did and what is left pending."""
        pending = self.trigger.all_pending()
        listeners.report_partitions(
            listeners.PartitionsCommitted(
                self.insert,
                entry.batch if entry else None,
                tuple(committed),
                late_rows,
                len(pending),
                min((p.first_seen_ms for p in pending), default=None),
                compactions,
                unavailable,
                seconds,
            )
        )

    def _late_rows(self, entry: LogEntry | None) -> int:
        """Rows of the batch in partitions committed before by this process (late data; after a restart,
        partitions committed before it do not count)."""
        if entry is None or not self._committed_here:
            return 0
        return sum(f.rows or 0 for f in entry.files if f.partition in self._committed_here)

    def _record_commits(self, entry: LogEntry | None, committed: list[str]) -> None:
        """Say in the commit log which partitions were committed, and when (the time of this record, which
        incremental reads go by): by the batch ``entry``, or, with no batch (end of input, a tick), on the
        query's latest entry. A partition recorded on the entry before keeps its first time."""
        recorded_ms = int(time.time() * 1000)
        if entry is None:
            last = self.log.last_batch(self.query_name)
            entry = self.log.get(self.query_name, last) if last is not None else None
            if entry is None:
                return
            for path in committed:
                entry.committed_later.setdefault(path, recorded_ms)
        else:
            entry.committed_partitions = sorted({*entry.committed_partitions, *committed})
            for path in committed:
                entry.committed_at.setdefault(path, recorded_ms)
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
        """Commit what is ready without a batch (idle timeout, process-time delays passing); expire partitions
        when ``partition.expiration-check-interval`` has passed."""
        committed = self.commit_partitions(None, None)
        if self._expirer is not None:
            with self._lock:  # no batch moves files into a partition while it expires
                try:
                    self._expirer.check()
                except Exception as exc:  # the next check tries again; writing goes on
                    log.error("%s: partition expiration failed: %s", self.query_name, exc)
        return committed

    def _create_expirer(self) -> PartitionExpirer | None:
        if self.metastore is None or not self.settings.partitioned:
            return None
        if self.settings.options.get(fso.PARTITION_EXPIRATION_TIME) is None:
            return None
        return PartitionExpirer(self.settings.table, self.metastore, pending=lambda: set(self.trigger.state.pending))

    def _run_policies(self, ready: list[PendingPartition], batch: int | None) -> int:
        """Compact (``auto-compaction``) and commit the ready partitions; return how many compactions ran."""
        hms_table = None
        if self.metastore is not None:
            ident = self.settings.table.identifier
            hms_table = self.metastore.get_table(ident.database, ident.name)
            if hms_table is None:
                raise CommitError(f"Table {ident} is no longer in the metastore; cannot commit partitions.")
            if self._schema_watch is not None:
                self._schema_watch.observe(hms_table)
        compactions = self._compact(ready)
        contexts = self._commit_in_chunks(ready, hms_table, batch)
        if self.spark is not None and hms_table is not None and self._may_be_cached(ready, contexts):
            self._refresh_spark_cache()
        self._committed_here.update(partition.path for partition in ready)
        return compactions

    def _commit_in_chunks(
        self, ready: list[PendingPartition], hms_table: Any, batch: int | None
    ) -> list[PartitionCommitContext]:
        """Run the policies, in order, on each chunk of the ready partitions in turn (``COMMIT_CHUNK``); return
        every partition's context.

        A partition's context lists its directory and reads its files' footers (on the committer's I/O pool: on a
        2,000-partition backfill they took as long as the metastore's calls one after another). The next chunk's
        are read while the policies commit this one, so the reads and the metastore's calls overlap. A failure
        (of a policy, or of a read) is raised once the reads under way ended, and no chunk after the one that
        failed is committed; what was committed before it is committed again, idempotently, by the retry."""
        chunks = _chunks(ready)
        pool = self._pool()

        def context(partition: PendingPartition) -> PartitionCommitContext:
            return self._context(partition, hms_table, batch)

        if len(chunks) < 2:  # a few partitions (streaming): read and commit, nothing left in flight
            contexts = map_in_chunks(pool, context, ready)
            self._commit_chunk(contexts, batch)
            return contexts
        committed: list[PartitionCommitContext] = []
        reading = submit_in_chunks(pool, context, chunks[0])
        for index in range(len(chunks)):
            contexts = reading.results()
            if index + 1 < len(chunks):
                reading = submit_in_chunks(pool, context, chunks[index + 1])
            try:
                if index:
                    fault_point("between-chunks", batch)
                self._commit_chunk(contexts, batch)
            except BaseException:
                reading.cancel()  # the next chunk's reads (after the last chunk: ended already)
                raise
            committed.extend(contexts)
        return committed

    def _commit_chunk(self, contexts: list[PartitionCommitContext], batch: int | None) -> None:
        """Every policy, in the configured order, on one chunk of the ready partitions."""
        for index, policy in enumerate(self.policies):
            if index:
                fault_point("between-policies", batch)
            policy.commit_all(contexts)

    def _compact(self, ready: list[PendingPartition]) -> int:
        """Finish compactions a crash interrupted (so no partition is left pointing at a compaction's
        work dir), then, with ``auto-compaction``, compact the partitions about to be committed for
        the first time (late data re-committing a partition is left to ``sqlext compact`` or the
        merging policy: compacting files readers already see means waiting for those readers)."""
        if not self._compactions_recovered:
            self._compactor.recover()
            self._compactions_recovered = True
        if not self.settings.auto_compaction:
            return 0
        try:
            entries = self._compactor.compact([(p.path, p.values) for p in ready], registered=False)
        except BaseException:
            self._compactions_recovered = False  # finish it before the next commit
            raise
        for planned in (planned for entry in entries for planned in entry.files):
            if planned.rows is not None:
                self._row_counts[planned.final] = planned.rows
        return len(entries)

    def _context(self, partition: PendingPartition, hms_table: Any, batch: int | None) -> PartitionCommitContext:
        directory = join(self.settings.path, partition.path)
        files = data_files(self.fs, directory)
        rows: int | None = 0
        for status in files:
            count = self._row_counts.get(status.uri)
            if count is None:
                count = self.settings.count_rows(self.fs, status)
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
            query=self.query_name,
            batch=batch,
            first_seen_ms=partition.first_seen_ms,
            committed_before=partition.path in self._committed_here,
        )

    def _may_be_cached(self, ready: list[PendingPartition], contexts: list[PartitionCommitContext]) -> bool:
        """Whether this session may hold a stale file listing of a partition being committed.

        Spark asks the HMS for a table's partitions at every query and caches file listings by path,
        so a partition committed for the first time is seen without a refresh; one committed again
        (late data) may have its old listing cached. Refreshing costs half a second to a second per
        commit (profiled; the first one also starts Spark's Hive client), so it is done only then: when
        the metastore policy did not just add every partition, and, after a restart, when what was
        committed before is not known here."""
        if self.lists_partitions or all(context.new_in_metastore for context in contexts):
            return False  # a listed table's listing was dropped when its files were moved
        if not self._committed_here:
            return True
        return any(partition.path in self._committed_here for partition in ready)

    def forget_spark_listing(self) -> None:
        """Make this session's next query of the table list its files again, for a table Spark lists
        (:func:`sqlext.catalog.spark_reads.lists_partitions`): Spark keeps a data source table's file listing with
        its resolved relation. Dropping that is a map removal; ``refreshTable`` would list the table now."""
        ident = self.settings.table.identifier
        try:
            name = self.spark._jvm.org.apache.spark.sql.catalyst.QualifiedTableName.apply(
                "spark_catalog", ident.database.lower(), ident.name.lower()
            )
            self.spark._jsparkSession.sessionState().catalog().invalidateCachedTable(name)
        except Exception as exc:  # no JVM at hand (Spark Connect, the Python writer): nothing cached here
            log.debug("could not drop Spark's cached listing of %s: %s", ident, exc)

    def _refresh_spark_cache(self) -> None:
        ident = self.settings.table.identifier
        try:
            self.spark.catalog.refreshTable(f"`{ident.database}`.`{ident.name}`")
        except Exception as exc:  # a cache refresh must never fail a commit
            log.debug("could not refresh Spark's cache of %s: %s", ident, exc)

    def close(self) -> None:
        """Close the metastore client."""
        if self.metastore is not None:
            self.metastore.close()


def _chunks(ready: list[PendingPartition]) -> list[list[PendingPartition]]:
    """The ready partitions in chunks of ``COMMIT_CHUNK``, each twice the one before up to ``COMMIT_CHUNK_MAX``."""
    chunks, start, size = [], 0, COMMIT_CHUNK
    while start < len(ready):
        chunks.append(ready[start : start + size])
        start, size = start + size, min(2 * size, max(COMMIT_CHUNK, COMMIT_CHUNK_MAX))
    return chunks
