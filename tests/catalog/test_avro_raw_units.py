"""The avro and raw formats without Spark: Flink's Avro schema of a table, the HMS descriptors, the option
checks, and the record count of an Avro container file."""

from __future__ import annotations

import io
import json

import pytest

from sqlext.catalog.avro_schema import avro_schema, check_columns, hive_type, schema_literal
from sqlext.catalog.format_options import check_format_options
from sqlext.catalog.formats import check_columns as check_format_columns
from sqlext.catalog.hive_storage import AVRO_SERDE, hive_storage
from sqlext.connectors.filesystem.files import count_avro_records
from sqlext.errors import OptionError, ValidationError


def _field(schema: dict, name: str) -> dict:
    return next(f for f in schema["fields"] if f["name"] == name)


def test_flink_type_mapping_with_nullable_unions_and_a_legacy_timestamp() -> None:
    schema = avro_schema(
        [
            ("id", "INT", False),
            ("d", "DECIMAL(10, 2)", True),
            ("ts", "TIMESTAMP(3)", True),
            ("t", "TIME(0)", True),
            ("day", "DATE", True),
            ("b", "BYTES", True),
            ("small", "TINYINT", True),
            ("r", "ROW<`a` INT, `s` STRING>", True),
            ("m", "MAP<STRING, BIGINT>", True),
            ("tags", "MULTISET<STRING>", True),
        ]
    )
    assert (schema["name"], schema["namespace"]) == ("record", "org.apache.flink.avro.generated")
    assert _field(schema, "id") == {"name": "id", "type": "int"}  # NOT NULL: no union, no default
    assert _field(schema, "d")["type"] == [
        "null",
        {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
    ]
    assert _field(schema, "d")["default"] is None
    assert _field(schema, "ts")["type"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]
    assert _field(schema, "t")["type"] == ["null", {"type": "int", "logicalType": "time-millis"}]
    assert _field(schema, "day")["type"] == ["null", {"type": "int", "logicalType": "date"}]
    assert _field(schema, "b")["type"] == ["null", "bytes"]
    assert _field(schema, "small")["type"] == ["null", "int"]
    row = _field(schema, "r")["type"][1]
    assert row["name"] == "record_r" and [f["name"] for f in row["fields"]] == ["a", "s"]
    assert _field(schema, "m")["type"] == ["null", {"type": "map", "values": ["null", "long"]}]
    assert _field(schema, "tags")["type"] == ["null", {"type": "map", "values": ["null", "int"]}]


def test_without_the_legacy_mapping_timestamps_are_local_and_ltz_is_an_instant() -> None:
    schema = avro_schema([("a", "TIMESTAMP(6)", True), ("b", "TIMESTAMP_LTZ(3)", True)], legacy_timestamps=False)
    assert _field(schema, "a")["type"][1] == {"type": "long", "logicalType": "local-timestamp-micros"}
    assert _field(schema, "b")["type"][1] == {"type": "long", "logicalType": "timestamp-millis"}


@pytest.mark.parametrize(
    ("type_", "legacy", "reason"),
    [
        ("TIMESTAMP(6)", True, "Avro does not support TIMESTAMP type with precision: 6"),
        ("TIMESTAMP_LTZ(3)", True, "Unsupported to derive Schema for type: TIMESTAMP_LTZ(3)"),
        ("TIMESTAMP(9)", False, "Avro does not support LOCAL TIMESTAMP type with precision: 9"),
        ("TIME(6)", True, "Avro does not support TIME type with precision: 6"),
        ("MAP<INT, STRING>", True, "doesn't support non-string as key type of map"),
        ("ARRAY<TIME(0)>", True, "a TIME to avro only as a column of its own"),
    ],
)
def test_types_flink_cannot_write_to_avro_are_refused_with_flinks_reason(type_: str, legacy: bool, reason: str) -> None:
    with pytest.raises(ValidationError, match="Column 'c' has type") as failure:
        check_columns([("c", type_)], legacy)
    assert reason in failure.value.message


def test_the_hms_descriptor_carries_the_avro_serde_with_the_schema_and_its_hive_types() -> None:
    columns = [("id", "INT", True), ("t", "TIME(0)", True), ("ts", "TIMESTAMP(3)", True), ("x", "SMALLINT", True)]
    storage = hive_storage("avro", {}, columns)
    assert storage.serde == AVRO_SERDE
    assert storage.input_format.endswith("AvroContainerInputFormat")
    assert storage.output_format.endswith("AvroContainerOutputFormat")
    assert json.loads(storage.parameters["avro.schema.literal"]) == avro_schema(columns)
    assert storage.parameters["avro.schema.literal"] == schema_literal(columns)
    assert storage.column_types == {"id": "int", "t": "int", "ts": "timestamp", "x": "int"}
    assert hive_type({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10}) == "decimal(38,10)"


def test_the_raw_descriptor_reads_the_whole_line_as_the_one_column() -> None:
    storage = hive_storage("raw", {"charset": "ISO-8859-1"})
    assert storage.serde.endswith("LazySimpleSerDe")
    assert storage.parameters["serialization.last.column.takes.rest"] == "true"
    assert storage.parameters["serialization.encoding"] == "ISO-8859-1"


@pytest.mark.parametrize(
    ("fmt", "options", "message"),
    [
        ("avro", {"codec": "lz4"}, "Unsupported value 'lz4' for option 'avro.codec'. Supported values are null, "),
        ("avro", {"codec": "deflate-5"}, "spark.sql.avro.deflate.level"),
        ("avro", {"timestamp_mapping.legacy": "yes"}, "Invalid value for option 'avro.timestamp_mapping.legacy'"),
        ("raw", {"charset": "EBCDIC"}, "Unsupported 'EBCDIC' charset for option 'raw.charset'"),
        ("raw", {"endianness": "middle"}, "Supported values are big-endian, little-endian."),
    ],
)
def test_avro_and_raw_options_are_checked_as_flink_checks_them(fmt: str, options: dict, message: str) -> None:
    with pytest.raises(OptionError) as failure:
        check_format_options(fmt, options)
    assert message in failure.value.message


def test_good_avro_and_raw_options_pass() -> None:
    check_format_options("avro", {"codec": "zstandard", "timestamp_mapping.legacy": "FALSE"})
    check_format_options("raw", {"charset": "utf-16le", "endianness": "little-endian"})


@pytest.mark.parametrize(
    "columns", [[("a", "INT")], [("a", "STRING"), ("b", "STRING")], []], ids=["int", "two", "none"]
)
def test_raw_holds_one_string_or_bytes_column(columns: list) -> None:
    with pytest.raises(ValidationError, match="The 'raw' format holds exactly one data column"):
        check_format_columns("raw", columns)
    check_format_columns("raw", [("line", "VARBINARY(10)")])


def _long(value: int) -> bytes:
    zigzag, out = (value << 1) ^ (value >> 63), b""
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if not zigzag:
            return out + bytes([byte])
        out += bytes([byte | 0x80])


def _container(blocks: list[int], metadata_in_sized_block: bool = False) -> bytes:
    """A minimal Avro object container file: header (magic, metadata map, sync) and ``blocks`` (their record
    counts, with made-up data: the count never decodes it)."""
    sync = bytes(range(16))
    schema = b'{"type":"record","name":"r","fields":[]}'
    entries = [(b"avro.schema", schema), (b"avro.codec", b"null")]
    body = b"".join(_long(len(k)) + k + _long(len(v)) + v for k, v in entries)
    header = (_long(-len(entries)) + _long(len(body))) if metadata_in_sized_block else _long(len(entries))
    data = b"Obj\x01" + header + body + _long(0) + sync
    for count in blocks:
        payload = bytes([7]) * (count * 3)
        data += _long(count) + _long(len(payload)) + payload + sync
    return data


@pytest.mark.parametrize("sized", [False, True])
def test_avro_records_are_counted_from_the_block_headers(sized: bool) -> None:
    assert count_avro_records(io.BytesIO(_container([2, 300, 1], sized))) == 303
    assert count_avro_records(io.BytesIO(_container([]))) == 0


def test_a_file_that_is_no_avro_container_is_not_counted() -> None:
    with pytest.raises(OSError, match="not an Avro object container file"):
        count_avro_records(io.BytesIO(b"PAR1...."))
