"""Test files run heaviest first, so that the xdist workers finish together.

``make test`` hands out whole files (``--dist loadfile``). xdist orders them by their number of tests unless
told not to (``--no-loadscope-reorder``), which put the files of few but long tests (crashes, clusters) last:
one worker then idled for minutes while the other finished them. Here the files are ordered by the seconds
they took in a recorded run (``tests/file_durations.json``), longest first, the longest-processing-time rule;
a file not recorded counts as :data:`UNRECORDED_S`. Setting ``SQLEXT_RECORD_DURATIONS=<path>`` writes a new
record at the end of a run (setup, call and teardown of each test, summed per file).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

RECORDED = Path(__file__).resolve().parents[1] / "file_durations.json"
RECORD_ENV = "SQLEXT_RECORD_DURATIONS"
UNRECORDED_S = 30.0

_seconds_per_file: defaultdict[str, float] = defaultdict(float)


def _file_of(nodeid: str) -> str:
    return nodeid.partition("::")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    recorded = json.loads(RECORDED.read_text()) if RECORDED.is_file() else {}
    items.sort(key=lambda item: -float(recorded.get(_file_of(item.nodeid), UNRECORDED_S)))  # stable: in-file order


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds_per_file[_file_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(RECORD_ENV)
    if not target or hasattr(session.config, "workerinput"):  # the controller sees every worker's reports
        return
    ranked = dict(sorted(((f, round(s, 1)) for f, s in _seconds_per_file.items()), key=lambda kv: -kv[1]))
    Path(target).write_text(json.dumps(ranked, indent=1) + "\n")
