"""``sqlext status [db.t]``: how each insert into a table stands, from its checkpoint and the commit log.

It reads what any process can read (the insert need not run here, or at all): the inserts the sink
table records (checkpoint, identity), the lease in each checkpoint (who runs it, its last heartbeat),
the trigger state in the checkpoint (the pending partitions, since when), and the query's commit log
(the last batch, when it committed, its watermark). The live status page (:mod:`sqlext.metrics`) shows
the same facts, read the same way.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from sqlext.connectors.filesystem.commit.partition_commit import trigger_state_uri
from sqlext.connectors.filesystem.commit.trigger import TriggerState
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.io.fs import FileSystem, join
from sqlext.jobs.checkpoint import recorded_inserts
from sqlext.jobs.lease import is_running, read_lease


@dataclass
class InsertStatus:
    """One insert into one table, as its checkpoint and the commit log tell it."""

    table: str
    query: str
    checkpoint: str | None = None
    sources: list[str] = field(default_factory=list)
    sink: str = ""
    #: Who runs it (its lease), None when nobody does.
    running: str | None = None
    last_heartbeat_ms: int | None = None
    last_batch: int | None = None
    #: When the last completed batch's files were committed (the log's ``completed_ms``).
    last_commit_ms: int | None = None
    watermark_ms: int | None = None
    #: Pending partitions: path -> when first written (epoch ms).
    pending: dict[str, int] = field(default_factory=dict)
    #: Over the batches the log still holds (``sink.commit-log.retained-batches``).
    logged_batches: int = 0
    logged_rows: int = 0
    logged_files: int = 0
    committed_partitions: list[str] = field(default_factory=list)

    @property
    def oldest_pending_ms(self) -> int | None:
        return min(self.pending.values(), default=None)

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "oldest_pending_ms": self.oldest_pending_ms}


def insert_statuses(
    table_path: str, table: str, query: str | None = None, log: CommitLog | None = None
) -> list[InsertStatus]:
    """The status of each insert writing the table at ``table_path`` (``table``: its name, for display);
    ``log``: the table's commit log, when the caller keeps one (its cached reads) across calls."""
    log = log or CommitLog(FileSystem(table_path), table_path)
    recorded = {r.query: r for r in recorded_inserts(table_path, query)}
    names = sorted({*recorded, *(q for q in log.queries() if ".replaced-" not in q and (query is None or q == query))})
    statuses = []
    for name in names:
        status = InsertStatus(table, name, sink=table)
        record = recorded.get(name)
        if record is not None:
            status.checkpoint = record.checkpoint
            status.sources = [source.name for source in record.identity.sources]
            status.sink = record.identity.sink.name
            _read_checkpoint(status, record.checkpoint)
        _read_log(status, log)
        statuses.append(status)
    return statuses


def _read_checkpoint(status: InsertStatus, checkpoint: str) -> None:
    try:
        fs = FileSystem(checkpoint)
        owner = read_lease(fs, checkpoint)
        state_uri = trigger_state_uri(checkpoint)
        state = TriggerState.from_json(fs.read_json(state_uri), state_uri) if fs.exists(state_uri) else TriggerState()
    except Exception:  # a checkpoint on a filesystem this process cannot reach: the log still answers
        return
    if owner is not None:
        status.last_heartbeat_ms = owner.renewed_ms
        if is_running(owner):
            status.running = owner.describe()
    status.pending = {p.path: p.first_seen_ms for p in state.pending.values()}


def _read_log(status: InsertStatus, log: CommitLog) -> None:
    for entry in log.entries(status.query):
        status.logged_batches += 1
        status.last_batch = entry.batch
        if entry.state is not State.COMPLETED:
            continue
        status.logged_rows += entry.rows
        status.logged_files += len(entry.files)
        status.committed_partitions.extend([*entry.committed_partitions, *entry.committed_later])
        if entry.completed_ms is not None:
            status.last_commit_ms = max(status.last_commit_ms or 0, entry.completed_ms)
        if entry.watermark_ms is not None:
            status.watermark_ms = entry.watermark_ms


def render_status(statuses: list[InsertStatus], as_json: bool = False, now_ms: int | None = None) -> str:
    """The statuses as text (a block per insert) or as JSON lines."""
    if as_json:
        return "\n".join(json.dumps(s.to_json(), sort_keys=True) for s in statuses)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    if not statuses:
        return "no inserts recorded"
    blocks = []
    for s in statuses:
        state = f"running: {s.running}" if s.running else "not running"
        if not s.running and s.last_heartbeat_ms:
            state += f" (last heartbeat {utc(s.last_heartbeat_ms)}, {ago(now, s.last_heartbeat_ms)} ago)"
        oldest = s.oldest_pending_ms
        lines = [
            f"insert {s.query} into {s.sink}: {state}",
            f"  sources: {', '.join(s.sources) or '-'}; checkpoint: {s.checkpoint or '-'}",
            f"  last batch: {'-' if s.last_batch is None else s.last_batch}; last commit: "
            + (f"{utc(s.last_commit_ms)} ({ago(now, s.last_commit_ms)} ago)" if s.last_commit_ms else "none"),
            f"  watermark: {utc(s.watermark_ms) if s.watermark_ms is not None else '-'}",
            f"  pending partitions: {len(s.pending)}"
            + (f" (oldest first written {utc(oldest)}, {ago(now, oldest)} ago)" if oldest is not None else ""),
            f"  in the retained log: {s.logged_batches} batches, {s.logged_rows} rows, {s.logged_files} files, "
            f"{len(s.committed_partitions)} partition commits",
        ]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def utc(millis: int | None) -> str:
    """Epoch millis as ``YYYY-MM-DD HH:MM:SS UTC``."""
    if millis is None:
        return "-"
    return datetime.fromtimestamp(millis / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def ago(now_ms: int, then_ms: int) -> str:
    """A duration as ``1 h 2 min``, ``3 min 4 s`` or ``5.6 s``."""
    seconds = max(0, now_ms - then_ms) / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def checkpoint_sinks(root: str) -> list[tuple[str, str]]:
    """(sink table, insert name) of every checkpoint under ``root`` that records its identity."""
    from sqlext.jobs.checkpoint import read_identity

    fs = FileSystem(root)
    if not fs.is_dir(root):
        return []
    found = []
    for name in fs.list_dirs(root):
        identity = read_identity(fs, join(root, name))
        if identity is not None:
            found.append((identity.sink.name, identity.pipeline))
    return sorted(set(found))
