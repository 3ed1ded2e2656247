"""Flink SQL types and their Spark and Hive counterparts.

Types are kept in table definitions as canonical Flink text (``TIMESTAMP(3)``, ``ROW<a INT, b STRING>``)
and mapped when Spark or the HMS needs them. Mapping choices:

- ``TIMESTAMP(p)`` and ``TIMESTAMP_LTZ(p)`` both become Spark ``timestamp`` / Hive ``timestamp``: that is
  what the HMS and Hive's SerDes read; the precision is kept in the Flink definition.
- ``TIME(p)`` becomes ``string`` (neither Hive nor Spark 4's file formats store a time of day everywhere).
- ``CHAR(n)``/``VARCHAR(n)`` become ``string`` in Spark and the HMS.
- ``BYTES``/``BINARY(n)``/``VARBINARY(n)`` become ``binary``; ``ROW`` becomes ``struct``.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError

from sqlext.errors import ValidationError

T = exp.DType

SUPPORTED = (
    "CHAR(n), VARCHAR(n), STRING, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), "
    "DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), BYTES, BINARY(n), VARBINARY(n), ARRAY<T>, MAP<K, V>, "
    "ROW<name T, ...>"
)

_SIMPLE: dict[exp.DType, tuple[str, str]] = {
    # type -> (Flink name, Spark/Hive name)
    T.BOOLEAN: ("BOOLEAN", "boolean"),
    T.TINYINT: ("TINYINT", "tinyint"),
    T.SMALLINT: ("SMALLINT", "smallint"),
    T.INT: ("INT", "int"),
    T.BIGINT: ("BIGINT", "bigint"),
    T.FLOAT: ("FLOAT", "float"),
    T.DOUBLE: ("DOUBLE", "double"),
    T.DATE: ("DATE", "date"),
    T.TEXT: ("STRING", "string"),
}
_TEXTS = {T.CHAR: "CHAR", T.VARCHAR: "VARCHAR", T.NCHAR: "CHAR", T.NVARCHAR: "VARCHAR"}
_BINARIES = {T.BINARY: "BINARY", T.VARBINARY: "BYTES"}
_TIMESTAMPS = {
    T.TIMESTAMP: "TIMESTAMP",
    T.TIMESTAMPTZ: "TIMESTAMP",
    T.TIMESTAMPNTZ: "TIMESTAMP",
    T.TIMESTAMPLTZ: "TIMESTAMP_LTZ",
}


def parse_type(text: str) -> exp.DataType:
    """Parse a Flink type with sqlext's Flink dialect."""
    from sqlext.parser import Flink

    try:
        return exp.DataType.build(text, dialect=Flink)
    except (SqlglotParseError, ValueError) as exc:
        raise ValidationError(f"Unsupported type '{text}'. Supported types: {SUPPORTED}.", value=text) from exc


def _params(data_type: exp.DataType) -> list[str]:
    return [param.sql() for param in data_type.expressions if isinstance(param, exp.DataTypeParam)]


def _children(data_type: exp.DataType) -> list[exp.Expr]:
    return [e for e in data_type.expressions if not isinstance(e, exp.DataTypeParam)]


def flink_text(data_type: exp.DataType) -> str:
    """Canonical Flink text of a parsed type."""
    kind = data_type.this
    params = _params(data_type)
    if kind in _SIMPLE:
        return _SIMPLE[kind][0]
    if kind in _TEXTS:
        return f"{_TEXTS[kind]}({params[0]})" if params else _TEXTS[kind]
    if kind in _BINARIES:
        return f"BINARY({params[0]})" if params and kind == T.BINARY else "BYTES"
    if kind == T.DECIMAL:
        return f"DECIMAL({', '.join(params)})" if params else "DECIMAL(10, 0)"
    if kind in _TIMESTAMPS:
        return f"{_TIMESTAMPS[kind]}({params[0] if params else 6})"
    if kind == T.TIME:
        return f"TIME({params[0]})" if params else "TIME(0)"
    children = _children(data_type)
    if kind == T.ARRAY:
        return f"ARRAY<{flink_text(_as_type(children[0]))}>"
    if kind == T.MAP:
        return f"MAP<{flink_text(_as_type(children[0]))}, {flink_text(_as_type(children[1]))}>"
    if kind == T.STRUCT:
        fields = ", ".join(f"`{f.name}` {flink_text(_as_type(f.args['kind']))}" for f in children)
        return f"ROW<{fields}>"
    raise ValidationError(f"Unsupported type '{data_type.sql()}'. Supported types: {SUPPORTED}.")


