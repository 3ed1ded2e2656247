"""The session extension: ``sqlext.extend(spark)`` makes ``spark.sql(...)`` run sqlext statements.

An extended session runs every Spark statement exactly as Spark does. The rule (:mod:`sqlext.sql.ownership`): a
statement is sqlext's only if it is unambiguously one of its own statements about a sqlext table, or a form only
Flink SQL has (``CREATE TABLE ... WITH (...)``, ``SET 'k' = 'v'``, ``ALTER TABLE t SET (...)``, ``SHOW JOBS``, a
query with an ``OPTIONS`` hint after a sqlext table, ...), or a query that reads a sqlext table with ``METADATA``
columns (Spark's view of such a table has none). Everything else, including whatever sqlext's parser
cannot parse, goes to Spark untouched, and Spark's own result or error is what the user sees. Where a statement
Spark shares names a table (``SHOW CREATE TABLE t``, ``DESCRIBE t``, ``DROP TABLE t``, ``INSERT INTO t``,
``CREATE TABLE b LIKE t``), sqlext answers when ``t`` is a sqlext table and Spark otherwise. Where Flink and
Spark share a statement, the answer serves both: ``SHOW TABLES`` is Spark's (``namespace, tableName,
isTemporary``) with sqlext's temporary tables added, ``SET`` lists Spark's settings and sqlext's options,
``RESET`` resets both and ``RESET key`` that key wherever it lives. ``USE`` and ``CREATE DATABASE`` are Spark's,
and sqlext's DDL returns what Spark's does: no columns, no rows. The current database is Spark's.

Config comes from the ``spark.sqlext.*`` keys
of the Spark conf (see :mod:`sqlext.config`); without ``spark.sqlext.metastore.uris`` the embedded
metastore is started on demand. Spark's own Hive catalog must use the same metastore for Spark SQL to
see sqlext tables: build the session with :func:`spark_session` (or set
``spark.hadoop.hive.metastore.uris`` yourself).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlext.catalog.hive_storage import JSON_SERDE, SERDES_USING_METASTORE_FOR_SCHEMA, metastore_schema_serdes
from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.config import METASTORE_URIS, SESSION_PREFIX, WAREHOUSE, SqlextConfig
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.errors import ConfigError, SqlextError, ValidationError
from sqlext.frames import NO_ROWS, OK, StatementResult
from sqlext.spark import kerberos as spark_kerberos
from sqlext.spark.databases import create_as_spark
from sqlext.spark.driver_start import start_driver
from sqlext.spark.metastore import session_metastore
from sqlext.sql import parser as p
from sqlext.sql import statements as st
from sqlext.table import DEFAULT_DATABASE, TableIdentifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sqlext.table import TableDefinition

log = logging.getLogger("sqlext.session")
_ATTRIBUTE = "_sqlext_session"
#: Temporary views sqlext registers for the tables an insert reads; not the user's, so SHOW TABLES omits them.
INTERNAL_VIEW_PREFIX = "__sqlext_"


def resolve_metastore_uri(config: SqlextConfig) -> str:
    """The configured metastore, or the embedded one (started now if it is not running)."""
    return config.metastore_uris or launcher.start(launcher.MetastoreSettings.from_config(config)).uri


def spark_session(
    app_name: str = "sqlext",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    *,
    keep_metastore: bool = False,
) -> SparkSession:
    """A Spark session with Hive support on sqlext's metastore, extended with sqlext statements.

    Without ``spark.sqlext.metastore.uris`` the embedded metastore is used, started if none answers on its
    port; one started here is stopped when Python exits, unless ``keep_metastore`` (see
    :mod:`sqlext.spark.metastore`)."""
    import os

    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # spark-submit's --conf flags arrive as the JVM's spark.* properties: a JVM-backed SparkConf reads them.
    # A JVM started here gets ``conf`` too: its launch settings (spark.driver.memory) apply only then.
    start_driver(conf or {})
    conf = {**dict(SparkConf().getAll()), **(conf or {})}
    conf.update(spark_kerberos.secure({**SqlextConfig.load(conf).values, **conf}, SparkContext._jvm))
    master = master or conf.get("spark.master", "local[*]")
    config = SqlextConfig.load(conf)
    metastore = session_metastore(config, keep_metastore=keep_metastore)
    uri = metastore.uri
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master)
    builder = builder.config("spark.hadoop.hive.metastore.uris", uri).config("spark.sqlext.metastore.uris", uri)
    builder = builder.config("spark.pyspark.python", sys.executable)
    if metastore.warehouse:  # a spark.sql.warehouse.dir in ``conf`` is set below, over it
        builder = builder.config("spark.sql.warehouse.dir", metastore.warehouse)
    # Spark's Hive client, whenever it starts, takes a json table's columns from the metastore (see
    # _json_columns_from_the_metastore): given at its start, the client need not be started to be told.
    serdes = "spark.hadoop." + SERDES_USING_METASTORE_FOR_SCHEMA
    builder = builder.config(serdes, metastore_schema_serdes(conf.get(serdes)))
    for key, value in conf.items():
        if key != serdes:
            builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    extend(spark)
    return spark


class SqlextSession:
    """sqlext's state on one Spark session: catalog, config, ``SET`` options, current database."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        spark_conf = dict(spark.sparkContext.getConf().getAll())
        self.config = SqlextConfig.load(spark_conf)
        spark_kerberos.configure({**self.config.values, **spark_conf})
        self.metastore_uri = resolve_metastore_uri(self.config)
        from sqlext.catalog.hms import Catalog

        self.catalog = Catalog(MetastoreClient(self.metastore_uri, RetryPolicy.configured(self.config)))
        self.options: dict[str, str] = self._configured_options()
        from sqlext.metrics import serve_configured

        serve_configured(self.config)  # spark.sqlext.metrics.port: this process's endpoint, once
        self._metastore_answered = False
        self._spark_sql = spark.sql
        #: Spark's own ``sql``, which the extension replaced (for Spark's view of a sqlext table).
        self.spark_sql = spark.sql

    def _configured_options(self) -> dict[str, str]:
        """Session options given as Spark conf (``spark-submit --conf spark.sqlext.session.<key>=...``)."""
        return {
            key[len(SESSION_PREFIX) :]: value
            for key, value in self.config.values.items()
            if key.startswith(SESSION_PREFIX)
        }

    def reset_options(self, key: str | None = None) -> None:
        """Undo ``SET``: every option (or ``key``) back to what the Spark conf gave, as Flink's ``RESET``."""
        configured = self._configured_options()
        if key is None:
            self.options = configured
        elif key in configured:
            self.options[key] = configured[key]
        else:
            self.options.pop(key, None)

    @property
    def current_database(self) -> str:
        """Spark's current database (``USE`` is Spark's)."""
        try:
            return str(self.spark.catalog.currentDatabase())
        except Exception:  # a session without a catalog at hand
            return DEFAULT_DATABASE

    @current_database.setter
    def current_database(self, name: str) -> None:
        self.spark.catalog.setCurrentDatabase(name)

    def resolve(self, ident: TableIdentifier) -> TableIdentifier:
        """Fill in the current database of an unqualified name."""
        return ident if ident.database else TableIdentifier(self.current_database, ident.name, ident.catalog)

    def sql(self, text: str, *args: Any, **kwargs: Any) -> DataFrame:
        """Run one statement: sqlext's, or Spark's."""
        result = self.run(text, *args, **kwargs)
        return result.frame(self.spark) if isinstance(result, StatementResult) else result

    def run(self, text: str, *args: Any, **kwargs: Any) -> StatementResult | DataFrame:
        """Run one statement: a sqlext statement's result as rows, a statement passed to Spark as Spark's
        DataFrame."""
        statement = p.parse_statement(text)
        try:
            self._wait_for_metastore()
            if isinstance(statement, st.Passthrough):
                if statement.error is not None and statement.guard and self.is_sqlext_table(statement.guard):
                    raise statement.error  # Spark writing into a sqlext table would bypass its sink
                if not args and not kwargs and (query := self.query_read_by_connectors(text)) is not None:
                    from sqlext.jobs.query import run_query

                    return run_query(self, query)
                if not args and not kwargs and create_as_spark(self.spark, self.catalog, self.metastore_uri, text):
                    return NO_ROWS  # Spark's CREATE DATABASE, without starting Spark's Hive client for it
                return self._spark_sql(text, *args, **kwargs)
            self._check_metastore_unchanged()
            return self._execute(statement)
        except SqlextError as exc:
            if exc.statement is None:
                exc.statement = statement.sql
            raise

    def query_read_by_connectors(self, text: str) -> Any:
        """A query that reads a sqlext table with ``METADATA`` columns (Spark's view of the table lacks them, and
        Flink's ``SELECT *`` has them) or a temporary sqlext table (Spark has no view of it), which sqlext runs;
        None for any other statement, which is Spark's. The
        gateway's authorization judges such a query as the one sqlext runs."""
        from sqlext.jobs.query import reads_through_connector

        tree = p.query_tree(text)
        if tree is None:
            return None
        try:
            reads = reads_through_connector(self, tree)
        except ValidationError:  # a name that is no table's (`TextFileFormat`.`/a/path`): Spark's to answer
            return None
        return tree if reads else None

    def _wait_for_metastore(self) -> None:
        """Before the session's first statement, sqlext's or Spark's, wait for the metastore as sqlext's client
        waits (retries logged, up to ``spark.sqlext.metastore.retry.deadline``, then an error naming it): Spark's
        Hive client, which runs the statements sqlext passes on, fails at once when the metastore is down."""
        if not self._metastore_answered:
            self.catalog.client.get_all_databases()
            self._metastore_answered = True

    def _check_metastore_unchanged(self) -> None:
        """``spark.sqlext.metastore.uris`` is read once, when the session is extended: one set later (with
        ``spark.conf.set``) would otherwise be ignored without a word, and tables go to the first metastore."""
        configured = self.spark.conf.get(METASTORE_URIS, None)
        if configured and configured.strip() != self.metastore_uri.strip():
            raise ConfigError(
                f"{METASTORE_URIS} is '{configured}' in the Spark session's conf, but this session's sqlext "
                f"catalog uses the metastore at '{self.metastore_uri}': the option is read once, when sqlext "
                "extends the session. Give it when the session is built (SparkSession.builder.config, "
                "spark-submit --conf, or sqlext.spark_session(conf=...)), before the first statement.",
                option=METASTORE_URIS,
                value=configured,
            )

    def execute_script(self, text: str) -> list[DataFrame]:
        """Run every statement of a script in order; stop at the first that fails."""
        return [self.sql(statement) for statement in p.split_statements(text)]

    def execute_file(self, path: str | Path) -> list[DataFrame]:
        return self.execute_script(Path(path).read_text())

    # -- statements ------------------------------------------------------------------------------

    def _execute(self, statement: st.Statement) -> StatementResult | DataFrame:
        handler = getattr(self, f"_on_{type(statement).__name__}", None)
        if handler is None:
            raise SqlextError(f"Statement not supported: {statement.sql}", statement=statement.sql)
        result: StatementResult | DataFrame = handler(statement)
        return result

    def is_sqlext_table(self, name: TableIdentifier) -> bool:
        """Whether a name in a statement means a sqlext table (a Spark temporary view of an unqualified
        name comes first, as in Spark)."""
        if not name.database and name.catalog is None and self._is_temp_view(name.name):
            return False
        return self.catalog.table_exists(self.resolve(name))

    def _is_temp_view(self, name: str) -> bool:
        try:
            catalog = self.spark._jsparkSession.sessionState().catalog()
            return bool(catalog.getTempView(name).isDefined())
        except Exception:  # no JVM session at hand: a temporary view cannot be told apart
            return False

    def _on_CreateTable(self, statement: st.CreateTable) -> StatementResult:
        from dataclasses import replace

        table = replace(statement.table, identifier=self.resolve(statement.table.identifier))
        self.catalog.create_table(table, statement.if_not_exists)
        return NO_ROWS

    def _on_CreateTableLike(self, statement: st.CreateTableLike) -> StatementResult | DataFrame:
        from dataclasses import replace

        from sqlext.sql.ddl import merge_like

        if statement.plain and not self.is_sqlext_table(statement.like):
            return self._spark_sql(statement.sql)  # Spark's CREATE TABLE b LIKE a of its own table
        base = self.catalog.get_table(self.resolve(statement.like))
        derived = replace(statement, identifier=self.resolve(statement.identifier))
        self.catalog.create_table(merge_like(base, derived), statement.if_not_exists)
        return NO_ROWS

    def _on_CreateDatabase(self, statement: st.CreateDatabase) -> StatementResult:
        warehouse = self.config.get(WAREHOUSE)
        location = f"{warehouse.rstrip('/')}/{statement.name}.db" if warehouse else None
        self.catalog.create_database(
            statement.name, statement.if_not_exists, location, statement.comment, statement.properties
        )
        return NO_ROWS

    def _on_DropTable(self, statement: st.DropTable) -> StatementResult | DataFrame:
        if not statement.temporary and not self.is_sqlext_table(statement.target):
            return self._spark_sql(statement.sql)  # Spark drops its own tables, views and temporary views
        ident = self.resolve(statement.target)
        self.catalog.drop_table(ident, statement.if_exists, temporary=statement.temporary)
        self._refresh(ident)
        return NO_ROWS

    def _on_AlterTableOptions(self, statement: st.AlterTableOptions) -> StatementResult:
        self.catalog.alter_table_options(self.resolve(statement.target), statement.set_options, statement.reset_keys)
        return NO_ROWS

    def _on_AlterTableSchema(self, statement: st.AlterTableSchema) -> StatementResult | DataFrame:
        """Column DDL: on a sqlext table, the table and every partition (see Catalog.alter_table_schema); Spark's
        and Hive's forms of it on any other table are Spark's."""
        if statement.shared and not self.is_sqlext_table(statement.target):
            return self._spark_sql(statement.sql)
        ident = self.resolve(statement.target)
        absent = (
            ident not in self.catalog.temporary and self.catalog.client.get_table(ident.database, ident.name) is None
        )
        if statement.if_exists and absent:
            return NO_ROWS  # a table that is there but not sqlext's is named by the error below
        self.catalog.alter_table_schema(ident, statement.change, statement.cascade)
        self._refresh(ident)
        return NO_ROWS

    def _on_ShowCreateTable(self, statement: st.ShowCreateTable) -> StatementResult | DataFrame:
        from sqlext.sql.ddl import show_create_table

        if not self.is_sqlext_table(statement.target):
            return self._spark_sql(statement.sql)
        table = self.catalog.get_table(self.resolve(statement.target))
        return StatementResult("createtab_stmt STRING", [(show_create_table(table),)])

    def _on_Describe(self, statement: st.Describe) -> StatementResult | DataFrame:
        from sqlext.sql.ddl import describe_rows

        if not self.is_sqlext_table(statement.target):
            return self._spark_sql(statement.sql)
        return StatementResult(
            "col_name STRING, data_type STRING, comment STRING",
            describe_rows(self.catalog.get_table(self.resolve(statement.target))),
        )

    def _on_ShowTables(self, statement: st.ShowTables) -> StatementResult | DataFrame:
        """Spark's rows, without the temporary views sqlext's inserts read through (``__sqlext_...``), and with
        this session's temporary sqlext tables of the database (``isTemporary``)."""
        from fnmatch import fnmatchcase

        spark_rows = self._spark_sql(statement.sql)
        rows = [tuple(row) for row in spark_rows.collect()]  # a command's rows: already computed
        shown = [row for row in rows if not (row[2] and str(row[1]).startswith(INTERNAL_VIEW_PREFIX))]
        database = (statement.database or self.current_database).lower()
        patterns = [p.strip().lower() for p in (statement.pattern or "*").split("|")]
        temporary = sorted(
            ident.name
            for ident in self.catalog.temporary
            if ident.database == database and any(fnmatchcase(ident.name, p) for p in patterns)
        )
        if not temporary and len(shown) == len(rows):
            return spark_rows
        schema = "namespace STRING, tableName STRING, isTemporary BOOLEAN"
        return StatementResult(schema, [*shown, *((database, name, True) for name in temporary)])

    def _on_SetOption(self, statement: st.SetOption) -> StatementResult | DataFrame:
        if statement.key is None:  # Spark's settings and sqlext's options, by key
            if not self.options:
                return self._spark_sql(statement.sql)
            rows = [(r[0], r[1]) for r in self._spark_sql(statement.sql).collect()]
            return StatementResult("key STRING, value STRING", sorted([*rows, *self.options.items()]))
        if statement.value is None:  # Spark's SET key: shown wherever it lives
            if statement.key not in self.options:
                return self._spark_sql(statement.sql)
            return StatementResult("key STRING, value STRING", [(statement.key, self.options[statement.key])])
        self.options[statement.key] = statement.value
        return StatementResult("key STRING, value STRING", [(statement.key, statement.value)])

    def _on_ResetOption(self, statement: st.ResetOption) -> DataFrame:
        """Spark's RESET [key] and sqlext's: the key (or every setting) wherever it lives."""

        self.reset_options(statement.key)
        if not statement.flink_form:
            return self._spark_sql(statement.sql)
        # Flink's RESET 'key' (or RESET key): Spark's RESET of the same key, back-quoted (a '-' needs it), when
        # Spark can read it as one.
        key = statement.key or ""
        if key and "`" not in key:
            return self._spark_sql(f"RESET `{key}`")
        return NO_ROWS.frame(self.spark)

    def _on_Insert(self, statement: st.Insert) -> StatementResult | DataFrame:
        from dataclasses import replace

        try:
            from sqlext.jobs.insert import execute_insert
        except ImportError as exc:
            raise SqlextError(
                f"INSERT into sqlext tables is not available in this installation (sqlext.jobs.insert: {exc}).",
                statement=statement.sql,
            ) from exc

        if not self.is_sqlext_table(statement.target):
            return self._spark_sql(statement.sql)  # a plain Spark/Hive table
        if statement.dynamic_partitions:
            raise ValidationError(
                f"Only static partitions (k='v') are supported in PARTITION (...) of a sqlext table; "
                f"{', '.join(statement.dynamic_partitions)} has no value: {statement.sql}",
                statement=statement.sql,
            )
        return execute_insert(self, replace(statement, target=self.resolve(statement.target)))

    def _on_Query(self, statement: st.Query) -> DataFrame:
        """A query with ``OPTIONS`` hints: sqlext's when a hinted table is a sqlext table, else Spark's (whose
        parser rejects the hint)."""
        if not any(self.is_sqlext_table(ident) for ident, _ in statement.hints):
            return self._spark_sql(statement.sql)
        from sqlext.jobs.query import run_query

        return run_query(self, statement.query)

    def _on_ShowJobs(self, statement: st.ShowJobs) -> StatementResult:
        from sqlext.jobs.checkpoint import started_checkpoint

        rows = []
        for query in self.spark.streams.active:
            prepared = started_checkpoint(str(query.id))
            checkpoint, identity = (prepared.location, prepared.identity.describe()) if prepared else (None, None)
            status = "RUNNING" if query.isActive else "FINISHED"
            rows.append((str(query.id), query.name or "", status, checkpoint, identity))
        return StatementResult(
            "job_id STRING, job_name STRING, status STRING, checkpoint STRING, identity STRING", rows
        )

    def _on_StopJob(self, statement: st.StopJob) -> StatementResult:
        query = self.spark.streams.get(statement.job_id)
        if query is None:
            raise SqlextError(f"No running job with id '{statement.job_id}'; SHOW JOBS lists them.")
        insert = running_insert(statement.job_id)
        if insert is not None:
            insert.stop()  # after the batch in progress is committed
        else:
            query.stop()
        return OK

    def _refresh(self, ident: TableIdentifier) -> None:
        # Nothing cached, or the table is gone: nothing to refresh.
        with contextlib.suppress(Exception):
            self.spark.catalog.refreshTable(f"`{ident.database}`.`{ident.name}`")

    def table(self, name: str) -> TableDefinition:
        return self.catalog.get_table(self.resolve(TableIdentifier.parse(name, default_database="")))


