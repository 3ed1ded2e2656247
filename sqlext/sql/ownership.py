"""Which statements are sqlext's: the rule that keeps an extended session transparent to Spark SQL.

A statement is sqlext's only if it is unambiguously one of sqlext's own statements: a form only Flink SQL
has (:func:`is_flink_form`; Flink's SQL client's unquoted ``SET key=value`` for :func:`is_flink_key`), or a
statement Spark shares whose exact shape sqlext reads (``SHOW CREATE TABLE t``, ``DESCRIBE t``, ``DROP TABLE
t``, ``INSERT INTO t ...``, ``CREATE TABLE b LIKE a``), which the session then answers only when ``t`` is a
sqlext table. Everything else, including whatever sqlext's parser cannot
read, goes to Spark untouched. A Flink-only form that does not parse is sqlext's error (Spark would only
report a syntax error where sqlext can say what is allowed); any other statement that does not parse is
Spark's to answer.

The readers here work on tokens and are strict on purpose: a name followed by anything they do not expect
(``AS SERDE``, a column, ``PURGE``, ``IDENTIFIER(...)``) makes the statement Spark's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot.tokens import Token, TokenType

from sqlext.table import TableIdentifier

#: Table properties of Flink's Hive streaming sink DDL (Hive dialect); they make ``CREATE TABLE`` sqlext's.
HIVE_STREAMING_PREFIXES = ("sink.partition-commit.", "partition.time-extractor.", "sink.rolling-policy.")
LIKE_STRATEGIES = ("INCLUDING", "EXCLUDING", "OVERWRITING")
_STRINGS = (TokenType.STRING, TokenType.UNICODE_STRING)

#: The session options sqlext reads (``SET``), in Flink's names: an unquoted ``SET key=value`` of one of them is
#: sqlext's although Spark's ``SET`` would take it too (tests check this list against the modules that read them).
SESSION_KEYS = frozenset(
    {
        "execution.runtime-mode",
        "execution.checkpointing.interval",
        "pipeline.name",
        "sqlext.insert.start",
        "table.exec.hive.sink.statistic-auto-gather.enable",
        "table.local-time-zone",
        "table.sql-dialect",
    }
)
#: Flink's ``table.sql-dialect`` and the dialects Flink takes (``SqlDialect``: ``default``, ``hive``, any case).
SQL_DIALECT = "table.sql-dialect"
SQL_DIALECTS = ("default", "hive")
#: Flink's SQL client's ``SET key=value`` and ``RESET key`` (``SetOperationParseStrategy``,
#: ``ResetOperationParseStrategy`` of Flink's planner): a key without quotes or spaces, and a value either
#: quoted (``'...'``, no quote inside) or a run of characters other than spaces and ``;``.
FLINK_SET = re.compile(r"SET\s+(?P<key>[^'\s]+)\s*=\s*(?:'(?P<quoted>[^']*)'|(?P<value>[^;\s]+))", re.I | re.S)
FLINK_RESET = re.compile(r"RESET\s+(?P<key>[^'\s]+)", re.I | re.S)
#: The keys Spark's ``SET key=value`` and ``RESET key`` take without back-quotes (``SparkSqlParser``'s
#: ``configKeyDef``); any other key, one with a ``-`` say, is Spark's ``INVALID_SET_SYNTAX``.
_SPARK_KEY = re.compile(r"[a-zA-Z_\d\\.:]+")
#: What a Flink option key looks like (``table.sql-dialect``); Spark's ``SET -v`` is none.
_OPTION_KEY = re.compile(r"[A-Za-z][\w.\-]*")


def spark_takes_key(key: str) -> bool:
    """Whether Spark's ``SET key=value`` / ``RESET key`` reads ``key`` as it is written (no back-quotes)."""
    return _SPARK_KEY.fullmatch(key) is not None


def is_flink_key(key: str) -> bool:
    """Whether an unquoted ``SET key=value`` or ``RESET key`` is sqlext's (Flink's SQL client form): the key is
    one of sqlext's :data:`SESSION_KEYS`, or one Spark refuses unquoted; never a ``spark.`` key or one not
    shaped like an option key (back-quoted, ``-v``), which stay Spark's whatever Spark makes of them."""
    if key.lower().startswith("spark.") or _OPTION_KEY.fullmatch(key) is None:
        return False
    return key in SESSION_KEYS or not spark_takes_key(key)


def unquoted_setting_key(sql: str) -> str | None:
    """The key of an unquoted ``SET key ...`` / ``RESET key`` (its first word, up to a space or ``=``), if sqlext
    owns it (:func:`is_flink_key`); None for any other statement."""
    match = re.match(r"(?:SET|RESET)\s+([^'\s=]+)", sql, re.I)
    return match.group(1) if match and is_flink_key(match.group(1)) else None


def _top_level(tokens: Sequence[Token]) -> list[tuple[int, Token]]:
    """The tokens outside parentheses, with their index."""
    depth, found = 0, []
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0:
            found.append((index, token))
    return found


def _followed_by_paren(tokens: Sequence[Token], index: int) -> bool:
    return index + 1 < len(tokens) and tokens[index + 1].token_type == TokenType.L_PAREN


