"""Flink's column DDL as changes to a table definition: ``ALTER TABLE t ADD | MODIFY | RENAME | DROP``.

A :class:`SchemaChange` is what one ``ALTER TABLE`` asks for; :func:`apply_change` makes the new
:class:`~sqlext.table.TableDefinition` with Flink's checks, and Flink's messages where Flink has one
(its ``AlterSchemaConverter``; semantics only): a column added twice or one that exists, an ``AFTER`` naming
no column, a modified, renamed or dropped column that does not exist, a dropped or renamed column a computed
column, the watermark, a partition key or the primary key refers to. Names compare as the metastore
compares them, case-insensitively.

sqlext adds what keeps the rows already written readable, whatever the format:

- a column changes type only to a wider one its values can be read as (:func:`is_widening`): ``TINYINT`` ->
  ``SMALLINT`` -> ``INT`` -> ``BIGINT``, ``FLOAT`` -> ``DOUBLE``, ``DECIMAL(p, s)`` -> ``DECIMAL(p', s)`` with
  ``p' >= p``, ``CHAR(n)``/``VARCHAR(n)`` -> a longer ``CHAR``/``VARCHAR`` or ``STRING``, ``BINARY(n)``/
  ``VARBINARY(n)`` -> a longer ``VARBINARY`` or ``BYTES``, ``TIMESTAMP(p)`` -> ``TIMESTAMP(p')`` with
  ``p' >= p`` (and the same for ``TIMESTAMP_LTZ``);
- a partition key keeps its type; a physical column stays physical (and a computed or metadata column stays
  what it is);
- an added physical column, or a modified one, is not ``NOT NULL``: the rows already written have no value
  for it, or may hold NULL.

What each format's readers can follow (a column matched by position or by name, which widenings) is
:mod:`sqlext.catalog.evolution`'s to check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from sqlext.errors import ValidationError
from sqlext.table import Column, TableDefinition, Watermark

#: Flink's prefix of every ALTER TABLE validation message.
ALTER_FAILED = "Failed to execute ALTER TABLE statement.\n"


@dataclass(frozen=True)
class Position:
    """``FIRST`` or ``AFTER column`` of an added or modified column."""

    first: bool = False
    after: str | None = None

    def __str__(self) -> str:
        return "FIRST" if self.first else f"AFTER `{self.after}`"


@dataclass(frozen=True)
class PlacedColumn:
    """A column of ``ADD``/``MODIFY`` with its position (None: added at the end, or left where it is)."""

    column: Column
    position: Position | None = None


@dataclass(frozen=True)
class SchemaChange:
    """What one ``ALTER TABLE`` changes in a table's schema."""

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class AddSchema(SchemaChange):
    """``ADD <component> | ADD (<component>, ...)``: columns, a watermark, a primary key."""

    columns: tuple[PlacedColumn, ...] = ()
    watermark: Watermark | None = None
    primary_key: tuple[str, ...] | None = None

    def describe(self) -> str:
        return _components("ADD", self.columns, self.watermark, self.primary_key)


@dataclass(frozen=True)
class ModifySchema(SchemaChange):
    """``MODIFY <component> | MODIFY (<component>, ...)``."""

    columns: tuple[PlacedColumn, ...] = ()
    watermark: Watermark | None = None
    primary_key: tuple[str, ...] | None = None

    def describe(self) -> str:
        return _components("MODIFY", self.columns, self.watermark, self.primary_key)


@dataclass(frozen=True)
class RenameColumn(SchemaChange):
    """``RENAME old TO new``."""

    old: str
    new: str

    def describe(self) -> str:
        return f"RENAME `{self.old}` TO `{self.new}`"


@dataclass(frozen=True)
class DropColumns(SchemaChange):
    """``DROP column | DROP (column, ...)``; ``if_exists`` (Spark's ``DROP COLUMN IF EXISTS``) skips missing ones."""

    names: tuple[str, ...]
    if_exists: bool = False

    def describe(self) -> str:
        return "DROP (" + ", ".join(f"`{name}`" for name in self.names) + ")"


@dataclass(frozen=True)
class DropWatermark(SchemaChange):
    def describe(self) -> str:
        return "DROP WATERMARK"


@dataclass(frozen=True)
class DropPrimaryKey(SchemaChange):
    def describe(self) -> str:
        return "DROP PRIMARY KEY"


