"""What a statement does, as facts an authorization rule can judge, and the error of a denial."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sqlext.errors import SqlextError
from sqlext.table import TableIdentifier

#: SQLSTATE of a denial: SQL's "insufficient privilege".
DENIED_SQL_STATE = "42501"


class Action(StrEnum):
    """What a statement does to an object. The value is the rule's name in errors, logs and docs."""

    SCRIPT = "script-transformation"  # TRANSFORM ... USING: runs a command line on the server
    ADD_RESOURCE = "add-resource"  # ADD JAR | FILE | ARCHIVE
    FUNCTION = "function-ddl"  # CREATE | DROP [TEMPORARY] FUNCTION
    REFLECTION = "reflection"  # reflect, java_method, try_reflect and Hive's reflect UDFs
    DYNAMIC_SQL = "dynamic-sql"  # EXECUTE IMMEDIATE, SQL scripts (BEGIN ... END)
    PATH_READ = "path-read"  # format.`path`, LOAD DATA, CREATE TEMPORARY VIEW ... USING
    PATH_WRITE = "path-write"  # INSERT OVERWRITE DIRECTORY
    DATA_SOURCE = "data-source"  # CREATE TABLE ... USING a provider that is not a file format (jdbc, ...)
    CUSTOM_CLASS = "custom-class"  # a table option naming a class (policy, extractor, JAAS)
    SETTING = "denied-setting"  # SET of a key that changes what the server may do
    LOCATION = "location"  # a table, partition or database location
    SELECT = "select"  # reading a table
    INSERT = "insert"  # INSERT INTO a table
    OWNERSHIP = "ownership"  # INSERT OVERWRITE, ALTER, DROP, TRUNCATE, ... of a table
    CREATE = "create"  # a new table: its creator owns it


#: Actions only admins may take, whatever else is granted.
ADMIN_ONLY = frozenset(
    {
        Action.SCRIPT,
        Action.ADD_RESOURCE,
        Action.FUNCTION,
        Action.REFLECTION,
        Action.DYNAMIC_SQL,
        Action.PATH_READ,
        Action.PATH_WRITE,
        Action.DATA_SOURCE,
        Action.CUSTOM_CLASS,
        Action.SETTING,
    }
)


@dataclass(frozen=True)
class Access:
    """One thing a statement does: ``action`` on ``target`` (a path, a key, a function, a command),
    or on ``table``."""

    action: Action
    target: str = ""
    table: TableIdentifier | None = None

    @property
    def object(self) -> str:
        """What the access is to, as errors and logs name it."""
        return f"{self.table.database}.{self.table.name}" if self.table is not None else self.target


class AuthorizationError(SqlextError):
    """A statement that the user may not run: it names the rule, the object and the user."""

    def __init__(self, access: Access, user: str, reason: str) -> None:
        super().__init__(
            f"Permission denied: user '{user}' may not run this statement: rule '{access.action}' on "
            f"'{access.object}': {reason} Nothing was run."
        )
        self.access = access
        self.user = user
        self.reason = reason