def is_flink_form(tokens: Sequence[Token]) -> bool:
    """True for a statement only Flink SQL has (Spark rejects it): ``SET 'k' = 'v'``, ``RESET 'k'``,
    ``SHOW JOBS``, ``STOP JOB``, ``DROP TEMPORARY TABLE``, ``ALTER TABLE t SET|RESET (...)``, and a
    ``CREATE`` with ``WITH (...)`` options, a watermark, ``LIKE base (INCLUDING ...)`` or the Hive
    streaming sink's table properties."""
    words = [t.text.upper() for t in tokens]
    if len(tokens) < 2:
        return False
    if words[0] in ("SET", "RESET"):
        return tokens[1].token_type in _STRINGS
    if words[:2] in (["SHOW", "JOBS"], ["STOP", "JOB"]) or words[:3] == ["DROP", "TEMPORARY", "TABLE"]:
        return True
    if words[:2] == ["ALTER", "TABLE"]:  # Spark's are SET TBLPROPERTIES (...) and UNSET; RESET is Flink's
        form = alter_table_form(tokens)
        if form is not None:
            return form[0] == FLINK
        return any(
            word == "RESET" or (word == "SET" and _followed_by_paren(tokens, index))
            for index, word in ((i, t.text.upper()) for i, t in _top_level(tokens))
        )
    if words[0] != "CREATE":
        return False
    # WITH (...) anywhere: an unbalanced column list must not hide it (Spark has no "WITH (").
    if any(word == "WITH" and _followed_by_paren(tokens, i) for i, word in enumerate(words)):
        return True
    top = [(i, t.text.upper()) for i, t in _top_level(tokens)]
    if "WATERMARK" in words:
        return True
    like = next((i for i, word in top if word == "LIKE"), None)
    if like is not None and any(word in LIKE_STRATEGIES for word in words[like:]):
        return True
    return any(t.token_type in _STRINGS and t.text.startswith(HIVE_STREAMING_PREFIXES) for t in tokens)


#: Column DDL only Flink SQL has, and column DDL Spark or Hive share (see :func:`alter_table_form`).
FLINK, SHARED = "flink", "shared"
#: Words after ``ADD``/``DROP`` that make the statement Spark's (partitions, constraints) or shared (columns).
_SPARK_AFTER_ADD_DROP = ("PARTITION", "IF", "CONSTRAINT")
_SHARED_AFTER_ADD_DROP = ("COLUMN", "COLUMNS")


def alter_table_form(tokens: Sequence[Token]) -> tuple[str, int] | None:
    """For ``ALTER TABLE [IF EXISTS] name <action> ...`` about columns, (:data:`FLINK` or :data:`SHARED`, the
    index of the action's word); None for anything else (options, partitions, a table rename, ...).

    Flink's forms: ``IF EXISTS``, ``ADD (...)``, ``ADD name type``, ``ADD WATERMARK|PRIMARY KEY``, ``MODIFY``,
    ``RENAME a TO b``, ``DROP (...)``, ``DROP name``, ``DROP WATERMARK|PRIMARY KEY``. Shared with Spark or Hive:
    ``ADD COLUMN(S)``, ``RENAME COLUMN``, ``DROP COLUMN(S)``, ``ALTER|CHANGE [COLUMN]``, ``REPLACE COLUMNS``."""
    words = [t.text.upper() for t in tokens]
    if words[:2] != ["ALTER", "TABLE"]:
        return None
    start = 4 if words[2:4] == ["IF", "EXISTS"] else 2
    read = read_name(tokens, start)
    if read is None or read[1] >= len(tokens):
        return None
    at = read[1]
    action, following = words[at], words[at + 1] if at + 1 < len(words) else ""
    flink_if_exists = start == 4
    form: str | None = None
    if action in ("ADD", "DROP"):
        if following in _SHARED_AFTER_ADD_DROP:
            form = SHARED
        elif following not in _SPARK_AFTER_ADD_DROP and following:
            form = FLINK
    elif action == "MODIFY":
        form = FLINK
    elif action == "RENAME":
        form = SHARED if following == "COLUMN" else (None if following in ("TO", "") else FLINK)
    elif action in ("ALTER", "CHANGE") or (action == "REPLACE" and following == "COLUMNS"):
        form = SHARED
    if form is None:
        return None
    return (FLINK if flink_if_exists else form), at


def _is_name(token: Token) -> bool:
    return token.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or (
        token.token_type not in _STRINGS and token.text.replace("_", "").isalnum()
    )


def read_name(tokens: Sequence[Token], start: int) -> tuple[TableIdentifier, int] | None:
    """``[catalog.][database.]name`` at ``tokens[start]``, and the index after it; None if there is none."""
    parts: list[str] = []
    index = start
    while index < len(tokens) and _is_name(tokens[index]) and len(parts) < 3:
        parts.append(tokens[index].text)
        index += 1
        if index == len(tokens) or tokens[index].token_type != TokenType.DOT:
            name, database = parts[-1].lower(), parts[-2].lower() if len(parts) > 1 else ""
            return TableIdentifier(database, name, parts[0] if len(parts) == 3 else None), index
        index += 1
    return None


def whole_name(tokens: Sequence[Token], start: int) -> TableIdentifier | None:
    """The name at ``tokens[start]`` if nothing follows it."""
    read = read_name(tokens, start)
    return read[0] if read is not None and read[1] == len(tokens) else None
