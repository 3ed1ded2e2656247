"""Which ``format("sqlext")`` writer may write a table's query, and from which checkpoint.

An insert settles its checkpoint before its query starts (:mod:`sqlext.jobs.checkpoint`). A ``format("sqlext")``
writer is called by Spark after its query has opened its checkpoint, in short-lived Python workers on the
driver: once at start, then at each batch's commit. It cannot move a checkpoint aside, so where an insert
would start fresh it refuses, and it guards the sink table's commit log:

- **one writer** per table and ``pipeline.name``: a lease in the query's state dir held by the Spark driver's
  JVM (:func:`sqlext.jobs.lease.claim_per_batch`), taken at start and renewed at each batch. A second writer is
  refused while the first's JVM runs on this host and has committed a batch within
  :data:`sqlext.jobs.lease.BATCH_LEASE_TIMEOUT_S`; a writer that finds its lease taken over fails its batch
  before committing anything.
- **whose checkpoint**, when the writer knows it (the ``checkpointLocation`` option): the checkpoint records
  its identity (``<checkpoint>/sqlext/identity.json``: metastore, sink table and its id, as an insert's does)
  and an id of its own. A checkpoint with progress written for another sink table (dropped and created
  again), another metastore or another table name is refused at start.
- **whose commit log**: the table records which checkpoint writes each query's commit log. A new checkpoint
  at its batch 0 sets an earlier checkpoint's log aside (else its batches would pass for replays of
  committed ones and be skipped); a checkpoint resuming past batch 0 on a log that is not its own, or on
  no log at all (the table is new), is refused: resuming it would skip every row its earlier batches read.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlext.io.fs import FileSystem, join
from sqlext.io.records import RecordFormat
from sqlext.jobs.checkpoint import (
    CheckpointMismatchError,
    InsertIdentity,
    TableRef,
    Verdict,
    compare,
    normalize_metastore,
    read_identity,
    set_aside_commit_log,
    write_identity,
)
from sqlext.jobs.lease import STATE_DIR, claim_per_batch

log = logging.getLogger("sqlext.checkpoint")

#: The query text a writer's identity records: the writer does not see the query that feeds it.
WRITER_QUERY = "format('sqlext')"
CHECKPOINT_ID_FILE = "checkpoint-id"
#: In the query's state dir: which checkpoint writes the query's commit log.
LOG_OWNER_FILE = "checkpoint.json"
#: Version 1: ``checkpoint`` and ``checkpoint_id`` (files written before versions were recorded have none).
LOG_OWNER_FORMAT = RecordFormat("commit log owner", 1)
#: Version 1: ``id``. Written before versions were recorded, the file held the bare id, as text.
CHECKPOINT_ID_FORMAT = RecordFormat("checkpoint id", 1)


def driver_pid() -> int:
    """The Spark driver's JVM: the nearest ``java`` process above this Python worker (else the parent)."""
    pid = os.getppid()
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name == "java":
            return pid
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
    return os.getppid()


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks (tells a pid from a later process that reuses it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "0"
    return stat[stat.rindex(")") + 2 :].split()[19]


@dataclass(frozen=True)
class WriterClaim:
    """One ``format("sqlext")`` query's claim on its sink table (see the module docstring)."""

    table_path: str
    query: str
    state_dir: str
    metastore_uri: str
    sink: TableRef
    checkpoint: str | None

    @property
    def identity(self) -> InsertIdentity:
        return InsertIdentity(self.query, normalize_metastore(self.metastore_uri), self.sink, (), WRITER_QUERY)

    def on_start(self) -> None:
        """Take (or renew) the lease; refuse a checkpoint that is not this writer's."""
        if self.checkpoint is not None:  # an identity a newer sqlext wrote is refused before the lease is written
            read_identity(FileSystem(self.checkpoint), self.checkpoint)
        self._renew_lease()
        if self.checkpoint is not None:
            self._check_identity(self.checkpoint)

    def before_commit(self, batch_id: int) -> None:
        """Renew the lease (fails if another writer took it over) and check that the table's commit log
        for the query is this checkpoint's; a new checkpoint's batch 0 sets an earlier one's log aside."""
        self._renew_lease()
        ours = self._checkpoint_id(self.checkpoint) if self.checkpoint else None
        owner = self._log_owner() if ours else None
        if owner is not None and owner.get("checkpoint_id") != ours:
            if batch_id > 0:
                written_by = owner.get("checkpoint")
                raise self._foreign(batch_id, f"the table's commit log of this query is checkpoint {written_by}'s")
            self._set_log_aside(owner)
        elif owner is None and batch_id > 0 and self._last_logged_batch() is None:
            raise self._foreign(batch_id, "the table has no commit of this query")
        if ours is not None and (owner is None or owner.get("checkpoint_id") != ours):
            self._record_log_owner(ours)

    # -- the lease -----------------------------------------------------------------------------------

    def _renew_lease(self) -> None:
        pid = driver_pid()
        token = f"jvm-{socket.gethostname()}-{pid}-{_start_time(pid)}"
        claim_per_batch(FileSystem(self.state_dir), self.state_dir, self.query, pid, token)

    # -- the checkpoint's identity --------------------------------------------------------------------

    def _check_identity(self, checkpoint: str) -> None:
        fs = FileSystem(checkpoint)
        stored = read_identity(fs, checkpoint)
        if stored is not None and _has_progress(fs, checkpoint):
            comparison = compare(stored, self.identity)
            if comparison.verdict is not Verdict.SAME:
                raise self._mismatch(checkpoint, comparison.differences, comparison.verdict)
        if stored != self.identity:
            write_identity(fs, checkpoint, self.identity)

    def _checkpoint_id(self, checkpoint: str) -> str:
        fs = FileSystem(checkpoint)
        uri = join(checkpoint, STATE_DIR, CHECKPOINT_ID_FILE)
        if fs.exists(uri):
            text = fs.read_text(uri).strip()
            return str(CHECKPOINT_ID_FORMAT.loads(text, uri)["id"]) if text.startswith("{") else text
        created = uuid.uuid4().hex
        CHECKPOINT_ID_FORMAT.write(fs, uri, {"id": created})
        return created

    # -- the commit log's owner ------------------------------------------------------------------------

    def _last_logged_batch(self) -> int | None:
        from sqlext.connectors.filesystem.commit_log import CommitLog

        return CommitLog(FileSystem(self.table_path), self.table_path).last_batch(self.query)

    def _log_owner(self) -> dict[str, str] | None:
        fs = FileSystem(self.state_dir)
        uri = join(self.state_dir, STATE_DIR, LOG_OWNER_FILE)
        return LOG_OWNER_FORMAT.read(fs, uri) if fs.exists(uri) else None

    def _set_log_aside(self, owner: dict[str, str]) -> None:
        # Not the staging dir: it holds the files the executors wrote for this very batch.
        aside = set_aside_commit_log(self.table_path, self.query, staging=False)
        log.warning(
            "%s: '%s' starts on a new checkpoint %s; the commit log of checkpoint %s moved aside to %s",
            self.table_path,
            self.query,
            self.checkpoint,
            owner.get("checkpoint"),
            aside,
        )

    def _record_log_owner(self, checkpoint_id: str) -> None:
        data = {"checkpoint": self.checkpoint, "checkpoint_id": checkpoint_id}
        LOG_OWNER_FORMAT.write(FileSystem(self.state_dir), join(self.state_dir, STATE_DIR, LOG_OWNER_FILE), data)

    # -- errors ----------------------------------------------------------------------------------------

    def _ways_on(self) -> str:
        return (
            "Ways on: give the writer a new checkpointLocation (it then reads its sources from the start and "
            "writes every row into the table; the old checkpoint can be deleted), or give it another "
            "'pipeline.name' option."
        )

    def _mismatch(self, checkpoint: str, differences: tuple[str, ...], verdict: Verdict) -> CheckpointMismatchError:
        what = "\n".join(f"- {d}" for d in differences)
        why = (
            "was written for a table that has since been dropped and created again"
            if verdict is Verdict.SINK_REPLACED
            else "belongs to another writer"
        )
        return CheckpointMismatchError(
            f"format('sqlext') writer '{self.query}' into {self.sink.name}: checkpoint {checkpoint} {why}; "
            f"resuming it would skip the rows its earlier batches read. What differs:\n{what}\n{self._ways_on()}"
        )

    def _foreign(self, batch_id: int, why: str) -> CheckpointMismatchError:
        where = f"checkpoint {self.checkpoint}" if self.checkpoint else "its checkpoint"
        return CheckpointMismatchError(
            f"format('sqlext') writer '{self.query}' into {self.sink.name} resumes {where} at batch {batch_id}, "
            f"but {why}: the checkpoint belongs to another table or writer (was the table dropped and created "
            f"again?), and resuming it would skip the rows its earlier batches read. {self._ways_on()}"
        )


def _has_progress(fs: FileSystem, checkpoint: str) -> bool:
    """Spark has planned or committed a batch in the checkpoint."""
    return any(
        fs.is_dir(join(checkpoint, d)) and fs.list_files(join(checkpoint, d), recursive=False)
        for d in ("offsets", "commits")
    )
