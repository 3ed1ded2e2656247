"""Flink's dynamic table options: ``SELECT ... FROM t /*+ OPTIONS('k' = 'v', ...) */``.

The hint sets table options for one query, over those of the table's DDL (and is checked like them).
sqlglot keeps a comment that follows a table name on that table's node; a comment that reads
``OPTIONS(...)`` there is the hint.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sqlglot import expressions as exp

from sqlext.errors import ParseError
from sqlext.table import TableDefinition

_HINT = re.compile(r"^\s*\+?\s*OPTIONS\s*\((?P<body>.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_PAIR = re.compile(r"\s*'(?P<key>(?:[^']|'')*)'\s*=\s*'(?P<value>(?:[^']|'')*)'\s*(?:,|$)")


def options_hint(table: exp.Table) -> dict[str, str]:
    """The ``OPTIONS`` hint on a table reference (empty without one)."""
    found: dict[str, str] = {}
    for comment in table.comments or []:
        match = _HINT.match(comment)
        if match:
            found.update(parse_pairs(match.group("body"), comment))
    return found


def parse_pairs(body: str, hint: str) -> dict[str, str]:
    """``'k' = 'v', ...`` (quotes doubled inside values), as Flink writes an OPTIONS hint."""
    pairs: dict[str, str] = {}
    position = 0
    while position < len(body.strip()) and body[position:].strip():
        match = _PAIR.match(body, position)
        if not match:
            raise ParseError(
                f"Invalid OPTIONS hint '/*+{hint}*/': expected 'key' = 'value' pairs separated by commas, "
                f"e.g. /*+ OPTIONS('streaming-source.enable' = 'true') */.",
                statement=hint,
            )
        pairs[match.group("key").replace("''", "'")] = match.group("value").replace("''", "'")
        position = match.end()
    return pairs


def with_hint(table: TableDefinition, hint: Mapping[str, str]) -> TableDefinition:
    """The table with the hint's options over its own, checked by its connector."""
    from sqlext.registry import validate_table

    hinted = table.with_options({**table.options, **hint})
    validate_table(hinted)
    return hinted
