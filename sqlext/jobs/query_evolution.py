"""Whether an insert's changed query follows a change of its sink table's columns, and nothing else.

An insert resumes only its own checkpoint, and a changed query is another insert (:mod:`sqlext.jobs.checkpoint`).
But when ``ALTER TABLE`` added columns to the sink (or dropped or renamed some), the insert must change its
SELECT to fill them, and that is still the same insert: it must resume where it was. The query's values go
to the sink's columns by position, so the checkpoint records the sink's columns as they were
(``sink_columns``); the new query follows the schema change when:

- the sink's columns differ from the checkpoint's;
- both queries are one ``SELECT`` each, the same but for their select lists (``FROM``, ``WHERE``, ``GROUP BY``,
  the ``WITH`` queries, the static ``PARTITION (...)`` values: unchanged);
- every column in both column lists gets the same expression, wherever it now stands; what the query gives
  a column only one list has (one added, dropped or renamed since) may be anything.

Spark then decides whether its own checkpoint accepts the new query (a stateless projection always does).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp

_PARTITION_PREFIX = "PARTITION ("


def _split(query: str) -> tuple[str, str]:
    """The static ``PARTITION (...)`` prefix an identity puts before the query, and the query."""
    if query.startswith(_PARTITION_PREFIX):
        end = query.index(") ", len(_PARTITION_PREFIX))
        return query[: end + 2], query[end + 2 :]
    return "", query


def _select(query: str) -> exp.Select | None:
    try:
        tree = sqlglot.parse_one(query, read="spark")
    except sqlglot.errors.ParseError:
        return None
    return tree if isinstance(tree, exp.Select) else None


def _by_column(select: exp.Select, columns: Sequence[str]) -> dict[str, str] | None:
    items = select.expressions
    if len(items) != len(columns) or any(isinstance(item, exp.Star) for item in items):
        return None
    return {name.lower(): item.sql(dialect="spark") for name, item in zip(columns, items, strict=True)}


def follows_schema_change(
    stored_query: str, stored_columns: Sequence[str], query: str, columns: Sequence[str]
) -> str | None:
    """A note saying how ``query`` follows the sink's new ``columns``, or None when it is another query (see
    the module docstring)."""
    if not stored_columns or [c.lower() for c in stored_columns] == [c.lower() for c in columns]:
        return None
    (stored_prefix, stored_text), (prefix, text) = _split(stored_query), _split(query)
    old, new = _select(stored_text), _select(text)
    if stored_prefix != prefix or old is None or new is None:
        return None
    old_items, new_items = _by_column(old, stored_columns), _by_column(new, columns)
    if old_items is None or new_items is None:
        return None
    rest_old, rest_new = old.copy(), new.copy()
    rest_old.set("expressions", [exp.Literal.number(1)])
    rest_new.set("expressions", [exp.Literal.number(1)])
    if rest_old.sql(dialect="spark") != rest_new.sql(dialect="spark"):
        return None
    if any(new_items[name] != old_items[name] for name in new_items.keys() & old_items.keys()):
        return None
    added = [c for c in columns if c.lower() not in old_items]
    gone = [c for c in stored_columns if c.lower() not in new_items]
    parts = [f"new {', '.join(added)}" if added else "", f"gone {', '.join(gone)}" if gone else ""]
    return (
        f"the sink's columns changed since the checkpoint ({'; '.join(p for p in parts if p)}) and the query "
        "changed only in what it writes to them"
    )
