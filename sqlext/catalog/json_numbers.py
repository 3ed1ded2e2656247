"""NaN, Infinity and -Infinity in the json files sqlext writes: ``json.encode.non-finite-number.mode``.

json has no number for them. Flink 2.3's json writer (and Spark's) writes the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``, which Spark and Flink read back (Hive 4's JSON SerDe too, by its
source); a Trino 476 query of such a column and pyarrow's json reader fail on the whole file that holds
one (every row of it unreadable there), and so does Hive 3's hcatalog JSON SerDe by its source
(``getDoubleValue`` on a string). By default (``STRING``) sqlext writes Flink's strings, as Flink does and as
sqlext did before the option (a running job keeps working after an upgrade, and its rows cost no check);
``NULL`` writes ``null`` (which every reader reads, the value lost; a NOT NULL column's own value fails
the write instead, saying why); ``FAIL`` fails a write holding one,
naming table, column and value. A DOUBLE or FLOAT inside an ARRAY, a MAP's value or a ROW is treated alike.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from sqlext.catalog.nested_types import holds
from sqlext.options import ConfigOption, enum_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

#: The option's key after the format's prefix ``json.``.
NON_FINITE_KEY = "encode.non-finite-number.mode"
FAIL, STRING, NULL = "FAIL", "STRING", "NULL"
#: The values of ``json.encode.non-finite-number.mode``, in any case (as Flink's ``map-null-key.mode``).
NON_FINITE_MODES = (FAIL, STRING, NULL)
#: Not a mode: ``NULL`` for a NOT NULL column's own value, which fails as ``FAIL`` does, saying why.
FAIL_NOT_NULL = "FAIL_NOT_NULL"

NON_FINITE_OPTION = ConfigOption(
    f"json.{NON_FINITE_KEY}",
    enum_type(*NON_FINITE_MODES),
    STRING,
    "sqlext: what the writer does with a DOUBLE or FLOAT NaN, Infinity or -Infinity (json has no number for "
    'them): STRING writes "NaN", "Infinity", "-Infinity" (Flink\'s json form: Spark and Flink read it; '
    "Trino and pyarrow fail on the whole file); NULL writes null (every reader reads it; the value is lost; "
    "in a NOT NULL column the write fails instead); "
    "FAIL fails the write naming table, column and value.",
)


def non_finite_mode(format_options: Mapping[str, str], prefix: str = "") -> str:
    """The table's mode (``format_options``: the json options, ``json.`` stripped), checked: an unknown
    value raises :class:`sqlext.errors.OptionError` naming the option, the value and the modes."""
    raw = format_options.get(NON_FINITE_KEY)
    return STRING if raw is None else NON_FINITE_OPTION.parse(raw, key=f"{prefix}{NON_FINITE_OPTION.key}")


def guard_non_finite(
    rows: DataFrame, mode: str, table: str, keys: Sequence[str] = (), not_null: Collection[str] = ()
) -> DataFrame:
    """``rows`` with each non-finite DOUBLE/FLOAT (in the data columns, at any depth) failing the write
    (``FAIL``, the message naming ``table``, the column and the value) or written as ``null`` (``NULL``);
    ``STRING``: ``rows`` as they are (Spark's json writer writes Flink's strings).

    ``not_null``: the columns declared ``NOT NULL``. ``NULL`` cannot write null there, so such a column's
    own value fails the write as in ``FAIL``, saying why (the table stays declarable: its other columns
    get null, and Flink's sink fails the same way at the row, by ``table.exec.sink.not-null-enforcer``'s
    default ``ERROR``, when a null reaches a NOT NULL column)."""
    if mode == STRING:  # the default: no look at the schema on a json write's path
        return rows
    guarded = [f.name for f in rows.schema.fields if f.name not in keys and _holds_floats(f.dataType)]
    if not guarded:
        return rows
    columns = []
    for field in rows.schema.fields:
        column = rows[f"`{field.name}`"]
        if field.name in guarded:
            # Only the column's own value: an element or field inside it may be null.
            nulled_itself = mode == NULL and field.name in not_null and _is_float(field.dataType)
            own = FAIL_NOT_NULL if nulled_itself else mode
            column = _guarded(column, field.dataType, field.name, field.name, own, table).alias(field.name)
        columns.append(column)
    return rows.select(*columns)


def _is_float(data_type: DataType) -> bool:
    from pyspark.sql.types import DoubleType, FloatType

    return isinstance(data_type, DoubleType | FloatType)


def _holds_floats(data_type: DataType) -> bool:
    return holds(data_type, _is_float)


def _guarded(column: Column, data_type: DataType, name: str, where: str, mode: str, table: str) -> Column:
    """``column`` (of ``data_type``, at ``where`` inside the table's column ``name``) with its non-finite
    values handled as ``mode`` says."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, ArrayType):
        element = data_type.elementType
        return F.transform(column, lambda e: _guarded(e, element, name, f"{where}[*]", mode, table))
    if isinstance(data_type, MapType):
        value_type = data_type.valueType
        return F.transform_values(column, lambda _, v: _guarded(v, value_type, name, f"{where}[*]", mode, table))
    if isinstance(data_type, StructType):
        fields = [
            (
                _guarded(column[f.name], f.dataType, name, f"{where}.{f.name}", mode, table)
                if _holds_floats(f.dataType)
                else column[f.name]
            ).alias(f.name)
            for f in data_type.fields
        ]
        return F.when(column.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    non_finite = F.isnan(column) | (F.abs(column) == F.lit(float("inf")))
    if mode == NULL:
        return F.when(non_finite, F.lit(None)).otherwise(column)
    at = "" if where == name else f" (at {where})"
    failure = F.raise_error(
        F.concat(
            F.lit(f"Column '{name}'{at} of table {table} holds "),
            column.cast("string"),
            F.lit(_not_null_advice() if mode == FAIL_NOT_NULL else _fail_advice()),
        )
    )
    return F.when(non_finite, failure).otherwise(column)


def _not_null_advice() -> str:
    return (
        f", which json has no number for, and the column is NOT NULL, so '{NON_FINITE_OPTION.key}' = "
        f"'{NULL}' cannot write null there. Set it to '{STRING}' to write it as Flink's json does (the string "
        '"NaN", "Infinity" or "-Infinity", read back by Spark and Flink), drop NOT NULL from the column, or '
        "filter such values out of the INSERT."
    )


def _fail_advice() -> str:
    return (
        ", which json has no number for: Trino and pyarrow's json reader fail on the whole file that holds "
        f"it. Set '{NON_FINITE_OPTION.key}' = '{STRING}' to write it as Flink's json does (the "
        f'string "NaN", "Infinity" or "-Infinity", read back by Spark and Flink), or \'{NULL}\' to '
        "write null; or filter such values out of the INSERT."
    )
