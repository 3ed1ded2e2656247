"""Which files, or which rows of which files, an incremental window reads, or why the commit log cannot answer.

A window ``(START, END]`` holds the rows of every data file committed in it (:mod:`.history` says when a file
is committed), as the table holds them now, each row once:

- a file still in place is read whole;
- a file that a compaction merged away is read from the merged file: whole when every file merged into it
  was committed in the window, else only the rows it brought (parquet only: by Spark's row index; a merged
  file keeps the rows of its files one file after another);
- a file that an ``INSERT OVERWRITE`` replaced or a partition expiration deleted, or whose partition directory
  is gone, is not read: the table no longer holds its rows (:attr:`WindowRead.gone` lists it). An incremental
  read returns rows added, never rows taken away.

The log cannot answer a window (:class:`WindowNotCovered`, naming the oldest START it can answer) when a
writer's log lost batches (``sink.commit-log.retained-batches`` expired them, or they were deleted) that may
have committed in it: START is before the writer's oldest batch, or a partition committed in the window held
files of lost batches then, or a file committed in the window was merged by a compaction the log no longer
keeps. A window whose END is later than now is refused too: commits made after the read with times up to END
would be in no read.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.connectors.filesystem.files import data_files, readers_see
from sqlext.connectors.filesystem.incremental.history import CommitHistory, Landing
from sqlext.connectors.filesystem.incremental.window import KEY, Window, both_forms
from sqlext.errors import ValidationError
from sqlext.io.fs import FileSystem, join, normalize
from sqlext.options import Options
from sqlext.table import TableDefinition

_MERGED_NAME = re.compile(r"^compacted-(\d+)-\d+")
#: At most this many reasons in an error; the oldest START it names accounts for all.
_REASONS_SHOWN = 5

RowRanges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class WindowRead:
    """What a window reads: files read whole, files read in part (row ranges ``[start, stop)``), and the files
    committed in the window that the table no longer holds."""

    whole: tuple[str, ...] = ()
    parts: tuple[tuple[str, RowRanges], ...] = ()
    gone: tuple[str, ...] = ()


class WindowNotCovered(ValidationError):
    """The commit log cannot answer the window; ``oldest_start_ms`` is the oldest START it can answer (with
    the same END)."""

    def __init__(self, message: str, *, oldest_start_ms: int, value: str) -> None:
        super().__init__(message, option=KEY, value=value)
        self.oldest_start_ms = oldest_start_ms


def plan_window(table: TableDefinition, window: Window, now_ms: int | None = None) -> WindowRead:
    """The files (or rows) of ``table`` committed in ``window``; see the module docstring."""
    return _Planner(table, window, int(time.time() * 1000) if now_ms is None else now_ms).plan()


class _Planner:
    def __init__(self, table: TableDefinition, window: Window, now_ms: int) -> None:
        options = Options(table.options)
        self.table = table
        self.window = window
        self.now_ms = now_ms
        self.path = normalize(str(options.require(fso.PATH)))
        self.format = str(options.require(fso.FORMAT))
        self.retained = int(options.get(fso.COMMIT_LOG_RETAINED_BATCHES))
        self.fs = FileSystem(self.path)
        self._listings: dict[str, set[str] | None] = {}
        self._problems: list[tuple[int, str]] = []

    def plan(self) -> WindowRead:
        self._check_end()
        if self.window.start_ms == self.window.end_ms:
            return WindowRead()
        history = CommitHistory.read(CommitLog(self.fs, self.path))
        if not history.has_data_entries:
            self._check_no_data()
            return WindowRead()
        self._check_truncations(history)
        committed: dict[str, int] = {}
        for uri, landing in history.landings.items():
            at = history.committed_ms(landing)
            if at is not None and at in self.window:
                committed[uri] = at
        holders: dict[str, set[str]] = {}
        gone = []
        for uri in sorted(committed):
            holder = self._locate(history, history.landings[uri], committed[uri])
            if holder is None:
                gone.append(uri)
            else:
                holders.setdefault(holder, set()).add(uri)
        self._raise_problems()
        whole, parts = [], []
        for holder, files in sorted(holders.items()):
            ranges = self._ranges(history, holder, files)
            if ranges is None:
                whole.append(holder)
            else:
                parts.append((holder, ranges))
        return WindowRead(tuple(whole), tuple(parts), tuple(gone))

    # -- what the log covers -------------------------------------------------------------------------

    def _check_end(self) -> None:
        if self.window.end_ms > self.now_ms:
            raise ValidationError(
                f"'{KEY}' = '{self.window}' on {self.table.identifier}: END {both_forms(self.window.end_ms)} is "
                f"later than now ({both_forms(self.now_ms)}). A window must have ended when it is read: commits "
                "made after this read, at times up to END, would be in no read (the next window starts after "
                "END). Give an END in the past, a few seconds at least (a commit is recorded a moment after its "
                "time).",
                option=KEY,
                value=str(self.window),
            )

    def _check_no_data(self) -> None:
        """A log without a writer's batch answers nothing about a table that holds data (its log was deleted,
        or another program wrote the files); an empty table has nothing to read."""
        files = self.fs.list_files(self.path, recursive=True)
        if any(readers_see(f.relative) for f in files):
            self._problems.append(
                (
                    self.now_ms,
                    f"its commit log ({join(self.path, '_sqlext/log')}) holds no batch of any writing query, "
                    "but the table holds data files (the log was deleted, or something else wrote them)",
                )
            )
            self._raise_problems()

    def _check_truncations(self, history: CommitHistory) -> None:
        for truncation in history.truncations:
            lost = (
                f"writer '{truncation.query}' lost its batches before batch {truncation.batch} (completed at "
                f"{both_forms(truncation.since_ms)}): 'sink.commit-log.retained-batches' = {self.retained} "
                "expired them, or they were deleted"
            )
            if self.window.start_ms < truncation.since_ms - 1:
                self._problems.append((truncation.since_ms - 1, lost))
            suspects = truncation.pending if truncation.pending is not None else set(history.commits)
            for partition in sorted(suspects):
                first = history.first_commit_since(partition, truncation.planned_ms)
                if first is not None and first in self.window and self._holds_unknown_files(history, partition):
                    self._problems.append(
                        (
                            first,
                            f"partition {partition}, committed at {both_forms(first)}, holds files the log does "
                            f"not list, which that commit may have made visible ({lost})",
                        )
                    )

    def _holds_unknown_files(self, history: CommitHistory, partition: str) -> bool:
        listing = self._listing(join(self.path, partition)) or set()
        return any(not history.explained(uri) for uri in listing)

    def _raise_problems(self) -> None:
        if not self._problems:
            return
        oldest = max(bound for bound, _ in self._problems)
        reasons = list(dict.fromkeys(reason for _, reason in sorted(self._problems, reverse=True)))
        more = f"; and {len(reasons) - _REASONS_SHOWN} more" if len(reasons) > _REASONS_SHOWN else ""
        raise WindowNotCovered(
            f"'{KEY}' = '{self.window}' on {self.table.identifier}: the commit log cannot answer this window: "
            f"{'; '.join(reasons[:_REASONS_SHOWN])}{more}. The oldest START it can answer (with this END) is "
            f"{both_forms(oldest)}. A larger 'sink.commit-log.retained-batches' keeps more of the log for "
            "windows further back.",
            oldest_start_ms=oldest,
            value=str(self.window),
        )

    # -- where a committed file's rows are now ------------------------------------------------------

    def _locate(self, history: CommitHistory, landing: Landing, committed_ms: int) -> str | None:
        """The file that holds ``landing``'s rows now (itself, or the file a compaction merged it into); None
        when the table no longer holds them."""
        current = landing.uri
        while not self._holds(current):
            merged = history.merged_into.get(current)
            if merged is None:
                self._check_gone(history, landing, current, committed_ms)
                return None
            merge = history.merges[merged]
            if not merge.completed:  # its merged file may be half copied into place
                raise ValidationError(
                    f"'{KEY}' = '{self.window}' on {self.table.identifier}: a compaction of partition "
                    f"{merge.partition} (compaction {merge.compaction}) is replacing files committed in the "
                    "window; run the read again once it finished (one a crash interrupted is finished by the "
                    "next `sqlext compact` of the table, or the next commit of the insert that compacted).",
                    option=KEY,
                    value=str(self.window),
                )
            current = merged
        return current

    def _check_gone(self, history: CommitHistory, landing: Landing, current: str, committed_ms: int) -> None:
        """A committed file that is no longer there: taken out by a recorded overwrite or expiration, or with
        its partition directory, it is gone for good; merged by a compaction the log no longer keeps, its rows
        are somewhere the log cannot find."""
        directory = current.rsplit("/", 1)[0]
        if history.removal_of(current, landing.landed_ms) is not None or self._listing(directory) is None:
            return
        for uri in sorted(self._listing(directory) or ()):
            match = _MERGED_NAME.match(uri.rsplit("/", 1)[1])
            compaction = int(match.group(1)) if match else -1  # a compaction's id: its time in µs
            if compaction >= landing.landed_ms * 1000 and compaction not in history.compactions:
                self._problems.append(
                    (
                        committed_ms,
                        f"{landing.uri}, committed at {both_forms(committed_ms)}, was merged by a compaction the "
                        f"log no longer keeps (into {uri}, it seems)",
                    )
                )
                return

    def _ranges(self, history: CommitHistory, holder: str, files: set[str]) -> RowRanges | None:
        """The row ranges of ``holder`` that hold ``files`` (None: all of it)."""
        composition = list(history.leaves(holder))
        if all(uri in files for uri, _ in composition):
            return None
        if self.format != "parquet":
            landed = [history.landings[uri] for uri, _ in composition if uri in history.landings]
            times = sorted({at for landing in landed if (at := history.committed_ms(landing)) is not None})
            raise ValidationError(
                f"'{KEY}' = '{self.window}' on {self.table.identifier}: {holder} is a merged file holding rows "
                "committed in the window and rows that are not (its files were committed at "
                f"{', '.join(both_forms(at) for at in times)}); only parquet files can be read in part (by row "
                f"index), this table's are {self.format}. Choose a window that holds all of those commits or none.",
                option=KEY,
                value=str(self.window),
            )
        ranges: list[tuple[int, int]] = []
        offset = 0
        for uri, rows in composition:
            if rows is None:
                raise ValidationError(
                    f"'{KEY}' = '{self.window}' on {self.table.identifier}: the rows of {uri}, merged into "
                    f"{holder}, were not counted, so its rows in the merged file cannot be found.",
                    option=KEY,
                    value=str(self.window),
                )
            if uri in files:
                if ranges and ranges[-1][1] == offset:
                    ranges[-1] = (ranges[-1][0], offset + rows)
                else:
                    ranges.append((offset, offset + rows))
            offset += rows
        return tuple(ranges)

    # -- listings ------------------------------------------------------------------------------------

    def _holds(self, uri: str) -> bool:
        listing = self._listing(uri.rsplit("/", 1)[0])
        return listing is not None and uri in listing

    def _listing(self, directory: str) -> set[str] | None:
        """The data files of a directory (None when it does not exist), listed once per plan."""
        if directory not in self._listings:
            files = {normalize(status.uri) for status in data_files(self.fs, directory)}
            self._listings[directory] = files if files or self.fs.is_dir(directory) else None
        return self._listings[directory]
