"""A query that reads sqlext tables through their connectors: ``SELECT ... FROM t /*+ OPTIONS('k' = 'v') */``
(Flink's dynamic table options), a query of a table with ``METADATA`` columns (``file.path``, Kafka's
``offset``), which Spark's own view of the table (its metastore columns) does not have, or a query of a
temporary sqlext table, which is in no metastore and so unknown to Spark.

Each hinted reference to a sqlext table, and each reference to a sqlext table only its connector reads, is read
through the table's connector (with the hint's options over the table's own, checked as the DDL's are), as a
batch read registered as a temporary view with every column of the table (physical, computed, metadata), and
the query is rewritten to read that view; Spark runs the rest of the query as it is, and reads the other
tables (and tables that are not sqlext's) itself. The same table with two different hints is read twice, once per hint:
``t /*+ OPTIONS('incremental-between-timestamp' = ...) */`` with two windows compares them in one query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from sqlext.jobs.sources import source_frame
from sqlext.sql.hints import options_hint, with_hint
from sqlext.sql.statements import tables_read
from sqlext.sql.syntax import table_identifier
from sqlext.table import TableDefinition, TableIdentifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Spark's name of its session catalog, the one that holds the metastore's tables.
SPARK_CATALOG = "spark_catalog"
#: Temporary views of hinted tables: ``__sqlext_q<n>_<db>_<table>`` (SHOW TABLES omits ``__sqlext_`` views).
_VIEW_PREFIX = "__sqlext_q"


def run_query(session: Any, query: exp.Expr) -> DataFrame:
    """The query's rows as Spark's DataFrame (see the module docstring). ``session`` is the extended session."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    views: dict[tuple[TableIdentifier, tuple[tuple[str, str], ...]], str] = {}

    def read_through_connector(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Table) or not node.name or (not node.db and node.name.lower() in ctes):
            return node
        hint = options_hint(node)
        named = table_identifier(node)
        if not session.is_sqlext_table(named):  # a temporary view of the name comes first
            return node
        ident = session.resolve(named)
        table = session.catalog.get_table(ident)
        if not hint and not read_by_connector(table):
            return node
        key = (ident, tuple(sorted(hint.items())))
        if key not in views:
            table = with_hint(table, hint)
            name = f"{_VIEW_PREFIX}{len(views)}_{ident.database}_{ident.name}"
            source_frame(session.spark, table, streaming=False).frame.createOrReplaceTempView(name)
            views[key] = name
        return exp.to_table(views[key]).as_(node.alias or node.name)

    rewritten = query.copy().transform(read_through_connector)
    result: DataFrame = session.spark_sql(rewritten.sql(dialect="spark"))
    return result


def has_metadata_columns(table: TableDefinition) -> bool:
    """Whether a table declares ``METADATA`` columns, which only its connector reads."""
    from sqlext.connectors.changelog.planning import is_changelog_table

    # A change-event table, too: its files hold events, which only its connector reads as rows.
    return any(column.metadata_key is not None for column in table.columns) or is_changelog_table(table)


def read_by_connector(table: TableDefinition) -> bool:
    """Whether only the table's connector reads it: it declares metadata columns, or it is temporary (this
    session's, in no metastore, so Spark has no view of it)."""
    return table.temporary or has_metadata_columns(table)


def reads_through_connector(session: Any, query: exp.Expr) -> bool:
    """Whether ``query`` reads a sqlext table that only its connector reads (then :func:`run_query` runs it)."""
    for named in tables_read(query):
        if named.catalog not in (None, SPARK_CATALOG):
            continue  # a table of another catalog (Iceberg, JDBC, ...): never sqlext's
        if session.is_sqlext_table(named) and read_by_connector(session.catalog.get_table(session.resolve(named))):
            return True
    return False
