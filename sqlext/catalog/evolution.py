"""Schema evolution of a filesystem table: whether the files already written stay readable, in the table's
format, after an ``ALTER TABLE`` column change (:mod:`sqlext.sql.schema_change`). The change itself (the
table and every partition in one metastore transaction, Hive's ``CASCADE``) is the catalog's
(:meth:`sqlext.catalog.hms.Catalog.alter_table_schema`); this module refuses, before anything changes, what
a reader could not follow, naming the column, the format and why.

How the readers of a format find a column in a file decides what is safe:

- **csv** is read by position (Hive's ``LazySimpleSerDe``, the SerDe in the table's descriptor, through which
  Spark reads it too, and sqlext's own source): the n-th field of a line is the n-th column. A line with
  fewer fields reads NULL in the missing last columns; fields past the last column are not read. So a column
  may be added only after the last one, renamed freely, and dropped only from the end; once one was dropped
  from the end, the old lines still hold its values in that field, which a column added later would read, so
  an ADD is refused from then on.
- **parquet**, **orc**, **json** and **avro** are read by name (Spark's readers, Hive's Parquet, ORC and Avro
  SerDes, hcatalog's JSON SerDe; Avro's schema resolution matches the table's schema, ``avro.schema.literal``, to
  each file's writer schema by field name, an added nullable field reading its default, NULL): a column may be
  added or dropped anywhere, but a renamed column would find nothing under its new name in the files written
  before (refused), and a column added under the name of a dropped one would read the dropped values, in their old
  type (refused: the table keeps the dropped names, ``sqlext.retired-columns``).
- a type widens only as :func:`~sqlext.sql.schema_change.is_widening` allows, and every reader of every
  format tried reads the narrower values as the wider type (Spark's parquet and orc readers, vectorized and
  not, Hive's SerDes, csv's SerDe, Spark's json reader; docs/schema-evolution.md), so no format narrows it.

Tables of other connectors (datagen, print, kafka, ...) keep no files here: only their definition changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from sqlext.errors import ValidationError
from sqlext.sql.schema_change import ALTER_FAILED, RenameColumn, SchemaChange
from sqlext.table import Column, TableDefinition

#: Table parameter: the columns dropped from the table, whose values old files still hold (JSON list of
#: ``{"name", "type"}``, in the order dropped).
RETIRED_COLUMNS = "sqlext.retired-columns"
#: Table parameter of a table read by position (csv) whose columns changed: the fewest and the most fields a
#: line of its files may hold (``"fewest,most"``), so that sqlext's source reads old lines as Hive's SerDe does.
#: Absent: every line holds exactly the table's number of data columns (Flink's csv rule).
FILE_FIELDS = "sqlext.file-fields"
#: Formats whose readers find a column by its position in a record (the others: by its name).
BY_POSITION = ("csv",)
BY_NAME = ("parquet", "orc", "json", "avro")


@dataclass(frozen=True)
class ColumnMoves:
    """The data columns (those in the files) before and after a change, in file order, under their new names."""

    before: list[str]
    after: list[str]
    renamed: dict[str, str]

    @classmethod
    def of(cls, previous: TableDefinition, updated: TableDefinition, change: SchemaChange) -> ColumnMoves:
        renamed = {change.old.lower(): change.new} if isinstance(change, RenameColumn) else {}
        before = [renamed.get(c.name.lower(), c.name) for c in previous.data_columns]
        return cls(before, [c.name for c in updated.data_columns], renamed)

    @property
    def kept(self) -> list[str]:
        after = {name.lower() for name in self.after}
        return [name for name in self.before if name.lower() in after]

    @property
    def added(self) -> list[str]:
        before = {name.lower() for name in self.before}
        return [name for name in self.after if name.lower() not in before]

    @property
    def dropped(self) -> list[str]:
        after = {name.lower() for name in self.after}
        return [name for name in self.before if name.lower() not in after]


def retired_columns(parameters: Mapping[str, str] | None) -> list[dict[str, str]]:
    """The dropped columns a table records (see :data:`RETIRED_COLUMNS`)."""
    raw = (parameters or {}).get(RETIRED_COLUMNS)
    return list(json.loads(raw)) if raw else []


def file_fields(parameters: Mapping[str, str] | None) -> tuple[int, int] | None:
    """The fewest and most fields a line of the table's files may hold (see :data:`FILE_FIELDS`); None when
    the table never changed its columns."""
    raw = (parameters or {}).get(FILE_FIELDS)
    if not raw:
        return None
    fewest, most = (int(part) for part in raw.split(","))
    return fewest, most


def file_fields_after(
    previous: TableDefinition, updated: TableDefinition, recorded: tuple[int, int] | None
) -> tuple[int, int] | None:
    """:data:`FILE_FIELDS` after a change from ``previous`` to ``updated``: the files written before hold
    ``recorded`` fields (or as many as ``previous`` has data columns), those written after as many as ``updated``
    has. None for a table read by name, or when every line still holds exactly the table's columns."""
    if previous.connector != "filesystem" or previous.options.get("format") not in BY_POSITION:
        return recorded
    before, after = len(previous.data_columns), len(updated.data_columns)
    fewest, most = recorded or (before, before)
    fewest, most = min(fewest, after), max(most, after)
    return None if fewest == most == after else (fewest, most)