def extend(spark: SparkSession) -> SqlextSession:
    """Make ``spark.sql`` understand sqlext statements (idempotent); return the sqlext session."""
    existing = getattr(spark, _ATTRIBUTE, None)
    if isinstance(existing, SqlextSession):
        return existing
    session = SqlextSession(spark)
    _json_columns_from_the_metastore(spark)
    setattr(spark, _ATTRIBUTE, session)
    spark.sql = session.sql  # type: ignore[method-assign,assignment]
    return session


def _json_columns_from_the_metastore(spark: SparkSession) -> None:
    """Make Spark's Hive client take a json table's columns from the metastore (see
    :data:`~sqlext.catalog.hive_storage.SERDES_USING_METASTORE_FOR_SCHEMA`): without, each lookup of a sqlext json
    table logs Hive's ``JsonSerDe not found`` ERROR with its stack trace, then reads the table all the same."""
    key = SERDES_USING_METASTORE_FOR_SCHEMA
    if JSON_SERDE in str(spark.sparkContext.getConf().get("spark.hadoop." + key, "")).split(","):
        return  # the Hive client reads it from the conf it starts with: no need to start the client now
    try:
        # The Hive client's own HiveConf, which its table lookups read (Hive's SessionState conf).
        hive_conf = spark._jsparkSession.sharedState().externalCatalog().unwrapped().client().conf()
        current = hive_conf.get(key)
        if JSON_SERDE not in str(current or "").split(","):
            hive_conf.set(key, metastore_schema_serdes(str(current) if current else None))
    except Exception as exc:  # no Hive catalog (nothing to look tables up in), or no JVM at hand
        log.debug("Spark's Hive client keeps its SerDe list: %s", exc)
