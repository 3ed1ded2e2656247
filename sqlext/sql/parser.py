"""sqlext's statements, parsed with sqlglot: a thin ``flink`` dialect over the Spark one.

The dialect adds what Flink DDL has and Spark's lacks: ``WATERMARK FOR col AS expr``, ``METADATA [FROM
'key'] [VIRTUAL]`` columns, ``ROW<...>``/``ROW(...)`` and ``BYTES`` types. Statements sqlglot has no node
for (``RESET``, ``SHOW CREATE TABLE``, ``SHOW TABLES``, ``ALTER TABLE ... RESET``, ``SHOW JOBS``,
``STOP JOB``) are read from sqlglot's tokens. Anything else is :class:`Passthrough`: Spark runs it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from sqlext.errors import ParseError, SqlextError, ValidationError
from sqlext.table import Column, TableDefinition, TableIdentifier, Watermark


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``METADATA [FROM 'key'] [VIRTUAL]`` of a Flink metadata column."""

    arg_types = {"this": False, "virtual": False}  # noqa: RUF012 - sqlglot's declaration style


def _to_timestamp_ltz(args: list[exp.Expr]) -> exp.Expr:
    """Flink's TO_TIMESTAMP_LTZ(epoch, precision): 0 seconds, 3 milliseconds (Flink's default: 3)."""
    scale = args[1] if len(args) > 1 else exp.Literal.number(3)
    return exp.UnixToTime(this=args[0], scale=scale)


class FlinkParser(SparkParser):
    FUNCTIONS = {**SparkParser.FUNCTIONS, "TO_TIMESTAMP_LTZ": _to_timestamp_ltz}  # noqa: RUF012
    CONSTRAINT_PARSERS = {  # noqa: RUF012
        **SparkParser.CONSTRAINT_PARSERS,
        "WATERMARK": lambda self: self.expression(
            exp.WatermarkColumnConstraint(
                this=self._match(TokenType.FOR) and self._parse_column(),
                expression=self._match(TokenType.ALIAS) and self._parse_disjunction(),
            )
        ),
        "METADATA": lambda self: self.expression(
            MetadataColumnConstraint(
                this=self._match(TokenType.FROM) and self._parse_string(),
                virtual=self._match_text_seq("VIRTUAL") or None,
            )
        ),
    }
    SCHEMA_UNNAMED_CONSTRAINTS = {*SparkParser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}  # noqa: RUF012

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        """Spark reads every ``TIMESTAMP`` as TIMESTAMPTZ; in Flink only ``WITH TIME ZONE`` is that
        (and unsupported), so a plain ``TIMESTAMP [WITHOUT TIME ZONE]`` becomes TIMESTAMP again."""
        parsed = super()._parse_types(check_func, schema, allow_identifiers, with_collation)
        if isinstance(parsed, exp.DataType) and parsed.this == exp.DType.TIMESTAMPTZ:
            words = [token.text.upper() for token in self._tokens[max(self._index - 3, 0) : self._index]]
            if words != ["WITH", "TIME", "ZONE"]:
                parsed.set("this", exp.DType.TIMESTAMP)
        return parsed


class Flink(Spark):
    """Flink SQL as far as sqlext needs it: Spark SQL plus Flink's DDL additions."""

    class Tokenizer(Spark.Tokenizer):
        # Flink's string literals: a quote is escaped by doubling it; a backslash is an ordinary character
        # ('\' is one backslash, 'a\tb' four characters). Spark's backslash escapes are not Flink SQL.
        STRING_ESCAPES = ["'"]  # noqa: RUF012
        # The SQL standard's Unicode strings, as Flink documents for special characters (U&'\0009').
        UNICODE_STRINGS = [("U&'", "'"), ("u&'", "'")]  # noqa: RUF012
        KEYWORDS = {  # noqa: RUF012
            **{k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if k != "LIST"},  # not a Flink type
            "BYTES": TokenType.VARBINARY,
            "MULTISET": TokenType.LIST,  # sqlext.sql.types reads LIST as MULTISET
            "ROW": TokenType.STRUCT,
        }

    Parser = FlinkParser


# -- statements -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    sql: str


@dataclass(frozen=True)
class Passthrough(Statement):
    """Not sqlext's: Spark runs it unchanged."""


