"""Result sets as HiveServer2 sends them: a typed schema and column-oriented row batches.

Each column travels in the ``TColumn`` field of its type (``i64Val`` for BIGINT, ``stringVal`` for
STRING, ...) with a null bitmap (bit ``i`` of byte ``i // 8`` set when row ``i`` is NULL, as Hive
writes it). Values whose Python form is not what the protocol carries are turned into text by Spark
before they are collected, the way Spark's own Thrift server shows them: timestamps and dates in the
session time zone, decimals with their scale, floats as their shortest decimal form, arrays, maps and
structs as JSON. Anything the protocol has no type for goes as a STRING.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from TCLIService import ttypes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

    from sqlext.frames import StatementResult

T = ttypes.TTypeId
#: Rows per fetch when a client asks for none or fewer than one.
DEFAULT_FETCH_ROWS = 1000


@dataclass(frozen=True)
class ColumnKind:
    """Which ``TColumn`` field carries a type, its value class, and what stands in for NULL."""

    field: str
    column_class: type
    empty: Any
    convert: Callable[[Any], Any]


BOOLEAN = ColumnKind("boolVal", ttypes.TBoolColumn, False, bool)
BYTE = ColumnKind("byteVal", ttypes.TByteColumn, 0, int)
I16 = ColumnKind("i16Val", ttypes.TI16Column, 0, int)
I32 = ColumnKind("i32Val", ttypes.TI32Column, 0, int)
I64 = ColumnKind("i64Val", ttypes.TI64Column, 0, int)
DOUBLE = ColumnKind("doubleVal", ttypes.TDoubleColumn, 0.0, float)
STRING = ColumnKind("stringVal", ttypes.TStringColumn, "", str)
BINARY = ColumnKind("binaryVal", ttypes.TBinaryColumn, b"", bytes)

_KINDS: dict[int, ColumnKind] = {
    T.BOOLEAN_TYPE: BOOLEAN,
    T.TINYINT_TYPE: BYTE,
    T.SMALLINT_TYPE: I16,
    T.INT_TYPE: I32,
    T.BIGINT_TYPE: I64,
    T.FLOAT_TYPE: DOUBLE,
    T.DOUBLE_TYPE: DOUBLE,
    T.BINARY_TYPE: BINARY,
}

#: HiveServer2 type of each Spark type, by the name its ``simpleString`` starts with.
TYPE_IDS: dict[str, int] = {
    "boolean": T.BOOLEAN_TYPE,
    "tinyint": T.TINYINT_TYPE,
    "smallint": T.SMALLINT_TYPE,
    "int": T.INT_TYPE,
    "bigint": T.BIGINT_TYPE,
    "float": T.FLOAT_TYPE,
    "double": T.DOUBLE_TYPE,
    "string": T.STRING_TYPE,
    "char": T.STRING_TYPE,
    "varchar": T.STRING_TYPE,
    "binary": T.BINARY_TYPE,
    "date": T.DATE_TYPE,
    "timestamp": T.TIMESTAMP_TYPE,
    "timestamp_ntz": T.TIMESTAMP_TYPE,
    "decimal": T.DECIMAL_TYPE,
    "array": T.ARRAY_TYPE,
    "map": T.MAP_TYPE,
    "struct": T.STRUCT_TYPE,
    "void": T.NULL_TYPE,
}
#: Spark types collected as they are: their Python values are what the protocol carries.
_COLLECTED_AS_IS = {"boolean", "tinyint", "smallint", "int", "bigint", "double", "string", "char", "varchar", "binary"}
_AS_JSON = {"array", "map", "struct"}
_TYPE_NAME = re.compile(r"[a-z_]+")
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def base_type_name(simple_string: str) -> str:
    """``decimal(10,2)`` -> ``decimal``, ``array<int>`` -> ``array``."""
    match = _TYPE_NAME.match(simple_string.lower())
    return match.group(0) if match else simple_string


@dataclass(frozen=True)
class ResultColumn:
    """One column of a result: its name, HiveServer2 type, and a decimal's precision and scale."""

    name: str
    type_id: int
    precision: int | None = None
    scale: int | None = None
    comment: str | None = None

    @classmethod
    def of_spark_type(cls, name: str, simple_string: str, comment: str | None = None) -> ResultColumn:
        """The column for a Spark type given by its ``simpleString`` (``bigint``, ``decimal(10,2)``)."""
        decimal = _DECIMAL.fullmatch(simple_string.replace(" ", ""))
        type_id = TYPE_IDS.get(base_type_name(simple_string), T.STRING_TYPE)
        if decimal:
            return cls(name, type_id, int(decimal.group(1)), int(decimal.group(2)), comment)
        return cls(name, type_id, comment=comment)

    @property
    def kind(self) -> ColumnKind:
        return _KINDS.get(self.type_id, STRING)

    def descriptor(self, position: int) -> ttypes.TColumnDesc:
        qualifiers = None
        if self.precision is not None:
            qualifiers = ttypes.TTypeQualifiers(
                qualifiers={
                    "precision": ttypes.TTypeQualifierValue(i32Value=self.precision),
                    "scale": ttypes.TTypeQualifierValue(i32Value=self.scale or 0),
                }
            )
        entry = ttypes.TTypeEntry(
            primitiveEntry=ttypes.TPrimitiveTypeEntry(type=self.type_id, typeQualifiers=qualifiers)
        )
        return ttypes.TColumnDesc(
            columnName=self.name, typeDesc=ttypes.TTypeDesc(types=[entry]), position=position, comment=self.comment
        )


