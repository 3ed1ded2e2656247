"""sqlext's statements, parsed with sqlglot in the ``flink`` dialect (:mod:`sqlext.sql.dialect`) into the
:mod:`~sqlext.sql.statements`: splitting a text into statements, telling sqlext's from Spark's, and the
statements read from tree or tokens (``CREATE`` in :mod:`~sqlext.sql.create_table`). Statements sqlglot has no node
for (``RESET``, ``SHOW CREATE TABLE``, ``SHOW TABLES``, ``ALTER TABLE ... RESET``, ``SHOW JOBS``,
``STOP JOB``) are read from sqlglot's tokens. Anything else is :class:`Passthrough`: Spark runs it.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlext.errors import ParseError, SqlextError, ValidationError
from sqlext.sql.create_table import create_database, create_table, create_table_like, top_level_like
from sqlext.sql.dialect import string_literal_value
from sqlext.sql.statements import (
    AlterTableOptions,
    Describe,
    DropTable,
    Insert,
    Passthrough,
    ResetOption,
    SetOption,
    ShowCreateTable,
    ShowJobs,
    ShowTables,
    Statement,
    StopJob,
    UseDatabase,
)
from sqlext.sql.syntax import flink_tokens, parse_tree, string_value, table_identifier, token_identifier

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
    tokens = flink_tokens(sql)
    if tokens and tokens[0].token_type in (TokenType.SHOW, TokenType.COMMAND):
        # Spark's tokenizer keeps the rest of a command as one string: read its words too.
        tokens = tokens[:1] + flink_tokens(sql[tokens[0].end + 1 :])
    words = [t.text.upper() for t in tokens[:4]]
    if not words:
        raise ParseError("Empty statement.", statement=sql)
    by_tokens = _parse_by_tokens(sql, tokens, words)
    if by_tokens is not None:
        return by_tokens
    like_at = top_level_like(tokens) if words[0] == "CREATE" else None
    if like_at is not None:
        return create_table_like(sql, tokens, like_at)
    if words[0] in ("CREATE", "INSERT", "DROP", "DESCRIBE", "DESC", "USE", "ALTER"):
        return _from_tree(sql, parse_tree(sql))
    if words[0] == "WITH" and any(t.token_type == TokenType.INSERT for t in tokens):
        return _from_tree(sql, parse_tree(sql))  # WITH cte AS (...) INSERT INTO ...
    return Passthrough(sql)


def _parse_by_tokens(sql: str, tokens: list[Token], words: list[str]) -> Statement | None:
    """Statements read from tokens: SET/RESET (Flink's quoted form), SHOW ..., ALTER ... RESET, jobs."""
    first = words[0]
    if first == "SET":
        if len(tokens) == 1:
            return SetOption(sql)
        if tokens[1].token_type == TokenType.STRING:
            if len(tokens) != 4 or tokens[2].token_type != TokenType.EQ:
                raise ParseError(f"Expected SET 'key' = 'value', got: {sql}", statement=sql)
            return SetOption(sql, tokens[1].text, string_value(tokens[3], sql))
        return Passthrough(sql)  # Spark's SET k=v
    if first == "RESET":
        if len(tokens) == 1:
            return ResetOption(sql)
        if len(tokens) == 2:
            return ResetOption(sql, string_value(tokens[1], sql))
        raise ParseError(f"Expected RESET or RESET 'key', got: {sql}", statement=sql)
    if words[:3] == ["SHOW", "CREATE", "TABLE"]:
        return ShowCreateTable(sql, token_identifier(sql, tokens[3:]))
    if words[:2] == ["SHOW", "TABLES"]:
        rest = tokens[2:]
        if not rest:
            return ShowTables(sql)
        if rest[0].text.upper() in ("IN", "FROM") and len(rest) == 2:
            return ShowTables(sql, rest[1].text.lower())
        raise ParseError(f"Expected SHOW TABLES [IN database], got: {sql}", statement=sql)
    if words[:2] == ["SHOW", "JOBS"]:
        return ShowJobs(sql)
    if words[:2] == ["STOP", "JOB"] and len(tokens) == 3:
        return StopJob(sql, string_value(tokens[2], sql))
    if first == "ALTER" and any(t.text.upper() == "RESET" for t in tokens):
        return _alter_reset(sql, tokens)
    return None


def _alter_reset(sql: str, tokens: list[Token]) -> AlterTableOptions:
    words = [t.text.upper() for t in tokens]
    reset_at = words.index("RESET")
    if words[1] != "TABLE" or reset_at < 3:
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
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() == "TABLE":
        target = tree.this if isinstance(tree.this, exp.Table) else tree.args["tables"][0]
        return DropTable(sql, table_identifier(target), bool(tree.args.get("exists")), bool(tree.args.get("temporary")))
    if isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table):
        return Describe(sql, table_identifier(tree.this))
    if isinstance(tree, exp.Use):
        return UseDatabase(sql, tree.this.name.lower())
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


def _insert(sql: str, tree: exp.Insert) -> Insert:
    target = tree.this
    static: dict[str, str] = {}
    if isinstance(target, exp.Schema):
        target = target.this
    partition = target.args.get("partition") if isinstance(target, exp.Table) else None
    for eq in partition.expressions if partition else []:
        if isinstance(eq, exp.EQ) and isinstance(eq.expression, exp.Literal):
            static[eq.this.name] = eq.expression.this
        else:
            raise ValidationError(
                f"Only static partitions (k='v') are supported in PARTITION (...): {sql}", statement=sql
            )
    query = tree.expression
    if query is None:
        raise ParseError(f"INSERT needs a query: {sql}", statement=sql)
    leading_with = tree.args.get("with_")
    if leading_with is not None and isinstance(query, exp.Query) and query.args.get("with_") is None:
        query = query.copy()
        query.set("with_", leading_with.copy())
    return Insert(sql, table_identifier(target), query, static, bool(tree.args.get("overwrite")))