@dataclass(frozen=True)
class CreateTable(Statement):
    table: TableDefinition
    if_not_exists: bool = False
    like: TableIdentifier | None = None
    like_options: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateTableLike(Statement):
    """``CREATE TABLE t (...) WITH (...) LIKE base (options)``: merged with ``base`` when it runs."""

    identifier: TableIdentifier
    like: TableIdentifier
    like_options: tuple[str, ...] = ()
    if_not_exists: bool = False
    temporary: bool = False
    columns: tuple[Column, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    partition_keys: tuple[str, ...] = ()
    watermark: Watermark | None = None
    primary_key: tuple[str, ...] = ()
    comment: str | None = None


@dataclass(frozen=True)
class CreateDatabase(Statement):
    """``CREATE DATABASE [IF NOT EXISTS] name [COMMENT '...'] [WITH ('k' = 'v', ...)]``."""

    name: str
    if_not_exists: bool = False
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DropTable(Statement):
    target: TableIdentifier
    if_exists: bool = False
    temporary: bool = False


@dataclass(frozen=True)
class AlterTableOptions(Statement):
    target: TableIdentifier
    set_options: dict[str, str] = field(default_factory=dict)
    reset_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShowCreateTable(Statement):
    target: TableIdentifier


@dataclass(frozen=True)
class Describe(Statement):
    target: TableIdentifier


@dataclass(frozen=True)
class ShowTables(Statement):
    database: str | None = None


@dataclass(frozen=True)
class UseDatabase(Statement):
    name: str


@dataclass(frozen=True)
class SetOption(Statement):
    """``SET 'k' = 'v'``; both None: ``SET`` alone (list the options)."""

    key: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class ResetOption(Statement):
    """``RESET 'k'``; key None: ``RESET`` (all)."""

    key: str | None = None


@dataclass(frozen=True)
class Insert(Statement):
    """``INSERT INTO|OVERWRITE target [PARTITION (k = 'v', ...)] query``; a leading ``WITH`` belongs to the query."""

    target: TableIdentifier
    query: exp.Expr
    static_partitions: dict[str, str] = field(default_factory=dict)
    overwrite: bool = False

    @property
    def query_sql(self) -> str:
        """The query as Spark SQL."""
        return self.query.sql(dialect="spark")

    @property
    def source_tables(self) -> tuple[TableIdentifier, ...]:
        """Tables the query reads, each once, without CTE names (unqualified names: database "")."""
        ctes = {cte.alias_or_name.lower() for cte in self.query.find_all(exp.CTE)}
        found: dict[TableIdentifier, None] = {}
        for table in self.query.find_all(exp.Table):
            if not table.name or (not table.db and table.name.lower() in ctes):
                continue
            found.setdefault(_table_ident(table))
        return tuple(found)


@dataclass(frozen=True)
class ShowJobs(Statement):
    pass


@dataclass(frozen=True)
class StopJob(Statement):
    job_id: str


# -- splitting ------------------------------------------------------------------------------------


def _tokens(sql: str) -> list[Token]:
    """Flink's tokens; a text that only Spark's string rules read (``'it\\'s'``) gets Spark's, so that
    Spark's own statements still pass through (a sqlext statement then fails in its parse, naming it)."""
    try:
        return list(Flink().tokenize(sql))
    except TokenError as flink_error:
        try:
            return list(Spark().tokenize(sql))
        except TokenError:
            raise ParseError(f"Cannot read statement: {flink_error}", statement=sql) from flink_error


def split_statements(text: str) -> list[str]:
    """Split a script on ``;`` outside strings and comments; empty statements are dropped."""
    statements, start = [], 0
    for token in _tokens(text):
        if token.token_type == TokenType.SEMICOLON:
            statements.append(text[start : token.start])
            start = token.end + 1
    statements.append(text[start:])
    return [s.strip() for s in statements if _tokens(s)]


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
    tokens = _tokens(sql)
    if tokens and tokens[0].token_type in (TokenType.SHOW, TokenType.COMMAND):
        # Spark's tokenizer keeps the rest of a command as one string: read its words too.
        tokens = tokens[:1] + _tokens(sql[tokens[0].end + 1 :])
    words = [t.text.upper() for t in tokens[:4]]
    if not words:
        raise ParseError("Empty statement.", statement=sql)
    by_tokens = _parse_by_tokens(sql, tokens, words)
    if by_tokens is not None:
        return by_tokens
    like_at = _top_level_like(tokens) if words[0] == "CREATE" else None
    if like_at is not None:
        return _create_table_like(sql, tokens, like_at)
    if words[0] in ("CREATE", "INSERT", "DROP", "DESCRIBE", "DESC", "USE", "ALTER"):
        return _from_tree(sql, _parse_tree(sql))
    if words[0] == "WITH" and any(t.token_type == TokenType.INSERT for t in tokens):
        return _from_tree(sql, _parse_tree(sql))  # WITH cte AS (...) INSERT INTO ...
    return Passthrough(sql)


LIKE_STRATEGIES = ("INCLUDING", "EXCLUDING", "OVERWRITING")
LIKE_FEATURES = ("ALL", "CONSTRAINTS", "GENERATED", "METADATA", "OPTIONS", "PARTITIONS", "WATERMARKS")


def _top_level_like(tokens: list[Token]) -> int | None:
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


def _create_table_like(sql: str, tokens: list[Token], like_at: int) -> CreateTableLike:
    """``CREATE TABLE t [(...)] [PARTITIONED BY (...)] [WITH (...)] LIKE base [(like options)]``."""
    head = sql[: tokens[like_at].start].strip()
    rest = tokens[like_at + 1 :]
    paren = next((i for i, t in enumerate(rest) if t.token_type == TokenType.L_PAREN), len(rest))
    base = _identifier(sql, rest[:paren])
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
    tree = _parse_tree(head)  # CREATE TABLE t [(...)] [...] [WITH (...)] parses on its own
    if not isinstance(tree, exp.Create):
        raise ParseError(f"Expected CREATE TABLE ... LIKE table: {sql}", statement=sql)
    options, partition_keys, comment = _create_properties(sql, tree)
    schema = tree.this
    items = schema.expressions if isinstance(schema, exp.Schema) else []
    columns, watermark, primary_key = _schema(sql, items)
    return CreateTableLike(
        sql,
        identifier=_table_ident(schema.this if isinstance(schema, exp.Schema) else schema),
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


def _parse_tree(sql: str) -> exp.Expr:
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, read=Flink)
    except SqlglotParseError as exc:
        raise _parse_error(sql, exc) from None
    # U&'...' as the plain string it stands for: Spark SQL, which runs the queries, has no such literal.
    return tree.transform(
        lambda node: (
            exp.Literal.string(unicode_string_value(node.this)) if isinstance(node, exp.UnicodeString) else node
        )
    )


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
    "ALTER": "ALTER TABLE [db.]table SET ('key' = 'value', ...) | ALTER TABLE [db.]table RESET ('key', ...)",
    "DESCRIBE": "DESCRIBE|DESC [db.]table",
    "USE": "USE database",
}


