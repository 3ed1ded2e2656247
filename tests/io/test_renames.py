"""How many times each data file is renamed between the task that writes it and its partition directory.

On an object store every rename is a full copy, so this is the write path's cost there. Counted at the
source: the sink's driver (tests/support/sink_job.py, Spark's JVM included) runs under ``strace``, which
records every ``rename`` system call of every thread, Spark's committer's and sqlext's alike. A file's
renames are then followed back from its final path: a rename of the file or of a directory holding it
(Hadoop's committers rename whole directories where they can) counts once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.streams import write_hourly_events
from tests.support.tables import create_in_hms, events_table

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
STRACE = shutil.which("strace")
ROWS_PER_HOUR = 40
HOURS = 3
#: ``1700000000.123456 rename("a", "b") = 0``, also ``renameat(AT_FDCWD, "a", AT_FDCWD, "b")``/``renameat2``.
_CALL = re.compile(r'^(\d+\.\d+) rename(?:at2?)?\((?:[^"]*?, )?"((?:[^"\\]|\\.)*)", (?:[^"]*?, )?"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Rename:
    time: float
    thread: int
    source: str
    target: str


def _traced_renames(prefix: Path) -> list[Rename]:
    """The successful renames strace recorded (one file per thread: ``prefix.<tid>``), in time order."""
    renames = []
    for path in prefix.parent.glob(f"{prefix.name}.*"):
        thread = int(path.name.rsplit(".", 1)[1])
        for line in path.read_text(errors="replace").splitlines():
            match = _CALL.match(line)
            if match and line.rstrip().endswith("= 0"):
                renames.append(Rename(float(match.group(1)), thread, match.group(2), match.group(3)))
    return sorted(renames, key=lambda rename: rename.time)


def _history(final: str, renames: list[Rename]) -> list[Rename]:
    """The renames that carried ``final`` to where it is, last first: each moved the file, or a directory
    holding it, to the path it had next."""
    history, path, before = [], final, float("inf")
    while True:
        step = next(
            (r for r in reversed(renames) if r.time < before and (path == r.target or path.startswith(r.target + "/"))),
            None,
        )
        if step is None:
            return history
        history.append(step)
        path, before = step.source + path[len(step.target) :], step.time


def _data_files(table: Path) -> list[str]:
    return sorted(str(p) for p in table.glob("dt=*/hr=*/*") if not p.name.startswith((".", "_")))


def _traced(tmp_path: Path, name: str, job: list[str]) -> list[Rename]:
    """Run ``python -m <job...>`` under strace; the renames it made, in time order."""
    prefix = tmp_path / f"trace-{name}" / "renames"
    prefix.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SQLEXT_FAULT", None)
    assert STRACE is not None
    # --seccomp-bpf stops only the traced calls: the JVM runs at full speed otherwise.
    strace = [STRACE, "-f", "-ff", "--seccomp-bpf", "-ttt", "-s", "4096", "-e", "trace=rename,renameat,renameat2"]
    command = [*strace, "-o", str(prefix), sys.executable, "-m", *job]
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return _traced_renames(prefix)


def _renames_per_file(table: Path, renames: list[Rename]) -> tuple[dict[str, int], list[Rename]]:
    """Each data file's number of renames (by path in the table), and the last rename of each."""
    histories = {final: _history(final, renames) for final in _data_files(table)}
    assert histories, "nothing was written"
    counts = {final[len(str(table)) + 1 :]: len(history) for final, history in histories.items()}
    return counts, [history[0] for history in histories.values() if history]


def _assert_every_row_once(table: Path) -> None:
    rows = ds.dataset(table, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table(["id"])
    assert sorted(rows.column("id").to_pylist()) == list(range(HOURS * ROWS_PER_HOUR))


needs_strace = pytest.mark.skipif(STRACE is None, reason="strace is not installed (make system-deps installs it)")


@needs_strace
@pytest.mark.parametrize(
    ("options", "renames_per_file"),
    [
        # Spark's task commit (Hadoop's committer algorithm 2) into the batch's staging dir, then sqlext's move.
        pytest.param({"sink.parallelism": "2"}, 2, id="streaming"),
        # Merged files are written by sqlext into the compaction's work dir, then moved once.
        pytest.param({"sink.parallelism": "2", "auto-compaction": "true"}, 1, id="auto-compaction"),
    ],
)
def test_a_streaming_insert_renames_each_file_at_most_twice_and_moves_in_parallel(
    metastore: MetastoreSettings, hms: MetastoreClient, tmp_path: Path, options: dict[str, str], renames_per_file: int
) -> None:
    table = tmp_path / "table"
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), HOURS, ROWS_PER_HOUR)
    database = f"renames_{len(options)}"
    create_in_hms(hms, events_table(database, "events", table, **options))
    directories = [str(tmp_path / name) for name in ("table", "input", "checkpoint")]

    job = ["tests.support.sink_job", metastore.uri, *directories, json.dumps(options), database]
    counts, moves = _renames_per_file(table, _traced(tmp_path, "stream", job))

    _assert_every_row_once(table)
    assert set(counts.values()) == {renames_per_file}, counts
    # The last rename of each file is sqlext's move into its partition, made by the committer's pool.
    assert all(move.source.startswith(str(table / "_sqlext")) for move in moves)
    if "auto-compaction" not in options:
        assert len({move.thread for move in moves}) > 1, "sqlext's moves all ran on one thread"


@needs_strace
def test_batch_inserts_rename_each_file_twice_also_when_overwriting(
    metastore: MetastoreSettings, hms: MetastoreClient, tmp_path: Path
) -> None:
    table, database, options = tmp_path / "table", "renames_batch", {"sink.parallelism": "2"}
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), HOURS, ROWS_PER_HOUR)
    create_in_hms(hms, events_table(database, "events", table, **options))
    job = ["tests.support.batch_job", metastore.uri, str(table), str(tmp_path / "input"), json.dumps(options), database]

    appended, _ = _renames_per_file(table, _traced(tmp_path, "append", job))
    assert set(appended.values()) == {2}, appended

    overwritten, _ = _renames_per_file(table, _traced(tmp_path, "overwrite", [*job, "--overwrite"]))
    assert set(overwritten) & set(appended) == set(), "the overwrite kept files it should have replaced"
    _assert_every_row_once(table)
    assert set(overwritten.values()) == {2}, overwritten
    assert list(table.glob("dt=*/hr=*/.*")) == [], "the writer's checksum files came along into a partition"