def _components(
    verb: str, columns: Iterable[PlacedColumn], watermark: Watermark | None, key: tuple[str, ...] | None
) -> str:
    parts = [f"`{p.column.name}` {p.column.type or 'AS ' + (p.column.expression or '')}".strip() for p in columns]
    if watermark is not None:
        parts.append(f"WATERMARK FOR `{watermark.column}` AS {watermark.expression}")
    if key is not None:
        parts.append(f"PRIMARY KEY ({', '.join(key)}) NOT ENFORCED")
    return f"{verb} ({', '.join(parts)})"


def _fail(message: str, value: str | None = None) -> ValidationError:
    return ValidationError(ALTER_FAILED + message, value=value)


# -- types --------------------------------------------------------------------------------------

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_SIZED = re.compile(r"^(CHAR|VARCHAR|BINARY|VARBINARY|TIMESTAMP|TIMESTAMP_LTZ)\((\d+)\)$")
_DECIMAL = re.compile(r"^DECIMAL\((\d+), (\d+)\)$")
#: The wider types a type with a length (CHAR(n), ...) may become, given the kind of the new type.
_LONGER = {
    "CHAR": ("CHAR", "VARCHAR"),
    "VARCHAR": ("VARCHAR",),
    "BINARY": ("BINARY", "VARBINARY"),
    "VARBINARY": ("VARBINARY",),
    "TIMESTAMP": ("TIMESTAMP",),
    "TIMESTAMP_LTZ": ("TIMESTAMP_LTZ",),
}
WIDENINGS_TEXT = (
    "TINYINT/SMALLINT/INT -> a wider integer type, FLOAT -> DOUBLE, DECIMAL(p, s) -> DECIMAL(p', s) with p' >= p, "
    "CHAR/VARCHAR -> a longer CHAR/VARCHAR or STRING, BINARY/VARBINARY -> a longer VARBINARY or BYTES, "
    "TIMESTAMP(p) -> TIMESTAMP(p') with p' >= p"
)


def is_widening(old: str, new: str) -> bool:
    """Whether a value of Flink type ``old`` reads as one of ``new`` unchanged (canonical type texts)."""
    if old == new:
        return True
    if old in _INTEGERS and new in _INTEGERS:
        return _INTEGERS.index(new) > _INTEGERS.index(old)
    if (old, new) == ("FLOAT", "DOUBLE"):
        return True
    old_decimal, new_decimal = _DECIMAL.match(old), _DECIMAL.match(new)
    if old_decimal and new_decimal:
        return new_decimal.group(2) == old_decimal.group(2) and int(new_decimal.group(1)) >= int(old_decimal.group(1))
    sized = _SIZED.match(old)
    if sized is None:
        return False
    kind, length = sized.group(1), int(sized.group(2))
    if (kind in ("CHAR", "VARCHAR") and new == "STRING") or (kind in ("BINARY", "VARBINARY") and new == "BYTES"):
        return True
    target = _SIZED.match(new)
    return target is not None and target.group(1) in _LONGER[kind] and int(target.group(2)) >= length


# -- references ---------------------------------------------------------------------------------


