"""``SELECT ... FROM t /*+ OPTIONS('k' = 'v') */``: a query whose sqlext tables carry Flink's dynamic table options.

Each hinted reference to a sqlext table is read through the table's connector with the hint's options over the
table's own (checked as the DDL's are), as a batch read registered as a temporary view, and the query is
rewritten to read that view; Spark runs the rest of the query as it is, and reads tables without a hint (and
tables that are not sqlext's) itself. The same table with two different hints is read twice, once per hint:
``t /*+ OPTIONS('incremental-between-timestamp' = ...) */`` with two windows compares them in one query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from sqlext.jobs.sources import source_frame
from sqlext.sql.hints import options_hint, with_hint
from sqlext.sql.syntax import table_identifier
from sqlext.table import TableIdentifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Temporary views of hinted tables: ``__sqlext_q<n>_<db>_<table>`` (SHOW TABLES omits ``__sqlext_`` views).
_VIEW_PREFIX = "__sqlext_q"


def run_query(session: Any, query: exp.Expr) -> DataFrame:
    """The query's rows as Spark's DataFrame (see the module docstring). ``session`` is the extended session."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    views: dict[tuple[TableIdentifier, tuple[tuple[str, str], ...]], str] = {}

    def read_hinted(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Table) or not node.name or (not node.db and node.name.lower() in ctes):
            return node
        hint = options_hint(node)
        named = table_identifier(node)
        if not hint or not session.is_sqlext_table(named):  # a temporary view of the name comes first
            return node
        ident = session.resolve(named)
        key = (ident, tuple(sorted(hint.items())))
        if key not in views:
            table = with_hint(session.catalog.get_table(ident), hint)
            name = f"{_VIEW_PREFIX}{len(views)}_{ident.database}_{ident.name}"
            source_frame(session.spark, table, streaming=False).frame.createOrReplaceTempView(name)
            views[key] = name
        return exp.to_table(views[key]).as_(node.alias or node.name)

    rewritten = query.copy().transform(read_hinted)
    result: DataFrame = session.spark_sql(rewritten.sql(dialect="spark"))
    return result
