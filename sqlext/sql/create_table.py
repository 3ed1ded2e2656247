"""``CREATE TABLE`` (Flink DDL, Hive-dialect DDL of Flink's Hive streaming docs, ``LIKE``) and ``CREATE
DATABASE``, from sqlglot's tree (or tokens, for ``LIKE``) to a :class:`~sqlext.sql.statements.Statement`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlext.errors import ParseError, ValidationError
from sqlext.sql.dialect import MetadataColumnConstraint, string_literal_value
from sqlext.sql.statements import CreateDatabase, CreateTable, CreateTableLike, Passthrough, Statement
from sqlext.sql.syntax import parse_tree, table_identifier, token_identifier
from sqlext.sql.types import flink_text
from sqlext.table import Column, TableDefinition, Watermark

LIKE_STRATEGIES = ("INCLUDING", "EXCLUDING", "OVERWRITING")
LIKE_FEATURES = ("ALL", "CONSTRAINTS", "GENERATED", "METADATA", "OPTIONS", "PARTITIONS", "WATERMARKS")


def top_level_like(tokens: list[Token]) -> int | None:
    """Index of a ``LIKE`` token outside parentheses (Flink's ``CREATE TABLE ... LIKE base``)."""
    depth = 0
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type == TokenType.LIKE:
            return index
    return None


def create_table_like(sql: str, tokens: list[Token], like_at: int) -> CreateTableLike:
    """``CREATE TABLE t [(...)] [PARTITIONED BY (...)] [WITH (...)] LIKE base [(like options)]``."""
    head = sql[: tokens[like_at].start].strip()
    rest = tokens[like_at + 1 :]
    paren = next((i for i, t in enumerate(rest) if t.token_type == TokenType.L_PAREN), len(rest))
    base = token_identifier(sql, rest[:paren])
    words = [t.text.upper() for t in rest[paren + 1 : -1]] if paren < len(rest) else []
    if paren < len(rest) and rest[-1].token_type != TokenType.R_PAREN:
        raise ParseError(f"Expected LIKE table [(like options)], got: {sql}", statement=sql)
    pairs = [tuple(words[i : i + 2]) for i in range(0, len(words), 2)]
    for pair in pairs:
        if len(pair) != 2 or pair[0] not in LIKE_STRATEGIES or pair[1] not in LIKE_FEATURES:
            raise ParseError(
                f"Invalid LIKE option '{' '.join(pair)}': expected {'|'.join(LIKE_STRATEGIES)} followed by one of "
                f"{', '.join(LIKE_FEATURES)}.",
                statement=sql,
            )
    tree = parse_tree(head)  # CREATE TABLE t [(...)] [...] [WITH (...)] parses on its own
    if not isinstance(tree, exp.Create):
        raise ParseError(f"Expected CREATE TABLE ... LIKE table: {sql}", statement=sql)
    options, partition_keys, comment = _create_properties(sql, tree)
    schema = tree.this
    items = schema.expressions if isinstance(schema, exp.Schema) else []
    columns, watermark, primary_key = schema_elements(sql, items)
    return CreateTableLike(
        sql,
        identifier=table_identifier(schema.this if isinstance(schema, exp.Schema) else schema),
        if_not_exists=bool(tree.args.get("exists")),
        temporary="TEMPORARY" in head.upper().split("TABLE", 1)[0],
        columns=tuple(columns),
        options=options,
        partition_keys=tuple(partition_keys),
        watermark=watermark,
        primary_key=tuple(primary_key),
        comment=comment,
        like=base,
        like_options=tuple(f"{a} {b}" for a, b in pairs),
    )


def create_database(sql: str, tree: exp.Create) -> CreateDatabase:
    options, _, comment = _create_properties(sql, tree)
    return CreateDatabase(sql, tree.this.name.lower(), bool(tree.args.get("exists")), comment, options)


#: Table properties that make Hive-dialect DDL a sqlext table (Flink's Hive streaming sink).
#: TableDefinition.extra marker: Hive-dialect DDL without LOCATION; the catalog derives the path.
PATH_FROM_DATABASE = "path-from-database"
HIVE_STREAMING_PREFIXES = ("sink.partition-commit.", "partition.time-extractor.", "sink.rolling-policy.")


def create_table(sql: str, tree: exp.Create) -> Statement:
    options, partition_keys, comment = _create_properties(sql, tree)
    hive_columns = _hive_streaming(tree, options)
    if "connector" not in options:
        return Passthrough(sql)  # plain Spark/Hive DDL
    schema = tree.this
    table_node = schema.this if isinstance(schema, exp.Schema) else schema
    ident = table_identifier(table_node)
    items = [*(schema.expressions if isinstance(schema, exp.Schema) else []), *(hive_columns or [])]
    columns, watermark, primary_key = schema_elements(sql, items)
    temporary = bool(tree.args.get("temporary")) or "TEMPORARY" in sql.upper().split("TABLE", 1)[0]
    definition = TableDefinition(
        identifier=ident,
        columns=tuple(columns),
        options=options,
        partition_keys=tuple(partition_keys),
        watermark=watermark,
        primary_key=tuple(primary_key),
        comment=comment,
        temporary=temporary,
        extra={PATH_FROM_DATABASE: "true"} if hive_columns is not None and "path" not in options else {},
    )
    return CreateTable(sql, definition, bool(tree.args.get("exists")))


def _hive_streaming(tree: exp.Create, options: dict[str, str]) -> list[exp.ColumnDef] | None:
    """Hive-dialect DDL as Flink's Hive streaming docs write it (``PARTITIONED BY (dt STRING) STORED AS
    parquet [LOCATION '...'] TBLPROPERTIES ('sink.partition-commit...' ...)``) is a ``filesystem`` table:
    fill in ``connector``, ``format`` and ``path`` (the catalog puts a missing path under the database
    location) and return the partition columns Hive declares only in PARTITIONED BY."""
    if "connector" in options or not any(key.startswith(HIVE_STREAMING_PREFIXES) for key in options):
        return None
    properties = tree.args.get("properties")
    found = {type(p): p for p in properties.expressions} if properties else {}
    file_format = found.get(exp.FileFormatProperty)
    if file_format is None:
        return None
    options["connector"] = "filesystem"
    options["format"] = file_format.this.name.lower()
    location = found.get(exp.LocationProperty)
    if location is not None:
        options["path"] = location.this.this
    partitioned = found.get(exp.PartitionedByProperty)
    return [e for e in partitioned.this.expressions if isinstance(e, exp.ColumnDef)] if partitioned else []


def _create_properties(sql: str, tree: exp.Create) -> tuple[dict[str, str], list[str], str | None]:
    """WITH options, PARTITIONED BY keys and COMMENT of a CREATE TABLE."""
    properties = tree.args.get("properties")
    options: dict[str, str] = {}
    partition_keys: list[str] = []
    comment = None
    for prop in properties.expressions if properties else []:
        if type(prop) is exp.Property and isinstance(prop.this, exp.Literal) and prop.this.is_string:
            value = prop.args.get("value")
            text = string_literal_value(value)
            if text is None:
                raise ValidationError(
                    f"Option '{prop.this.this}' must have a quoted string value, got {value.sql() if value else '?'}.",
                    statement=sql,
                    option=prop.this.this,
                )
            options[prop.this.this] = text
        elif isinstance(prop, exp.PartitionedByProperty):
            partition_keys = [e.name for e in prop.this.expressions]
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.this
    return options, partition_keys, comment


def schema_elements(sql: str, items: Sequence[exp.Expr]) -> tuple[list[Column], Watermark | None, list[str]]:
    """Columns, watermark and primary key of a CREATE TABLE's element list (or of ALTER TABLE's components)."""
    columns: list[Column] = []
    watermark = None
    primary_key: list[str] = []
    for item in items:
        if isinstance(item, exp.WatermarkColumnConstraint):
            watermark = _watermark(item)
        elif isinstance(item, exp.PrimaryKey):
            primary_key = [e.name for e in item.expressions]
        elif isinstance(item, exp.ColumnDef):
            columns.append(_column(item, flink_text))
        else:
            raise ValidationError(f"Unsupported table element '{item.sql()}'.", statement=sql)
    return columns, watermark, primary_key


def _column(item: exp.ColumnDef, flink_text: Any) -> Column:
    kind = item.args.get("kind")
    comment = None
    expression = None
    metadata_key = None
    virtual = False
    nullable = True
    for constraint in item.args.get("constraints") or []:
        ckind = constraint.args.get("kind")
        if isinstance(ckind, exp.CommentColumnConstraint):
            comment = ckind.this.this
        elif isinstance(ckind, exp.ComputedColumnConstraint):
            expression = ckind.this.sql(dialect="spark")
        elif isinstance(ckind, MetadataColumnConstraint):
            key = ckind.args.get("this")
            metadata_key = key.this if isinstance(key, exp.Literal) else item.name
            virtual = bool(ckind.args.get("virtual"))
        elif isinstance(ckind, exp.NotNullColumnConstraint):
            nullable = False
    try:
        type_text = flink_text(kind) if isinstance(kind, exp.DataType) else ""
    except ValidationError as exc:
        raise ValidationError(f"Column '{item.name}': {exc.message}", value=exc.value) from None
    if not type_text and expression is None:
        raise ValidationError(f"Column '{item.name}' has no type.")
    return Column(item.name, type_text, comment, nullable, expression, metadata_key, virtual)


def _watermark(node: exp.WatermarkColumnConstraint) -> Watermark:
    column = node.this.name
    expression = node.expression
    text = expression.sql(dialect="spark")
    if isinstance(expression, exp.Column) and expression.name == column:
        return Watermark(column, text, timedelta(0))
    if isinstance(expression, exp.Sub) and isinstance(expression.this, exp.Column) and expression.this.name == column:
        delay = _interval(expression.expression)
        if delay is not None:
            return Watermark(column, text, delay)
    return Watermark(column, text, None)


_UNITS = {"MILLISECOND": 0.001, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def _interval(node: exp.Expr) -> timedelta | None:
    if not isinstance(node, exp.Interval):
        return None
    unit = (node.unit.name if node.unit else "SECOND").upper().rstrip("S")
    amount = node.this.this if isinstance(node.this, exp.Literal) else None
    if amount is None or unit not in _UNITS:
        return None
    return timedelta(seconds=float(amount) * _UNITS[unit])
