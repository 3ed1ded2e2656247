"""The ``filesystem`` connector: files under ``path`` in ``format``, partitioned Hive-style."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlext.connectors import filesystem_options as fso
from sqlext.errors import OptionError
from sqlext.options import ConfigOption, Options
from sqlext.registry import ConnectorFactory, SinkContext, SourceContext
from sqlext.table import TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlext.sink.api import TableSink

#: Flink's metadata keys -> fields of Spark's hidden ``_metadata`` column.
METADATA_FIELDS = {
    "file.path": "file_path",
    "file.name": "file_name",
    "file.size": "file_size",
    "file.modification-time": "file_modification_time",
}
#: Flink csv/json option names -> Spark reader options.
_READER_OPTIONS = {
    "field-delimiter": ("sep", None),
    "quote-character": ("quote", None),
    "null-literal": ("nullValue", None),
    "allow-comments": ("comment", "#"),
    "ignore-parse-errors": ("mode", "DROPMALFORMED"),
}


class FileSystemTableFactory(ConnectorFactory):
    identifier = "filesystem"
    description = "Files (parquet, orc, csv, json) under a path, Hive-style partitions; source and sink."

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return fso.REQUIRED_OPTIONS

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return fso.OPTIONAL_OPTIONS

    def validate(self, table: TableDefinition) -> None:
        super().validate(table)
        options = Options(table.options)
        fmt = options.require(fso.FORMAT)
        for key in table.options:
            prefix = key.split(".", 1)[0]
            if prefix in fso.FORMATS and prefix != fmt and key != "path":
                raise OptionError(
                    f"Option '{key}' is for format '{prefix}', but the table's format is '{fmt}'.", option=key
                )
        kinds = options.get(fso.COMMIT_POLICY_KIND) or []
        if fso.POLICY_CUSTOM in kinds and not options.get(fso.COMMIT_POLICY_CLASS):
            raise OptionError(
                "sink.partition-commit.policy.kind includes 'custom', so 'sink.partition-commit.policy.class' "
                "is required.",
                option=fso.COMMIT_POLICY_CLASS.key,
            )
        if options.get(fso.TIME_EXTRACTOR_KIND) == "custom" and not options.get(fso.TIME_EXTRACTOR_CLASS):
            raise OptionError(
                "partition.time-extractor.kind is 'custom', so 'partition.time-extractor.class' is required.",
                option=fso.TIME_EXTRACTOR_CLASS.key,
            )
        for column in table.columns:
            if column.metadata_key and column.metadata_key not in METADATA_FIELDS:
                raise OptionError(
                    f"Column '{column.name}' reads unknown metadata '{column.metadata_key}'. The filesystem "
                    f"connector offers: {', '.join(METADATA_FIELDS)}.",
                    value=column.metadata_key,
                )

    def is_bounded(self, table: TableDefinition) -> bool:
        return Options(table.options).get(fso.SOURCE_MONITOR_INTERVAL) is None

    def create_source(self, context: SourceContext) -> DataFrame:
        from pyspark.sql import functions as F

        from sqlext.types import spark_type

        table = context.table
        options = Options(table.options)
        fmt = options.require(fso.FORMAT)
        physical = table.physical_columns
        schema = ", ".join(f"`{c.name}` {spark_type(c.type)}" for c in physical)
        reader_options = _reader_options(fmt, options.with_prefix(f"{fmt}."))
        if context.streaming:
            reader: Any = context.spark.readStream
            max_files = options.get(fso.SOURCE_MAX_FILES_PER_TRIGGER)
            if max_files:
                reader_options["maxFilesPerTrigger"] = str(max_files)
        else:
            reader = context.spark.read
        frame = reader.format(fmt).schema(schema).options(**reader_options).load(options.require(fso.PATH))
        pattern = options.get(fso.SOURCE_PATH_REGEX)
        if pattern:
            frame = frame.where(F.col("_metadata.file_path").rlike(pattern))
        selected = []
        for column in table.columns:
            if column.metadata_key:
                field = F.col(f"_metadata.{METADATA_FIELDS[column.metadata_key]}")
                selected.append(field.cast(spark_type(column.type)).alias(column.name))
            elif column.is_physical:
                selected.append(F.col(f"`{column.name}`"))
        return frame.select(*selected)

    def create_sink(self, context: SinkContext) -> TableSink:
        from sqlext.sink.filesystem import FileSystemSink

        return FileSystemSink(context)


def _reader_options(fmt: str, format_options: dict[str, str]) -> dict[str, str]:
    if fmt not in ("csv", "json"):
        return dict(format_options)
    mapped = {}
    for key, value in format_options.items():
        spark_key, fixed = _READER_OPTIONS.get(key, (key, None))
        if key in ("allow-comments", "ignore-parse-errors"):
            if value.lower() == "true":
                mapped[spark_key] = fixed or value
        else:
            mapped[spark_key] = value
    return mapped