def check_files_follow(
    previous: TableDefinition, updated: TableDefinition, change: SchemaChange, retired: list[dict[str, str]]
) -> list[dict[str, str]]:
    """Refuse a change the files of a filesystem table could not follow (see the module docstring); return
    the dropped columns to record after it."""
    if previous.connector != "filesystem":
        return retired
    fmt = previous.options.get("format", "")
    moves = ColumnMoves.of(previous, updated, change)
    if fmt in BY_NAME:
        _check_by_name(previous, moves, retired, fmt)
    else:
        _check_by_position(previous, moves, retired, fmt)
    dropped = [{"name": name, "type": _column(previous, name, moves).type} for name in moves.dropped]
    return [*retired, *dropped]


def _column(table: TableDefinition, name: str, moves: ColumnMoves) -> Column:
    old_name = next((old for old, new in moves.renamed.items() if new.lower() == name.lower()), name)
    return table.column(old_name)


def _refused(table: TableDefinition, message: str, value: str | None = None) -> ValidationError:
    return ValidationError(f"{ALTER_FAILED}Table {table.identifier}: {message}", value=value)


def _check_by_name(table: TableDefinition, moves: ColumnMoves, retired: list[dict[str, str]], fmt: str) -> None:
    how = f"format '{fmt}' is read by name (each reader looks a column up by its name in every file)"
    for old, new in moves.renamed.items():
        if any(c.name.lower() == old for c in table.data_columns):
            raise _refused(
                table,
                f"column `{table.column(old).name}` cannot be renamed to `{new}`: {how}, so every file written "
                f"before would read NULL for `{new}`. Add a new column and fill it, or recreate the table.",
                new,
            )
    dropped = {entry["name"].lower(): entry for entry in retired}
    for name in moves.added:
        if name.lower() in dropped:
            entry = dropped[name.lower()]
            raise _refused(
                table,
                f"column `{name}` cannot be added: a column `{entry['name']}` ({entry['type']}) was dropped before, "
                f"and {how}: the files written before still hold its values, which readers would take for the new "
                "column's. Choose another name.",
                name,
            )


def _check_by_position(table: TableDefinition, moves: ColumnMoves, retired: list[dict[str, str]], fmt: str) -> None:
    how = (
        f"format '{fmt}' is read by position (the n-th field of a line is the n-th column, in Hive's "
        "LazySimpleSerDe and in sqlext's reader)"
    )
    kept, after = moves.kept, moves.after
    last = moves.before[-1] if moves.before else None
    for index, name in enumerate(after[: len(kept)]):
        if name.lower() != kept[index].lower():
            if name in moves.added:
                raise _refused(
                    table,
                    f"column `{name}` cannot be placed before column `{kept[index]}`: {how}, so the files written "
                    f"before would give `{name}` the values of `{kept[index]}`. Add it after the last column"
                    f"{f' (`{last}`)' if last else ''}.",
                    name,
                )
            raise _refused(
                table,
                f"column `{name}` cannot move: {how}, so the files written before would give it the values of "
                f"`{kept[index]}`.",
                name,
            )
    if moves.before[: len(kept)] != kept:
        middle = next(name for name in moves.dropped if moves.before.index(name) < len(kept))
        trailing = moves.before[len(moves.before) - len(moves.dropped) :] if moves.dropped else []
        raise _refused(
            table,
            f"column `{middle}` cannot be dropped: {how}, so the files written before would give the columns after "
            f"it the values of the one before them. Only the last columns can be dropped (here: "
            f"{', '.join(f'`{n}`' for n in trailing) or f'`{last}`'}).",
            middle,
        )
    if moves.added and retired:
        names = ", ".join(f"`{entry['name']}`" for entry in retired)
        raise _refused(
            table,
            f"column `{moves.added[0]}` cannot be added: {how}, and the files written before {names} "
            f"{'was' if len(retired) == 1 else 'were'} dropped still hold {'its' if len(retired) == 1 else 'their'} "
            f"values after the last column, which `{moves.added[0]}` would read. Recreate the table to add columns.",
            moves.added[0],
        )
