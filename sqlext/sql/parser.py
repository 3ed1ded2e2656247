"""sqlext's statements, parsed with sqlglot in the ``flink`` dialect (:mod:`sqlext.sql.dialect`) into the
:mod:`~sqlext.sql.statements`: splitting a text into statements, telling sqlext's from Spark's (the rule is
:mod:`sqlext.sql.ownership`'s), and the statements read from tree or tokens (``CREATE`` in
:mod:`~sqlext.sql.create_table`). Statements sqlglot has no node for (``RESET``, ``SHOW CREATE TABLE``,
``SHOW TABLES``, ``ALTER TABLE ... RESET``, ``SHOW JOBS``, ``STOP JOB``) are read from sqlglot's tokens, and
so is ``ALTER TABLE``'s column DDL (:mod:`~sqlext.sql.alter_table`).
Anything else is :class:`Passthrough`: Spark runs it.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlext.errors import ParseError, SqlextError, ValidationError
from sqlext.sql.alter_table import parse_alter_schema
from sqlext.sql.create_table import create_database, create_table, create_table_like, top_level_like
from sqlext.sql.dialect import string_literal_value
from sqlext.sql.hints import options_hint
from sqlext.sql.ownership import (
    FLINK_RESET,
    FLINK_SET,
    SQL_DIALECT,
    SQL_DIALECTS,
    is_flink_form,
    read_name,
    spark_takes_key,
    unquoted_setting_key,
    whole_name,
)
from sqlext.sql.statements import (
    AlterTableOptions,
    Describe,
    DropTable,
    Insert,
    Passthrough,
    Query,
    ResetOption,
    SetOption,
    ShowCreateTable,
    ShowJobs,
    ShowTables,
    Statement,
    StopJob,
)
from sqlext.sql.syntax import flink_tokens, parse_tree, string_value, table_identifier, token_identifier
from sqlext.table import TableIdentifier

#: Words a query starts with; one with Flink's ``/*+ OPTIONS(...) */`` hint after a table is sqlext's.
_QUERY_STARTS = ("SELECT", "WITH", "FROM", "(")
_OPTIONS_HINT = re.compile(r"/\*\+\s*OPTIONS\s*\(", re.IGNORECASE)

# -- splitting ------------------------------------------------------------------------------------


def split_statements(text: str) -> list[str]:
    """Split a script on ``;`` outside strings and comments; empty statements are dropped."""
    statements, start = [], 0
    for token in flink_tokens(text):
        if token.token_type == TokenType.SEMICOLON:
            statements.append(text[start : token.start])
            start = token.end + 1
    statements.append(text[start:])
    return [s.strip() for s in statements if flink_tokens(s)]


def parse_statements(text: str) -> list[Statement]:
    return [parse_statement(sql) for sql in split_statements(text)]


# -- parsing --------------------------------------------------------------------------------------


def parse_statement(sql: str) -> Statement:
    """Parse one statement (see the module docstring for what is sqlext's); errors name the statement."""
    try:
        return _parse_statement(sql.strip().rstrip(";").strip())
    except SqlextError as exc:
        if exc.statement is None:
            exc.statement = sql
        raise


def _parse_statement(sql: str) -> Statement:
    try:
        tokens = flink_tokens(sql)
        if tokens and tokens[0].token_type in (TokenType.SHOW, TokenType.COMMAND):
            # Spark's tokenizer keeps the rest of a command as one string: read its words too.
            tokens = tokens[:1] + flink_tokens(sql[tokens[0].end + 1 :])
    except ParseError:
        return Passthrough(sql)  # neither Flink's nor Spark's string rules read it: Spark's own error
    if not tokens:
        return Passthrough(sql)
    words = [t.text.upper() for t in tokens[:4]]
    try:
        return _parse_own(sql, tokens, words)
    except SqlextError as exc:
        inserts = words[0] == "INSERT" or (words[0] == "WITH" and any(t.token_type == TokenType.INSERT for t in tokens))
        if (
            is_flink_form(tokens)
            or unquoted_setting_key(sql[tokens[0].start :])
            or (not inserts and words[0] in _QUERY_STARTS and _OPTIONS_HINT.search(sql))
        ):
            raise  # Flink's form (Spark rejects a hint after a table too): sqlext's error says more
        if inserts:
            return Passthrough(sql, guard=_insert_target(tokens), error=exc)
        return Passthrough(sql)


def _parse_own(sql: str, tokens: list[Token], words: list[str]) -> Statement:
    """sqlext's statement, or Passthrough; raises when a statement sqlext reads does not parse."""
    by_tokens = _parse_by_tokens(sql, tokens, words)
    if by_tokens is not None:
        return by_tokens
    first = words[0]
    if first == "CREATE":
        return _create(sql, tokens)
    if first in ("DESCRIBE", "DESC"):
        start = 2 if words[1:2] == ["TABLE"] else 1
        target = whole_name(tokens, start)
        return Describe(sql, target) if target is not None else Passthrough(sql)
    if first == "DROP":
        return _drop(sql, tokens, words)
    if first == "ALTER" and is_flink_form(tokens):
        return _from_tree(sql, parse_tree(sql))
    if first == "INSERT" or (first == "WITH" and any(t.token_type == TokenType.INSERT for t in tokens)):
        if _insert_target(tokens) is None:
            return Passthrough(sql)  # INSERT INTO IDENTIFIER(...), OVERWRITE DIRECTORY, ...: Spark's
        return _from_tree(sql, parse_tree(sql))  # [WITH cte AS (...)] INSERT INTO ...
    if first in _QUERY_STARTS and _OPTIONS_HINT.search(sql):
        return _query(sql, parse_tree(sql))
    return Passthrough(sql)


def _query(sql: str, tree: exp.Expr) -> Statement:
    """A query with ``OPTIONS`` hints on its tables (:class:`Query`); without one, Spark's."""
    if not isinstance(tree, exp.Query):
        return Passthrough(sql)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    hints = tuple(
        (table_identifier(node), hint)
        for node in tree.find_all(exp.Table)
        if node.name and (node.db or node.name.lower() not in ctes) and (hint := options_hint(node))
    )
    return Query(sql, tree, hints) if hints else Passthrough(sql)


def query_tree(sql: str) -> exp.Query | None:
    """The tree of a query that reads a table (``SELECT ... FROM``, ``WITH ...``), for the session to tell whether it
    reads a sqlext table Spark's view of which lacks columns; None for anything else, or a query sqlext's dialect
    cannot read (Spark's then)."""
    try:
        tokens = flink_tokens(sql)
    except ParseError:
        return None
    if not tokens or tokens[0].text.upper() not in _QUERY_STARTS:
        return None
    if not any(token.token_type in (TokenType.FROM, TokenType.JOIN) for token in tokens):
        return None
    try:
        tree = parse_tree(sql.strip().rstrip(";"))
    except Exception:  # whatever sqlglot makes of a Spark query it cannot read: Spark answers it
        return None
    return tree if isinstance(tree, exp.Query) else None


def _create(sql: str, tokens: list[Token]) -> Statement:
    like_at = top_level_like(tokens)
    if not is_flink_form(tokens):
        plain = _plain_create_like(sql, tokens, like_at)
        return plain if plain is not None else Passthrough(sql)
    if like_at is not None:
        return create_table_like(sql, tokens, like_at)
    statement = _from_tree(sql, parse_tree(sql))
    if isinstance(statement, Passthrough) and tokens[1].text.upper() in ("TABLE", "TEMPORARY"):
        # Flink's own message: WITH (...) options without one that names the connector.
        raise ValidationError(
            "Table options do not contain an option key 'connector' for discovering a connector.",
            statement=sql,
            option="connector",
        )
    return statement


def _plain_create_like(sql: str, tokens: list[Token], like_at: int | None) -> Statement | None:
    """``CREATE TABLE [IF NOT EXISTS] b LIKE a`` and nothing else: Spark's form too (the session decides)."""
    words = [t.text.upper() for t in tokens]
    if like_at is None or words[:2] != ["CREATE", "TABLE"]:
        return None
    start = 5 if words[2:5] == ["IF", "NOT", "EXISTS"] else 2
    if whole_name(tokens[:like_at], start) is None or whole_name(tokens, like_at + 1) is None:
        return None
    statement = create_table_like(sql, tokens, like_at)
    from dataclasses import replace

    return replace(statement, plain=True)


def _drop(sql: str, tokens: list[Token], words: list[str]) -> Statement:
    """``DROP [TEMPORARY] TABLE [IF EXISTS] name``, nothing more."""
    temporary = words[1:2] == ["TEMPORARY"]
    at = 2 if temporary else 1
    if len(tokens) <= at or tokens[at].text.upper() != "TABLE":
        if temporary:
            raise ParseError(f"Expected DROP TEMPORARY TABLE [IF EXISTS] name, got: {sql}", statement=sql)
        return Passthrough(sql)
    at += 1
    exists = [t.text.upper() for t in tokens[at : at + 2]] == ["IF", "EXISTS"]
    target = whole_name(tokens, at + 2 if exists else at)
    if target is None:
        if temporary:
            raise ParseError(f"Expected DROP TEMPORARY TABLE [IF EXISTS] name, got: {sql}", statement=sql)
        return Passthrough(sql)
    return DropTable(sql, target, exists, temporary)


def _insert_target(tokens: list[Token]) -> TableIdentifier | None:
    """The table an INSERT names after ``INTO|OVERWRITE [TABLE]``, or None."""
    words = [t.text.upper() for t in tokens]
    for index, word in enumerate(words[:-1]):
        if word in ("INTO", "OVERWRITE"):
            start = index + 2 if words[index + 1] == "TABLE" else index + 1
            if words[start : start + 1] in (["DIRECTORY"], ["LOCAL"]):
                return None  # INSERT OVERWRITE [LOCAL] DIRECTORY: no table
            read = read_name(tokens, start)
            calls = read is not None and read[1] < len(tokens) and tokens[read[1]].token_type == TokenType.L_PAREN
            if read is None or (calls and read[0].name == "identifier" and not read[0].database):
                return None  # IDENTIFIER(...) names the table
            return read[0]
    return None


def _parse_by_tokens(sql: str, tokens: list[Token], words: list[str]) -> Statement | None:
    """Statements read from tokens: SET/RESET, SHOW ..., ALTER ... RESET, jobs."""
    first = words[0]
    if first == "SET":
        return _set(sql, tokens)
    if first == "RESET":
        return _reset(sql, tokens)
    if words[:3] == ["SHOW", "CREATE", "TABLE"]:
        target = whole_name(tokens, 3)
        return ShowCreateTable(sql, target) if target is not None else Passthrough(sql)
    if words[:2] == ["SHOW", "TABLES"]:
        return _show_tables(sql, tokens)
    if words[:2] == ["SHOW", "JOBS"]:
        if len(tokens) != 2:
            raise ParseError(f"Expected SHOW JOBS, got: {sql}", statement=sql)
        return ShowJobs(sql)
    if words[:2] == ["STOP", "JOB"]:
        if len(tokens) != 3:
            raise ParseError(f"Expected STOP JOB 'job id', got: {sql}", statement=sql)
        return StopJob(sql, string_value(tokens[2], sql))
    if words[:2] == ["ALTER", "TABLE"] and (schema := parse_alter_schema(sql, tokens)) is not None:
        return schema
    if words[:2] == ["ALTER", "TABLE"] and is_flink_form(tokens) and any(t.text.upper() == "RESET" for t in tokens):
        return _alter_reset(sql, tokens)
    return None


def _set(sql: str, tokens: list[Token]) -> Statement:
    """``SET`` (list), Flink's ``SET 'k' = 'v'``, Flink's SQL client's ``SET k=v`` of a key that is sqlext's
    (:func:`~sqlext.sql.ownership.is_flink_key`), Spark's ``SET k`` (show); any other SET is Spark's."""
    if len(tokens) == 1:
        return SetOption(sql)
    if tokens[1].token_type in (TokenType.STRING, TokenType.UNICODE_STRING):
        if len(tokens) != 4 or tokens[2].token_type != TokenType.EQ:
            raise ParseError(f"Expected SET 'key' = 'value', got: {sql}", statement=sql)
        return _checked_setting(SetOption(sql, tokens[1].text, string_value(tokens[3], sql)))
    key = sql[tokens[0].end + 1 :].strip()
    if key and "=" not in key and not key.startswith("-") and not any(c.isspace() for c in key):
        return SetOption(sql, key.strip("`"))
    own = sql[tokens[0].start :]  # without the comments before it
    flink_key = unquoted_setting_key(own)
    if flink_key is None:
        return Passthrough(sql)  # Spark's SET k=v, SET -v, SET VAR, SET TIME ZONE ...
    flink = FLINK_SET.fullmatch(own)
    if flink is None or flink.group("key") != flink_key:
        raise ParseError(
            f"Expected SET key=value (a value with spaces quoted: key='a b') or SET 'key' = 'value', got: {sql}",
            statement=sql,
            option=flink_key,
        )
    value = flink.group("quoted") if flink.group("quoted") is not None else flink.group("value")
    return _checked_setting(SetOption(sql, flink_key, value))


def _checked_setting(statement: SetOption) -> SetOption:
    """A ``SET`` of ``table.sql-dialect`` to a dialect Flink has not is refused as Flink refuses it."""
    value = statement.value or ""
    if statement.key == SQL_DIALECT and value.strip().lower() not in SQL_DIALECTS:
        allowed = " or ".join(f"'{dialect}'" for dialect in SQL_DIALECTS)
        raise ValidationError(
            f"Invalid value for '{SQL_DIALECT}': '{value}'. Expected {allowed} (Flink's SQL dialects).",
            statement=statement.sql,
            option=SQL_DIALECT,
            value=value,
        )
    return statement


def _reset(sql: str, tokens: list[Token]) -> ResetOption:
    """``RESET``, Flink's ``RESET 'k'``, ``RESET k`` (Spark's, or Flink's SQL client's when Spark would refuse
    the key: the rest of the text is the key)."""
    if len(tokens) == 1:
        return ResetOption(sql)
    if tokens[1].token_type in (TokenType.STRING, TokenType.UNICODE_STRING):
        if len(tokens) != 2:
            raise ParseError(f"Expected RESET or RESET 'key', got: {sql}", statement=sql)
        return ResetOption(sql, string_value(tokens[1], sql), flink_form=True)
    key = sql[tokens[0].end + 1 :].strip()
    own = sql[tokens[0].start :]
    if FLINK_RESET.fullmatch(own) and unquoted_setting_key(own) is not None and not spark_takes_key(key):
        return ResetOption(sql, key, flink_form=True)
    return ResetOption(sql, key.strip("`"))


def _show_tables(sql: str, tokens: list[Token]) -> Statement:
    """``SHOW TABLES [IN|FROM db] [[LIKE] 'pattern']``; any other shape is Spark's."""
    rest, database, pattern = tokens[2:], None, None
    if rest and rest[0].text.upper() in ("IN", "FROM") and len(rest) >= 2 and rest[1].token_type != TokenType.STRING:
        read = read_name(rest, 1)
        if read is None or read[0].catalog is not None or read[0].database:
            return Passthrough(sql)  # a namespace of another catalog: Spark's
        database, rest = read[0].name, rest[read[1] :]
    if rest and rest[0].text.upper() == "LIKE":
        rest = rest[1:]
    if len(rest) == 1 and rest[0].token_type == TokenType.STRING:
        pattern, rest = rest[0].text, []
    return ShowTables(sql, database, pattern) if not rest else Passthrough(sql)


def _alter_reset(sql: str, tokens: list[Token]) -> AlterTableOptions:
    words = [t.text.upper() for t in tokens]
    reset_at = words.index("RESET")
    if words[1] != "TABLE" or reset_at < 3 or whole_name(tokens[:reset_at], 2) is None:
        raise ParseError(f"Expected ALTER TABLE name RESET ('key', ...), got: {sql}", statement=sql)
    keys_tokens = tokens[reset_at + 1 :]
    if (
        not keys_tokens
        or keys_tokens[0].token_type != TokenType.L_PAREN
        or keys_tokens[-1].token_type != TokenType.R_PAREN
    ):
        raise ParseError(f"Expected ALTER TABLE name RESET ('key', ...), got: {sql}", statement=sql)
    keys = [string_value(t, sql) for t in keys_tokens[1:-1] if t.token_type != TokenType.COMMA]
    return AlterTableOptions(sql, token_identifier(sql, tokens[2:reset_at]), reset_keys=tuple(keys))


def _from_tree(sql: str, tree: exp.Expr) -> Statement:
    if isinstance(tree, exp.Create):
        kind = (tree.args.get("kind") or "").upper()
        if kind == "TABLE":
            return create_table(sql, tree)
        if kind in ("DATABASE", "SCHEMA"):
            return create_database(sql, tree)
    if isinstance(tree, exp.Insert) and not isinstance(tree.this, exp.Directory):  # Spark writes directories
        return _insert(sql, tree)
    if isinstance(tree, exp.Alter):
        sets = [a for a in tree.args.get("actions") or [] if isinstance(a, exp.AlterSet)]
        options = {}
        for action in sets:
            for eq in action.expressions:
                value = string_literal_value(eq.expression) if isinstance(eq, exp.EQ) else None
                if value is not None and eq.this.is_string:
                    options[eq.this.this] = value
        if options:
            return AlterTableOptions(sql, table_identifier(tree.this), set_options=options)
    return Passthrough(sql)


def _insert(sql: str, tree: exp.Insert) -> Statement:
    target = tree.this
    static: dict[str, str] = {}
    if isinstance(target, exp.Schema):
        target = target.this
    if not isinstance(target, exp.Table) or not target.name:
        return Passthrough(sql)  # INSERT OVERWRITE DIRECTORY, IDENTIFIER(...): Spark's
    partition = target.args.get("partition") if isinstance(target, exp.Table) else None
    dynamic: list[str] = []
    for eq in partition.expressions if partition else []:
        if isinstance(eq, exp.EQ) and isinstance(eq.expression, exp.Literal):
            static[eq.this.name] = eq.expression.this
        else:
            dynamic.append(eq.name)  # Spark's dynamic partition; an error for a sqlext table
    query = tree.expression
    if query is None:
        raise ParseError(f"INSERT needs a query: {sql}", statement=sql)
    leading_with = tree.args.get("with_")
    if leading_with is not None and isinstance(query, exp.Query) and query.args.get("with_") is None:
        query = query.copy()
        query.set("with_", leading_with.copy())
    return Insert(sql, table_identifier(target), query, static, bool(tree.args.get("overwrite")), tuple(dynamic))
