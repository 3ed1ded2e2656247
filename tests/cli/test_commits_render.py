"""``sqlext commits`` names every commit of a batch's row: the batch's own, and those after it by no batch (end of
input, a tick), which the log records on the query's latest entry."""

from __future__ import annotations

from sqlext.connectors.filesystem.commit_log import LogEntry, State
from sqlext.jobs.audit import render


def test_partitions_committed_at_the_end_of_input_are_named_on_the_last_batch() -> None:
    entries = [
        LogEntry("q", 0, State.COMPLETED, committed_partitions=["dt=1/hr=00"]),
        LogEntry("q", 1, State.COMPLETED),
        LogEntry("q", 2, State.COMPLETED, committed_partitions=["dt=1/hr=01"], committed_later={"dt=1/hr=02": 5}),
        LogEntry("q", 3, State.COMPLETED, committed_later={"dt=1/hr=04": 7, "dt=1/hr=03": 6}),
    ]

    rows = render(entries).splitlines()[1:]

    assert rows[0].endswith("  dt=1/hr=00")
    assert rows[1].endswith("  -")  # a batch that committed nothing
    assert rows[2].endswith("  dt=1/hr=01; after the batch (end of input / tick): dt=1/hr=02")
    assert rows[3].endswith("  after the batch (end of input / tick): dt=1/hr=03, dt=1/hr=04")
