"""Statements and rows written back from a table definition: SHOW CREATE TABLE and DESCRIBE."""

from __future__ import annotations

from typing import Any

from sqlext.errors import FactoryError
from sqlext.registry import find_factory
from sqlext.table import Column, TableDefinition


def quote_string(value: str) -> str:
    """A Flink SQL string literal: a quote doubled, a backslash as itself."""
    return "'" + value.replace("'", "''") + "'"


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _column_line(column: Column) -> str:
    if column.expression is not None:
        line = f"{quote_name(column.name)} AS {column.expression}"
    else:
        line = f"{quote_name(column.name)} {column.type}"
        if not column.nullable:
            line += " NOT NULL"
        if column.metadata_key is not None:
            line += f" METADATA FROM {quote_string(column.metadata_key)}"
            if column.virtual:
                line += " VIRTUAL"
    if column.comment:
        line += f" COMMENT {quote_string(column.comment)}"
    return line


def show_create_table(table: TableDefinition) -> str:
    """Flink DDL that re-creates the table."""
    elements = [_column_line(c) for c in table.columns]
    if table.watermark is not None:
        elements.append(f"WATERMARK FOR {quote_name(table.watermark.column)} AS {table.watermark.expression}")
    if table.primary_key:
        elements.append(f"PRIMARY KEY ({', '.join(quote_name(k) for k in table.primary_key)}) NOT ENFORCED")
    ident = table.identifier
    lines = [
        f"CREATE {'TEMPORARY ' if table.temporary else ''}TABLE {quote_name(ident.database)}.{quote_name(ident.name)} ("
    ]
    lines.append(",\n".join(f"  {element}" for element in elements))
    lines.append(")")
    if table.comment:
        lines.append(f"COMMENT {quote_string(table.comment)}")
    if table.partition_keys:
        lines.append(f"PARTITIONED BY ({', '.join(quote_name(k) for k in table.partition_keys)})")
    options = ",\n".join(f"  {quote_string(k)} = {quote_string(v)}" for k, v in sorted(table.options.items()))
    lines.append(f"WITH (\n{options}\n)")
    return "\n".join(lines)


def effective_defaults(table: TableDefinition) -> list[tuple[str, str]]:
    """Options whose unset value matters and differs from what a Flink user may assume (the connector's)."""
    try:
        return find_factory(table.connector).effective_defaults(table) if table.connector else []
    except FactoryError:
        return []


def describe_rows(table: TableDefinition) -> list[tuple[Any, ...]]:
    """DESCRIBE output: columns, then partition keys, watermark, primary key, options, defaults."""
    rows: list[tuple[Any, ...]] = []
    for column in table.columns:
        kind = f"AS {column.expression}" if column.expression else column.type
        if column.metadata_key:
            kind += f" METADATA FROM '{column.metadata_key}'" + (" VIRTUAL" if column.virtual else "")
        rows.append((column.name, kind, column.comment))
    if table.partition_keys:
        rows.append(("# Partition Information", "", None))
        rows.extend((key, table.column(key).type, None) for key in table.partition_keys)
    if table.watermark is not None:
        rows.append(("# Watermark", "", None))
        rows.append((table.watermark.column, table.watermark.expression, None))
    if table.primary_key:
        rows.append(("# Primary Key", ", ".join(table.primary_key), "NOT ENFORCED"))
    rows.append(("# Options", "", None))
    rows.extend((key, value, None) for key, value in sorted(table.options.items()))
    defaults = effective_defaults(table)
    if defaults:
        rows.append(("# Defaults in effect", "", None))
        rows.extend((key, value, "default") for key, value in defaults)
    return rows


def merge_like(base: TableDefinition, derived: Any) -> TableDefinition:
    """Flink's ``CREATE TABLE derived ... LIKE base (options)``.

    Physical columns of ``base`` always come first, then the derived table's own columns. For each
    feature (generated and metadata columns, options, partitions, watermarks, constraints) the strategy
    is INCLUDING, EXCLUDING or OVERWRITING; the default is Flink's ``INCLUDING ALL OVERWRITING OPTIONS``.
    """
    from dataclasses import replace

    from sqlext.errors import ValidationError

    strategy = {f: "INCLUDING" for f in ("CONSTRAINTS", "GENERATED", "METADATA", "PARTITIONS", "WATERMARKS")}
    strategy["OPTIONS"] = "OVERWRITING"
    for option in derived.like_options:
        how, feature = option.split()
        for name in strategy if feature == "ALL" else [feature]:
            strategy[name] = how

    def keep(column: Column) -> bool:
        if column.expression is not None:
            return strategy["GENERATED"] != "EXCLUDING"
        if column.metadata_key is not None:
            return strategy["METADATA"] != "EXCLUDING"
        return True

    own = {c.name.lower() for c in derived.columns}
    columns = []
    for column in base.columns:
        if not keep(column):
            continue
        if column.name.lower() in own:
            if column.is_physical or strategy["GENERATED" if column.expression else "METADATA"] != "OVERWRITING":
                raise ValidationError(
                    f"Column '{column.name}' is declared by both {base.identifier} and the new table."
                )
            continue
        columns.append(column)
    columns.extend(derived.columns)

    if strategy["OPTIONS"] == "EXCLUDING":
        options = dict(derived.options)
    else:
        clash = sorted(set(base.options) & set(derived.options))
        if clash and strategy["OPTIONS"] == "INCLUDING":
            raise ValidationError(
                f"Options {', '.join(clash)} are set by both {base.identifier} and the new table "
                "(use OVERWRITING OPTIONS)."
            )
        options = {**base.options, **derived.options}

    partitions = derived.partition_keys
    if strategy["PARTITIONS"] == "INCLUDING" and base.partition_keys:
        if derived.partition_keys:
            raise ValidationError(
                f"{base.identifier} is partitioned; the new table cannot repartition it unless EXCLUDING PARTITIONS."
            )
        partitions = base.partition_keys

    watermark = derived.watermark
    if base.watermark is not None and strategy["WATERMARKS"] != "EXCLUDING" and watermark is None:
        watermark = base.watermark
    elif base.watermark is not None and watermark is not None and strategy["WATERMARKS"] == "INCLUDING":
        raise ValidationError(f"{base.identifier} has a watermark; use OVERWRITING WATERMARKS to replace it.")

    primary_key = derived.primary_key or (base.primary_key if strategy["CONSTRAINTS"] == "INCLUDING" else ())
    return replace(
        base,
        identifier=derived.identifier,
        columns=tuple(columns),
        options=options,
        partition_keys=tuple(partitions),
        watermark=watermark,
        primary_key=tuple(primary_key),
        comment=derived.comment,
        temporary=derived.temporary,
    )