def _as_type(node: exp.Expr) -> exp.DataType:
    if isinstance(node, exp.DataType):
        return node
    if isinstance(node, exp.ColumnDef) and isinstance(node.args.get("kind"), exp.DataType):
        return node.args["kind"]
    raise ValidationError(f"Unsupported type '{node.sql()}'. Supported types: {SUPPORTED}.")


def normalize(text: str) -> str:
    """Canonical Flink text of a Flink type given as text."""
    return flink_text(parse_type(text))


def _engine_type(data_type: exp.DataType, struct_separator: str) -> str:
    kind = data_type.this
    if kind in _SIMPLE:
        return _SIMPLE[kind][1]
    if kind in _TEXTS or kind == T.TIME:
        return "string"
    if kind in _BINARIES:
        return "binary"
    if kind == T.DECIMAL:
        params = _params(data_type) or ["10", "0"]
        return f"decimal({','.join(params)})"
    if kind in _TIMESTAMPS:
        return "timestamp"
    children = [_as_type(c) if not isinstance(c, exp.ColumnDef) else c for c in _children(data_type)]
    if kind == T.ARRAY:
        return f"array<{_engine_type(_as_type(children[0]), struct_separator)}>"
    if kind == T.MAP:
        key, value = (_engine_type(_as_type(c), struct_separator) for c in children[:2])
        return f"map<{key},{value}>"
    if kind == T.STRUCT:
        fields = ",".join(
            f"{c.name}{struct_separator}{_engine_type(_as_type(c.args['kind']), struct_separator)}" for c in children
        )
        return f"struct<{fields}>"
    raise ValidationError(f"Unsupported type '{data_type.sql()}'. Supported types: {SUPPORTED}.")


def spark_type(text: str) -> str:
    """The Spark SQL (DDL) type of a Flink type."""
    return _engine_type(parse_type(text), ":")


def hive_type(text: str) -> str:
    """The Hive (HMS) type of a Flink type."""
    return _engine_type(parse_type(text), ":")


_JSON_NAMES = {"bigint": "long", "int": "integer", "tinyint": "byte", "smallint": "short"}


def spark_json_type(text: str) -> Any:
    """A Flink type as Spark's JSON schema type (what Spark stores in ``spark.sql.sources.schema``)."""
    return _json_type(parse_type(text))


def _json_type(data_type: exp.DataType) -> Any:
    kind = data_type.this
    children = [_as_type(c) for c in _children(data_type) if not isinstance(c, exp.ColumnDef)]
    if kind == T.ARRAY:
        return {"type": "array", "elementType": _json_type(children[0]), "containsNull": True}
    if kind == T.MAP:
        return {
            "type": "map",
            "keyType": _json_type(children[0]),
            "valueType": _json_type(children[1]),
            "valueContainsNull": True,
        }
    if kind == T.STRUCT:
        fields = [
            {"name": f.name, "type": _json_type(_as_type(f.args["kind"])), "nullable": True, "metadata": {}}
            for f in _children(data_type)
            if isinstance(f, exp.ColumnDef)
        ]
        return {"type": "struct", "fields": fields}
    name = _engine_type(data_type, ":")
    return _JSON_NAMES.get(name, name)
