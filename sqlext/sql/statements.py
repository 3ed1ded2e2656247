"""The statements sqlext runs itself, as :func:`sqlext.sql.parser.parse_statement` returns them; anything
else is :class:`Passthrough`: Spark runs it."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from sqlext.errors import SqlextError
from sqlext.sql.schema_change import SchemaChange
from sqlext.sql.syntax import table_identifier
from sqlext.table import Column, TableDefinition, TableIdentifier, Watermark

# -- statements -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    sql: str


@dataclass(frozen=True)
class Passthrough(Statement):
    """Not sqlext's: Spark runs it unchanged. ``guard``: a table the statement writes to that sqlext could
    not read the statement for (an ``INSERT`` it cannot parse); if that is a sqlext table, ``error`` is
    raised instead, as Spark writing into it would bypass its sink."""

    guard: TableIdentifier | None = None
    error: SqlextError | None = field(default=None, compare=False)


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
    #: Spark's form as well (``CREATE TABLE [IF NOT EXISTS] b LIKE a``, nothing else): Spark's unless ``a`` is
    #: a sqlext table.
    plain: bool = False
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
class AlterTableSchema(Statement):
    """``ALTER TABLE [IF EXISTS] t ADD | MODIFY | RENAME | DROP ...``: Flink's column DDL, and the column DDL
    Spark and Hive share (``ADD COLUMNS (...) [CASCADE]``, ``RENAME COLUMN``, ``DROP COLUMN(S)``)."""

    target: TableIdentifier
    change: SchemaChange
    if_exists: bool = False
    #: Spark's (or Hive's) form too: Spark runs it unless ``target`` is a sqlext table.
    shared: bool = False
    #: Hive's ``CASCADE`` (True) or ``RESTRICT`` (False) after ``ADD COLUMNS (...)``; None: neither.
    cascade: bool | None = None


@dataclass(frozen=True)
class ShowCreateTable(Statement):
    target: TableIdentifier


@dataclass(frozen=True)
class Describe(Statement):
    target: TableIdentifier


@dataclass(frozen=True)
class ShowTables(Statement):
    """``SHOW TABLES [IN|FROM db] [[LIKE] 'pattern']``: Spark's rows, with sqlext's temporary tables."""

    database: str | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class SetOption(Statement):
    """``SET 'k' = 'v'`` (or Flink's SQL client's ``SET k=v`` of a key that is sqlext's); both None: ``SET``
    alone (list Spark's settings and sqlext's options); value None: Spark's ``SET k`` (show one, wherever it
    lives)."""

    key: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class ResetOption(Statement):
    """``RESET 'k'`` or Flink's SQL client's ``RESET k`` of a key Spark would refuse (``flink_form``), or Spark's
    ``RESET k``; key None: ``RESET`` (all). Resets Spark's settings and sqlext's options alike."""

    key: str | None = None
    flink_form: bool = False


@dataclass(frozen=True)
class Insert(Statement):
    """``INSERT INTO|OVERWRITE target [PARTITION (k = 'v', ...)] query``; a leading ``WITH`` belongs to the query."""

    target: TableIdentifier
    query: exp.Expr
    static_partitions: dict[str, str] = field(default_factory=dict)
    overwrite: bool = False
    #: Partition columns named without a value (``PARTITION (dt)``): Spark's dynamic partitions.
    dynamic_partitions: tuple[str, ...] = ()

    @property
    def query_sql(self) -> str:
        """The query as Spark SQL."""
        return self.query.sql(dialect="spark")

    @property
    def source_tables(self) -> tuple[TableIdentifier, ...]:
        """Tables the query reads, each once, without CTE names (unqualified names: database "")."""
        return tables_read(self.query)


@dataclass(frozen=True)
class Query(Statement):
    """``SELECT ...`` (or ``WITH ... SELECT ...``) in which tables carry Flink's dynamic table options, ``FROM t
    /*+ OPTIONS('k' = 'v') */`` (a form Spark rejects): the hinted tables that are sqlext's are read through
    their connector with the hint's options; the session passes the statement to Spark when none is."""

    query: exp.Expr
    #: Each hinted table reference (unqualified names: database "") with its hint.
    hints: tuple[tuple[TableIdentifier, dict[str, str]], ...] = ()

    @property
    def query_sql(self) -> str:
        """The query as Spark SQL (the hints as plain comments)."""
        return self.query.sql(dialect="spark")

    @property
    def source_tables(self) -> tuple[TableIdentifier, ...]:
        """Tables the query reads, each once, without CTE names (unqualified names: database "")."""
        return tables_read(self.query)


def tables_read(query: exp.Expr) -> tuple[TableIdentifier, ...]:
    """Tables a query reads, each once, without CTE names (unqualified names: database "")."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    found: dict[TableIdentifier, None] = {}
    for table in query.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes):
            continue
        found.setdefault(table_identifier(table))
    return tuple(found)


@dataclass(frozen=True)
class ShowJobs(Statement):
    pass


@dataclass(frozen=True)
class StopJob(Statement):
    job_id: str