def null_bitmap(values: Sequence[Any]) -> bytes:
    """Bit ``i`` set when ``values[i]`` is None (trailing zero bytes left out, as Java's BitSet does)."""
    bits = bytearray((len(values) + 7) // 8)
    for index, value in enumerate(values):
        if value is None:
            bits[index >> 3] |= 1 << (index & 7)
    return bytes(bits).rstrip(b"\0")


def to_column(kind: ColumnKind, values: Sequence[Any]) -> ttypes.TColumn:
    """One column of a row batch."""
    payload = [kind.empty if value is None else kind.convert(value) for value in values]
    return ttypes.TColumn(**{kind.field: kind.column_class(values=payload, nulls=null_bitmap(values))})


class ResultSet:
    """The rows of one operation, read in batches from a cursor that ``FETCH_FIRST`` rewinds."""

    def __init__(self, columns: Sequence[ResultColumn], rows: Sequence[Sequence[Any]]) -> None:
        # A result without columns (DDL, USE) goes as Spark's Thrift server sends it: one STRING column
        # "Result" and no rows, so that clients that read the schema always find one.
        self.columns = list(columns) or [ResultColumn("Result", T.STRING_TYPE)]
        self.rows = list(rows)
        self.position = 0

    @classmethod
    def of_frame(cls, frame: DataFrame) -> ResultSet:
        """Run a DataFrame and keep its rows (Spark's Thrift server collects the same way by default)."""
        fields = frame.schema.fields
        columns = [ResultColumn.of_spark_type(f.name, f.dataType.simpleString()) for f in fields]
        rows = _as_sent(frame).collect()
        return cls(columns, [tuple(row) for row in rows])

    @classmethod
    def of_result(cls, result: StatementResult) -> ResultSet:
        """A sqlext statement's rows as they are (no Spark job)."""
        return cls([ResultColumn.of_spark_type(name, kind) for name, kind in result.fields], result.rows)

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]

    def schema(self) -> ttypes.TTableSchema:
        return ttypes.TTableSchema(columns=[c.descriptor(i) for i, c in enumerate(self.columns, start=1)])

    def fetch(self, max_rows: int, from_start: bool = False) -> ttypes.TRowSet:
        """The next ``max_rows`` rows (from the first row again when ``from_start``)."""
        if from_start:
            self.position = 0
        start = self.position
        batch = self.rows[start : start + (max_rows if max_rows > 0 else DEFAULT_FETCH_ROWS)]
        self.position = start + len(batch)
        columns = [to_column(c.kind, [row[i] for row in batch]) for i, c in enumerate(self.columns)]
        return ttypes.TRowSet(startRowOffset=start, rows=[], columns=columns)

    @property
    def has_more_rows(self) -> bool:
        return self.position < len(self.rows)


def _as_sent(frame: DataFrame) -> DataFrame:
    """The frame with every column the protocol carries as text turned into text by Spark."""
    from pyspark.sql import functions as F

    types = [field.dataType for field in frame.schema.fields]
    positional = frame.toDF(*(f"c{index}" for index in range(len(types))))  # names may repeat
    return positional.select(*(_sent_value(F.col(f"c{i}"), t).alias(f"c{i}") for i, t in enumerate(types)))


def _sent_value(column: Any, data_type: DataType) -> Any:
    from pyspark.sql import functions as F

    name = base_type_name(data_type.simpleString())
    if name in _COLLECTED_AS_IS:
        return column
    if name in _AS_JSON:
        return F.to_json(column)
    return column.cast("string")
