"""The ``kafka`` connector factory (Flink's ``KafkaDynamicTableFactory``, source side): option checks with
Flink's wording, and the source, which is one of two readers:

- Spark's own Kafka source (``format("kafka")``, :mod:`.spark_source`), when its jar is on the class path
  (``spark.jars.packages`` = :data:`.spark_source.ARTIFACT`) and the table's bounded mode is one it has
  (unbounded, latest-offset): the options are mapped onto Spark's names;
- otherwise sqlext's own reader (:mod:`.source`, on confluent-kafka).

``spark.sqlext.kafka.source`` chooses: ``auto`` (default: Spark's when it can), ``spark`` (Spark's, or an
error saying why not), ``sqlext`` (always ours). The log says which one each table read used and why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlext.catalog.csv_text import CsvTextForm
from sqlext.catalog.format_options import check_format_options
from sqlext.catalog.formats import check_columns
from sqlext.connectors.kafka import confluent, jaas, spark_source
from sqlext.connectors.kafka import confluent_options as cfo
from sqlext.connectors.kafka import options as ko
from sqlext.connectors.kafka.client import ReadSettings, client_properties, timeout_of
from sqlext.connectors.kafka.decoding import METADATA, Projection, decode
from sqlext.errors import OptionError, ValidationError
from sqlext.options import ConfigOption, Options
from sqlext.registry import ConnectorFactory, SourceContext
from sqlext.table import Column, TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LOG = logging.getLogger("sqlext.kafka")
SOURCE_CONF = "spark.sqlext.kafka.source"


class KafkaTableFactory(ConnectorFactory):
    """Kafka topics; source only."""

    identifier = "kafka"
    description = (
        "Kafka topics (json, csv, raw or schema-registry Avro keys and values, record metadata), exactly once into "
        "committed tables; source only."
    )

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return ko.REQUIRED_OPTIONS

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return ko.OPTIONAL_OPTIONS

    def validate(self, table: TableDefinition) -> None:
        """Declared options, then what spans options, as Flink checks them."""
        super().validate(table)
        options = Options(table.options)
        _check_topic(options)
        _check_mode(options, ko.STARTUP_MODE, ko.STARTUP_TIMESTAMP_MILLIS, ko.STARTUP_SPECIFIC_OFFSETS, "startup")
        _check_mode(options, ko.BOUNDED_MODE, ko.BOUNDED_TIMESTAMP_MILLIS, ko.BOUNDED_SPECIFIC_OFFSETS, "bounded")
        if options.get(ko.VALUE_FORMAT) is None and options.get(ko.FORMAT) is None:
            raise OptionError(
                "Could not find required scan format 'value.format'. Set 'format' or 'value.format' "
                f"({', '.join(ko.FORMATS)}).",
                option=ko.VALUE_FORMAT.key,
            )
        _check_keys(table, options)
        _check_jaas(table.options)
        projection = Projection.of(table)
        _check_format_options(table.options, projection)
        _check_format(projection.value_format, projection.value_options, projection.value_columns, "value")
        if projection.key_format:
            _check_key_inserts_only(projection.key_format)
            _check_format(
                projection.key_format, projection.key_options, projection.key_columns, "key", projection.key_prefix
            )
        for column in table.columns:
            if column.metadata_key and column.metadata_key not in METADATA and not _format_metadata(column, projection):
                raise OptionError(
                    f"Column '{column.name}' reads unknown metadata '{column.metadata_key}'. The kafka connector "
                    f"offers: {', '.join(METADATA)}.",
                    value=column.metadata_key,
                )

    def is_bounded(self, table: TableDefinition) -> bool:
        """Bounded when ``scan.bounded.mode`` is not ``unbounded``."""
        return Options(table.options).get(ko.BOUNDED_MODE) != ko.UNBOUNDED

    def __init__(self) -> None:
        #: The tables this process reads through Spark's Kafka source: their brokers explain its errors.
        self._spark_reads: dict[str, tuple[Any, ReadSettings]] = {}

    def explain_failure(self, failure: str) -> str | None:
        """A topic deleted under a query read by Spark's source, named with its table and brokers."""
        return spark_source.explain_deleted_topics(failure, list(self._spark_reads.values()))

    def create_source(self, context: SourceContext) -> DataFrame:
        """The table's rows from Spark's Kafka source or sqlext's own (see the module docstring)."""
        table = context.table
        if not context.streaming and not self.is_bounded(table):
            raise OptionError(
                f"Kafka table {table.identifier} is unbounded: set 'scan.bounded.mode' (e.g. 'latest-offset') to "
                "read it in batch mode.",
                option=ko.BOUNDED_MODE.key,
            )
        settings = read_settings(table)
        choice = context.spark.conf.get(SOURCE_CONF, "auto") or "auto"
        if choice not in ("auto", "spark", "sqlext"):
            raise OptionError(
                f"Invalid value for '{SOURCE_CONF}': '{choice}'. Expected one of auto, spark, sqlext.",
                option=SOURCE_CONF,
                value=choice,
            )
        reason = None if choice == "sqlext" else spark_source.refusal(context.spark, settings)
        if choice == "spark" and reason:
            raise ValidationError(
                f"{SOURCE_CONF} is 'spark', but Spark's Kafka source cannot read {table.identifier}: {reason}."
            )
        if choice != "sqlext" and not reason:
            LOG.info("Kafka table %s is read by Spark's Kafka source (format 'kafka').", table.identifier)
            headers = any(column.metadata_key == "headers" for column in table.columns)
            raw = spark_source.read(context.spark, settings, context.streaming, headers)
            self._spark_reads[settings.table] = (context.spark, settings)
        else:
            why = "chosen by " + SOURCE_CONF if choice == "sqlext" else reason
            LOG.info(
                "Kafka table %s is read by sqlext's own Kafka source (confluent-kafka): %s.", table.identifier, why
            )
            raw = _own_source(context, settings)
        return decode(raw, table)


