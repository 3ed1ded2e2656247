"""From raw Kafka records (:data:`sqlext.connectors.kafka.source.RAW_SCHEMA`) to a table's columns: the key
and value formats (json, csv, raw) and the metadata columns, as Flink's Kafka connector defines them.

- ``value.fields-include`` ``ALL``: the value holds every physical column; a key field is read from the
  value (which Flink also does: the value's projection is applied last). ``EXCEPT_KEY``: the value holds
  the other columns, the key fields come from the key.
- ``key.fields-prefix``: the key format sees the key columns' names without it.
- json: Spark's ``from_json`` with the table's ``json.*`` options in Spark's names; a malformed value fails
  the batch naming the value, unless ``json.ignore-parse-errors`` (then the record is skipped, as in Flink);
  timestamps in Flink's default ``SQL`` form unless ``json.timestamp-format.standard`` says ``ISO-8601``.
- csv: the form sqlext's filesystem source reads (:class:`sqlext.catalog.csv_text.CsvTextForm`); one record one line.
- raw: the single column the format holds, STRING (``raw.charset``, default UTF-8) or BYTES.
- debezium-json, canal-json, maxwell-json (values only): change events, a row a change with its row kind
  (:mod:`sqlext.connectors.changelog.decoding`); their ``value.*`` metadata columns (``value.source.table``).
- avro-confluent, debezium-avro-confluent: :mod:`sqlext.connectors.kafka.confluent`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlext.catalog.changelog_formats import CHANGELOG_FORMATS, ROW_KIND
from sqlext.catalog.csv_text import CsvTextForm
from sqlext.connectors.kafka import confluent
from sqlext.connectors.kafka import confluent_options as cfo
from sqlext.connectors.kafka import options as ko
from sqlext.options import Options
from sqlext.table import Column, TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

#: Flink's readable metadata of a Kafka record: key -> (raw column expression kind, Flink type).
METADATA = {
    "topic": "STRING NOT NULL",
    "partition": "INT NOT NULL",
    "headers": "MAP<STRING, BYTES> NOT NULL",
    "leader-epoch": "INT NULL",
    "offset": "BIGINT NOT NULL",
    "timestamp": "TIMESTAMP_LTZ(3) NOT NULL",
    "timestamp-type": "STRING NOT NULL",
}
_CORRUPT = "__sqlext_corrupt"
_CHANGE = "__sqlext_change"
_JSON_SQL_TIMESTAMP = "yyyy-MM-dd HH:mm:ss[.SSSSSSSSS]"


@dataclass(frozen=True)
class Projection:
    """Which physical columns a record's key and value hold, and each format with its options."""

    value_format: str
    value_options: Mapping[str, str]
    value_columns: tuple[Column, ...]
    key_format: str | None
    key_options: Mapping[str, str]
    key_columns: tuple[Column, ...]
    key_prefix: str

    @classmethod
    def of(cls, table: TableDefinition) -> Projection:
        options = Options(table.options)
        value_format = options.get(ko.VALUE_FORMAT)
        value_prefix = f"value.{value_format}." if value_format else None
        if value_format is None:
            value_format = options.require(ko.FORMAT)
            value_prefix = f"{value_format}."
        assert value_prefix is not None
        key_format = options.get(ko.KEY_FORMAT)
        key_names = [name.lower() for name in options.get(ko.KEY_FIELDS) or []]
        physical = table.physical_columns
        keys = tuple(c for name in key_names for c in physical if c.name.lower() == name)
        include = options.get(ko.VALUE_FIELDS_INCLUDE)
        values = tuple(c for c in physical if include == ko.ALL or c not in keys)
        return cls(
            value_format,
            options.with_prefix(value_prefix),
            values,
            key_format,
            options.with_prefix(f"key.{key_format}.") if key_format else {},
            keys,
            options.get(ko.KEY_FIELDS_PREFIX) or "",
        )


def decode(raw: DataFrame, table: TableDefinition) -> DataFrame:
    """The table's physical and metadata columns (in declaration order) from raw records; a changelog format's
    rows also carry their row kind (:data:`sqlext.catalog.changelog_formats.ROW_KIND`, last)."""
    from pyspark.sql import functions as F

    projection = Projection.of(table)
    if projection.value_format in CHANGELOG_FORMATS:
        raw = _changelog_values(raw, table, projection)
    decoded: dict[str, SparkColumn] = {}
    keep: list[SparkColumn] = []
    spark = raw.sparkSession
    if projection.key_format and projection.key_columns:
        names = [(c.name[len(projection.key_prefix) :], c) for c in projection.key_columns]
        fields, ok = _decode(projection.key_format, F.col("key"), names, projection.key_options, spark, table)
        decoded.update(fields)
        keep += ok
    names = [(c.name, c) for c in projection.value_columns]
    frame = raw
    if projection.value_format in CHANGELOG_FORMATS:
        fields = {c.name: F.col(f"`{c.name}`") for c in projection.value_columns}
    elif projection.value_format == cfo.DEBEZIUM_AVRO_CONFLUENT:
        frame, fields = _changes(frame, names, projection.value_options, table)
    else:
        fields, ok = _decode(projection.value_format, F.col("value"), names, projection.value_options, spark, table)
        keep += ok
    decoded.update(fields)
    for condition in keep:
        frame = frame.where(condition)
    columns = [c for c in table.columns if c.is_physical or c.metadata_key]
    kind = [F.col(ROW_KIND)] if ROW_KIND in frame.columns else []  # a changelog's row kinds
    return frame.select(*(_output(c, decoded) for c in columns), *kind)


