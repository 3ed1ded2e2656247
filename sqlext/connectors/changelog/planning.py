"""Which INSERT may read a changelog, as Flink 2.3's planner decides (messages checked against Flink itself,
``tests/connectors/changelog/test_flink_changelog.py``):

- a source table whose format is a change-event format (:data:`formats.CHANGELOG_ROW_FORMATS`: debezium-json,
  canal-json, maxwell-json, and Kafka's debezium-avro-confluent) produces updates and deletes; in batch mode
  Flink refuses it ("Querying a table in batch mode is currently only possible for INSERT-only table sources
  ..."), and so does sqlext, before anything runs;
- a sink whose format is insert-only (json, csv, parquet, orc, avro, raw; any other connector's sink) refuses
  such a query, filtered or not ("Table sink ... doesn't support consuming update and delete changes ...");
- a sink of a change-event format takes it, each row with its kind (:mod:`.encoding`).

sqlext carries the row kind as the column :data:`formats.ROW_KIND` of the source's frame, so a query that
takes it to the sink projects and filters one changelog table (``SELECT a, b FROM t WHERE ...``, ``SELECT *``);
a join, an aggregation, DISTINCT or a set operation over a changelog (which Flink's planner turns into another
changelog) is refused, naming what is supported.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import expressions as exp

from sqlext.catalog.changelog_formats import ROW_KIND, is_changelog_format
from sqlext.errors import ValidationError
from sqlext.table import TableDefinition


def is_changelog_table(table: TableDefinition) -> bool:
    """Whether ``table``'s rows are a changelog: its (value) format is a change-event format."""
    options = table.options
    return is_changelog_format(options.get("value.format") or options.get("format"))


def check_insert(sources: Iterable[TableDefinition], sink: TableDefinition, batch: bool, sql: str | None) -> bool:
    """Refuse what Flink refuses for an INSERT into ``sink`` reading ``sources``; whether it writes a
    changelog (a changelog source into a change-event sink)."""
    changelogs = [table for table in sources if is_changelog_table(table)]
    if not changelogs:
        return False
    source = changelogs[0]
    fmt = source.options.get("value.format") or source.options.get("format")
    if batch:
        raise ValidationError(
            "Querying a table in batch mode is currently only possible for INSERT-only table sources. But the "
            f"source for table '{source.identifier}' produces other changelog messages than just INSERT. (Its "
            f"format '{fmt}' reads updates and deletes: run the INSERT in streaming mode, SET "
            "'execution.runtime-mode' = 'streaming'.)",
            statement=sql,
        )
    if sink.connector != "filesystem" or not is_changelog_table(sink):
        raise ValidationError(
            f"Table sink '{sink.identifier}' doesn't support consuming update and delete changes which is "
            f"produced by the source '{source.identifier}' (format '{fmt}'). A sink of format "
            "'debezium-json', 'canal-json' or 'maxwell-json' takes a changelog; json, csv, parquet, orc, avro "
            "and raw sinks take inserts only, as in Flink.",
            statement=sql,
        )
    return True


def carry_row_kind(query: exp.Expr, sql: str | None) -> exp.Expr:
    """``query`` selecting :data:`formats.ROW_KIND` last (a ``*`` selects it already); refused where the
    query is not a projection and filter of one table."""
    if not isinstance(query, exp.Select) or _combines(query):
        raise ValidationError(
            "sqlext writes a changelog into a change-event sink from a projection and filter of one changelog "
            "table (SELECT columns FROM t [WHERE ...]); this query joins, aggregates, deduplicates or combines "
            "rows, which Flink would turn into another changelog and sqlext does not.",
            statement=sql,
        )
    if any(
        isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
        for e in query.expressions
    ):
        return query
    return query.select(exp.column(ROW_KIND), copy=True)


def _combines(select: exp.Select) -> bool:
    if select.args.get("joins") or select.args.get("group") or select.args.get("distinct"):
        return True
    if select.args.get("having") or select.args.get("laterals") or select.args.get("with"):
        return True
    if select.find(exp.AggFunc) or select.find(exp.Window) or select.find(exp.SetOperation):
        return True
    source = select.args.get("from") or select.args.get("from_")
    return source is None or not isinstance(source.this, exp.Table)
