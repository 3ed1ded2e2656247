"""``ALTER TABLE``'s column DDL, read from tokens into :class:`~sqlext.sql.statements.AlterTableSchema`.

Flink's forms: ``ADD <component>``, ``ADD (<component>, ...)``, ``MODIFY`` the same, ``RENAME a TO b``,
``DROP c``, ``DROP (c, ...)``, ``DROP WATERMARK``, ``DROP PRIMARY KEY``, after ``ALTER TABLE [IF EXISTS] t``.
A component is a column written as in ``CREATE TABLE`` (physical, computed or metadata, with ``NOT NULL`` and
``COMMENT``) and then ``FIRST`` or ``AFTER column``, a ``WATERMARK FOR ...`` or a ``PRIMARY KEY (...) NOT
ENFORCED``; each is read by the ``CREATE TABLE`` reader, so what CREATE accepts, ALTER accepts.

The forms Spark or Hive share (``ADD COLUMN(S) [(]...[)] [CASCADE | RESTRICT]``, ``RENAME COLUMN a TO b``,
``DROP COLUMN(S) [IF EXISTS] ...``) mean the same, and are sqlext's only for a sqlext table (the session
decides); one that does not parse here is Spark's, unless it names a sqlext table. Spark's ``ALTER|CHANGE
COLUMN`` and Hive's ``REPLACE COLUMNS`` would change a sqlext table's metastore columns behind its definition
and partitions: they are refused on a sqlext table, naming Flink's form.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlext.errors import ParseError, SqlextError, ValidationError
from sqlext.sql.create_table import schema_elements
from sqlext.sql.ownership import SHARED, alter_table_form
from sqlext.sql.schema_change import (
    AddSchema,
    DropColumns,
    DropPrimaryKey,
    DropWatermark,
    ModifySchema,
    PlacedColumn,
    Position,
    RenameColumn,
    SchemaChange,
)
from sqlext.sql.statements import AlterTableSchema, Passthrough, Statement
from sqlext.sql.syntax import SYNTAX, parse_part, token_identifier
from sqlext.table import Watermark

#: What a component is read as: the element list of this CREATE TABLE.
_CREATE_PREFIX = "CREATE TABLE x ("
_NAMES = (TokenType.VAR, TokenType.IDENTIFIER)


def parse_alter_schema(sql: str, tokens: list[Token]) -> Statement | None:
    """The statement, if ``tokens`` are ALTER TABLE's column DDL (see the module docstring); else None."""
    form = alter_table_form(tokens)
    if form is None:
        return None
    kind, at = form
    words = [t.text.upper() for t in tokens]
    if_exists = words[2:4] == ["IF", "EXISTS"]
    target = token_identifier(sql, tokens[4 if if_exists else 2 : at])
    try:
        change, cascade = _change(sql, tokens, at)
    except SqlextError as exc:
        if kind == SHARED:
            return Passthrough(sql, guard=target, error=exc)  # Spark's to parse, unless the table is sqlext's
        raise
    return AlterTableSchema(sql, target, change, if_exists, kind == SHARED, cascade)


def _expected(sql: str, what: str) -> ParseError:
    return ParseError(f"Expected {what}, got: {sql}\nExpected: {SYNTAX['ALTER']}", statement=sql)


def _change(sql: str, tokens: list[Token], at: int) -> tuple[SchemaChange, bool | None]:
    action = tokens[at].text.upper()
    rest = tokens[at + 1 :]
    if action in ("ALTER", "CHANGE", "REPLACE"):
        raise ValidationError(
            f"Spark's and Hive's ALTER TABLE ... {action} {'COLUMNS' if action == 'REPLACE' else 'COLUMN'} would "
            "change the metastore columns of a sqlext table without its partitions and its definition. Use Flink's "
            "ALTER TABLE t MODIFY (column new_type [COMMENT '...'] [FIRST | AFTER column]) or ALTER TABLE t RENAME "
            f"column TO new_name.\nExpected: {SYNTAX['ALTER']}",
            statement=sql,
        )
    if action == "RENAME":
        return _rename(sql, rest), None
    if action == "DROP":
        return _drop(sql, rest), None
    cascade, spark_form = None, bool(rest) and rest[0].text.upper() in ("COLUMN", "COLUMNS")
    if spark_form:
        rest = rest[1:]
        if rest and rest[-1].text.upper() in ("CASCADE", "RESTRICT"):
            cascade, rest = rest[-1].text.upper() == "CASCADE", rest[:-1]
    if not rest:
        raise _expected(sql, f"a column after {action}")
    items = _items(sql, rest, several=spark_form)
    columns, watermark, key = _components(sql, items)
    if action == "ADD":
        return AddSchema(columns, watermark, key), cascade
    return ModifySchema(columns, watermark, key), cascade


