"""What a filesystem sink left on disk, read the same way whichever engine wrote it: the partition
directories, the ids of the rows in each (csv: the first field, json: ``"id"``), and the success files."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Landing:
    """A sink table's directory as readers see it: hidden files (``.``/``_``) are not data."""

    rows: Counter[tuple[str, int]]  # (partition path 'k=v/k=v', id) -> count
    success: frozenset[str]  # partition paths holding the success file

    @property
    def partitions(self) -> set[str]:
        return {partition for partition, _ in self.rows}

    def renamed(self, old: str, new: str) -> Landing:
        """The same landing with a partition name replaced (to compare a deliberate naming difference)."""
        return Landing(
            Counter({(p.replace(old, new), i): n for (p, i), n in self.rows.items()}),
            frozenset(p.replace(old, new) for p in self.success),
        )


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith((".", "_")) and "=" not in part for part in path.relative_to(root).parts)


def _visible_files(root: Path) -> list[Path]:
    """The files under ``root``, not descending into hidden dirs: a running writer creates and deletes its
    staging dirs there while the walk runs (a walk into them failed on a vanished dir)."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if "=" in d or not d.startswith((".", "_"))]
        found.extend(Path(directory) / name for name in files)
    return sorted(found)


def read_landing(root: Path, fmt: str, success_file: str = "_SUCCESS") -> Landing:
    """Every data file under ``root`` (partition dirs ``k=v``), and which partitions have ``success_file``."""
    rows: Counter[tuple[str, int]] = Counter()
    success = set()
    if not root.is_dir():
        return Landing(rows, frozenset())
    for path in _visible_files(root):
        partition = path.parent.relative_to(root).as_posix()
        if path.name == success_file:
            success.add(partition)
            continue
        if _hidden(path, root):
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                rows[(partition, _row_id(line, fmt))] += 1
    return Landing(rows, frozenset(success))


def _row_id(line: str, fmt: str) -> int:
    if fmt == "json":
        return int(json.loads(line)["id"])
    return int(line.split(",", 1)[0].strip('"'))