def _changelog_values(raw: DataFrame, table: TableDefinition, projection: Projection) -> DataFrame:
    """The raw records with their values decoded as change events: a row a change, the value columns by name,
    the format's ``value.*`` metadata and the row kind; an error names the topic-partition-offset."""
    from pyspark.sql import functions as F

    from sqlext.connectors.changelog.decoding import ChangelogDecoding

    decoding = ChangelogDecoding(table, projection.value_format, projection.value_options, projection.value_columns)
    location = F.format_string("topic-partition-offset %s-%s-%s", F.col("topic"), F.col("partition"), F.col("offset"))
    keys = [key[len("value.") :] for c in table.columns if (key := c.metadata_key or "").startswith("value.")]
    return decoding.decode(raw, F.decode(F.col("value"), "UTF-8"), location, [F.col(c) for c in raw.columns], keys)


def _changes(
    raw: DataFrame, names: Sequence[tuple[str, Column]], options: Mapping[str, str], table: TableDefinition
) -> tuple[DataFrame, dict[str, SparkColumn]]:
    """debezium-avro-confluent: a row per change (a tombstone none) with its row kind, and its columns."""
    from pyspark.sql import functions as F

    spark = raw.sparkSession
    fmt = cfo.DEBEZIUM_AVRO_CONFLUENT
    registry = confluent.settings(str(table.identifier), fmt, options, [c for _, c in names])
    record = confluent.decoded(spark, registry, F.col("value"))
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    rows = confluent.change_rows(record, names, zone, str(table.identifier))
    frame = raw.where(F.col("value").isNotNull()).withColumn(_CHANGE, F.explode(rows))
    frame = frame.withColumn(ROW_KIND, F.col(_CHANGE).getField(ROW_KIND))
    return frame, {c.name: F.col(_CHANGE).getField(c.name) for _, c in names}


def _output(column: Column, decoded: Mapping[str, SparkColumn]) -> SparkColumn:
    from pyspark.sql import functions as F

    from sqlext.connectors.changelog.decoding import meta_column
    from sqlext.sql.types import spark_type

    if (key := column.metadata_key or "").startswith("value."):  # a change-event format's metadata
        return F.col(meta_column(key[len("value.") :])).cast(spark_type(column.type)).alias(column.name)
    value = metadata_value(column.metadata_key) if column.metadata_key else decoded.get(column.name, F.lit(None))
    return value.cast(spark_type(column.type)).alias(column.name)


def metadata_value(key: str) -> SparkColumn:
    """A metadata column of the raw record, in Flink's form."""
    from pyspark.sql import functions as F

    if key == "timestamp":
        return F.timestamp_millis(F.col("timestamp"))
    if key == "timestamp-type":
        kind = F.col("timestamp_type")
        return F.when(kind == 0, "CreateTime").when(kind == 1, "LogAppendTime").otherwise("NoTimestampType")
    if key == "headers":
        return F.coalesce(F.col("headers"), F.create_map().cast("map<string,binary>"))
    return F.col({"leader-epoch": "leader_epoch"}.get(key, key))


def _decode(
    fmt: str,
    data: SparkColumn,
    names: Sequence[tuple[str, Column]],
    options: Mapping[str, str],
    spark: Any,
    table: TableDefinition,
) -> tuple[dict[str, SparkColumn], list[SparkColumn]]:
    """(output column name -> value, conditions a record must meet to be kept) for one format."""
    from pyspark.sql import functions as F

    from sqlext.sql.types import spark_type

    if fmt == cfo.AVRO_CONFLUENT:
        renamed = [replace(c, name=f) for f, c in names]
        registry = confluent.settings(str(table.identifier), fmt, options, renamed)
        record = confluent.decoded(spark, registry, data)
        zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
        return confluent.columns_of(record, names, zone), [data.isNotNull()]

    typed = [(field, column.name, spark_type(column.type)) for field, column in names]
    if fmt == "raw":
        [(_, name, kind)] = typed
        charset = options.get("charset", "UTF-8")
        return {name: data if kind == "binary" else F.decode(data, charset)}, []
    text = F.decode(data, "UTF-8")
    if fmt == "csv":
        form = CsvTextForm.from_options(options)
        fields, parsed = form.parse(text, [(name, kind) for _, name, kind in typed])
        values = {name: field for (_, name, _), field in zip(typed, fields, strict=True)}
        return values, [parsed | data.isNull()] if parsed is not None else []
    return _json(text, data, typed, options)


def _json(
    text: SparkColumn, data: SparkColumn, typed: Sequence[tuple[str, str, str]], options: Mapping[str, str]
) -> tuple[dict[str, SparkColumn], list[SparkColumn]]:
    from pyspark.sql import functions as F

    from sqlext.connectors.filesystem.source import reader_options

    spark_options = reader_options("json", options)
    spark_options.setdefault("timestampFormat", _JSON_SQL_TIMESTAMP)
    spark_options.setdefault("timestampNTZFormat", spark_options["timestampFormat"])
    ignore = spark_options.pop("mode", "FAILFAST") != "FAILFAST"
    fields = [f"`{field}` {kind}" for field, _, kind in typed]
    if ignore:
        fields.append(f"`{_CORRUPT}` string")
        spark_options["columnNameOfCorruptRecord"] = _CORRUPT
    spark_options["mode"] = "PERMISSIVE" if ignore else "FAILFAST"
    parsed = F.from_json(text, ", ".join(fields), spark_options)
    values = {name: parsed.getField(field) for field, name, _ in typed}
    return values, [parsed.getField(_CORRUPT).isNull() | data.isNull()] if ignore else []
