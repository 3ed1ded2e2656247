"""The value of ``incremental-between-timestamp``: ``'START,END'``, two epoch milliseconds, START exclusive and
END inclusive, as Paimon reads it (``'1767225600000,1767312000000'`` is every commit after 2026-01-01 00:00 UTC
up to and including 2026-01-02 00:00 UTC). START equal to END is an empty window (Paimon's too)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

KEY = "incremental-between-timestamp"
#: Paimon's option by snapshot ids, which sqlext's commit log has no equivalent of (:func:`no_snapshot_ids`).
SNAPSHOT_KEY = "incremental-between"
FORM = (
    "'START,END': two times in epoch milliseconds, START (exclusive) not after END (inclusive), "
    "e.g. '1767225600000,1767312000000'"
)


def no_snapshot_ids(value: str) -> str:
    """Why Paimon's window of snapshot ids is refused."""
    return (
        f"Option '{SNAPSHOT_KEY}' = '{value}' (Paimon's window of snapshot ids) is not supported: a sqlext table's "
        "commit log has no table-wide snapshot ids (each writing query numbers its own batches; compactions are "
        f"numbered by time). Use '{KEY}' = {FORM}; `sqlext commits` shows when each batch completed, in both forms."
    )


_MILLIS = re.compile(r"^[+-]?\d{1,18}$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """Commits after ``start_ms`` and up to ``end_ms`` (epoch ms)."""

    start_ms: int
    end_ms: int

    def __contains__(self, time_ms: object) -> bool:
        return isinstance(time_ms, int) and self.start_ms < time_ms <= self.end_ms

    def __str__(self) -> str:
        return f"{self.start_ms},{self.end_ms}"


def parse_window(text: str) -> Window:
    """``'START,END'`` as a :class:`Window`; a ValueError names the expected form (START after END is the
    option's constraint, :func:`check_window`)."""
    parts = text.split(",")
    if len(parts) != 2 or not all(_MILLIS.match(part.strip()) for part in parts):
        raise ValueError(FORM)
    return Window(int(parts[0]), int(parts[1]))


def check_window(window: Window) -> str | None:
    """The option's constraint: START not after END."""
    if window.start_ms > window.end_ms:
        return f"START {window.start_ms} is after END {window.end_ms}; expected {FORM}."
    return None


def utc_text(time_ms: int) -> str:
    """An epoch-ms time as ``2026-01-01 00:00:00.000 UTC`` (or as what it is, past the calendar's years)."""
    try:
        moment = _EPOCH + timedelta(milliseconds=time_ms)
    except OverflowError:
        return "beyond the calendar"
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def both_forms(time_ms: int) -> str:
    """``1767225600000 (2026-01-01 00:00:00.000 UTC)``."""
    return f"{time_ms} ({utc_text(time_ms)})"
