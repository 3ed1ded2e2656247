"""The Avro schema of an ``avro`` table, as Flink's ``AvroSchemaConverter`` derives it from the table's
columns (Flink 2.3, what its ``avro`` file format writes), and the types other engines read it as.

Flink's mapping: BOOLEAN ``boolean``; TINYINT, SMALLINT, INT ``int``; BIGINT ``long``; FLOAT ``float``; DOUBLE
``double``; CHAR, VARCHAR, STRING ``string``; BINARY, VARBINARY, BYTES ``bytes``; DECIMAL(p, s) ``bytes`` with the
``decimal`` logical type; DATE ``int`` ``date``; TIME(p <= 3) ``int`` ``time-millis``; ARRAY ``array``; MAP with
string keys ``map``; MULTISET ``map`` to ``int``; ROW a record named after its path (``record_<field>``). A
nullable type is the union ``["null", T]``, a nullable record field has the default ``null``. Timestamps
(``avro.timestamp_mapping.legacy``): with the legacy mapping (Flink's default) TIMESTAMP(p <= 3) is ``long``
``timestamp-millis`` and TIMESTAMP_LTZ has no mapping; without it TIMESTAMP(p <= 6) is ``local-timestamp-millis``
/ ``-micros`` and TIMESTAMP_LTZ(p <= 6) ``timestamp-millis`` / ``-micros``. Array elements and map values are
converted with the legacy mapping whatever the option says (as Flink's converter does). What Flink cannot
derive a schema for, :func:`check_columns` refuses with Flink's reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlext.errors import ValidationError
from sqlext.sql.types import FlinkType, flink_type

#: Flink's name of the top-level record (``AvroSchemaConverter``); nested records append ``_<field>``.
RECORD_NAME = "org.apache.flink.avro.generated.record"
#: The Flink option that picks the timestamp mapping, without the ``avro.`` prefix.
LEGACY_KEY = "timestamp_mapping.legacy"

_PRIMITIVES = {
    "BOOLEAN": "boolean",
    "TINYINT": "int",
    "SMALLINT": "int",
    "INT": "int",
    "BIGINT": "long",
    "FLOAT": "float",
    "DOUBLE": "double",
    "CHAR": "string",
    "VARCHAR": "string",
    "STRING": "string",
    "BINARY": "bytes",
    "VARBINARY": "bytes",
    "BYTES": "bytes",
}
_STRINGS = ("CHAR", "VARCHAR", "STRING")


class AvroTypeError(ValueError):
    """Flink cannot derive an Avro schema for a type; the message is Flink's."""


def avro_schema(
    columns: Sequence[tuple[str, str, bool]], legacy_timestamps: bool = True, name: str = RECORD_NAME
) -> dict[str, Any]:
    """The record schema of ``columns`` ((name, Flink type, nullable), the table's data columns in order), as
    JSON data; :class:`AvroTypeError` for a type Flink cannot map. ``name``: the record's full name (nested
    records append ``_<field>``)."""
    return _record(name, [(field, flink_type(text), nullable) for field, text, nullable in columns], legacy_timestamps)


def schema_literal(columns: Sequence[tuple[str, str, bool]], legacy_timestamps: bool = True) -> str:
    """:func:`avro_schema` as the text Hive's ``avro.schema.literal`` and Spark's ``avroSchema`` take."""
    return json.dumps(avro_schema(columns, legacy_timestamps), separators=(",", ":"))


def check_columns(columns: Sequence[tuple[str, str]], legacy_timestamps: bool = True) -> None:
    """Refuse a column whose type Flink's avro format cannot hold, with Flink's reason (``columns``: (name,
    Flink type)). sqlext keeps TIME as text, so a TIME inside an ARRAY, MAP or ROW is refused too (only a
    column of its own is converted to and from ``time-millis``)."""
    for name, text in columns:
        tree = flink_type(text)
        try:
            _type(tree, f"{RECORD_NAME}_{name}", legacy_timestamps)
        except AvroTypeError as exc:
            hint = (
                " Use TIMESTAMP(3), or set 'avro.timestamp_mapping.legacy' = 'false' (TIMESTAMP up to (6) as Avro's "
                "local-timestamp, TIMESTAMP_LTZ up to (6) as its timestamp)."
                if legacy_timestamps and tree.root in ("TIMESTAMP", "TIMESTAMP_LTZ")
                else ""
            )
            raise ValidationError(
                f"Column '{name}' has type {text}, which format 'avro' cannot hold (Flink: {exc}).{hint}", value=text
            ) from None
        if tree.root != "TIME" and _holds_time(tree):
            raise ValidationError(
                f"Column '{name}' has type {text}: sqlext writes a TIME to avro only as a column of its own "
                "(Avro's time-millis), not inside an ARRAY, MAP or ROW. Make it a column, or use STRING.",
                value=text,
            )


def _holds_time(tree: FlinkType) -> bool:
    return tree.root == "TIME" or any(_holds_time(child) for _, child in tree.children)


