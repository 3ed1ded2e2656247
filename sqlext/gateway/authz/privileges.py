"""Table privileges and owners, kept in the metastore as Hive's SQL-standard authorization keeps them.

A grant is an HMS ``HiveObjectPrivilege`` on a TABLE object for a USER principal (``grant_privileges``,
``revoke_privileges``, ``list_privileges``), so Hive's own ``SHOW GRANT`` reads the same grants and
they go when the table is dropped. A table's owner is the HMS table's ``owner`` field. Nothing is
cached: a grant or revoke counts from the next statement on, in every session.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.table import TableIdentifier

SELECT, INSERT, UPDATE, DELETE = "SELECT", "INSERT", "UPDATE", "DELETE"
#: What ``ALL`` grants, as in Hive's SQL-standard authorization.
ALL = (SELECT, INSERT, UPDATE, DELETE)
USER = ttypes.PrincipalType.USER


@dataclass(frozen=True)
class Grant:
    """One privilege of one user on one table."""

    table: TableIdentifier
    user: str
    privilege: str
    grantor: str
    granted_s: int


def _ref(table: TableIdentifier | None) -> ttypes.HiveObjectRef:
    if table is None:
        return ttypes.HiveObjectRef(objectType=ttypes.HiveObjectType.TABLE)
    return ttypes.HiveObjectRef(objectType=ttypes.HiveObjectType.TABLE, dbName=table.database, objectName=table.name)


class PrivilegeStore:
    """Owners and grants of the metastore's tables, through sqlext's metastore client."""

    def __init__(self, client: MetastoreClient) -> None:
        self.client = client

    def owner(self, table: TableIdentifier) -> str | None:
        """The table's owner; None when the metastore has no such table."""
        found = self.client.get_table(table.database, table.name)
        return None if found is None else (found.owner or "")

    def exists(self, table: TableIdentifier) -> bool:
        return self.client.get_table(table.database, table.name) is not None

    def tables_overlapping(self, location: str) -> list[tuple[TableIdentifier, str]]:
        """Tables (with their owners) whose location is ``location``, inside it or around it. Reads every
        table of the metastore: called only for a statement that gives a user's table a location."""
        from sqlext.gateway.authz.settings import normalize, under

        wanted = normalize(location)
        found = []
        for database in self.client.get_all_databases():
            for name in self.client.get_all_tables(database):
                table = self.client.get_table(database, name)
                if table is None or table.sd is None:
                    continue
                where = table.sd.location
                if where and (under(normalize(where), wanted) or under(wanted, normalize(where))):
                    found.append((TableIdentifier(database, name), table.owner or ""))
        return found

    def set_owner(self, table: TableIdentifier, user: str) -> None:
        """Make ``user`` the owner of a table just created. Spark's Hive client creates a table with the
        server's OS user as owner, and Hive grants that owner ALL on it
        (``hive.security.authorization.createtable.owner.grants``): both go to the creator, so a user who
        shares the OS user's name gets nothing from it."""
        found = self.client.get_table(table.database, table.name)
        if found is None or found.owner == user:
            return
        previous = found.owner or ""
        found.owner = user
        self.client.alter_table(table.database, table.name, found)
        if previous:
            self.revoke(table, previous, ALL)

    def grants(self, table: TableIdentifier | None = None, user: str | None = None) -> list[Grant]:
        """Grants on ``table`` (every table: None) to ``user`` (every user: None), sorted."""
        if table is None and user is None:
            raise ValueError("list grants of a table, of a user, or both")
        listed = self.client.call("list_privileges", user, USER if user else None, _ref(table))
        grants = [
            Grant(
                TableIdentifier(p.hiveObject.dbName, p.hiveObject.objectName),
                p.principalName,
                p.grantInfo.privilege.upper(),
                p.grantInfo.grantor or "",
                p.grantInfo.createTime or 0,
            )
            for p in listed or []
            if p.principalType == USER and p.hiveObject.objectType == ttypes.HiveObjectType.TABLE
        ]
        return sorted(
            grants,
            key=lambda g: (
                g.table.database,
                g.table.name,
                g.user,
                ALL.index(g.privilege) if g.privilege in ALL else len(ALL),
                g.privilege,
            ),
        )

    def privileges(self, table: TableIdentifier, user: str) -> frozenset[str]:
        """What ``user`` was granted on ``table``."""
        return frozenset(grant.privilege for grant in self.grants(table, user))

    def grant(self, table: TableIdentifier, user: str, privileges: tuple[str, ...], grantor: str) -> list[str]:
        """Grant what ``user`` does not hold yet; return what was new."""
        held = self.privileges(table, user)
        new = [p for p in privileges if p not in held]
        if new:
            self.client.call("grant_privileges", self._bag(table, user, new, grantor))
        return new

    def revoke(self, table: TableIdentifier, user: str, privileges: tuple[str, ...]) -> list[str]:
        """Revoke what ``user`` holds of ``privileges``; return what was revoked."""
        held = self.privileges(table, user)
        gone = [p for p in privileges if p in held]
        if gone:
            self.client.call("revoke_privileges", self._bag(table, user, gone, ""))
        return gone

    @staticmethod
    def _bag(table: TableIdentifier, user: str, privileges: list[str], grantor: str) -> ttypes.PrivilegeBag:
        now = int(time.time())
        return ttypes.PrivilegeBag(
            privileges=[
                ttypes.HiveObjectPrivilege(
                    hiveObject=_ref(table),
                    principalName=user,
                    principalType=USER,
                    grantInfo=ttypes.PrivilegeGrantInfo(
                        privilege=privilege, createTime=now, grantor=grantor, grantorType=USER, grantOption=False
                    ),
                )
                for privilege in privileges
            ]
        )
