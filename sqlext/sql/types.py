"""Flink SQL types and their Spark and Hive counterparts.

Types are kept in table definitions as canonical Flink text (``TIMESTAMP(3)``, ``ROW<`a` INT, `b` STRING>``)
and mapped when Spark or the HMS needs them. Mapping choices:

- ``TIMESTAMP(p)`` (``WITHOUT TIME ZONE``) and ``TIMESTAMP_LTZ(p)`` (``WITH LOCAL TIME ZONE``) both become
  Spark ``timestamp`` / Hive ``timestamp``: Spark's ``timestamp_ntz`` is unknown to Hive 2.3's SerDes and the
  HMS, and every reader of the table must read it. The precision stays in the Flink definition.
  ``TIMESTAMP WITH TIME ZONE`` is not supported, as in Flink.
- ``TIME(p)`` becomes ``string`` (neither Hive nor Spark's file formats store a time of day everywhere).
- ``CHAR(n)``/``VARCHAR(n)``/``STRING`` become ``string`` in Spark and the HMS (Spark reads Hive ``char``
  padded and ``varchar`` checked; Flink's sink writes plain strings).
- ``BYTES``/``BINARY(n)``/``VARBINARY(n)`` become ``binary``; ``ROW`` becomes ``struct``.
- ``MULTISET<T>`` becomes ``map<T, int>`` (element -> count), as Flink's Hive connector stores it.

Canonical text follows Flink's defaults: ``CHAR`` is ``CHAR(1)``, ``DECIMAL`` is ``DECIMAL(10, 0)``,
``TIMESTAMP`` is ``TIMESTAMP(6)``, ``TIME`` is ``TIME(0)``; ``INTEGER`` reads as ``INT``.
Nullability (``NOT NULL``) belongs to the column, not to the type text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError

from sqlext.errors import ValidationError
from sqlext.sql.dialect import Flink

T = exp.DType

SUPPORTED = (
    "CHAR(n), VARCHAR(n), STRING, BOOLEAN, TINYINT, SMALLINT, INT/INTEGER, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), "
    "DATE, TIME(p), TIMESTAMP(p) [WITHOUT TIME ZONE], TIMESTAMP_LTZ(p) / TIMESTAMP(p) WITH LOCAL TIME ZONE, "
    "BYTES, BINARY(n), VARBINARY(n), ARRAY<T>, MAP<K, V>, MULTISET<T>, ROW<name T, ...> / ROW(name T, ...)"
)

#: type -> (Flink name, Spark/Hive name) of the types without parameters
_SIMPLE: dict[exp.DType, tuple[str, str]] = {
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
#: length types -> Flink name; a missing length is Flink's default of 1
_SIZED = {T.CHAR: "CHAR", T.NCHAR: "CHAR", T.VARCHAR: "VARCHAR", T.NVARCHAR: "VARCHAR", T.BINARY: "BINARY"}
_TIMESTAMPS = {T.TIMESTAMP: "TIMESTAMP", T.TIMESTAMPNTZ: "TIMESTAMP", T.TIMESTAMPLTZ: "TIMESTAMP_LTZ"}
#: sqlext's Flink dialect reads ``MULTISET<T>`` as sqlglot's LIST type (Flink has no LIST)
MULTISET = T.LIST


def unsupported(type_: str | exp.DataType) -> ValidationError:
    """The error for a type sqlext cannot map, naming it as the user wrote it where possible."""
    text = type_ if isinstance(type_, str) else _display(type_)
    return ValidationError(f"Unsupported type '{text}'. Supported types: {SUPPORTED}.", value=text)


def _display(data_type: exp.DataType) -> str:
    if data_type.this == T.TIMESTAMPTZ:
        params = _params(data_type)
        return f"TIMESTAMP{f'({params[0]})' if params else ''} WITH TIME ZONE"
    return data_type.sql(dialect="spark")


def parse_type(text: str) -> exp.DataType:
    """Parse a Flink type with sqlext's Flink dialect."""
    try:
        return exp.DataType.build(text, dialect=Flink)
    except (SqlglotParseError, ValueError) as exc:
        raise unsupported(text) from exc


def _params(data_type: exp.DataType) -> list[str]:
    return [param.sql() for param in data_type.expressions if isinstance(param, exp.DataTypeParam)]


def _as_type(node: exp.Expr) -> exp.DataType:
    if isinstance(node, exp.DataType):
        return node
    if isinstance(node, exp.ColumnDef) and isinstance(node.args.get("kind"), exp.DataType):
        return node.args["kind"]
    raise unsupported(node.sql(dialect="spark"))


def _element_types(data_type: exp.DataType) -> list[exp.DataType]:
    """Element types of ARRAY, MAP and MULTISET."""
    return [_as_type(e) for e in data_type.expressions if not isinstance(e, exp.DataTypeParam)]


def _fields(data_type: exp.DataType) -> list[tuple[str, exp.DataType]]:
    """(name, type) of each ROW field."""
    return [(f.name, _as_type(f)) for f in data_type.expressions if isinstance(f, exp.ColumnDef)]


def _decimal_params(data_type: exp.DataType) -> tuple[str, str]:
    params = _params(data_type)
    return (params[0] if params else "10", params[1] if len(params) > 1 else "0")


