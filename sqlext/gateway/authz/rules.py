"""The rules: which user may take which :class:`~sqlext.gateway.authz.access.Access`.

- Admins (``spark.sqlext.gateway.admins``) may do anything, except give a table a location inside the
  server's own files (its home, users file, TLS key, conf), which nobody may.
- Everyone else is denied the admin-only actions (script transformation, ``ADD JAR|FILE|ARCHIVE``,
  function DDL, reflection, dynamic SQL, paths read or written directly, data sources that are not
  file formats, table options naming classes, denied settings), and may give tables locations only
  under ``spark.sqlext.gateway.allowed-locations``, and not around or inside another user's table.
- Tables, as Hive's SQL-standard authorization: the owner may do anything with a table; reading needs
  SELECT, ``INSERT INTO`` needs INSERT; ``INSERT OVERWRITE``, ``ALTER``, ``DROP``, ``TRUNCATE`` need
  ownership. A table the metastore does not have needs nothing (the statement fails in Spark, or
  creates it: its creator becomes its owner).

A denial is logged at WARNING with the user, the rule and the object, never the statement (its
literals may hold secrets) nor a setting's value.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlext.gateway.authz.access import ADMIN_ONLY, Access, Action, AuthorizationError
from sqlext.gateway.authz.privileges import INSERT, SELECT, PrivilegeStore
from sqlext.gateway.authz.settings import AuthorizationSettings
from sqlext.table import TableIdentifier

log = logging.getLogger("sqlext.gateway.authz")

_ADMIN_ONLY_REASONS = {
    Action.SCRIPT: "script transformation runs a command line as the server's OS user.",
    Action.ADD_RESOURCE: "adding jars, files or archives loads code or files into the server.",
    Action.FUNCTION: "creating or dropping functions loads classes into the server.",
    Action.REFLECTION: "reflect/java_method call any Java method in the server.",
    Action.DYNAMIC_SQL: "dynamic SQL and SQL scripts cannot be checked before they run.",
    Action.PATH_READ: "reading files by path bypasses table privileges.",
    Action.PATH_WRITE: "writing files by path bypasses table privileges.",
    Action.DATA_SOURCE: "only file formats (parquet, orc, csv, json, text, avro) and Hive tables may be created.",
    Action.CUSTOM_CLASS: "a table option naming a class makes the server load it, and a login module other than "
    "Kerberos's with its own keytab (or Kafka's PLAIN/SCRAM) logs in with the server's credentials.",
    Action.SETTING: "this setting changes what the server may do.",
}


class Rules:
    """Judges accesses for a user against the settings and the metastore's owners and grants."""

    def __init__(self, settings: AuthorizationSettings, store: PrivilegeStore) -> None:
        self.settings = settings
        self.store = store

    def check(self, user: str, accesses: Iterable[Access]) -> None:
        """Raise :class:`AuthorizationError` for the first access ``user`` may not take."""
        if not self.settings.enabled:
            return
        for access in accesses:
            reason = self.denial(user, access)
            if reason is not None:
                log.warning("denied: user '%s', rule '%s', object '%s'", user, access.action, access.object)
                raise AuthorizationError(access, user, reason)

    def denial(self, user: str, access: Access) -> str | None:
        """Why ``user`` may not take ``access``; None when they may."""
        if access.action is Action.LOCATION:
            return self._location_denial(user, access.target)
        if self.settings.is_admin(user):
            return None
        if access.action in ADMIN_ONLY:
            return "only admins (spark.sqlext.gateway.admins) may: " + _ADMIN_ONLY_REASONS[access.action]
        if access.action is Action.CREATE:
            return None
        if access.table is None:
            return self._database_denial(user, access) if access.target.startswith("database ") else None
        return self._table_denial(user, access.action, access.table)

    def _location_denial(self, user: str, location: str) -> str | None:
        protected = self.settings.protected_path(location)
        if protected is not None:
            return f"the location is inside the server's own files ({protected}); no table may be there."
        if self.settings.is_admin(user):
            return None
        if not self.settings.location_allowed(location):
            allowed = ", ".join(self.settings.allowed_locations)
            return f"tables may only be located under spark.sqlext.gateway.allowed-locations: {allowed}."
        others = [(table, owner) for table, owner in self.store.tables_overlapping(location) if owner != user]
        if others:
            table, owner = others[0]
            return f"it overlaps the location of table {table} of '{owner}', whose files a write there would replace."
        return None

    def _table_denial(self, user: str, action: Action, table: TableIdentifier) -> str | None:
        owner = self.store.owner(table)
        if owner is None or owner == user:
            return None
        if action is Action.OWNERSHIP:
            return f"only its owner ('{owner}') or an admin may overwrite, alter or drop it."
        needed = SELECT if action is Action.SELECT else INSERT
        if needed in self.store.privileges(table, user):
            return None
        return f"it needs {needed} on the table (GRANT {needed} ON {table} TO USER {user}), or ownership."

    def _database_denial(self, user: str, access: Access) -> str | None:
        """DROP DATABASE: every table in it must be the user's."""
        database = access.target.removeprefix("database ")
        for name in self.store.client.get_all_tables(database):
            owner = self.store.owner(TableIdentifier(database, name))
            if owner not in (None, user):
                return f"it holds table {database}.{name} of '{owner}'; only admins may drop others' tables."
        return None
