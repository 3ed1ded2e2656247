"""A picture of a table's commit log: ``sqlext commits db.t --html FILE``.

One self-contained HTML file (inline SVG and CSS, no script, nothing fetched) that draws, per writing
query, its batches over time (rows, files, how long each took from start to its files in place), and per
partition when it was first written and when it was committed: the commit lag, late-data re-commits,
commits at the end of input, and compactions. Below the picture, the same facts as tables.

Times are wall-clock times of the batches (``batch_time_ms``, ``completed_ms``), in UTC; a partition's
event time plays no part here (``sqlext commits`` shows each batch's watermark).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape

from sqlext.connectors.filesystem.commit_log import LogEntry

#: Drawing geometry (SVG user units).
_WIDTH, _LABEL, _ROW, _AXIS = 1100, 260, 18, 30
_COLORS = {"append": "#4e79a7", "overwrite": "#59a14f", "compact": "#b07aa1", "expire": "#e15759"}


@dataclass(frozen=True)
class PartitionCommit:
    """One commit of a partition: by a batch (with the watermark it ran with), or by none (``batch`` None:
    at the end of the bounded input, or a tick between batches)."""

    query: str
    time_ms: int
    batch: int | None
    watermark_ms: int | None


@dataclass
class PartitionHistory:
    """What the log says of one partition: first written, commits in order, compactions."""

    partition: str
    first_written_ms: int | None = None
    commits: list[PartitionCommit] = field(default_factory=list)
    compactions_ms: list[int] = field(default_factory=list)
    #: When the partition expired (dropped from the HMS, files deleted): ``partition.expiration-time``.
    expirations_ms: list[int] = field(default_factory=list)

    @property
    def lag_ms(self) -> int | None:
        """From the first write to the first commit."""
        if self.first_written_ms is None or not self.commits:
            return None
        return self.commits[0].time_ms - self.first_written_ms


def _end_ms(entry: LogEntry) -> int:
    return entry.completed_ms or entry.batch_time_ms


def partition_commits(entries: Iterable[LogEntry]) -> dict[str, list[PartitionCommit]]:
    """Partition path -> its commits, in time order (the first one, then late-data re-commits)."""
    return {name: history.commits for name, history in partition_histories(entries).items() if history.commits}


def partition_histories(entries: Iterable[LogEntry]) -> dict[str, PartitionHistory]:
    """Each partition the log mentions, with when it was first written, committed and compacted."""
    histories: dict[str, PartitionHistory] = {}

    def history(name: str) -> PartitionHistory:
        return histories.setdefault(name, PartitionHistory(name))

    for entry in sorted(entries, key=lambda e: (e.batch_time_ms, e.batch)):
        if entry.operation == "compact":
            for name in entry.partitions or entry.committed_partitions:
                history(name).compactions_ms.append(_end_ms(entry))
            continue
        if entry.operation == "expire":
            for name in entry.committed_partitions:
                history(name).expirations_ms.append(_end_ms(entry))
            continue
        for name in entry.partitions:
            written = history(name)
            if written.first_written_ms is None:
                written.first_written_ms = entry.batch_time_ms
        for name in entry.committed_partitions:
            history(name).commits.append(PartitionCommit(entry.query, _end_ms(entry), entry.batch, entry.watermark_ms))
        for name, when in entry.committed_later.items():
            history(name).commits.append(PartitionCommit(entry.query, when, None, None))
    for item in histories.values():
        item.commits.sort(key=lambda c: c.time_ms)
    return dict(sorted(histories.items()))


def render_html(table: str, entries: Iterable[LogEntry]) -> str:
    """The timeline page of ``table`` (a name or path, used as the title) from its commit log entries."""
    entries = sorted(entries, key=lambda e: (e.query, e.batch))
    histories = partition_histories(entries)
    start, end, svg = _picture(entries, histories)
    queries = sorted({e.query for e in entries})
    return _PAGE.format(
        title=escape(f"Commit timeline of {table}"),
        summary=escape(
            f"{len(entries)} batches of {len(queries)} queries, {len(histories)} partitions, "
            f"{_utc(start)} to {_utc(end)} UTC"
        ),
        svg=svg,
        batches=_batch_table(entries),
        partitions=_partition_table(histories),
    )


def timeline_svg(entries: Iterable[LogEntry]) -> str:
    """The picture alone (inline SVG), for pages that show it among other things (the live status page)."""
    entries = sorted(entries, key=lambda e: (e.query, e.batch))
    return _picture(entries, partition_histories(entries))[2]


#: The picture's own styles, for pages that embed :func:`timeline_svg`.
SVG_STYLE = """
.label, .section, .tick { font-size: 11px; } .section { font-weight: bold; }
line.lag { stroke: #bbb; stroke-width: 4; } line.pending { stroke: #e15759; stroke-dasharray: 4 3; }
line.tick { stroke: #eee; } circle.commit { fill: #59a14f; } circle.late { fill: #f28e2b; }
rect.compaction { fill: #b07aa1; }
"""


def _picture(entries: list[LogEntry], histories: dict[str, PartitionHistory]) -> tuple[int, int, str]:
    times = [t for e in entries for t in (e.batch_time_ms, _end_ms(e))]
    times += [c.time_ms for h in histories.values() for c in h.commits]
    start, end = (min(times), max(times)) if times else (0, 1)
    scale = _Scale(start, max(end, start + 1))
    queries = sorted({e.query for e in entries})
    return start, end, _svg(entries, queries, histories, scale)


@dataclass(frozen=True)
class _Scale:
    start_ms: int
    end_ms: int

    def x(self, millis: int) -> float:
        span = _WIDTH - _LABEL - 60
        return _LABEL + span * (millis - self.start_ms) / (self.end_ms - self.start_ms)


def _svg(entries: list[LogEntry], queries: list[str], histories: dict[str, PartitionHistory], scale: _Scale) -> str:
    parts: list[str] = []
    y = _AXIS
    parts.append(f'<text class="section" x="4" y="{y - 8}">batches, per query</text>')
    for query in queries:
        parts.append(f'<text class="label" x="4" y="{y + 13}">{escape(query)}</text>')
        for entry in (e for e in entries if e.query == query):
            parts.append(_batch_bar(entry, y, scale))
        y += _ROW + 4
    y += _ROW
    parts.append(f'<text class="section" x="4" y="{y - 8}">partitions: written → committed</text>')
    for history in histories.values():
        parts.append(_partition_row(history, y, scale))
        y += _ROW
    parts.append(_axis(y + 6, scale))
    height = y + _AXIS + 10
    body = "\n".join(parts)
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}">\n{body}\n</svg>'


def _batch_bar(entry: LogEntry, y: int, scale: _Scale) -> str:
    x0, x1 = scale.x(entry.batch_time_ms), scale.x(_end_ms(entry))
    duration = (_end_ms(entry) - entry.batch_time_ms) / 1000
    tip = (
        f"{entry.query} batch {entry.batch} ({entry.operation}): {entry.rows} rows, {len(entry.files)} files, "
        f"{duration:.1f} s; committed {', '.join(entry.committed_partitions) or 'none'}"
    )
    color = _COLORS.get(entry.operation, "#999")
    return (
        f'<rect class="batch" data-query="{escape(entry.query)}" data-batch="{entry.batch}" '
        f'data-operation="{escape(entry.operation)}" x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 3):.1f}" '
        f'height="{_ROW}" fill="{color}"><title>{escape(tip)}</title></rect>'
    )


def _partition_row(history: PartitionHistory, y: int, scale: _Scale) -> str:
    name = escape(history.partition)
    parts = [f'<g class="partition" data-partition="{name}">', f'<text class="label" x="4" y="{y + 12}">{name}</text>']
    if history.first_written_ms is not None:
        x0 = scale.x(history.first_written_ms)
        x1 = scale.x(history.commits[0].time_ms) if history.commits else _WIDTH - 20
        style = "lag" if history.commits else "lag pending"
        lag = f"committed after {history.lag_ms / 1000:.1f} s" if history.lag_ms is not None else "not committed"
        parts.append(
            f'<line class="{style}" x1="{x0:.1f}" x2="{x1:.1f}" y1="{y + 9}" y2="{y + 9}">'
            f"<title>{name}: first written {_utc(history.first_written_ms)}, {lag}</title></line>"
        )
    for index, commit in enumerate(history.commits):
        kind = "commit" if index == 0 else "late"
        how = f"batch {commit.batch}" if commit.batch is not None else "end of input / tick"
        word = "committed" if index == 0 else "late data, committed again"
        parts.append(
            f'<circle class="{kind}" data-kind="{kind}" cx="{scale.x(commit.time_ms):.1f}" cy="{y + 9}" r="5">'
            f"<title>{name}: {word} by {escape(commit.query)} {how} at {_utc(commit.time_ms)}</title></circle>"
        )
    for when in history.compactions_ms:
        x = scale.x(when)
        parts.append(
            f'<rect class="compaction" data-kind="compaction" x="{x - 4:.1f}" y="{y + 5}" width="8" height="8">'
            f"<title>{name}: compacted at {_utc(when)}</title></rect>"
        )
    for when in history.expirations_ms:
        x = scale.x(when)
        parts.append(
            f'<rect class="expired" data-kind="expired" x="{x - 1.5:.1f}" y="{y + 1}" width="3" height="16">'
            f"<title>{name}: expired at {_utc(when)} (dropped from the metastore, files deleted)</title></rect>"
        )
    parts.append("</g>")
    return "".join(parts)


def _axis(y: int, scale: _Scale) -> str:
    ticks = []
    for step in range(5):
        millis = scale.start_ms + (scale.end_ms - scale.start_ms) * step // 4
        x = scale.x(millis)
        ticks.append(f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{_AXIS - 4}" y2="{y}"/>')
        ticks.append(f'<text class="tick" x="{x:.1f}" y="{y + 14}" text-anchor="middle">{_utc(millis)[11:]}</text>')
    return "\n".join(ticks)


def _batch_table(entries: list[LogEntry]) -> str:
    rows = []
    for e in entries:
        duration = f"{(_end_ms(e) - e.batch_time_ms) / 1000:.1f}" if e.completed_ms else ""
        committed = ", ".join(e.committed_partitions) or "-"
        if e.committed_later:
            committed += f"; after it: {', '.join(sorted(e.committed_later))}"
        cells = [e.query, e.batch, e.operation, e.state, _utc(e.batch_time_ms), duration, e.rows, len(e.files)]
        cells += [_utc(e.watermark_ms) if e.watermark_ms is not None else "-", committed]
        rows.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    head = "query batch operation state started duration&nbsp;s rows files watermark committed"
    return _table(head, rows)


def _partition_table(histories: dict[str, PartitionHistory]) -> str:
    rows = []
    for h in histories.values():
        first = _utc(h.first_written_ms) if h.first_written_ms is not None else "-"
        commits = "; ".join(
            f"{_utc(c.time_ms)} by {'batch ' + str(c.batch) if c.batch is not None else 'end of input / tick'}"
            for c in h.commits
        )
        lag = f"{h.lag_ms / 1000:.1f}" if h.lag_ms is not None else "-"
        compacted = ", ".join(_utc(t) for t in h.compactions_ms) or "-"
        late = str(len(h.commits) - 1) if h.commits else "-"
        expired = ", ".join(_utc(t) for t in h.expirations_ms) or "-"
        cells = [h.partition, first, commits or "not committed", lag, late, compacted, expired]
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return _table("partition first&nbsp;written commits lag&nbsp;s late&nbsp;re-commits compacted expired", rows)


def _table(head: str, rows: list[str]) -> str:
    header = "".join(f"<th>{cell}</th>" for cell in head.split())
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _utc(millis: int | None) -> str:
    if millis is None:
        return "-"
    return datetime.fromtimestamp(millis / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 16px; color: #222; }}
h1 {{ font-size: 18px; margin: 0 0 4px; }} h2 {{ font-size: 15px; margin: 20px 0 6px; }}
.label, .section, .tick {{ font-size: 11px; }} .section {{ font-weight: bold; }}
line.lag {{ stroke: #bbb; stroke-width: 4; }} line.pending {{ stroke: #e15759; stroke-dasharray: 4 3; }}
line.tick {{ stroke: #eee; }} circle.commit {{ fill: #59a14f; }} circle.late {{ fill: #f28e2b; }}
rect.compaction {{ fill: #b07aa1; }} rect.expired {{ fill: #e15759; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ddd; padding: 2px 6px; text-align: left; white-space: nowrap; }}
.legend span {{ margin-right: 14px; }}
</style></head>
<body>
<h1>{title}</h1>
<p>{summary}</p>
<p class="legend"><span style="color:#4e79a7">■ batch</span><span style="color:#b07aa1">■ compaction</span>
<span style="color:#999">━ written, not yet committed (commit lag)</span><span style="color:#59a14f">● committed</span>
<span style="color:#f28e2b">● late data, committed again</span><span style="color:#e15759">▌ expired</span></p>
{svg}
<h2>Batches</h2>
{batches}
<h2>Partitions</h2>
{partitions}
</body></html>
"""