def referenced_columns(expression: str) -> set[str]:
    """The column names (lower case) a Spark SQL expression refers to."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(expression, read="spark")
    except sqlglot.errors.ParseError:
        return set()
    return {column.name.lower() for column in tree.find_all(exp.Column)}


@dataclass(frozen=True)
class References:
    """What refers to a table's columns (lower-case names): computed columns, the watermark, partition and
    primary keys (Flink's ``ReferencesManager``)."""

    computed: dict[str, set[str]]
    watermark: set[str]
    partition_keys: set[str]
    primary_key: set[str]

    @classmethod
    def of(cls, table: TableDefinition) -> References:
        computed: dict[str, set[str]] = {}
        for column in table.columns:
            if column.expression is not None:
                for name in referenced_columns(column.expression):
                    computed.setdefault(name, set()).add(column.name)
        watermark = set()
        if table.watermark is not None:
            watermark = {table.watermark.column.lower(), *referenced_columns(table.watermark.expression)}
        return cls(
            computed,
            watermark,
            {key.lower() for key in table.partition_keys},
            {key.lower() for key in table.primary_key},
        )

    def check(self, table: TableDefinition, name: str) -> None:
        """Refuse to drop or rename ``name``: missing, or referred to (Flink's checks, in Flink's order)."""
        if not any(column.name.lower() == name.lower() for column in table.columns):
            raise _fail(f"The column `{name}` does not exist in the base table.", name)
        users = sorted(self.computed.get(name.lower(), ()))
        if users:
            raise _fail(
                f"The column `{name}` is referenced by computed column {', '.join(f'`{u}`' for u in users)}.", name
            )
        if name.lower() in self.partition_keys:
            raise _fail(f"The column `{name}` is used as the partition keys.", name)
        if name.lower() in self.watermark and table.watermark is not None:
            watermark = f"WATERMARK FOR `{table.watermark.column}` AS {table.watermark.expression}"
            raise _fail(f"The column `{name}` is referenced by watermark expression. ({watermark})", name)


# -- applying -----------------------------------------------------------------------------------


def apply_change(table: TableDefinition, change: SchemaChange) -> TableDefinition:
    """The table after ``change``; a ValidationError (nothing applied) when it cannot be made."""
    if isinstance(change, AddSchema):
        return _add(table, change)
    if isinstance(change, ModifySchema):
        return _modify(table, change)
    if isinstance(change, RenameColumn):
        return _rename(table, change)
    if isinstance(change, DropColumns):
        return _drop(table, change)
    if isinstance(change, DropWatermark):
        if table.watermark is None:
            raise _fail("The current table does not define any watermark strategy.")
        return replace(table, watermark=None)
    if isinstance(change, DropPrimaryKey):
        if not table.primary_key:
            raise _fail("The current table does not define any primary key.")
        return replace(table, primary_key=())
    raise TypeError(f"not a schema change: {change!r}")


def _index(columns: list[Column], name: str) -> int:
    return next((i for i, column in enumerate(columns) if column.name.lower() == name.lower()), -1)


def _place(columns: list[Column], column: Column, position: Position | None, at: int) -> None:
    """Insert ``column`` at ``position`` (``at``: where it goes without one)."""
    if position is None:
        columns.insert(at, column)
    elif position.first:
        columns.insert(0, column)
    else:
        after = _index(columns, position.after or "")
        if after < 0:
            raise _fail(f"Referenced column `{position.after}` by 'AFTER' does not exist in the table.", position.after)
        columns.insert(after + 1, column)


def _no_duplicates(placed: Iterable[PlacedColumn]) -> None:
    seen: set[str] = set()
    for item in placed:
        key = item.column.name.lower()
        if key in seen:
            raise _fail(f"Encounter duplicate column `{item.column.name}`.", item.column.name)
        seen.add(key)


def _add(table: TableDefinition, change: AddSchema) -> TableDefinition:
    _no_duplicates(change.columns)
    columns = list(table.columns)
    for item in change.columns:
        if _index(columns, item.column.name) >= 0:
            name = item.column.name
            raise _fail(f"Column `{name}` already exists in the table.", name)
        if item.column.is_physical and not item.column.nullable:
            raise _fail(
                f"Column `{item.column.name}` cannot be added as NOT NULL: the rows already written have no value for "
                "it and read NULL there.",
                item.column.name,
            )
        _place(columns, item.column, item.position, len(columns))
    watermark, key = table.watermark, table.primary_key
    if change.watermark is not None:
        if watermark is not None:
            raise _fail(
                f"The current table has already defined the watermark strategy `{watermark.column}` AS "
                f"{watermark.expression}. You might want to drop it before adding a new one."
            )
        watermark = change.watermark
    if change.primary_key is not None:
        if key:
            shown = "[" + ", ".join(f"`{k}`" for k in key) + "]"
            raise _fail(
                f"The current table has already defined the primary key constraint {shown}. You might want to drop it "
                "before adding a new one."
            )
        key = change.primary_key
    return _rebuilt(table, columns, watermark, key)


def _modify(table: TableDefinition, change: ModifySchema) -> TableDefinition:
    _no_duplicates(change.columns)
    columns = list(table.columns)
    keys = {key.lower() for key in table.partition_keys}
    for item in change.columns:
        at = _index(columns, item.column.name)
        if at < 0:
            name = item.column.name
            raise _fail(f"Column `{name}` does not exist in the table.", name)
        old = columns.pop(at)
        new = _modified(old, item.column, is_partition_key=old.name.lower() in keys)
        _place(columns, new, item.position, at)
    watermark, key = table.watermark, table.primary_key
    if change.watermark is not None:
        if watermark is None:
            raise _fail("The current table does not define any watermark. You might want to add a new one.")
        watermark = change.watermark
    if change.primary_key is not None:
        if not key:
            raise _fail(
                "The current table does not define any primary key constraint. You might want to add a new one."
            )
        key = change.primary_key
    return _rebuilt(table, columns, watermark, key)


def _kind(column: Column) -> str:
    if column.expression is not None:
        return "computed"
    return "metadata" if column.metadata_key is not None else "physical"


def _modified(old: Column, new: Column, is_partition_key: bool) -> Column:
    """``new`` in place of ``old`` (its comment kept unless ``new`` has one, as Flink keeps it), if the rows
    already written stay readable."""
    name = old.name
    if _kind(old) != _kind(new):
        raise _fail(
            f"Column `{name}` cannot change from a {_kind(old)} column to a {_kind(new)} one: sqlext keeps what the "
            "rows already written hold. Drop it and add a new column instead.",
            name,
        )
    if old.is_physical and old.type != new.type:
        if is_partition_key:
            raise _fail(f"The column `{name}` is used as the partition keys: its type cannot change.", name)
        if not is_widening(old.type, new.type):
            raise _fail(
                f"Column `{name}` cannot change type from {old.type} to {new.type}: the rows already written must read "
                f"as the new type. sqlext changes a type only to a wider one ({WIDENINGS_TEXT}). Add a new column "
                "instead.",
                new.type,
            )
    if old.is_physical and old.nullable and not new.nullable:
        raise _fail(f"Column `{name}` cannot become NOT NULL: the rows already written may hold NULL there.", name)
    return replace(new, name=old.name, comment=new.comment or old.comment)


def _rename(table: TableDefinition, change: RenameColumn) -> TableDefinition:
    References.of(table).check(table, change.old)
    if change.new.lower() != change.old.lower() and _index(list(table.columns), change.new) >= 0:
        raise _fail(f"The column `{change.new}` already existed in table schema.", change.new)
    columns = [replace(c, name=change.new) if c.name.lower() == change.old.lower() else c for c in table.columns]
    key = tuple(change.new if k.lower() == change.old.lower() else k for k in table.primary_key)
    return _rebuilt(table, columns, table.watermark, key)


def _drop(table: TableDefinition, change: DropColumns) -> TableDefinition:
    seen: set[str] = set()
    for name in change.names:
        if name.lower() in seen:
            raise _fail(f"Duplicate column `{name}`.", name)
        seen.add(name.lower())
    names = [n for n in change.names if not change.if_exists or _index(list(table.columns), n) >= 0]
    references = References.of(table)
    dropping = {name.lower() for name in names}
    # A computed column dropped with the columns it refers to does not hold them (Flink drops the
    # dependent first).
    for users in references.computed.values():
        users.difference_update({u for u in users if u.lower() in dropping})
    for name in names:
        references.check(table, name)
        if name.lower() in references.primary_key:
            raise _fail(f"The column `{name}` is used as the primary key.", name)
    columns = [c for c in table.columns if c.name.lower() not in dropping]
    if not any(c.is_physical and c.name.lower() not in references.partition_keys for c in columns) and any(
        c.is_physical for c in table.data_columns
    ):
        raise _fail(
            f"Cannot drop {', '.join(f'`{n}`' for n in names)}: table {table.identifier} would keep no data column "
            f"(columns left: {', '.join(f'`{c.name}`' for c in columns) or 'none'}).",
        )
    return _rebuilt(table, columns, table.watermark, table.primary_key)


def _rebuilt(
    table: TableDefinition, columns: list[Column], watermark: Watermark | None, key: tuple[str, ...]
) -> TableDefinition:
    if watermark is not None and _index(columns, watermark.column) < 0:
        raise _fail(
            f"Invalid column name '{watermark.column}' for rowtime attribute in watermark declaration. Available "
            f"columns are: [{', '.join(c.name for c in columns)}]",
            watermark.column,
        )
    try:
        return replace(table, columns=tuple(columns), watermark=watermark, primary_key=tuple(key))
    except ValidationError as exc:  # a watermark or key on a column that does not exist
        raise _fail(exc.message, exc.value) from None
