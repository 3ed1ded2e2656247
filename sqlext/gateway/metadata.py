"""The catalog browsing calls of JDBC tools (GetCatalogs, GetSchemas, GetTables, GetTableTypes,
GetColumns), answered from the session's Spark catalog with JDBC's ``DatabaseMetaData`` columns.

What they list is what the session's queries can read: the databases and tables of the metastore
(sqlext's tables included, as Spark sees them) and the session's own views are not listed (sqlext
plans INSERTs through temporary views that are no business of a browser). As in HiveServer2 there
is no catalog level: GetCatalogs is empty and ``TABLE_CAT`` is empty. Name patterns are JDBC's
(``%`` any characters, ``_`` one, ``\\`` escapes) plus Hive's ``*``; names match case-insensitively.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from TCLIService import ttypes

from sqlext.gateway.results import TYPE_IDS, ResultColumn, ResultSet

log = logging.getLogger("sqlext.gateway")
T = ttypes.TTypeId


def _columns(spec: str) -> list[ResultColumn]:
    """``NAME:TYPE NAME:TYPE ...`` with TYPE a short TTypeId name (STRING, INT, SMALLINT)."""
    return [ResultColumn(name, getattr(T, f"{kind}_TYPE")) for name, kind in (p.split(":") for p in spec.split())]


CATALOG_COLUMNS = _columns("TABLE_CAT:STRING")
SCHEMA_COLUMNS = _columns("TABLE_SCHEM:STRING TABLE_CATALOG:STRING")
TABLE_TYPE_COLUMNS = _columns("TABLE_TYPE:STRING")
TABLE_COLUMNS = _columns(
    "TABLE_CAT:STRING TABLE_SCHEM:STRING TABLE_NAME:STRING TABLE_TYPE:STRING REMARKS:STRING TYPE_CAT:STRING "
    "TYPE_SCHEM:STRING TYPE_NAME:STRING SELF_REFERENCING_COL_NAME:STRING REF_GENERATION:STRING"
)
COLUMN_COLUMNS = _columns(
    "TABLE_CAT:STRING TABLE_SCHEM:STRING TABLE_NAME:STRING COLUMN_NAME:STRING DATA_TYPE:INT TYPE_NAME:STRING "
    "COLUMN_SIZE:INT BUFFER_LENGTH:TINYINT DECIMAL_DIGITS:INT NUM_PREC_RADIX:INT NULLABLE:INT REMARKS:STRING "
    "COLUMN_DEF:STRING SQL_DATA_TYPE:INT SQL_DATETIME_SUB:INT CHAR_OCTET_LENGTH:INT ORDINAL_POSITION:INT "
    "IS_NULLABLE:STRING SCOPE_CATALOG:STRING SCOPE_SCHEMA:STRING SCOPE_TABLE:STRING SOURCE_DATA_TYPE:SMALLINT "
    "IS_AUTO_INCREMENT:STRING"
)
TABLE_TYPES = ("TABLE", "VIEW")
#: Spark's table types as JDBC names them.
_JDBC_TABLE_TYPE = {"MANAGED": "TABLE", "EXTERNAL": "TABLE", "VIEW": "VIEW"}

#: ``java.sql.Types`` of each HiveServer2 type (as Hive's JDBC driver reads them).
JDBC_TYPES: dict[int, int] = {
    T.BOOLEAN_TYPE: 16,
    T.TINYINT_TYPE: -6,
    T.SMALLINT_TYPE: 5,
    T.INT_TYPE: 4,
    T.BIGINT_TYPE: -5,
    T.FLOAT_TYPE: 6,
    T.DOUBLE_TYPE: 8,
    T.STRING_TYPE: 12,
    T.TIMESTAMP_TYPE: 93,
    T.BINARY_TYPE: -2,
    T.ARRAY_TYPE: 2003,
    T.MAP_TYPE: 2000,
    T.STRUCT_TYPE: 2002,
    T.DECIMAL_TYPE: 3,
    T.NULL_TYPE: 0,
    T.DATE_TYPE: 91,
}
#: (COLUMN_SIZE, DECIMAL_DIGITS) of the types that have them; decimals use their own precision and scale.
_SIZES: dict[int, tuple[int, int | None]] = {
    T.TINYINT_TYPE: (3, 0),
    T.SMALLINT_TYPE: (5, 0),
    T.INT_TYPE: (10, 0),
    T.BIGINT_TYPE: (19, 0),
    T.FLOAT_TYPE: (7, 7),
    T.DOUBLE_TYPE: (15, 15),
    T.STRING_TYPE: (2**31 - 1, None),
    T.DATE_TYPE: (10, None),
    T.TIMESTAMP_TYPE: (29, 9),
}
_NUMERIC = {T.TINYINT_TYPE, T.SMALLINT_TYPE, T.INT_TYPE, T.BIGINT_TYPE, T.FLOAT_TYPE, T.DOUBLE_TYPE, T.DECIMAL_TYPE}


def name_pattern(pattern: str | None) -> re.Pattern[str]:
    """A JDBC name pattern as a regular expression (no pattern, or ``%`` / ``*``: every name)."""
    if not pattern:
        return re.compile(".*", re.DOTALL)
    parts, escaped = [], False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "%*":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def catalogs() -> ResultSet:
    return ResultSet(CATALOG_COLUMNS, [])


def table_types() -> ResultSet:
    return ResultSet(TABLE_TYPE_COLUMNS, [(kind,) for kind in TABLE_TYPES])


def _databases(spark: Any, schema_pattern: str | None) -> list[str]:
    matches = name_pattern(schema_pattern).fullmatch
    return sorted(db.name for db in spark.catalog.listDatabases() if matches(db.name))


def schemas(spark: Any, schema_pattern: str | None) -> ResultSet:
    return ResultSet(SCHEMA_COLUMNS, [(name, "") for name in _databases(spark, schema_pattern)])


def _tables(spark: Any, schema_pattern: str | None, table_pattern: str | None) -> list[tuple[str, Any]]:
    matches = name_pattern(table_pattern).fullmatch
    found = []
    for database in _databases(spark, schema_pattern):
        for table in spark.catalog.listTables(database):
            if not table.isTemporary and matches(table.name):
                found.append((database, table))
    return sorted(found, key=lambda pair: (pair[0], pair[1].name))


def tables(spark: Any, schema_pattern: str | None, table_pattern: str | None, types: Sequence[str] | None) -> ResultSet:
    wanted = {kind.upper() for kind in types} if types else None
    rows = []
    for database, table in _tables(spark, schema_pattern, table_pattern):
        kind = _JDBC_TABLE_TYPE.get((table.tableType or "").upper(), "TABLE")
        if wanted is None or kind in wanted:
            rows.append(("", database, table.name, kind, table.description or "", None, None, None, None, None))
    return ResultSet(TABLE_COLUMNS, rows)


def columns(spark: Any, schema_pattern: str | None, table_pattern: str | None, column_pattern: str | None) -> ResultSet:
    matches = name_pattern(column_pattern).fullmatch
    rows = []
    for database, table in _tables(spark, schema_pattern, table_pattern):
        try:
            listed = spark.catalog.listColumns(f"{_quoted(database)}.{_quoted(table.name)}")
        except Exception as exc:  # a table Spark cannot describe is left out, not the whole answer
            log.warning("GetColumns: cannot list the columns of %s.%s: %s", database, table.name, exc)
            continue
        for position, column in enumerate(listed, start=1):
            if matches(column.name):
                rows.append(_column_row(database, table.name, column, position))
    return ResultSet(COLUMN_COLUMNS, rows)


def _column_row(database: str, table: str, column: Any, position: int) -> tuple[Any, ...]:
    typed = ResultColumn.of_spark_type(column.name, column.dataType)
    size, digits = _SIZES.get(typed.type_id, (None, None))
    if typed.type_id == T.DECIMAL_TYPE:
        size, digits = typed.precision, typed.scale
    nullable = 1 if column.nullable else 0
    return (
        "",
        database,
        table,
        column.name,
        JDBC_TYPES.get(typed.type_id, 1111),
        column.dataType.upper(),
        size,
        None,
        digits,
        10 if typed.type_id in _NUMERIC else None,
        nullable,
        column.description or "",
        None,
        None,
        None,
        None,
        position,
        "YES" if nullable else "NO",
        None,
        None,
        None,
        None,
        "NO",
    )


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


TYPE_INFO_COLUMNS = _columns(
    "TYPE_NAME:STRING DATA_TYPE:INT PRECISION:INT LITERAL_PREFIX:STRING LITERAL_SUFFIX:STRING CREATE_PARAMS:STRING "
    "NULLABLE:SMALLINT CASE_SENSITIVE:BOOLEAN SEARCHABLE:SMALLINT UNSIGNED_ATTRIBUTE:BOOLEAN "
    "FIXED_PREC_SCALE:BOOLEAN AUTO_INCREMENT:BOOLEAN LOCAL_TYPE_NAME:STRING MINIMUM_SCALE:SMALLINT "
    "MAXIMUM_SCALE:SMALLINT SQL_DATA_TYPE:INT SQL_DATETIME_SUB:INT NUM_PREC_RADIX:INT"
)
#: The types GetTypeInfo lists, by Spark's names.
LISTED_TYPES = [
    "boolean",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "decimal",
    "string",
    "binary",
    "date",
    "timestamp",
    "array",
    "map",
    "struct",
]


def type_info() -> ResultSet:
    """JDBC's ``getTypeInfo``: each Spark SQL type (nullable; searchable when it is a primitive)."""
    rows = []
    for name in LISTED_TYPES:
        type_id = TYPE_IDS[name]
        size, _ = _SIZES.get(type_id, (None, None))
        primitive = type_id not in (T.ARRAY_TYPE, T.MAP_TYPE, T.STRUCT_TYPE)
        numeric = type_id in _NUMERIC
        rows.append(
            (
                name.upper(),
                JDBC_TYPES[type_id],
                38 if type_id == T.DECIMAL_TYPE else size,
                None,
                None,
                None,
                1,
                type_id == T.STRING_TYPE,
                3 if primitive else 0,
                not numeric,
                False,
                False,
                None,
                0,
                38 if type_id == T.DECIMAL_TYPE else 0,
                None,
                None,
                10 if numeric else None,
            )
        )
    return ResultSet(TYPE_INFO_COLUMNS, rows)
