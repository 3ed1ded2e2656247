"""Partition discovery of the streaming source: the table's partitions as the metastore shows them now
(:class:`PartitionSnapshot`), their order keys (``streaming-source.partition-order``), and the data files of a
partition (with what compaction merged in it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.escaping import parse_partition_path, partition_path
from sqlext.connectors.filesystem.streaming.settings import Key, StreamingSourceSettings, epoch_ms
from sqlext.connectors.filesystem.streaming.spec import SourceSpec
from sqlext.options import Options

#: A path part of compaction's work dirs (``<table>/_sqlext/compaction/<id>/...``).
_SWITCHED = "/_sqlext/compaction/"
#: Partition parameters whose change means the partition was committed again.
_SIGNATURE_PARAMETERS = ("numFiles", "totalSize", "transient_lastDdlTime")


@dataclass(frozen=True)
class PartitionSnapshot:
    """One partition as the metastore shows it now."""

    name: str
    values: tuple[str, ...]
    location: str
    create_time_ms: int
    signature: str
    #: When it was last committed (added or altered) in the metastore; 0 when only the creation is known.
    altered_ms: int = 0

    @property
    def commit_ms(self) -> int:
        """The time of its newest commit: its creation, or its last re-commit (late data, compaction)."""
        return max(self.create_time_ms, self.altered_ms)


def order_key(
    partition: PartitionSnapshot, order: str, extract: Callable[[Sequence[str]], datetime] | None = None
) -> Key:
    """The partition's place in ``streaming-source.partition-order``."""
    if order == fso.ORDER_PARTITION_NAME:
        return partition.name
    if order == fso.ORDER_CREATE_TIME:
        return partition.create_time_ms
    assert extract is not None, "partition-time needs an extractor"
    return epoch_ms(extract(partition.values))


def is_switched(partition: PartitionSnapshot) -> bool:
    """Whether the partition's location is a compaction's work dir (its files are being swapped)."""
    return _SWITCHED in partition.location


def snapshot(keys: Sequence[str], partition: Any, default_name: str) -> PartitionSnapshot:
    """A metastore ``Partition`` as a :class:`PartitionSnapshot`."""
    parameters = partition.parameters or {}
    signature = "|".join(
        [partition.sd.location or "", *(str(parameters.get(name, "")) for name in _SIGNATURE_PARAMETERS)]
    )
    values = tuple(partition.values)
    return PartitionSnapshot(
        name=partition_path(keys, list(values), default_name),
        values=values,
        location=partition.sd.location,
        create_time_ms=int(partition.createTime or 0) * 1000,
        signature=signature,
        altered_ms=_int(parameters.get("transient_lastDdlTime")) * 1000,
    )


def _int(text: Any) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def data_file_names(names: Sequence[str], success_file: str) -> list[str]:
    """The readable data files of a listing: not hidden (``_``, ``.``), not the success file."""
    return sorted(name for name in names if not name.startswith(("_", ".")) and name != success_file)


def list_partition_files(partition: PartitionSnapshot, success_file: str) -> list[str]:
    """The data files in a partition's directory, by name."""
    from sqlext.io.fs import FileSystem

    fs = FileSystem(partition.location)
    names = [status.relative for status in fs.list_files(partition.location, recursive=False)]
    return data_file_names(names, success_file)


def compaction_merges(table_path: str, partition: PartitionSnapshot) -> dict[str, list[str]]:
    """What compaction merged in a partition, from the table's commit log: merged file name -> the names of
    the files it replaced (entries the log still keeps; see ``sink.commit-log.retained-batches``)."""
    from sqlext.connectors.filesystem.commit_log import CommitLog
    from sqlext.connectors.filesystem.compaction.compactor import COMPACTION_WRITER
    from sqlext.io.fs import FileSystem, normalize

    log_ = CommitLog(FileSystem(table_path), table_path)
    location = normalize(partition.location).rstrip("/")
    merged: dict[str, list[str]] = {}
    for entry in log_.entries(COMPACTION_WRITER):
        for final, sources in entry.merged_from.items():
            directory, _, name = normalize(final).rpartition("/")
            if directory == location:
                merged[name] = [source.rsplit("/", 1)[-1] for source in sources]
    return merged


def poll(
    spec: SourceSpec, client: Any, wanted: Callable[[list[str]], list[str]] | None = None
) -> list[PartitionSnapshot]:
    """The partitions of the table in the metastore now: every one, or those of the names ``wanted`` keeps of
    the listed names. A table of 100,000 partitions then costs a listing of names and the few partitions
    wanted, not 100,000 partition objects fetched at every poll."""
    default_name = Options(spec.options).get(fso.PARTITION_DEFAULT_NAME)
    names = client.get_partition_names(spec.database, spec.table)
    if wanted is not None:
        names = wanted(names)
    found = client.get_partitions_by_names(spec.database, spec.table, names) if names else []
    return [snapshot(spec.partition_keys, partition, default_name) for partition in found]


def name_key_function(spec: SourceSpec, settings: StreamingSourceSettings) -> Callable[[str], Key | None] | None:
    """The order key of a partition from its name alone (None where its values give no time), for the orders
    whose key the name holds (``partition-name``, ``partition-time``); None for ``create-time``, which only
    the metastore's partition object carries."""
    if settings.order == fso.ORDER_PARTITION_NAME:
        return lambda name: name
    if settings.order != fso.ORDER_PARTITION_TIME:
        return None
    from sqlext.connectors.filesystem.settings import SinkSettings

    extractor = SinkSettings.from_table(spec.definition()).extractor()
    keys = spec.partition_keys

    def key_of(name: str) -> Key | None:
        try:
            return epoch_ms(extractor.extract(keys, parse_partition_path(name, keys)))
        except Exception:  # fetched, so that reading it fails as it did before names were filtered
            return None

    return key_of


def key_function(spec: SourceSpec, settings: StreamingSourceSettings) -> Callable[[PartitionSnapshot], Key]:
    """The order key of a partition under the table's settings."""
    extract: Callable[[Sequence[str]], datetime] | None = None
    if settings.order == fso.ORDER_PARTITION_TIME:
        from sqlext.connectors.filesystem.settings import SinkSettings

        extractor = SinkSettings.from_table(spec.definition()).extractor()
        keys = spec.partition_keys

        def extract(values: Sequence[str]) -> datetime:
            return extractor.extract(keys, values)

    return lambda partition: order_key(partition, settings.order, extract)
