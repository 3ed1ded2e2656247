"""The live status page at ``/`` of the metrics endpoint: one self-contained HTML page (inline CSS and SVG,
no script, nothing fetched) that the browser reloads every few seconds.

Per insert this process ran: its state, source and sink tables, last batch and commit, watermark, pending
partitions and the age of the oldest, the lag behind the wall clock, and the commit timeline picture of
``sqlext commits --html``. The facts come from the checkpoint and the commit log, read as ``sqlext status``
reads them (:mod:`sqlext.jobs.status`), so the page and the command agree; the metrics add what only this
process knows (whether the metastore answered the last commit).
"""

from __future__ import annotations

import time
from html import escape

from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.io.fs import FileSystem
from sqlext.jobs.audit import commit_log_entries
from sqlext.jobs.status import InsertStatus, ago, insert_statuses, utc
from sqlext.jobs.timeline import SVG_STYLE, timeline_svg
from sqlext.metrics.exporter import InsertMetrics, LiveInsert

#: How often the browser reloads the page, in seconds.
REFRESH_S = 5

#: Table path -> its commit log, kept across page loads so that a load reads only the state files that
#: changed since the last one (an insert's log holds up to ``sink.commit-log.retained-batches`` files).
_LOGS: dict[str, CommitLog] = {}


def render_page(metrics: InsertMetrics) -> str:
    """The page for the inserts ``metrics`` has heard of (newest facts from their checkpoints and logs)."""
    now = int(time.time() * 1000)
    sections = [_section(live, now) for live in metrics.snapshot()]
    body = "\n".join(sections) or "<p>No insert has committed a batch in this process yet.</p>"
    return _PAGE.format(refresh=REFRESH_S, now=escape(utc(now)), style=SVG_STYLE, body=body)


def _section(live: LiveInsert, now: int) -> str:
    ref = live.insert
    status = _status(live)
    entries = commit_log_entries(ref.path, ref.query, _log(ref.path)) if ref.path else []
    state = "running" if live.running else "stopped"
    if live.metastore_unavailable:
        state += "; the metastore did not answer the last commit (partitions wait)"
    oldest, last = status.oldest_pending_ms, status.last_commit_ms
    rows = [
        ("state", state),
        ("sink", status.sink or ref.table),
        ("sources", ", ".join(status.sources) or "-"),
        ("checkpoint", status.checkpoint or "-"),
        ("last batch", "-" if status.last_batch is None else str(status.last_batch)),
        ("last commit", f"{utc(last)} ({ago(now, last)} ago)" if last else "none"),
        ("watermark", utc(status.watermark_ms) if status.watermark_ms is not None else "-"),
        (
            "lag",
            f"{ago(now, status.watermark_ms)} behind the wall clock" if status.watermark_ms is not None else "-",
        ),
        ("pending partitions", str(len(status.pending))),
        ("oldest pending", f"{utc(oldest)} ({ago(now, oldest)} ago)" if oldest is not None else "-"),
        ("rows in the retained log", str(status.logged_rows)),
        ("files in the retained log", str(status.logged_files)),
        ("partition commits in the retained log", str(len(status.committed_partitions))),
    ]
    facts = "".join(
        f'<tr data-fact="{escape(name)}"><th>{escape(name)}</th><td>{escape(value)}</td></tr>' for name, value in rows
    )
    pending = "".join(
        f"<li>{escape(path)} (first written {escape(utc(first))})</li>"
        for path, first in sorted(status.pending.items())
    )
    title = f"{ref.query} → {ref.table}"
    return (
        f'<section class="insert" data-table="{escape(ref.table)}" data-query="{escape(ref.query)}">'
        f"<h2>{escape(title)}</h2><table>{facts}</table>"
        + (f"<h3>Pending partitions</h3><ul>{pending}</ul>" if pending else "")
        + f"<h3>Commit timeline</h3>{timeline_svg(entries)}</section>"
    )


def _status(live: LiveInsert) -> InsertStatus:
    ref = live.insert
    if ref.path:
        try:
            found = insert_statuses(ref.path, ref.table, ref.query, _log(ref.path))
        except Exception:  # the page shows what the metrics know when the log cannot be read
            found = []
        if found:
            return found[0]
    return InsertStatus(ref.table, ref.query, last_batch=live.last_batch, last_commit_ms=live.last_commit_ms)


def _log(table_path: str) -> CommitLog:
    log = _LOGS.get(table_path)
    if log is None:
        log = _LOGS[table_path] = CommitLog(FileSystem(table_path), table_path, cache_reads=True)
    return log


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{refresh}">
<title>sqlext: inserts of this process</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 16px; color: #222; }}
h1 {{ font-size: 18px; margin: 0 0 4px; }} h2 {{ font-size: 15px; margin: 20px 0 6px; }} h3 {{ font-size: 13px; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #ddd; padding: 2px 6px; text-align: left; }}
th {{ font-weight: normal; color: #555; }}
{style}
</style></head>
<body>
<h1>sqlext: inserts of this process</h1>
<p>As of {now}; reloads every {refresh} s. Metrics for Prometheus: <a href="/metrics">/metrics</a>.</p>
{body}
</body></html>
"""
