"""The ``streaming-source.*`` options of a table read as a stream of committed partitions
(:mod:`.streaming_source`): parsed and checked together, with the order key reading starts from."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlext.connectors.filesystem import options as fso
from sqlext.errors import OptionError, PartitionTimeError, ValidationError
from sqlext.options import Options
from sqlext.table import TableDefinition

DEFAULT_MONITOR_INTERVAL = timedelta(minutes=1)
_READABLE_FORMATS = ("parquet", "orc")

Key = int | str


@dataclass(frozen=True)
class StreamingSourceSettings:
    """The ``streaming-source.*`` options of a table, parsed and checked together."""

    enabled: bool
    include: str
    monitor_interval: timedelta
    order: str
    start_offset: str | None
    read_recommits: bool
    #: How many of the partitions read last keep their read files in the offset (``read-recommits``).
    recommits_retained: int = 1000

    @classmethod
    def from_table(cls, table: TableDefinition) -> StreamingSourceSettings:
        """Read and check the options (a bad start offset is an :class:`OptionError` naming it)."""
        options = Options(table.options)
        order = options.get(fso.STREAMING_SOURCE_CONSUME_ORDER)
        if fso.STREAMING_SOURCE_PARTITION_ORDER.key in table.options or order is None:
            order = options.get(fso.STREAMING_SOURCE_PARTITION_ORDER)
        settings = cls(
            enabled=bool(options.get(fso.STREAMING_SOURCE_ENABLE)),
            include=options.get(fso.STREAMING_SOURCE_PARTITION_INCLUDE),
            monitor_interval=options.get(fso.STREAMING_SOURCE_MONITOR_INTERVAL) or DEFAULT_MONITOR_INTERVAL,
            order=order,
            start_offset=options.get(fso.STREAMING_SOURCE_CONSUME_START_OFFSET),
            read_recommits=bool(options.get(fso.STREAMING_SOURCE_READ_RECOMMITS)),
            recommits_retained=int(options.get(fso.STREAMING_SOURCE_READ_RECOMMITS_RETAINED)),
        )
        settings.start_key()
        return settings

    def start_key(self) -> Key:
        """The order key reading starts from (inclusive): Flink's defaults are ``""`` and 0."""
        if self.order == fso.ORDER_PARTITION_NAME:
            return self.start_offset or ""
        if self.start_offset is None:
            return 0
        return epoch_ms(_parse_offset_time(self.start_offset))


def _parse_offset_time(text: str) -> datetime:
    from sqlext.connectors.filesystem.extractor import DefaultPartitionTimeExtractor

    try:
        return DefaultPartitionTimeExtractor().extract(["offset"], [text])
    except PartitionTimeError:
        raise OptionError(
            f"Invalid value for option '{fso.STREAMING_SOURCE_CONSUME_START_OFFSET.key}': '{text}'. With "
            "'streaming-source.partition-order' 'create-time' or 'partition-time' it is a timestamp "
            "'yyyy-[m]m-[d]d [hh:mm:ss]', e.g. '2026-11-22 08:00:00'.",
            option=fso.STREAMING_SOURCE_CONSUME_START_OFFSET.key,
            value=text,
        ) from None


def epoch_ms(moment: datetime) -> int:
    """A local date-time as epoch milliseconds read as UTC (how Flink compares partition times)."""
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def is_streaming_source(table: TableDefinition) -> bool:
    """Whether a streaming query reads ``table`` as a stream of committed partitions."""
    return bool(Options(table.options).get(fso.STREAMING_SOURCE_ENABLE))


def check_readable(table: TableDefinition, settings: StreamingSourceSettings) -> None:
    """What the streaming source cannot read yet is refused before the query starts, naming it."""
    fmt = Options(table.options).require(fso.FORMAT)
    if settings.include != fso.INCLUDE_ALL:
        raise OptionError(
            f"Table {table.identifier}: 'streaming-source.partition.include' = '{settings.include}' is only "
            "for a temporal (lookup) join of the newest partition, as in Flink: JOIN "
            f"{table.identifier} FOR SYSTEM_TIME AS OF <stream>.<column AS PROCTIME()> ON ...; a streaming "
            "read of the table takes 'all'.",
            option=fso.STREAMING_SOURCE_PARTITION_INCLUDE.key,
            value=settings.include,
        )
    if not table.partition_keys:
        raise ValidationError(
            f"Table {table.identifier} is not partitioned: sqlext's streaming source reads committed partitions "
            "(Flink's also reads new files of an unpartitioned table; sqlext does not yet). Unset "
            "'streaming-source.enable', or set 'source.monitor-interval' to stream new files.",
            option=fso.STREAMING_SOURCE_ENABLE.key,
        )
    if fmt not in _READABLE_FORMATS:
        raise ValidationError(
            f"Table {table.identifier}: the streaming source reads {' and '.join(_READABLE_FORMATS)} files; "
            f"the table's format is '{fmt}'.",
            option=fso.FORMAT.key,
            value=fmt,
        )
    metadata = [column.name for column in table.columns if column.metadata_key]
    if metadata:
        raise ValidationError(
            f"Table {table.identifier}: the streaming source does not fill metadata columns yet "
            f"({', '.join(metadata)}).",
            option=fso.STREAMING_SOURCE_ENABLE.key,
        )
