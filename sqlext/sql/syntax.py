"""Reading SQL text in the ``flink`` dialect: its tokens, its sqlglot tree, parse errors that underline the
place and show the statement's syntax, and table names from trees and tokens."""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from sqlext.errors import ParseError
from sqlext.sql.dialect import Flink, unicode_string_value
from sqlext.table import TableIdentifier


def flink_tokens(sql: str) -> list[Token]:
    """Flink's tokens; a text that only Spark's string rules read (``'it\\'s'``) gets Spark's, so that
    Spark's own statements still pass through (a sqlext statement then fails in its parse, naming it)."""
    try:
        return list(Flink().tokenize(sql))
    except TokenError as flink_error:
        try:
            return list(Spark().tokenize(sql))
        except TokenError:
            raise ParseError(f"Cannot read statement: {flink_error}", statement=sql) from flink_error


def parse_tree(sql: str) -> exp.Expr:
    return parse_part(sql, sql)


def parse_part(text: str, statement: str, prefix: int = 0, start: int = 0) -> exp.Expr:
    """The sqlglot tree of ``text`` in the Flink dialect. ``text`` is ``prefix`` characters of its own followed
    by a part of ``statement`` from its character ``start`` on (``text`` is ``statement`` by default): a parse
    error names ``statement`` and points into it."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(text, read=Flink)
    except SqlglotParseError as exc:
        raise parse_error(statement, _moved(exc, statement, prefix, start)) from None
    except TokenError as exc:  # Spark's string escapes ('it\'s'): not Flink SQL
        detail = exc if text == statement else "a string is not closed as Flink SQL reads it (a quote is doubled)"
        raise ParseError(f"Cannot read statement: {detail}", statement=statement) from None
    # U&'...' as the plain string it stands for: Spark SQL, which runs the queries, has no such literal.
    return tree.transform(
        lambda node: (
            exp.Literal.string(unicode_string_value(node.this)) if isinstance(node, exp.UnicodeString) else node
        )
    )


def _moved(exc: SqlglotParseError, statement: str, prefix: int, start: int) -> SqlglotParseError:
    """``exc`` with its line and column in ``statement`` (see :func:`parse_part`)."""
    if not exc.errors or (prefix == 0 and start == 0):
        return exc
    detail = dict(exc.errors[0])
    line, column = detail.get("line"), detail.get("col")
    if line and column:
        first_line = statement.count("\n", 0, start) + 1
        if line == 1:
            detail["col"] = start - (statement.rfind("\n", 0, start) + 1) + column - prefix
        detail["line"] = first_line + line - 1
    return SqlglotParseError(str(exc), errors=[detail])


#: What each statement sqlext parses looks like, for parse errors (keyed by its leading keyword).
SYNTAX = {
    "CREATE TABLE": (
        "CREATE [TEMPORARY] TABLE [IF NOT EXISTS] [catalog.][db.]name (column type [NOT NULL] [COMMENT '...'] "
        "| column AS expression | column type METADATA [FROM 'key'] [VIRTUAL], ... "
        "[, WATERMARK FOR column AS column - INTERVAL 'n' unit] [, PRIMARY KEY (column, ...) NOT ENFORCED]) "
        "[COMMENT '...'] [PARTITIONED BY (column, ...)] WITH ('key' = 'value', ...) "
        "[LIKE table [(INCLUDING|EXCLUDING|OVERWRITING feature ...)]]"
    ),
    "CREATE DATABASE": "CREATE DATABASE [IF NOT EXISTS] name [COMMENT '...'] [WITH ('key' = 'value', ...)]",
    "INSERT": "[WITH ...] INSERT INTO|OVERWRITE [db.]table [PARTITION (key = 'value', ...)] SELECT ...",
    "DROP": "DROP [TEMPORARY] TABLE [IF EXISTS] [db.]table",
    "ALTER": (
        "ALTER TABLE [IF EXISTS] [db.]table SET ('key' = 'value', ...) | RESET ('key', ...) "
        "| ADD <component> | ADD (<component>, ...) | MODIFY <component> | MODIFY (<component>, ...) "
        "| RENAME column TO new_name | DROP column | DROP (column, ...) | DROP WATERMARK | DROP PRIMARY KEY, "
        "<component>: column type [NOT NULL] [COMMENT '...'] [FIRST | AFTER column] | column AS expression [...] "
        "| WATERMARK FOR column AS expression | PRIMARY KEY (column, ...) NOT ENFORCED; "
        "and Hive's ADD COLUMNS (column type [COMMENT '...'], ...) [CASCADE]"
    ),
    "DESCRIBE": "DESCRIBE|DESC [db.]table",
    "USE": "USE database",
}


def _syntax(sql: str) -> str | None:
    words = [t.text.upper() for t in flink_tokens(sql)[:3] if t.text.upper() != "TEMPORARY"]
    if words[:1] == ["CREATE"]:
        return SYNTAX.get(" ".join(words[:2]).replace("SCHEMA", "DATABASE"))
    if words[:1] == ["WITH"]:
        return SYNTAX["INSERT"]
    return SYNTAX.get({"DESC": "DESCRIBE"}.get(words[0], words[0])) if words else None


def parse_error(sql: str, exc: SqlglotParseError) -> ParseError:
    detail = exc.errors[0] if exc.errors else {}
    line, column = detail.get("line"), detail.get("col")
    description = detail.get("description", str(exc))
    highlight = detail.get("highlight") or ""
    where = f" at line {line}, column {column}" if line else ""
    near = f" near '{highlight}'" if highlight else ""
    syntax = _syntax(sql)
    expected = f"\nExpected: {syntax}" if syntax else ""
    return ParseError(
        f"Cannot parse statement{where}{near}: {description}.\n  {_underlined(sql, line, column, highlight)}{expected}",
        statement=sql,
        line=line,
        column=column,
    )


def _underlined(sql: str, line: int | None, column: int | None, highlight: str) -> str:
    """The statement with the offending token underlined (``^^^``) below its line."""
    lines = sql.splitlines() or [sql]
    if not line or not column or line > len(lines):
        return sql
    width = max(len(highlight), 1)
    start = max(column - width, 0)
    marker = " " * start + "^" * width
    shown = [*lines[:line], marker, *lines[line:]]
    return "\n  ".join(shown)


def string_value(token: Token, sql: str) -> str:
    if token.token_type == TokenType.UNICODE_STRING:
        return unicode_string_value(token.text)
    if token.token_type != TokenType.STRING:
        raise ParseError(
            f"Expected a quoted string, got '{token.text}' in: {sql}",
            statement=sql,
            line=token.line,
            column=token.col,
        )
    return token.text


def token_identifier(sql: str, tokens: Sequence[Token]) -> TableIdentifier:
    parts = [t.text for t in tokens if t.token_type != TokenType.DOT]
    if not parts or len(parts) > 3 or any(t.token_type == TokenType.STRING for t in tokens):
        raise ParseError(f"Expected a table name [catalog.][database.]table, got: {sql}", statement=sql)
    return TableIdentifier.parse(".".join(parts), default_database="")


def table_identifier(table: exp.Table) -> TableIdentifier:
    """The table's identifier; an unqualified name gets database "" (the session's current one)."""
    return TableIdentifier.parse(".".join(p for p in (table.catalog, table.db, table.name) if p), default_database="")
