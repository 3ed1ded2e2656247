"""``sqlext commits``: show a table's commit log (which batch of which query committed what)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry
from sqlext.connectors.filesystem.commit_log_archive import CommitLogArchive
from sqlext.connectors.filesystem.incremental.window import utc_text
from sqlext.errors import TableNotFoundError
from sqlext.io.fs import FileSystem, normalize
from sqlext.table import TableIdentifier


def resolve_table_path(target: str, metastore: Callable[[], MetastoreClient]) -> str:
    """A table path URI as given, or the location of ``db.table`` in the metastore, whose client ``metastore``
    makes: it is asked only for a table name, a path needs no metastore."""
    if "://" in target or target.startswith(("/", "file:")):
        return normalize(target)
    ident = TableIdentifier.parse(target)
    with metastore() as client:
        table = client.get_table(ident.database, ident.name)
    if table is None:
        raise TableNotFoundError(f"Table {ident} does not exist in the metastore at {client.uri}.")
    return normalize(table.sd.location)


def commit_log_entries(
    table_path: str,
    query: str | None = None,
    log: CommitLog | None = None,
    last: int | None = None,
    archived: bool = False,
) -> list[LogEntry]:
    """The log's entries, by query then batch. Entries a fresh start set aside
    (``<query>.replaced-<time>``, see :func:`sqlext.jobs.checkpoint.set_aside_commit_log`) are named so.
    ``log``: the table's commit log, when the caller keeps one (its cached reads) across calls. ``last``: only
    each query's ``last`` latest entries (read alone: one listing and ``last`` reads a query). ``archived``:
    the entries the log expired into its archive (``sink.commit-log.archive.retained-batches``) first."""
    log = log or CommitLog(FileSystem(table_path), table_path)
    archive = CommitLogArchive(log.fs, table_path, 0) if archived else None
    names = [query] if query else sorted({*log.queries(), *(archive.queries() if archive else [])})
    entries = []
    for name in names:
        held = list(log.entries(name)) if last is None else log.latest_entries(name, last)
        if archive is not None:
            kept = {entry.batch for entry in held}
            held = [entry for entry in archive.entries(name) if entry.batch not in kept] + held
            held = held if last is None else held[max(0, len(held) - last) :]
        for entry in held:
            entry.query = name
            entries.append(entry)
    return entries


def describe_inserts(table_path: str, query: str | None = None, as_json: bool = False) -> str:
    """Each insert writing the table: its checkpoint, its identity and whether it runs now."""
    from sqlext.jobs.checkpoint import recorded_inserts

    inserts = recorded_inserts(table_path, query)
    fs = FileSystem(table_path)
    if as_json:
        return "\n".join(
            json.dumps(
                {"insert": r.query, "checkpoint": r.checkpoint, "started": r.started, "identity": r.identity.to_json()},
                sort_keys=True,
            )
            for r in inserts
        )
    return "\n".join(r.describe(fs) for r in inserts)


def render(entries: Iterable[LogEntry], as_json: bool = False) -> str:
    """The entries as a text table (one line per batch) or as JSON lines."""
    entries = list(entries)
    if as_json:
        return "\n".join(json.dumps(entry.to_json(), sort_keys=True) for entry in entries)
    width = max([6, *(len(str(e.batch)) for e in entries)])
    header = (
        f"{'query':<24} {'batch':>{width}} {'state':<9} {'op':<9} {'rows':>10} {'files':>5}  "
        f"{'completed_ms':>13} {'completed (UTC)':<24}  committed partitions"
    )
    lines = [header]
    for e in entries:
        committed = _committed(e)
        if e.operation == "compact":
            committed += f" ({len(e.replaced_files)} files merged into {len(e.files)})"
        counts = f"{e.rows:>10} {len(e.files):>5}"
        completed = f"{_completed(e.completed_ms):>13} {_utc(e.completed_ms):<24}"
        lines.append(
            f"{e.query:<24} {e.batch:>{width}} {e.state!s:<9} {e.operation:<9} {counts}  {completed}  {committed}"
        )
    return "\n".join(lines)


def _committed(entry: LogEntry) -> str:
    """The partitions a batch committed, then those committed after it by no batch (recorded on the query's
    latest entry: the end of a bounded input, or a process-time delay passing between batches)."""
    parts = [", ".join(entry.committed_partitions)] if entry.committed_partitions else []
    if entry.committed_later:
        parts.append(f"after the batch (end of input / tick): {', '.join(sorted(entry.committed_later))}")
    return "; ".join(parts) or "-"


def _completed(time_ms: int | None) -> str:
    return "-" if time_ms is None else str(time_ms)


def _utc(time_ms: int | None) -> str:
    """When an entry completed, in UTC to the millisecond: the times ``incremental-between-timestamp`` takes."""
    return "-" if time_ms is None else utc_text(time_ms).removesuffix(" UTC").replace(" ", "T") + "Z"