def read_settings(table: TableDefinition) -> ReadSettings:
    """The read settings of a (validated) kafka table."""
    options = Options(table.options)
    client = client_properties(table.options)
    topics = options.get(ko.TOPIC)
    interval = options.get(ko.DISCOVERY_INTERVAL)
    return ReadSettings(
        table=str(table.identifier),
        client=client,
        topics=list(topics) if topics else None,
        pattern=options.get(ko.TOPIC_PATTERN),
        group_id=options.get(ko.GROUP_ID),
        startup_mode=options.get(ko.STARTUP_MODE),
        startup_timestamp=options.get(ko.STARTUP_TIMESTAMP_MILLIS),
        startup_offsets=_specific(options, ko.STARTUP_SPECIFIC_OFFSETS),
        bounded_mode=options.get(ko.BOUNDED_MODE),
        bounded_timestamp=options.get(ko.BOUNDED_TIMESTAMP_MILLIS),
        bounded_offsets=_specific(options, ko.BOUNDED_SPECIFIC_OFFSETS),
        discovery_interval_s=interval.total_seconds() if interval is not None else 0.0,
        timeout_s=timeout_of(client),
    )


def _specific(options: Options, option: ConfigOption[str]) -> dict[int, int]:
    text = options.get(option)
    return ko.parse_specific_offsets(text, option.key) if text else {}


def _own_source(context: SourceContext, settings: ReadSettings) -> DataFrame:
    from sqlext.connectors.kafka.client import consumer, topic_partitions
    from sqlext.connectors.kafka.source import FORMAT_NAME, KafkaDataSource

    probe = consumer(settings)
    try:
        topic_partitions(probe, settings)  # a missing topic or dead broker fails here, before the query starts
    finally:
        probe.close()
    context.spark.dataSource.register(KafkaDataSource)
    reader = context.spark.readStream if context.streaming else context.spark.read
    return reader.format(FORMAT_NAME).option("settings", settings.to_json()).load()


# -- checks ------------------------------------------------------------------------------------------


def _check_topic(options: Options) -> None:
    topic, pattern = options.get(ko.TOPIC), options.get(ko.TOPIC_PATTERN)
    if topic and pattern:
        raise OptionError("Option 'topic' and 'topic-pattern' shouldn't be set together.", option=ko.TOPIC.key)
    if not topic and not pattern:
        raise OptionError("Either 'topic' or 'topic-pattern' must be set.", option=ko.TOPIC.key)


def _check_mode(
    options: Options,
    mode_option: ConfigOption[str],
    timestamp_option: ConfigOption[int],
    offsets_option: ConfigOption[str],
    kind: str,
) -> None:
    mode = options.get(mode_option)
    if mode == ko.TIMESTAMP and options.get(timestamp_option) is None:
        raise OptionError(
            f"'{timestamp_option.key}' is required in '{mode}' {kind} mode but missing.", option=timestamp_option.key
        )
    if mode == ko.SPECIFIC_OFFSETS:
        text = options.get(offsets_option)
        if text is None:
            raise OptionError(
                f"'{offsets_option.key}' is required in '{mode}' {kind} mode but missing.", option=offsets_option.key
            )
        topics = options.get(ko.TOPIC) or []
        if len(topics) != 1:
            raise OptionError(
                "Currently Kafka source only supports specific offset for single topic.", option=offsets_option.key
            )
        try:
            ko.parse_specific_offsets(text, offsets_option.key)
        except ValueError as exc:
            raise OptionError(str(exc), option=offsets_option.key, value=text) from None