def _syntax(sql: str) -> str | None:
    words = [t.text.upper() for t in _tokens(sql)[:3] if t.text.upper() != "TEMPORARY"]
    if words[:1] == ["CREATE"]:
        return SYNTAX.get(" ".join(words[:2]).replace("SCHEMA", "DATABASE"))
    if words[:1] == ["WITH"]:
        return SYNTAX["INSERT"]
    return SYNTAX.get({"DESC": "DESCRIBE"}.get(words[0], words[0])) if words else None


def _parse_error(sql: str, exc: SqlglotParseError) -> ParseError:
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


_UNICODE_ESCAPE = re.compile(r"\\(\\|[0-9A-Fa-f]{4}|\+[0-9A-Fa-f]{6})")


def unicode_string_value(text: str) -> str:
    """The value of a ``U&'...'`` literal's text: ``\\XXXX`` and ``\\+XXXXXX`` code points, ``\\\\`` a backslash."""

    def character(match: re.Match[str]) -> str:
        code = match.group(1)
        return "\\" if code == "\\" else chr(int(code.lstrip("+"), 16))

    return _UNICODE_ESCAPE.sub(character, text)


def string_literal_value(node: exp.Expr | None) -> str | None:
    """The value of a string literal (``'...'`` or ``U&'...'``), or None for anything else."""
    if isinstance(node, exp.UnicodeString):
        return unicode_string_value(node.this)
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    return None


def _string_value(token: Token, sql: str) -> str:
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


