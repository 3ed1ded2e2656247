"""The table model: what a Flink ``CREATE TABLE`` declares, independent of where it is stored.

The parser builds it, the catalog stores it in (and rebuilds it from) the HMS, connector factories
build sources and sinks from it. Column types are kept as Flink type text (``TIMESTAMP(3)``,
``ROW<a INT, b STRING>``); :mod:`sqlext.sql.types` maps them to Spark and Hive types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from sqlext.errors import ValidationError

DEFAULT_DATABASE = "default"


@dataclass(frozen=True)
class TableIdentifier:
    """``[catalog.][database.]name``; the catalog part is kept for Flink DDL but has one meaning here."""

    database: str
    name: str
    catalog: str | None = None

    @classmethod
    def parse(cls, text: str, default_database: str = DEFAULT_DATABASE) -> TableIdentifier:
        """Parse ``name``, ``db.name`` or ``catalog.db.name`` (backquotes allowed around parts)."""
        parts = [part.strip().strip("`") for part in text.split(".")]
        if not all(parts) or len(parts) > 3:
            raise ValidationError(f"Invalid table name '{text}': expected [catalog.][database.]table.")
        if len(parts) == 1:
            return cls(default_database, parts[0].lower())
        if len(parts) == 2:
            return cls(parts[0].lower(), parts[1].lower())
        return cls(parts[1].lower(), parts[2].lower(), parts[0])

    @classmethod
    def of_node(cls, node: Any, current_database: str) -> TableIdentifier:
        """The table a sqlglot ``Table`` node names, lower-cased, in ``current_database`` when unqualified."""
        return cls(node.db.lower() if node.db else current_database, node.name.lower())

    def __str__(self) -> str:
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class Column:
    """A column: physical (``type`` only), computed (``expression``) or metadata (``metadata_key``)."""

    name: str
    type: str
    comment: str | None = None
    nullable: bool = True
    expression: str | None = None
    metadata_key: str | None = None
    virtual: bool = False

    @property
    def is_physical(self) -> bool:
        return self.expression is None and self.metadata_key is None


@dataclass(frozen=True)
class Watermark:
    """``WATERMARK FOR column AS expression``; ``delay`` is set when the expression is
    ``column - INTERVAL 'n' unit`` (or just ``column``: zero delay), which is what Spark can run."""

    column: str
    expression: str
    delay: timedelta | None


@dataclass(frozen=True)
class TableDefinition:
    """One table as declared by Flink DDL."""

    identifier: TableIdentifier
    columns: tuple[Column, ...]
    options: Mapping[str, str]
    partition_keys: tuple[str, ...] = ()
    watermark: Watermark | None = None
    primary_key: tuple[str, ...] = ()
    comment: str | None = None
    temporary: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [column.name.lower() for column in self.columns]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValidationError(f"Table {self.identifier} declares column(s) {', '.join(duplicates)} twice.")
        for key in self.partition_keys:
            if key.lower() not in names:
                raise ValidationError(
                    f"Partition key '{key}' of table {self.identifier} is not a column; "
                    f"columns are: {', '.join(c.name for c in self.columns)}."
                )
            if not self.column(key).is_physical:
                raise ValidationError(f"Partition key '{key}' of table {self.identifier} must be a physical column.")
        for key in self.primary_key:
            if key.lower() not in names:
                raise ValidationError(f"Primary key column '{key}' of table {self.identifier} is not a column.")
        if self.watermark and self.watermark.column.lower() not in names:
            raise ValidationError(
                f"Watermark column '{self.watermark.column}' of table {self.identifier} is not a column."
            )

    @property
    def connector(self) -> str | None:
        return self.options.get("connector")

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name.lower() == name.lower():
                return column
        raise ValidationError(f"Table {self.identifier} has no column '{name}'.")

    @property
    def physical_columns(self) -> tuple[Column, ...]:
        return tuple(column for column in self.columns if column.is_physical)

    @property
    def data_columns(self) -> tuple[Column, ...]:
        """Physical columns that are not partition keys: what goes into the data files."""
        keys = {key.lower() for key in self.partition_keys}
        return tuple(column for column in self.physical_columns if column.name.lower() not in keys)

    def with_options(self, options: Mapping[str, str]) -> TableDefinition:
        return replace(self, options=dict(options))
