"""What a gateway session calls: check a statement before it runs, answer grant statements, record
the creators of new tables.

Which checks a statement gets depends on who runs it: sqlext's statements are judged on sqlext's parse
(:mod:`~sqlext.gateway.authz.statements`), Spark's on their Spark plans
(:mod:`~sqlext.gateway.authz.plan`); an INSERT into a table that is not sqlext's runs in Spark and is
judged as Spark's; a query of a sqlext table with ``METADATA`` columns, which sqlext runs, as sqlext's query. A
statement that neither parser can read is not judged: it fails to parse when it
runs, before anything happens. An admin's statement is not analyzed (their only limit, the server's
own files, is read from the parsed plan); with authorization off nothing is checked or recorded.

Whoever creates a table owns it: after a statement that created one, the table's owner in the
metastore is set to the user (Spark and sqlext would record the server's OS user).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from sqlext.gateway.authz.access import Access, Action
from sqlext.gateway.authz.grants import GrantCommands
from sqlext.gateway.authz.plan import SparkStatementInspector
from sqlext.gateway.authz.privileges import PrivilegeStore
from sqlext.gateway.authz.rules import Rules
from sqlext.gateway.authz.settings import AuthorizationSettings
from sqlext.gateway.authz.statements import statement_accesses
from sqlext.gateway.results import ResultSet
from sqlext.sql import statements as p
from sqlext.sql.parser import parse_statement
from sqlext.table import TableIdentifier

if TYPE_CHECKING:
    from sqlext.session import SqlextSession

#: What runs after a statement succeeded (the new tables' owners recorded).
AfterRun = Callable[[], None]


class SessionAuthorizer:
    """Authorization of one gateway session of ``user``."""

    def __init__(self, settings: AuthorizationSettings, session: SqlextSession, user: str) -> None:
        self.settings = settings
        self.session = session
        self.user = user
        self.store = PrivilegeStore(session.catalog.client)
        self.rules = Rules(settings, self.store)
        self.grants = GrantCommands(self.store, settings.is_admin)
        self.inspector = SparkStatementInspector(session.spark, settings)

    @property
    def _analyzes(self) -> bool:
        return not self.settings.is_admin(self.user)

    def answer(self, sql: str) -> ResultSet | None:
        """The answer to GRANT, REVOKE or SHOW GRANT; None for any other statement."""
        return self.grants.execute(sql, self.user, self.session.current_database)

    def check(self, sql: str) -> AfterRun:
        """Raise :class:`~sqlext.gateway.authz.access.AuthorizationError` unless the user may run
        ``sql``; return what to do once it ran."""
        if not self.settings.enabled:
            return lambda: None
        accesses = self.accesses(sql)
        self.rules.check(self.user, accesses)
        created = [a.table for a in accesses if a.action is Action.CREATE and a.table is not None]
        new = [table for table in dict.fromkeys(created) if not self.store.exists(table)]
        return lambda: self._record_creator(new)

    def check_settings(self, keys: Iterable[str]) -> None:
        """Session settings given when a session opens are judged as ``SET`` would be."""
        denied = [Access(Action.SETTING, key) for key in keys if self.settings.setting_denied(key)]
        self.rules.check(self.user, denied)

    def owns(self, table: TableIdentifier) -> bool:
        """Whether the user owns ``table`` (or is an admin)."""
        return self.settings.is_admin(self.user) or self.store.owner(table) == self.user

    def accesses(self, sql: str) -> list[Access]:
        """What ``sql`` does, as this session would run it."""
        statement = parse_statement(sql)
        if isinstance(statement, p.Passthrough):
            query = self.session.query_read_by_connectors(sql)
            if query is None:
                return self.inspector.accesses(sql, analyze=self._analyzes)
            # sqlext runs it (Spark's analysis cannot resolve METADATA columns or temporary sqlext tables): a query
            # of the tables it reads
            return self._sqlext_accesses(p.Query(sql, query))
        shared = isinstance(statement, p.Insert) or (isinstance(statement, p.AlterTableSchema) and statement.shared)
        target = getattr(statement, "target", None)
        if shared and target is not None and not self.session.catalog.table_exists(self.session.resolve(target)):
            return self.inspector.accesses(sql, analyze=self._analyzes)  # Spark runs it
        if isinstance(statement, p.Query) and not any(self.session.is_sqlext_table(t) for t, _ in statement.hints):
            return self.inspector.accesses(sql, analyze=self._analyzes)  # Spark runs it
        return self._sqlext_accesses(statement)

    def _sqlext_accesses(self, statement: p.Statement) -> list[Access]:
        """What a statement sqlext runs does, from sqlext's parse."""
        return statement_accesses(
            statement,
            self.settings,
            self.session.resolve,
            lambda table: table in self.session.catalog.temporary,
            lambda query: self.inspector.accesses(query, analyze=False),
        )

    def _record_creator(self, tables: list[TableIdentifier]) -> None:
        for table in tables:
            self.store.set_owner(table, self.user)
