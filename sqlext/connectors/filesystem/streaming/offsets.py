"""The streaming source's offset, kept by Spark in the query's checkpoint: what has been read (the newest
order key, the partitions read at that key, and with ``streaming-source.read-recommits`` the files read of every
partition), the files the micro-batch that ends at an offset reads (:func:`next_offset`, :func:`files_to_read`),
and the progress an offset carries (:func:`batch_progress`, :func:`latest_report`)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.streaming.partitions import PartitionSnapshot, is_switched
from sqlext.connectors.filesystem.streaming.settings import Key, StreamingSourceSettings
from sqlext.errors import OptionError
from sqlext.io.records import RecordFormat

log = logging.getLogger("sqlext.streaming_source")

OFFSET_VERSION = 1
#: Version 1: as built by :func:`next_offset` (offsets always said so, under ``v``). Spark keeps them in the
#: query checkpoint's ``offsets/`` and hands them back to the source, which refuses a newer one.
OFFSET_FORMAT = RecordFormat("committed-partitions source offset", OFFSET_VERSION, key="v")
#: Where an offset handed back by Spark comes from, for errors.
_OFFSET_WHERE = "the query checkpoint's offsets/ (the committed-partitions source's offset)"


@dataclass(frozen=True)
class FileToRead:
    """One data file a micro-batch reads, with its partition."""

    uri: str
    partition: str
    values: tuple[str, ...]


def next_offset(
    start: Mapping[str, Any],
    partitions: Sequence[PartitionSnapshot],
    settings: StreamingSourceSettings,
    key_of: Callable[[PartitionSnapshot], Key],
    list_files: Callable[[PartitionSnapshot], list[str]],
    merged_of: Callable[[PartitionSnapshot], Mapping[str, list[str]]] | None = None,
) -> dict[str, Any]:
    """The end offset of the next micro-batch: ``start`` itself when nothing is new, else an offset whose
    ``batch`` lists the files to read (new partitions in order, then new files of re-committed ones).

    ``merged_of`` says, for a partition, which files compaction merged into which (file names); a merged file
    whose every source was read is taken as read. A partition whose location is a compaction's work dir
    (``sqlext compact`` switching its files) is left for a later poll."""
    OFFSET_FORMAT.version_of(start, _OFFSET_WHERE)
    _check_order(start, settings)
    key: Any = start["key"]  # all of one type: the order's (checked above)
    seen = set(start.get("seen", []))
    read_ms: int | None = start.get("commit_ms")
    read: dict[str, dict[str, Any]] = {name: dict(entry) for name, entry in start.get("read", {}).items()}
    batch: list[dict[str, Any]] = []
    batch_ms: list[int] = []
    keyed: list[tuple[Any, PartitionSnapshot]] = [(key_of(p), p) for p in partitions]
    keyed.sort(key=lambda pair: (pair[0], pair[1].name))
    newest, newest_names = key, set(seen)
    for partition_key, partition in keyed:
        if is_switched(partition):
            continue  # files being swapped by compaction: the switch back is the commit to read
        if partition.name in read:
            if settings.read_recommits and read[partition.name]["sig"] != partition.signature:
                done = set(read[partition.name]["files"])
                listed = list_files(partition)
                added = [name for name in listed if name not in done]
                if added and merged_of is not None:
                    added = _not_merged_from_read(partition, added, done, merged_of(partition))
                # Moved to the end: the entries the offset keeps are those of the partitions read last.
                del read[partition.name]
                read[partition.name] = {"sig": partition.signature, "files": sorted(done | set(listed))}
                if added:
                    batch.append(_batch_entry(partition, added))
                    batch_ms.append(partition.commit_ms)
            continue
        if partition_key < key or (partition_key == key and partition.name in seen):
            continue  # read already, or too late for the order (as in Flink)
        files = list_files(partition)
        batch.append(_batch_entry(partition, files))
        batch_ms.append(partition.commit_ms)
        if settings.read_recommits:
            read[partition.name] = {"sig": partition.signature, "files": files}
        if partition_key > newest:
            newest, newest_names = partition_key, set()
        if partition_key == newest:
            newest_names.add(partition.name)
    _retain_newest(read, settings.recommits_retained)
    if not batch and newest == key and newest_names == seen and read == start.get("read", {}):
        return dict(start)
    offset: dict[str, Any] = {
        "v": OFFSET_VERSION,
        "order": settings.order,
        "key": newest,
        "seen": sorted(newest_names),
        "batch": batch,
    }
    if settings.read_recommits:
        offset["read"] = read
    if batch_ms:
        newest_commit = max(p.commit_ms for p in partitions)
        # Behind since the newest commit read before; a first batch is behind since the oldest it reads.
        behind_since = read_ms if read_ms is not None else min(batch_ms)
        offset["lag_ms"] = max(0, newest_commit - behind_since)
        read_ms = max(batch_ms if read_ms is None else [read_ms, *batch_ms])
    if read_ms is not None:
        offset["commit_ms"] = read_ms
    return offset


def _retain_newest(read: dict[str, dict[str, Any]], retained: int) -> None:
    """Keep the read files of the ``retained`` partitions read last (``read`` is in reading order), so that the
    offset, written into the checkpoint at every micro-batch, stays bounded on a table read for years."""
    for name in list(itertools.islice(read, max(0, len(read) - retained))):
        del read[name]


def unread_names(
    start: Mapping[str, Any], settings: StreamingSourceSettings, name_key: Callable[[str], Key | None] | None
) -> Callable[[list[str]], list[str]] | None:
    """Which of the listed partition names the next offset from ``start`` can read: those at or past its key
    and, with ``read-recommits``, those it read before (whose re-commits it reads); :func:`next_offset` skips
    every other one as too late for the order. None (fetch every partition) where the key is not in the name.

    So a poll fetches what its reader can still read, not the table: a reader started at an offset on a table
    of 100,000 backfilled partitions fetches the few it has read and the new ones."""
    if name_key is None:
        return None
    key = start["key"]
    read = set(start.get("read", {})) if settings.read_recommits else set()

    def wanted(names: list[str]) -> list[str]:
        return [name for name in names if name in read or _at_or_after(name_key(name), key)]

    return wanted


def _at_or_after(at: Key | None, key: Key) -> bool:
    """Whether a partition at ``at`` may be read after ``key``; unknown keys are kept (reading decides)."""
    if isinstance(at, str) and isinstance(key, str):
        return at >= key
    if isinstance(at, int) and isinstance(key, int):
        return at >= key
    return True


@dataclass(frozen=True)
class BatchProgress:
    """What one micro-batch of the source read, and how far behind the newest commit it was."""

    partitions: tuple[str, ...]
    files: int
    #: The newest commit in the metastore minus the newest commit read before this batch, when it was planned.
    lag_ms: int

    def describe(self) -> str:
        """One line for the log."""
        shown = ", ".join(self.partitions[:5]) + (", ..." if len(self.partitions) > 5 else "")
        return (
            f"read {len(self.partitions)} partition(s) [{shown}], {self.files} file(s); "
            f"{self.lag_ms / 1000:.1f} s behind the newest commit when planned"
        )


def batch_progress(end: Mapping[str, Any]) -> BatchProgress | None:
    """The progress of the micro-batch that ends at ``end`` (None for an offset that reads nothing, or one
    that is not this source's)."""
    if not isinstance(end, Mapping) or end.get("v") != OFFSET_VERSION or not end.get("batch"):
        return None
    partitions = tuple(dict.fromkeys(entry["p"] for entry in end["batch"]))
    files = sum(len(entry["files"]) for entry in end["batch"])
    return BatchProgress(partitions, files, int(end.get("lag_ms", 0)))


def latest_report(latest: Mapping[str, Any], partitions: Sequence[PartitionSnapshot]) -> dict[str, Any]:
    """What the metastore held at the newest poll, against the newest planned offset ``latest``: Spark shows
    it as the source's ``latestOffset`` in the query's progress. Commits newer than the newest commit read are
    unread; the lag is the newest commit's time minus the newest read one's (the oldest unread one's when
    nothing was read)."""
    read_ms = latest.get("commit_ms")
    unread = [p.commit_ms for p in partitions if read_ms is None or p.commit_ms > read_ms]
    newest = max((p.commit_ms for p in partitions), default=0)
    lag = max(unread) - (min(unread) if read_ms is None else read_ms) if unread else 0
    return {"partitions": len(partitions), "newest_commit_ms": newest, "lag_ms": lag, "unread_commits": len(unread)}


def _not_merged_from_read(
    partition: PartitionSnapshot, added: list[str], done: set[str], merged: Mapping[str, list[str]]
) -> list[str]:
    """The new files that are not compaction's merges of files already read. A merge of files some of which
    were not read is read whole (its read rows again, rather than lose the others), with a warning."""
    unread = []
    for name in added:
        sources = set(merged.get(name, ()))
        if sources and sources <= done:
            continue
        if sources & done:
            log.warning(
                "%s: %s merges files read already and files not read yet (%s); it is read whole, so the rows of "
                "the files read already are read again",
                partition.name,
                name,
                ", ".join(sorted(sources - done)),
            )
        unread.append(name)
    return unread


def initial_offset(settings: StreamingSourceSettings) -> dict[str, Any]:
    """Where a new query starts: the start key, nothing read."""
    offset: dict[str, Any] = {
        "v": OFFSET_VERSION,
        "order": settings.order,
        "key": settings.start_key(),
        "seen": [],
        "batch": [],
    }
    if settings.read_recommits:
        offset["read"] = {}
    return offset


def files_to_read(end: Mapping[str, Any]) -> list[FileToRead]:
    """The files of the micro-batch that ends at ``end``, in order."""
    OFFSET_FORMAT.version_of(end, _OFFSET_WHERE)
    return [
        FileToRead(_child(entry["loc"], name), entry["p"], tuple(entry["values"]))
        for entry in end.get("batch", [])
        for name in entry["files"]
    ]


def _batch_entry(partition: PartitionSnapshot, files: list[str]) -> dict[str, Any]:
    return {"p": partition.name, "values": list(partition.values), "loc": partition.location, "files": files}


def _child(location: str, name: str) -> str:
    return f"{location.rstrip('/')}/{name}"


def _check_order(start: Mapping[str, Any], settings: StreamingSourceSettings) -> None:
    if start.get("order") != settings.order:
        raise OptionError(
            f"The checkpoint of this streaming read was taken with 'streaming-source.partition-order' = "
            f"'{start.get('order')}'; the table now says '{settings.order}'. Set it back, or start the query "
            "afresh (SET 'sqlext.insert.start' = 'fresh').",
            option=fso.STREAMING_SOURCE_PARTITION_ORDER.key,
            value=settings.order,
        )