def flink_text(data_type: exp.DataType) -> str:
    """Canonical Flink text of a parsed type."""
    kind = data_type.this
    params = _params(data_type)
    if kind in _SIMPLE:
        return _SIMPLE[kind][0]
    if kind in _SIZED:
        return f"{_SIZED[kind]}({params[0] if params else 1})"
    if kind == T.VARBINARY:
        return f"VARBINARY({params[0]})" if params else "BYTES"
    if kind == T.DECIMAL:
        return "DECIMAL({}, {})".format(*_decimal_params(data_type))
    if kind in _TIMESTAMPS:
        return f"{_TIMESTAMPS[kind]}({params[0] if params else 6})"
    if kind == T.TIME:
        return f"TIME({params[0] if params else 0})"
    if kind == T.ARRAY:
        return f"ARRAY<{flink_text(_element_types(data_type)[0])}>"
    if kind == MULTISET:
        return f"MULTISET<{flink_text(_element_types(data_type)[0])}>"
    if kind == T.MAP:
        key, value = _element_types(data_type)[:2]
        return f"MAP<{flink_text(key)}, {flink_text(value)}>"
    if kind == T.STRUCT:
        return "ROW<" + ", ".join(f"`{name}` {flink_text(t)}" for name, t in _fields(data_type)) + ">"
    raise unsupported(data_type)


def normalize(text: str) -> str:
    """Canonical Flink text of a type given as text: ``integer`` -> ``INT``, ``DECIMAL`` -> ``DECIMAL(10, 0)``."""
    return flink_text(parse_type(text))


def _field_name(name: str, quote: bool) -> str:
    if quote and not (name.replace("_", "a").isalnum() and not name[0].isdigit()):
        return "`" + name.replace("`", "``") + "`"
    return name


def _engine_type(data_type: exp.DataType, quote_fields: bool) -> str:
    """Spark's (``quote_fields``) or Hive's type text; both spell the types alike."""
    kind = data_type.this
    if kind in _SIMPLE:
        return _SIMPLE[kind][1]
    if kind in (T.BINARY, T.VARBINARY):
        return "binary"
    if kind in _SIZED or kind == T.TIME:
        return "string"
    if kind == T.DECIMAL:
        return "decimal({},{})".format(*_decimal_params(data_type))
    if kind in _TIMESTAMPS:
        return "timestamp"
    if kind == T.ARRAY:
        return f"array<{_engine_type(_element_types(data_type)[0], quote_fields)}>"
    if kind == MULTISET:
        return f"map<{_engine_type(_element_types(data_type)[0], quote_fields)},int>"
    if kind == T.MAP:
        key, value = (_engine_type(t, quote_fields) for t in _element_types(data_type)[:2])
        return f"map<{key},{value}>"
    if kind == T.STRUCT:
        fields = (f"{_field_name(n, quote_fields)}:{_engine_type(t, quote_fields)}" for n, t in _fields(data_type))
        return f"struct<{','.join(fields)}>"
    raise unsupported(data_type)


def spark_type(text: str) -> str:
    """The Spark SQL (DDL) type of a Flink type, e.g. ``struct<a:int,b:string>``."""
    return _engine_type(parse_type(text), quote_fields=True)


def hive_type(text: str) -> str:
    """The Hive (HMS column) type of a Flink type, e.g. ``struct<a:int,b:string>``."""
    return _engine_type(parse_type(text), quote_fields=False)


_JSON_NAMES = {"bigint": "long", "int": "integer", "tinyint": "byte", "smallint": "short"}


def spark_json_type(text: str) -> Any:
    """A Flink type as Spark's JSON schema type (what Spark stores in ``spark.sql.sources.schema``)."""
    return _json_type(parse_type(text))


def _json_type(data_type: exp.DataType) -> Any:
    kind = data_type.this
    if kind == T.ARRAY:
        return {"type": "array", "elementType": _json_type(_element_types(data_type)[0]), "containsNull": True}
    if kind in (T.MAP, MULTISET):
        elements = _element_types(data_type)
        value = _json_type(elements[1]) if kind == T.MAP else "integer"
        return {"type": "map", "keyType": _json_type(elements[0]), "valueType": value, "valueContainsNull": True}
    if kind == T.STRUCT:
        fields = [
            {"name": name, "type": _json_type(t), "nullable": True, "metadata": {}} for name, t in _fields(data_type)
        ]
        return {"type": "struct", "fields": fields}
    name = _engine_type(data_type, quote_fields=False)
    return _JSON_NAMES.get(name, name)


@dataclass(frozen=True)
class FlinkType:
    """A Flink type as a tree, for code that maps types to another type system (an Avro schema): ``root`` is
    the canonical name without parameters (``INT``, ``DECIMAL``, ``TIMESTAMP_LTZ``, ``VARBINARY``, ``ROW``, ...),
    ``params`` its numbers (precision, scale, length), ``children`` the element types (ARRAY, MULTISET: one;
    MAP: key and value; ROW: its fields), each with its field name (``""`` but in a ROW)."""

    root: str
    params: tuple[int, ...] = ()
    children: tuple[tuple[str, FlinkType], ...] = ()

    @property
    def precision(self) -> int:
        return self.params[0]


def flink_type(text: str) -> FlinkType:
    """The tree of a Flink type given as text (see :class:`FlinkType`)."""
    return _tree(parse_type(text))


def _tree(data_type: exp.DataType) -> FlinkType:
    canonical = flink_text(data_type)
    root = canonical.split("(", 1)[0].split("<", 1)[0]
    kind = data_type.this
    if kind in (T.ARRAY, MULTISET, T.MAP):
        return FlinkType(
            root, (), tuple(("", _tree(t)) for t in _element_types(data_type)[: 2 if kind == T.MAP else 1])
        )
    if kind == T.STRUCT:
        return FlinkType(root, (), tuple((name, _tree(t)) for name, t in _fields(data_type)))
    numbers = canonical[len(root) :].strip("()")
    return FlinkType(root, tuple(int(n) for n in numbers.split(",")) if numbers else ())