def _parse_by_tokens(sql: str, tokens: list[Token], words: list[str]) -> Statement | None:
    """Statements read from tokens: SET/RESET (Flink's quoted form), SHOW ..., ALTER ... RESET, jobs."""
    first = words[0]
    if first == "SET":
        if len(tokens) == 1:
            return SetOption(sql)
        if tokens[1].token_type == TokenType.STRING:
            if len(tokens) != 4 or tokens[2].token_type != TokenType.EQ:
                raise ParseError(f"Expected SET 'key' = 'value', got: {sql}", statement=sql)
            return SetOption(sql, tokens[1].text, _string_value(tokens[3], sql))
        return Passthrough(sql)  # Spark's SET k=v
    if first == "RESET":
        if len(tokens) == 1:
            return ResetOption(sql)
        if len(tokens) == 2:
            return ResetOption(sql, _string_value(tokens[1], sql))
        raise ParseError(f"Expected RESET or RESET 'key', got: {sql}", statement=sql)
    if words[:3] == ["SHOW", "CREATE", "TABLE"]:
        return ShowCreateTable(sql, _identifier(sql, tokens[3:]))
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
        return StopJob(sql, _string_value(tokens[2], sql))
    if first == "ALTER" and any(t.text.upper() == "RESET" for t in tokens):
        return _alter_reset(sql, tokens)
    return None


def _identifier(sql: str, tokens: Sequence[Token]) -> TableIdentifier:
    parts = [t.text for t in tokens if t.token_type != TokenType.DOT]
    if not parts or len(parts) > 3 or any(t.token_type == TokenType.STRING for t in tokens):
        raise ParseError(f"Expected a table name [catalog.][database.]table, got: {sql}", statement=sql)
    return TableIdentifier.parse(".".join(parts), default_database="")


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
    keys = [_string_value(t, sql) for t in keys_tokens[1:-1] if t.token_type != TokenType.COMMA]
    return AlterTableOptions(sql, _identifier(sql, tokens[2:reset_at]), reset_keys=tuple(keys))


def _table_ident(table: exp.Table) -> TableIdentifier:
    """The table's identifier; an unqualified name gets database "" (the session's current one)."""
    return TableIdentifier.parse(".".join(p for p in (table.catalog, table.db, table.name) if p), default_database="")


def _from_tree(sql: str, tree: exp.Expr) -> Statement:
    if isinstance(tree, exp.Create):
        kind = (tree.args.get("kind") or "").upper()
        if kind == "TABLE":
            return _create_table(sql, tree)
        if kind in ("DATABASE", "SCHEMA"):
            return _create_database(sql, tree)
    if isinstance(tree, exp.Insert):
        return _insert(sql, tree)
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() == "TABLE":
        target = tree.this if isinstance(tree.this, exp.Table) else tree.args["tables"][0]
        return DropTable(sql, _table_ident(target), bool(tree.args.get("exists")), bool(tree.args.get("temporary")))
    if isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table):
        return Describe(sql, _table_ident(tree.this))
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
            return AlterTableOptions(sql, _table_ident(tree.this), set_options=options)
    return Passthrough(sql)


def _create_database(sql: str, tree: exp.Create) -> CreateDatabase:
    options, _, comment = _create_properties(sql, tree)
    return CreateDatabase(sql, tree.this.name.lower(), bool(tree.args.get("exists")), comment, options)


#: Table properties that make Hive-dialect DDL a sqlext table (Flink's Hive streaming sink).
#: TableDefinition.extra marker: Hive-dialect DDL without LOCATION; the catalog derives the path.
PATH_FROM_DATABASE = "path-from-database"
HIVE_STREAMING_PREFIXES = ("sink.partition-commit.", "partition.time-extractor.", "sink.rolling-policy.")


def _create_table(sql: str, tree: exp.Create) -> Statement:
    options, partition_keys, comment = _create_properties(sql, tree)
    hive_columns = _hive_streaming(tree, options)
    if "connector" not in options:
        return Passthrough(sql)  # plain Spark/Hive DDL
    schema = tree.this
    table_node = schema.this if isinstance(schema, exp.Schema) else schema
    ident = _table_ident(table_node)
    items = [*(schema.expressions if isinstance(schema, exp.Schema) else []), *(hive_columns or [])]
    columns, watermark, primary_key = _schema(sql, items)
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


def _schema(sql: str, items: Sequence[exp.Expr]) -> tuple[list[Column], Watermark | None, list[str]]:
    from sqlext.sql.types import flink_text

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
    return Insert(sql, _table_ident(target), query, static, bool(tree.args.get("overwrite")))
