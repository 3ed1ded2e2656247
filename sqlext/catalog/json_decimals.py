"""DECIMALs in plain notation in the json sqlext writes: Flink's ``json.encode.decimal-as-plain-number``
(and ``<format>.encode.decimal-as-plain-number`` of debezium-json, canal-json and maxwell-json).

By default (``false``) Flink's json writes a decimal as Java's ``BigDecimal.toString`` (Jackson's
default), which is scientific below 1E-6: ``1.0E-7`` and ``0E-8`` for a ``DECIMAL(10, 8)``; Spark's json
writer writes the same text. ``true`` makes Flink write ``toPlainString`` (``0.00000010``, ``0.00000000``,
the declared scale kept). Spark's json writer has no such setting, so for a table that asks for it (and has
a DECIMAL, at any depth) sqlext writes each line with ``to_json``: every DECIMAL first becomes its plain
text (Spark's cast to STRING writes ``toPlainString``) between two copies of a marker drawn for the write,
and the quoted, marked strings are then unquoted in the line. A table without the option, or without a
DECIMAL, is written as before, at no cost.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sqlext.catalog.nested_types import holds
from sqlext.options import is_true

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

#: The option's key after the format's prefix (``json.``, ``debezium-json.``, ...).
PLAIN_KEY = "encode.decimal-as-plain-number"


def plain_decimals(format_options: Mapping[str, str]) -> bool:
    """Whether the table (``format_options``: its format's options, prefix stripped) asks for plain decimals."""
    return is_true(format_options, PLAIN_KEY)


def mark_decimals(rows: DataFrame, keys: Sequence[str] = ()) -> tuple[DataFrame, str | None]:
    """``rows`` with each DECIMAL of the data columns (at any depth but a map's key) as its plain text
    between two copies of a marker, and the marker; ``rows`` and None if no data column holds a DECIMAL."""
    marked = [f.name for f in rows.schema.fields if f.name not in keys and _holds_decimals(f.dataType)]
    if not marked:
        return rows, None
    marker = f"~{uuid.uuid4().hex}~"
    columns = [
        _marked(rows[f"`{f.name}`"], f.dataType, marker).alias(f.name) if f.name in marked else rows[f"`{f.name}`"]
        for f in rows.schema.fields
    ]
    return rows.select(*columns), marker


def unmarked(line: Column, marker: str | None) -> Column:
    """``line`` (json text of rows :func:`mark_decimals` marked with ``marker``) with each marked decimal
    written as a json number; ``line`` itself if nothing was marked."""
    from pyspark.sql import functions as F

    if marker is None:
        return line
    return F.regexp_replace(line, f'"{marker}(-?[0-9]+(?:\\.[0-9]+)?){marker}"', "$1")


def _holds_decimals(data_type: DataType) -> bool:
    from pyspark.sql.types import DecimalType

    return holds(data_type, lambda leaf: isinstance(leaf, DecimalType))


def _marked(column: Column, data_type: DataType, marker: str) -> Column:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, ArrayType):
        element = data_type.elementType
        return F.transform(column, lambda e: _marked(e, element, marker))
    if isinstance(data_type, MapType):
        value_type = data_type.valueType
        return F.transform_values(column, lambda _, v: _marked(v, value_type, marker))
    if isinstance(data_type, StructType):
        fields = [
            (_marked(column[f.name], f.dataType, marker) if _holds_decimals(f.dataType) else column[f.name]).alias(
                f.name
            )
            for f in data_type.fields
        ]
        return F.when(column.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    # A NULL decimal stays NULL (concat of a NULL is NULL), written as null or left out, as any NULL field.
    return F.concat(F.lit(marker), column.cast("string"), F.lit(marker))