def _record(name: str, fields: Sequence[tuple[str, FlinkType, bool]], legacy: bool) -> dict[str, Any]:
    converted = []
    for field_name, tree, nullable in fields:
        avro = _type(tree, f"{name}_{field_name}", legacy)
        converted.append({"name": field_name, "type": _nullable(avro) if nullable else avro, **_default(nullable)})
    namespace, _, simple = name.rpartition(".")
    return {"type": "record", "name": simple, **({"namespace": namespace} if namespace else {}), "fields": converted}


def _default(nullable: bool) -> dict[str, Any]:
    return {"default": None} if nullable else {}


def _nullable(avro: Any) -> Any:
    return avro if isinstance(avro, list) and "null" in avro else ["null", avro]


def _type(tree: FlinkType, name: str, legacy: bool) -> Any:
    """The (non-null) Avro type of ``tree``; ``name``: the record name a ROW gets."""
    root = tree.root
    if root in _PRIMITIVES:
        return _PRIMITIVES[root]
    if root == "DECIMAL":
        precision, scale = tree.params
        return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    if root == "DATE":
        return {"type": "int", "logicalType": "date"}
    if root == "TIME":
        if tree.precision > 3:
            raise AvroTypeError(
                f"Avro does not support TIME type with precision: {tree.precision}, it only supports precision "
                "less than 3."
            )
        return {"type": "int", "logicalType": "time-millis"}
    if root == "TIMESTAMP":
        return {"type": "long", "logicalType": _timestamp(tree.precision, legacy, local=True)}
    if root == "TIMESTAMP_LTZ":
        if legacy:
            raise AvroTypeError(f"Unsupported to derive Schema for type: TIMESTAMP_LTZ({tree.precision}).")
        return {"type": "long", "logicalType": _timestamp(tree.precision, legacy, local=False)}
    if root == "ARRAY":
        return {"type": "array", "items": _nullable(_type(tree.children[0][1], name, True))}
    if root in ("MAP", "MULTISET"):
        key = tree.children[0][1]
        if key.root not in _STRINGS:
            raise AvroTypeError(
                f"Avro format doesn't support non-string as key type of map. The key type is: {key.root}"
            )
        value = _type(tree.children[1][1], name, True) if root == "MAP" else "int"
        return {"type": "map", "values": _nullable(value)}
    if root == "ROW":
        return _record(name, [(field, child, True) for field, child in tree.children], legacy)
    raise AvroTypeError(f"Unsupported to derive Schema for type: {root}.")


def _timestamp(precision: int, legacy: bool, local: bool) -> str:
    if legacy:
        if precision > 3:
            raise AvroTypeError(
                f"Avro does not support TIMESTAMP type with precision: {precision}, it only supports precision "
                "less than 3."
            )
        return "timestamp-millis"
    if precision > 6:
        kind = "LOCAL TIMESTAMP" if local else "TIMESTAMP"
        raise AvroTypeError(
            f"Avro does not support {kind} type with precision: {precision}, it only supports precision less than 6."
        )
    unit = "millis" if precision <= 3 else "micros"
    return f"local-timestamp-{unit}" if local else f"timestamp-{unit}"


def hive_type(avro: Any) -> str:
    """The Hive column type Hive's ``AvroSerDe`` reads an Avro type as (``SchemaToTypeInfo``: a union with
    null is its other type; logical types Hive does not know, such as ``time-millis`` and the local and micros
    timestamps, are their underlying type)."""
    return _engine_type(avro, quote=False, spark=False)


def spark_type(avro: Any) -> str:
    """The Spark type Spark's Avro reader reads an Avro type as (``SchemaConverters``)."""
    return _engine_type(avro, quote=True, spark=True)


_PLAIN = {"boolean": "boolean", "int": "int", "long": "bigint", "float": "float", "double": "double"}
_PLAIN.update({"string": "string", "bytes": "binary"})


def _engine_type(avro: Any, quote: bool, spark: bool) -> str:
    if isinstance(avro, list):
        return _engine_type(next(t for t in avro if t != "null"), quote, spark)
    if isinstance(avro, str):
        return _PLAIN[avro]
    logical = avro.get("logicalType")
    if logical == "decimal":
        return f"decimal({avro['precision']},{avro['scale']})"
    if logical == "date":
        return "date"
    if logical == "timestamp-millis" or (spark and logical == "timestamp-micros"):
        return "timestamp"
    if spark and logical in ("local-timestamp-millis", "local-timestamp-micros"):
        return "timestamp_ntz"
    kind = avro["type"]
    if kind == "array":
        return f"array<{_engine_type(avro['items'], quote, spark)}>"
    if kind == "map":
        return f"map<string,{_engine_type(avro['values'], quote, spark)}>"
    if kind == "record":
        fields = ",".join(
            f"{_quoted(f['name']) if quote else f['name']}:{_engine_type(f['type'], quote, spark)}"
            for f in avro["fields"]
        )
        return f"struct<{fields}>"
    return _PLAIN[kind]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