def _check_jaas(raw: Mapping[str, str]) -> None:
    """A JAAS config must be readable (Kafka's client reads it only when the query starts)."""
    key = ko.PROPERTIES.key + jaas.KEY
    if key in raw:
        try:
            jaas.parse(raw[key])
        except ValueError as exc:
            raise OptionError(
                f"Invalid '{key}': {exc}. Kafka's form is 'LoginModuleClass required key=\"value\" ...;' (e.g. "
                f'{jaas.KRB5_LOGIN_MODULE} required useKeyTab=true keyTab="..." principal="...";).',
                option=key,
            ) from None


def _check_keys(table: TableDefinition, options: Options) -> None:
    key_format, key_fields = options.get(ko.KEY_FORMAT), options.get(ko.KEY_FIELDS) or []
    prefix = options.get(ko.KEY_FIELDS_PREFIX) or ""
    if key_format is None and ko.KEY_FIELDS.key in table.options:
        raise OptionError(
            "The option 'key.fields' can only be declared if a key format is defined using 'key.format'.",
            option=ko.KEY_FIELDS.key,
        )
    if key_format is not None and not key_fields:
        raise OptionError(
            "A key format 'key.format' requires the declaration of one or more of key fields using 'key.fields'.",
            option=ko.KEY_FORMAT.key,
        )
    physical = [c.name for c in table.physical_columns]
    for field in key_fields:
        if field.lower() not in [name.lower() for name in physical]:
            raise OptionError(
                f"Could not find the field '{field}' in the table schema for usage in the key format. A key field "
                "must be a regular, physical column. The following columns can be selected in the 'key.fields' "
                f"option:\n[{', '.join(physical)}]",
                option=ko.KEY_FIELDS.key,
                value=field,
            )
        if not field.startswith(prefix):
            raise OptionError(
                f"All fields in 'key.fields' must be prefixed with '{prefix}' when option 'key.fields-prefix' is set "
                f"but field '{field}' is not prefixed.",
                option=ko.KEY_FIELDS.key,
                value=field,
            )
    if prefix and options.get(ko.VALUE_FIELDS_INCLUDE) == ko.ALL:
        raise OptionError(
            "A key prefix is not allowed when option 'value.fields-include' is set to 'ALL'. Set it to "
            "'EXCEPT_KEY' instead to avoid field overlaps.",
            option=ko.KEY_FIELDS_PREFIX.key,
        )


def _check_key_inserts_only(fmt: str) -> None:
    from sqlext.catalog.changelog_formats import is_changelog_format

    if is_changelog_format(fmt):
        raise OptionError(
            f"A key format should only deal with INSERT-only records ('key.format' = '{fmt}' reads changes, "
            "as Flink refuses it): use it as 'value.format'.",
            option="key.format",
            value=fmt,
        )


def _format_metadata(column: Column, projection: Projection) -> bool:
    """Whether ``column`` reads a metadata key of the value's change-event format (``value.source.table``)."""
    from sqlext.catalog.changelog_formats import METADATA as FORMAT_METADATA

    key = column.metadata_key or ""
    return key.startswith("value.") and key[len("value.") :] in FORMAT_METADATA.get(projection.value_format, {})


def _check_format_options(raw: Mapping[str, str], projection: Projection) -> None:
    """A format option must be for the format in use (``json.*`` with format json, ``key.csv.*`` with key csv)."""
    value_scope = "value." if "value.format" in raw else ""
    allowed = {f"{value_scope}{projection.value_format}."}
    if projection.key_format:
        allowed.add(f"key.{projection.key_format}.")
    for key in raw:
        family = next((o.key for o in ko.FORMAT_OPTION_PREFIXES if key.startswith(o.key)), None)
        if family is not None and family not in allowed:
            raise OptionError(
                f"Option '{key}' is for format options '{family}*', but the table's formats take "
                f"{', '.join(sorted(a + '*' for a in allowed))}.",
                option=key,
            )


def _check_format(
    fmt: str, format_options: Mapping[str, str], columns: Sequence[Any], scope: str, prefix: str = ""
) -> None:
    if fmt in cfo.FORMATS:
        renamed = [replace(c, name=c.name[len(prefix) :]) for c in columns] if scope == "key" else list(columns)
        confluent.check(fmt, format_options, renamed, f"{scope}." if scope == "key" else "")
        return
    check_format_options(fmt, format_options, "key." if scope == "key" else "")
    if fmt == "raw":
        if len(columns) != 1 or columns[0].type.upper().split("(")[0] not in (
            "STRING",
            "VARCHAR",
            "BYTES",
            "VARBINARY",
        ):
            shown = ", ".join(f"{c.name} {c.type}" for c in columns)
            raise ValidationError(
                f"The 'raw' {scope} format holds exactly one STRING or BYTES column, but the {scope} holds: {shown}.",
                option=f"{scope}.format",
                value=fmt,
            )
    elif fmt == "csv":
        check_columns("csv", [(c.name, c.type) for c in columns])
        CsvTextForm.from_options(format_options)
