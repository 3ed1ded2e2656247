"""The descriptor each file format gets in the HMS: SerDe, input and output formats, SerDe parameters (what
every reader of a table's HMS descriptor reads its files through; the forms sqlext writes them in are
:mod:`sqlext.catalog.formats`'s)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlext.catalog.csv_text import HIVE_LTZ_TIMESTAMP_FORMATS, CsvTextForm

TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
#: The JSON SerDe Hive 3/4 (hive-hcatalog-core) and Trino both know; not shipped in pyspark's Hive 2.3 jars.
JSON_SERDE = "org.apache.hive.hcatalog.data.JsonSerDe"
#: The SerDes whose tables' columns Hive's client takes from the metastore instead of asking the SerDe class.
#: Spark's Hive 2.3 client loads the SerDe of every table it looks up unless it is listed here; for
#: :data:`JSON_SERDE`, absent from pyspark's jars, that logged a 140-frame ``ClassNotFoundException`` ERROR
#: per lookup (the table was then read through its provider parameters all the same).
SERDES_USING_METASTORE_FOR_SCHEMA = "hive.serdes.using.metastore.for.schema"
#: Hive 2.3's default of that list (``HiveConf.ConfVars.SERDESUSINGMETASTOREFORSCHEMA``).
HIVE_METASTORE_SCHEMA_SERDES = (
    "org.apache.hadoop.hive.ql.io.orc.OrcSerde,org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe,"
    "org.apache.hadoop.hive.serde2.columnar.ColumnarSerDe,org.apache.hadoop.hive.serde2.dynamic_type.DynamicSerDe,"
    "org.apache.hadoop.hive.serde2.MetadataTypedColumnsetSerDe,"
    "org.apache.hadoop.hive.serde2.columnar.LazyBinaryColumnarSerDe,"
    "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe,org.apache.hadoop.hive.serde2.lazybinary.LazyBinarySerDe"
)


def metastore_schema_serdes(configured: str | None) -> str:
    """The value of :data:`SERDES_USING_METASTORE_FOR_SCHEMA` for a session: the configured list (Hive's default
    when none is) with :data:`JSON_SERDE` added."""
    listed = [name.strip() for name in (configured or HIVE_METASTORE_SCHEMA_SERDES).split(",") if name.strip()]
    return ",".join(listed if JSON_SERDE in listed else [*listed, JSON_SERDE])


#: The ``timestamp.formats`` (Joda patterns) a json table's SerDe gets, by ``json.timestamp-format.standard``:
#: the JSON SerDes of Hive 3/4 and Trino read only ``yyyy-MM-dd HH:mm:ss[.f...]`` (and Trino a ``T``) unaided,
#: so a ``TIMESTAMP_LTZ``, written in UTC with a ``Z`` (Flink's form), needs them (Trino failed the whole
#: file on ``2000-02-29 12:00:00.000000Z`` without). Only forms with the ``Z``: a reader parses what these
#: match at milliseconds (Joda's), every other timestamp its own way, at full precision.
JSON_TIMESTAMP_FORMATS = {
    "SQL": HIVE_LTZ_TIMESTAMP_FORMATS,
    "ISO-8601": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSSZ,yyyy-MM-dd'T'HH:mm:ssZ",
}
AVRO_SERDE = "org.apache.hadoop.hive.serde2.avro.AvroSerDe"
AVRO_INPUT = "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat"
AVRO_OUTPUT = "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat"
#: A raw table's one column holds the whole line: no field delimiter splits it (Hive's
#: ``serialization.last.column.takes.rest``), no escape, and no text reads as NULL (a line never holds a line
#: feed); ``serialization.encoding`` is ``raw.charset``.
RAW_SERDE_PARAMETERS = {
    "serialization.format": "1",
    "serialization.last.column.takes.rest": "true",
    "serialization.null.format": "\n",
}


@dataclass(frozen=True)
class HiveStorage:
    """What the HMS gets for a format: SerDe, input and output formats, SerDe parameters."""

    serde: str
    input_format: str
    output_format: str
    parameters: dict[str, str]
    #: Column -> Hive type where the HMS column must differ from the Flink type's usual Hive type (avro: the
    #: types Hive's AvroSerDe reads the schema as, so every reader of the descriptor agrees with the files).
    column_types: dict[str, str] = field(default_factory=dict)


def hive_storage(
    fmt: str, format_options: Mapping[str, str], columns: Sequence[tuple[str, str, bool]] = ()
) -> HiveStorage:
    """The HMS descriptor of a filesystem table in ``fmt`` (``format_options``: its ``<fmt>.*`` options,
    prefix stripped; ``columns``: its data columns, (name, Flink type, nullable), which an avro table's schema
    literal is derived from)."""
    if fmt == "avro":
        return _avro_storage(format_options, columns)
    if fmt == "raw":
        charset = format_options.get("charset", "UTF-8")
        return HiveStorage(
            LAZY_SIMPLE_SERDE, TEXT_INPUT, TEXT_OUTPUT, {**RAW_SERDE_PARAMETERS, "serialization.encoding": charset}
        )
    if fmt == "parquet":
        return HiveStorage(
            "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
            "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            {},
        )
    if fmt == "orc":
        return HiveStorage(
            "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
            "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
            "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
            {},
        )
    if fmt == "json":
        standard = format_options.get("timestamp-format.standard", "SQL").strip().upper()
        formats = JSON_TIMESTAMP_FORMATS.get(standard, JSON_TIMESTAMP_FORMATS["SQL"])
        return HiveStorage(JSON_SERDE, TEXT_INPUT, TEXT_OUTPUT, {"timestamp.formats": formats})
    return HiveStorage(LAZY_SIMPLE_SERDE, TEXT_INPUT, TEXT_OUTPUT, CsvTextForm.from_options(format_options).serde())


def _avro_storage(format_options: Mapping[str, str], columns: Sequence[tuple[str, str, bool]]) -> HiveStorage:
    from sqlext.catalog import avro_schema

    legacy = format_options.get(avro_schema.LEGACY_KEY, "true").strip().lower() != "false"
    schema = avro_schema.avro_schema(columns, legacy)
    types = {f["name"]: avro_schema.hive_type(f["type"]) for f in schema["fields"]}
    literal = avro_schema.schema_literal(columns, legacy)
    return HiveStorage(AVRO_SERDE, AVRO_INPUT, AVRO_OUTPUT, {"avro.schema.literal": literal}, types)
