"""``GRANT``, ``REVOKE`` and ``SHOW GRANT`` on tables, as Hive's SQL-standard authorization has them::

    GRANT {SELECT | INSERT | UPDATE | DELETE | ALL [PRIVILEGES]} [, ...] ON [TABLE] t TO USER u [, USER v ...]
    REVOKE {...} [, ...] ON [TABLE] t FROM USER u [, USER v ...]
    SHOW GRANT [USER u] [ON [TABLE] t]

A table's owner and admins grant and revoke; a grant counts from the next statement on, in every
session. ``SHOW GRANT`` lists what an admin asks for; anyone else sees their own grants and the
grants on the tables they own. Spark has no such statements (it answers ``GRANT`` with "Operation not
allowed"), so nothing of Spark's is shadowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from TCLIService import ttypes

from sqlext.errors import ParseError, TableNotFoundError
from sqlext.gateway.authz.access import Access, Action, AuthorizationError
from sqlext.gateway.authz.privileges import ALL, Grant, PrivilegeStore
from sqlext.gateway.results import ResultColumn, ResultSet
from sqlext.table import TableIdentifier

T = ttypes.TTypeId
#: Statements answered here (the cheap test; the grammar follows).
GRANT_STATEMENT = re.compile(r"^\s*(GRANT|REVOKE|SHOW\s+GRANT)\b", re.IGNORECASE)
_NAME = r"(?:`[^`]+`|[A-Za-z_][\w$]*)"
_TABLE = rf"(?P<table>{_NAME}(?:\s*\.\s*{_NAME}){{0,2}})"
_USERS = rf"(?P<users>USER\s+{_NAME}(?:\s*,\s*USER\s+{_NAME})*)"
_PRIVILEGES = r"(?P<privileges>[A-Za-z]+(?:\s+PRIVILEGES)?(?:\s*,\s*[A-Za-z]+(?:\s+PRIVILEGES)?)*)"
_GRANT = re.compile(rf"^\s*GRANT\s+{_PRIVILEGES}\s+ON\s+(?:TABLE\s+)?{_TABLE}\s+TO\s+{_USERS}\s*;?\s*$", re.I)
_REVOKE = re.compile(rf"^\s*REVOKE\s+{_PRIVILEGES}\s+ON\s+(?:TABLE\s+)?{_TABLE}\s+FROM\s+{_USERS}\s*;?\s*$", re.I)
_SHOW = re.compile(
    rf"^\s*SHOW\s+GRANT(?:\s+USER\s+(?P<user>{_NAME}))?(?:\s+ON\s+(?:TABLE\s+)?{_TABLE})?\s*;?\s*$", re.I
)
GRANTABLE = (*ALL, "ALL")
COLUMNS = (
    ResultColumn("database", T.STRING_TYPE),
    ResultColumn("table", T.STRING_TYPE),
    ResultColumn("partition", T.STRING_TYPE),
    ResultColumn("column", T.STRING_TYPE),
    ResultColumn("principal_name", T.STRING_TYPE),
    ResultColumn("principal_type", T.STRING_TYPE),
    ResultColumn("privilege", T.STRING_TYPE),
    ResultColumn("grant_option", T.BOOLEAN_TYPE),
    ResultColumn("grant_time", T.BIGINT_TYPE),
    ResultColumn("grantor", T.STRING_TYPE),
)


def _ok() -> ResultSet:
    """A fresh one each time: a result set keeps how far it was fetched."""
    return ResultSet([ResultColumn("result", T.STRING_TYPE)], [("OK",)])


@dataclass(frozen=True)
class GrantStatement:
    """A parsed GRANT (``grant`` True) or REVOKE."""

    grant: bool
    privileges: tuple[str, ...]
    table: TableIdentifier
    users: tuple[str, ...]


@dataclass(frozen=True)
class ShowGrant:
    user: str | None
    table: TableIdentifier | None


def _unquote(name: str) -> str:
    return name.strip().strip("`")


def _table(text: str, current_database: str) -> TableIdentifier:
    parts = [_unquote(part) for part in re.split(r"\s*\.\s*(?=[`A-Za-z_])", text.strip())]
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) == 1:
        return TableIdentifier(current_database, parts[0].lower())
    return TableIdentifier(parts[-2].lower(), parts[-1].lower())


def _privileges(text: str, sql: str) -> tuple[str, ...]:
    named = [re.sub(r"\s+PRIVILEGES$", "", item.strip(), flags=re.I).upper() for item in text.split(",")]
    unknown = [item for item in named if item not in GRANTABLE]
    if unknown:
        raise ParseError(
            f"Unknown privilege {', '.join(unknown)} in: {sql}. Allowed: {', '.join(GRANTABLE)}.", statement=sql
        )
    expanded = [p for item in named for p in (ALL if item == "ALL" else (item,))]
    return tuple(dict.fromkeys(expanded))


def parse(sql: str, current_database: str) -> GrantStatement | ShowGrant:
    """Parse a GRANT, REVOKE or SHOW GRANT statement (errors show the grammar)."""
    for pattern, grant in ((_GRANT, True), (_REVOKE, False)):
        match = pattern.match(sql)
        if match:
            users = tuple(_unquote(u) for u in re.findall(rf"USER\s+({_NAME})", match["users"], re.I))
            privileges = _privileges(match["privileges"], sql)
            return GrantStatement(grant, privileges, _table(match["table"], current_database), users)
    match = _SHOW.match(sql)
    if match:
        table = _table(match["table"], current_database) if match["table"] else None
        return ShowGrant(_unquote(match["user"]) if match["user"] else None, table)
    raise ParseError(
        f"Cannot read: {sql}. Expected GRANT {{SELECT | INSERT | UPDATE | DELETE | ALL}} [, ...] ON [TABLE] t "
        "TO USER u, REVOKE ... ON [TABLE] t FROM USER u, or SHOW GRANT [USER u] [ON [TABLE] t].",
        statement=sql,
    )


class GrantCommands:
    """Answers GRANT, REVOKE and SHOW GRANT for a user."""

    def __init__(self, store: PrivilegeStore, is_admin: Callable[[str], bool]) -> None:
        self.store = store
        self.is_admin = is_admin

    def execute(self, sql: str, user: str, current_database: str) -> ResultSet | None:
        """The answer to a grant statement; None for any other statement."""
        if not GRANT_STATEMENT.match(sql):
            return None
        statement = parse(sql, current_database)
        if isinstance(statement, ShowGrant):
            return self._show(statement, user)
        owner = self.store.owner(statement.table)
        if owner is None:
            raise TableNotFoundError(f"Table {statement.table} does not exist: nothing to grant on.", statement=sql)
        if owner != user and not self.is_admin(user):
            access = Access(Action.OWNERSHIP, table=statement.table)
            raise AuthorizationError(access, user, f"only its owner ('{owner}') or an admin may grant or revoke.")
        for grantee in statement.users:
            if statement.grant:
                self.store.grant(statement.table, grantee, statement.privileges, user)
            else:
                self.store.revoke(statement.table, grantee, statement.privileges)
        return _ok()

    def _show(self, statement: ShowGrant, user: str) -> ResultSet:
        if statement.user is None and statement.table is None:
            statement = ShowGrant(user, None)
        if not self.is_admin(user) and statement.user != user:
            table = statement.table
            owner = self.store.owner(table) if table is not None else None
            if table is None or owner not in (user, None):
                target = Access(Action.OWNERSHIP, table=table) if table else Access(Action.OWNERSHIP, "grants")
                raise AuthorizationError(target, user, "users see their own grants and those on tables they own.")
        grants = self.store.grants(statement.table, statement.user)
        return ResultSet(COLUMNS, [_row(grant) for grant in grants])


def _row(grant: Grant) -> tuple[object, ...]:
    granted_ms = grant.granted_s * 1000
    return (
        grant.table.database,
        grant.table.name,
        "",
        "",
        grant.user,
        "USER",
        grant.privilege,
        False,
        granted_ms,
        grant.grantor,
    )