def _items(sql: str, tokens: list[Token], several: bool) -> list[list[Token]]:
    """The components: inside one pair of parentheses, or the tokens themselves (one component, unless
    ``several``: Spark's ``ADD COLUMNS a INT, b INT``), split at top-level commas."""
    parenthesized = tokens[0].token_type == TokenType.L_PAREN
    if parenthesized:
        if tokens[-1].token_type != TokenType.R_PAREN or _closing(tokens) != len(tokens) - 1:
            raise _expected(sql, "one parenthesized list of components")
        tokens = tokens[1:-1]
    items: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth == 0 and token.token_type == TokenType.COMMA:
            items.append([])
        else:
            items[-1].append(token)
    if any(not item for item in items):
        raise _expected(sql, "a component between commas")
    if len(items) > 1 and not (parenthesized or several):
        raise _expected(sql, "parentheses around more than one component: (component, ...)")
    return items


def _closing(tokens: list[Token]) -> int:
    """The index of the parenthesis that closes ``tokens[0]``."""
    depth = 0
    for index, token in enumerate(tokens):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth == 0:
            return index
    return -1


def _components(
    sql: str, items: list[list[Token]]
) -> tuple[tuple[PlacedColumn, ...], Watermark | None, tuple[str, ...] | None]:
    columns: list[PlacedColumn] = []
    watermark, key = None, None
    for item in items:
        position, item = _position(item)
        found, found_watermark, found_key = schema_elements(sql, _elements(sql, item))
        if position is not None and not found:
            raise _expected(sql, "FIRST or AFTER only after a column")
        columns.extend(PlacedColumn(column, position) for column in found)
        if found_watermark is not None:
            if watermark is not None:
                raise ParseError(f"More than one WATERMARK in: {sql}", statement=sql)
            watermark = found_watermark
        if found_key:
            if key is not None:
                raise ParseError(f"More than one PRIMARY KEY in: {sql}", statement=sql)
            key = tuple(found_key)
    return tuple(columns), watermark, key


def _position(item: list[Token]) -> tuple[Position | None, list[Token]]:
    """A component's trailing ``FIRST`` or ``AFTER column``, and the tokens before it."""
    if len(item) > 2 and item[-1].text.upper() == "FIRST" and item[-1].token_type != TokenType.IDENTIFIER:
        return Position(first=True), item[:-1]
    if len(item) > 3 and item[-2].text.upper() == "AFTER" and item[-1].token_type in _NAMES:
        return Position(after=item[-1].text), item[:-2]
    return None, item


def _elements(sql: str, item: list[Token]) -> list[exp.Expr]:
    """One component, read as the element list of a CREATE TABLE (errors point into the statement)."""
    start, end = item[0].start, item[-1].end + 1
    tree = parse_part(_CREATE_PREFIX + sql[start:end] + ")", sql, len(_CREATE_PREFIX), start)
    schema = tree.this if isinstance(tree, exp.Create) else None
    if not isinstance(schema, exp.Schema) or len(schema.expressions) != 1:
        raise _expected(sql, f"one component, got '{sql[start:end]}'")
    return list(schema.expressions)


def _name(sql: str, token: Token) -> str:
    if token.token_type not in _NAMES and not token.text.replace("_", "").isalnum():
        raise _expected(sql, f"a column name, not '{token.text}'")
    return token.text


def _rename(sql: str, rest: list[Token]) -> RenameColumn:
    if rest and rest[0].text.upper() == "COLUMN":
        rest = rest[1:]
    if len(rest) != 3 or rest[1].text.upper() != "TO":
        raise _expected(sql, "RENAME column TO new_name")
    return RenameColumn(_name(sql, rest[0]), _name(sql, rest[2]))


def _drop(sql: str, rest: list[Token]) -> SchemaChange:
    words = [t.text.upper() for t in rest]
    if words == ["WATERMARK"] and rest[0].token_type != TokenType.IDENTIFIER:
        return DropWatermark()
    if words in (["PRIMARY", "KEY"], ["PRIMARY KEY"]):
        return DropPrimaryKey()
    if_exists, spark = False, words[:1] in (["COLUMN"], ["COLUMNS"])
    if spark:
        rest, words = rest[1:], words[1:]
        if words[:2] == ["IF", "EXISTS"]:
            rest, if_exists = rest[2:], True
    if not rest:
        raise _expected(sql, "DROP column | DROP (column, ...)")
    names = [tokens[0] if len(tokens) == 1 else None for tokens in _items(sql, rest, several=if_exists or spark)]
    if any(token is None for token in names):
        raise _expected(sql, "DROP column | DROP (column, ...)")
    return DropColumns(tuple(_name(sql, token) for token in names if token is not None), if_exists)
