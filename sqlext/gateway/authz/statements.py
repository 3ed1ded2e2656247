"""What a sqlext statement (Flink DDL, a sqlext INSERT, ``SET 'k' = 'v'``) does, from sqlext's parse.

Table options are judged as locations (``path`` and any option ending in ``.location``) and as code
(options ending in ``.class``, Kafka's ``properties.sasl.jaas.config``: classes the server would load).
An INSERT's query is Spark SQL: its parsed Spark plan is read too (script transformation, reflection,
paths), and each table it reads needs SELECT; so for a query with ``OPTIONS`` hints, whose hints' options are
judged as a table's. An INSERT into a table that is not sqlext's runs in
Spark: the caller checks it as a Spark statement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlext.gateway.authz.access import Access, Action
from sqlext.gateway.authz.settings import AuthorizationSettings
from sqlext.sql import statements as p
from sqlext.table import TableIdentifier

#: Table options whose value names a class the server loads, or a login module (JAAS).
CODE_OPTION_SUFFIXES = (".class", ".jaas.config", ".callback.handler.class")
LOCATION_OPTIONS = ("path",)
LOCATION_OPTION_SUFFIXES = (".location",)


def option_accesses(options: Mapping[str, str]) -> list[Access]:
    """Locations and classes named by a table's options."""
    found: list[Access] = []
    for key, value in options.items():
        lowered = key.lower()
        if lowered in LOCATION_OPTIONS or lowered.endswith(LOCATION_OPTION_SUFFIXES):
            found.append(Access(Action.LOCATION, value))
        elif lowered.endswith(CODE_OPTION_SUFFIXES):
            found.append(Access(Action.CUSTOM_CLASS, f"option '{key}'"))
    return found


def statement_accesses(
    statement: p.Statement,
    settings: AuthorizationSettings,
    resolve: Callable[[TableIdentifier], TableIdentifier],
    is_temporary: Callable[[TableIdentifier], bool],
    query_accesses: Callable[[str], list[Access]],
) -> list[Access]:
    """What ``statement`` does. ``resolve`` fills in the current database, ``is_temporary`` tells a
    session's temporary table (no privileges: it is the session's own), ``query_accesses`` reads a
    Spark query's parsed plan."""

    def table(ident: TableIdentifier, action: Action) -> list[Access]:
        resolved = resolve(ident)
        return [] if is_temporary(resolved) else [Access(action, table=resolved)]

    if isinstance(statement, p.CreateTable):
        found = option_accesses(statement.table.options)
        if statement.table.temporary:
            return found
        return found + table(statement.table.identifier, Action.CREATE)
    if isinstance(statement, p.CreateTableLike):
        found = option_accesses(statement.options) + table(statement.like, Action.SELECT)
        return found if statement.temporary else found + table(statement.identifier, Action.CREATE)
    if isinstance(statement, p.DropTable):
        return [] if statement.temporary else table(statement.target, Action.OWNERSHIP)
    if isinstance(statement, p.AlterTableOptions):
        return option_accesses(statement.set_options) + table(statement.target, Action.OWNERSHIP)
    if isinstance(statement, p.AlterTableSchema):
        return table(statement.target, Action.OWNERSHIP)
    if isinstance(statement, (p.ShowCreateTable, p.Describe)):
        return table(statement.target, Action.SELECT)
    if isinstance(statement, p.SetOption):
        key = statement.key
        return [Access(Action.SETTING, key)] if key is not None and settings.setting_denied(key) else []
    if isinstance(statement, p.Insert):
        found = table(statement.target, Action.OWNERSHIP if statement.overwrite else Action.INSERT)
        for source in statement.source_tables:
            found += table(source, Action.SELECT)
        return found + [a for a in query_accesses(statement.query_sql) if a.table is None]
    if isinstance(statement, p.Query):  # a hint's options are judged as a table's (a 'path' is a location)
        found = [access for _, hint in statement.hints for access in option_accesses(hint)]
        for source in statement.source_tables:
            found += table(source, Action.SELECT)
        return found + [a for a in query_accesses(statement.query_sql) if a.table is None]
    return []
