"""What a sqlext statement (Flink DDL, a sqlext INSERT, ``SET 'k' = 'v'``) does, from sqlext's parse.

Table options are judged as locations (``path`` and any option ending in ``.location``) and as code
(options ending in ``.class``: classes the server would load; Kafka's ``properties.sasl.jaas.config``: a login
module, which users may name only among :data:`sqlext.connectors.kafka.jaas.USER_MODULES`, Kerberos's with a
keytab judged as a location; librdkafka's ``sasl.kerberos.kinit.cmd``: a command line).
An INSERT's query is Spark SQL: its parsed Spark plan is read too (script transformation, reflection,
paths), and each table it reads needs SELECT; so for a query with ``OPTIONS`` hints, whose hints' options are
judged as a table's. An INSERT into a table that is not sqlext's runs in
Spark: the caller checks it as a Spark statement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlext.connectors.kafka import jaas
from sqlext.gateway.authz.access import Access, Action
from sqlext.gateway.authz.settings import AuthorizationSettings
from sqlext.sql import statements as p
from sqlext.table import TableIdentifier

#: Table options whose value names a class the server loads.
CODE_OPTION_SUFFIXES = (".class", ".callback.handler.class")
#: A login module (Kafka's ``sasl.jaas.config``): see :func:`_jaas_accesses`.
JAAS_SUFFIX = ".jaas.config"
#: librdkafka's ``sasl.kerberos.kinit.cmd``: a command line the client runs.
KINIT_SUFFIX = ".kinit.cmd"
#: librdkafka's ``sasl.kerberos.keytab``: a file the server reads.
KEYTAB_SUFFIX = ".kerberos.keytab"
LOCATION_OPTIONS = ("path",)
LOCATION_OPTION_SUFFIXES = (".location",)


def option_accesses(options: Mapping[str, str]) -> list[Access]:
    """Locations and classes named by a table's options."""
    found: list[Access] = []
    for key, value in options.items():
        lowered = key.lower()
        if lowered in LOCATION_OPTIONS or lowered.endswith(LOCATION_OPTION_SUFFIXES):
            found.append(Access(Action.LOCATION, value))
        elif lowered.endswith(JAAS_SUFFIX):
            found += _jaas_accesses(key, value)
        elif lowered.endswith(KINIT_SUFFIX):
            found.append(Access(Action.SCRIPT, f"option '{key}'"))
        elif lowered.endswith(KEYTAB_SUFFIX):
            found.append(Access(Action.LOCATION, value))
        elif lowered.endswith(CODE_OPTION_SUFFIXES):
            found.append(Access(Action.CUSTOM_CLASS, f"option '{key}'"))
    return found


def _jaas_accesses(key: str, value: str) -> list[Access]:
    """A JAAS config is code unless it names only login modules users may name (:data:`jaas.USER_MODULES`),
    Kerberos's with a keytab of its own: that keytab is a path the server reads, judged as a location (under
    the allowed locations, never the server's own files)."""
    try:
        modules = jaas.parse(value)
    except ValueError as exc:
        return [Access(Action.CUSTOM_CLASS, f"option '{key}' (unreadable: {exc})")]
    found: list[Access] = []
    for module in modules:
        refusal = jaas.user_refusal(module)
        if refusal is not None:
            return [Access(Action.CUSTOM_CLASS, f"option '{key}' ({refusal})")]
        if module.class_name == jaas.KRB5_LOGIN_MODULE:
            found.append(Access(Action.LOCATION, module.options["keyTab"]))
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
