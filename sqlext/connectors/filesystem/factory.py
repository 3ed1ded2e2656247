"""The ``filesystem`` connector (Flink's ``FileSystemTableFactory``): files under ``path`` in ``format``,
partitioned Hive-style (``k=v`` directories). Options are checked here; the read path is
:mod:`sqlext.connectors.filesystem.source`, the sink (partition commit and all)
:class:`sqlext.connectors.filesystem.sink.FileSystemSink`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlext.catalog.csv_text import CsvTextForm
from sqlext.catalog.format_options import check_format_options
from sqlext.catalog.formats import check_columns
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.extractor import check_timestamp_pattern
from sqlext.connectors.filesystem.incremental.window import SNAPSHOT_KEY, no_snapshot_ids
from sqlext.connectors.filesystem.source import METADATA_FIELDS, read_table
from sqlext.connectors.filesystem.streaming.settings import StreamingSourceSettings, is_streaming_source
from sqlext.connectors.filesystem.streaming.source import read_stream
from sqlext.errors import OptionError
from sqlext.options import ConfigOption, Options
from sqlext.registry import ConnectorFactory, SinkContext, SourceContext
from sqlext.table import TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlext.sink import TableSink


#: Formats whose files hold the data columns only, checked without the partition keys.
DATA_COLUMN_FORMATS = ("avro", "raw")
#: The policy kinds that need another option: (kind, that option, what it holds).
_POLICY_REQUIREMENTS = (
    (fso.POLICY_CUSTOM, fso.COMMIT_POLICY_CLASS, ""),
    (fso.POLICY_HTTP_REPORT, fso.HTTP_REPORT_URL, " (an http:// or https:// URL)"),
)


class FileSystemTableFactory(ConnectorFactory):
    """Files (parquet, orc, csv, json, avro, raw) under a path; source and sink."""

    identifier = "filesystem"
    description = (
        "Files (parquet, orc, csv, json, avro, raw; change events in debezium-json, canal-json, maxwell-json) "
        "under a path, Hive-style partitions; source and sink."
    )

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return fso.REQUIRED_OPTIONS

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return fso.OPTIONAL_OPTIONS

    def validate(self, table: TableDefinition) -> None:
        """Declared options, then: format options only for the table's format, a class for each
        ``custom`` kind, and metadata columns the connector offers."""
        if SNAPSHOT_KEY in table.options:  # Paimon's, by snapshot ids: said why, rather than "unsupported"
            value = table.options[SNAPSHOT_KEY]
            raise OptionError(no_snapshot_ids(value), option=SNAPSHOT_KEY, value=value)
        super().validate(table)
        options = Options(table.options)
        fmt = options.require(fso.FORMAT)
        _check_format_options(table.options, fmt)
        format_options = options.with_prefix(f"{fmt}.")
        check_format_options(fmt, format_options)
        physical = table.physical_columns if fmt not in DATA_COLUMN_FORMATS else table.data_columns
        check_columns(fmt, [(column.name, column.type) for column in physical], format_options)
        if fmt == "csv":
            CsvTextForm.from_options(options.with_prefix("csv."))
        kinds = options.get(fso.COMMIT_POLICY_KIND) or []
        for kind, required, what in _POLICY_REQUIREMENTS:
            if kind in kinds and not options.get(required):
                raise OptionError(
                    f"sink.partition-commit.policy.kind includes '{kind}', so '{required.key}'{what} is required.",
                    option=required.key,
                )
        if (
            options.get(fso.TIME_EXTRACTOR_KIND) == "custom"
            and not options.get(fso.TIME_EXTRACTOR_CLASS)
            and options.get(fso.COMMIT_TRIGGER) == fso.TRIGGER_PARTITION_TIME
        ):
            raise OptionError(
                "partition.time-extractor.kind is 'custom' and the trigger 'partition-time' extracts partition "
                "times, so 'partition.time-extractor.class' is required.",
                option=fso.TIME_EXTRACTOR_CLASS.key,
            )
        if options.get(fso.TIME_EXTRACTOR_KIND) != "custom" and _extracts_partition_times(options):
            check_timestamp_pattern(options.get(fso.TIME_EXTRACTOR_PATTERN), table.partition_keys, table.identifier)
        StreamingSourceSettings.from_table(table)
        for column in table.columns:
            if column.metadata_key and column.metadata_key not in METADATA_FIELDS:
                raise OptionError(
                    f"Column '{column.name}' reads unknown metadata '{column.metadata_key}'. The filesystem "
                    f"connector offers: {', '.join(METADATA_FIELDS)}.",
                    value=column.metadata_key,
                )

    def effective_defaults(self, table: TableDefinition) -> list[tuple[str, str]]:
        """The partition commit's defaults, which differ from what a Flink user of the Hive sink may assume."""
        defaults = []
        if table.partition_keys and fso.COMMIT_POLICY_KIND.key not in table.options:
            defaults.append((fso.COMMIT_POLICY_KIND.key, ",".join(fso.DEFAULT_POLICIES)))
        if table.partition_keys and fso.PARTITION_DEFAULT_NAME.key not in table.options:
            defaults.append((fso.PARTITION_DEFAULT_NAME.key, fso.HIVE_DEFAULT_PARTITION))
        if table.partition_keys and fso.COMMIT_TRIGGER.key not in table.options:
            defaults.append((fso.COMMIT_TRIGGER.key, fso.TRIGGER_PROCESS_TIME))
        return defaults

    def partitions_in_metastore(self, table: TableDefinition) -> bool:
        """Only the ``metastore`` commit policy registers partitions (it is one of the defaults); without it,
        as in Flink, the table's partitions are its committed ``k=v`` directories. A temporary table is in no
        metastore: its partitions are its directories whatever the policies."""
        if table.temporary:
            return False
        kinds = Options(table.options).get(fso.COMMIT_POLICY_KIND) or fso.DEFAULT_POLICIES
        return fso.POLICY_METASTORE in kinds

    def is_bounded(self, table: TableDefinition) -> bool:
        """Bounded unless ``source.monitor-interval`` is set or ``streaming-source.enable`` is true."""
        options = Options(table.options)
        return options.get(fso.SOURCE_MONITOR_INTERVAL) is None and not is_streaming_source(table)

    def create_source(self, context: SourceContext) -> DataFrame:
        """A (streaming when ``context.streaming``) read of the table's files; see :mod:`.source`. In a
        streaming query, a table with ``streaming-source.enable`` is read as a stream of committed partitions
        (:mod:`.streaming_source`)."""
        if context.streaming and fso.INCREMENTAL_BETWEEN_TIMESTAMP.key in context.table.options:
            raise OptionError(
                f"Option '{fso.INCREMENTAL_BETWEEN_TIMESTAMP.key}' of {context.table.identifier} reads the rows "
                "committed in a window that has ended, once: a batch read. Run the statement in batch mode (SET "
                "'execution.runtime-mode' = 'batch'), or follow new commits as they come with a streaming read "
                "('streaming-source.enable' = 'true', docs/streaming-reads.md).",
                option=fso.INCREMENTAL_BETWEEN_TIMESTAMP.key,
                value=context.table.options[fso.INCREMENTAL_BETWEEN_TIMESTAMP.key],
            )
        if context.streaming and is_streaming_source(context.table):
            return read_stream(context)
        return read_table(context)

    def create_sink(self, context: SinkContext) -> TableSink:
        """The partition-committing file sink."""
        from sqlext.connectors.filesystem.sink import FileSystemSink

        return FileSystemSink(context)


def _extracts_partition_times(options: Options) -> bool:
    """Whether partition times are extracted: by the ``partition-time`` commit trigger, by a streaming read in
    ``partition-time`` order, or by partition expiration by ``values-time``."""
    if options.get(fso.COMMIT_TRIGGER) == fso.TRIGGER_PARTITION_TIME:
        return True
    ordered = options.get(fso.STREAMING_SOURCE_PARTITION_ORDER) == fso.ORDER_PARTITION_TIME
    if options.get(fso.STREAMING_SOURCE_ENABLE) and ordered:
        return True
    expires = options.get(fso.PARTITION_EXPIRATION_TIME) is not None
    return expires and options.get(fso.PARTITION_EXPIRATION_STRATEGY) == fso.EXPIRATION_VALUES_TIME


def _check_format_options(raw: Mapping[str, str], fmt: str) -> None:
    for key in raw:
        prefix = key.split(".", 1)[0]
        if prefix in fso.FORMATS and prefix != fmt:
            raise OptionError(
                f"Option '{key}' is for format '{prefix}', but the table's format is '{fmt}'.", option=key
            )
