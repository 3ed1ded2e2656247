"""Hive's lock and transaction calls through sqlext's metastore client, as Iceberg's Hive catalog makes them."""

from __future__ import annotations

import socket
from typing import Any

from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.metastore.client import MetastoreClient


def table_lock(client: MetastoreClient, database: str, table: str, lock_type: int, txnid: int = 0) -> Any:
    """Ask for a table lock (``lock``): outside a transaction as Iceberg's Hive catalog does before a commit, or
    in transaction ``txnid`` to read."""
    operation = ttypes.DataOperationType.SELECT if txnid else ttypes.DataOperationType.UNSET
    component = ttypes.LockComponent(
        type=lock_type, level=ttypes.LockLevel.TABLE, dbname=database, tablename=table, operationType=operation
    )
    request = ttypes.LockRequest(
        component=[component], txnid=txnid or None, user="sqlext-test", hostname=socket.gethostname()
    )
    return client.call("lock", request)


def locks_on(client: MetastoreClient, database: str) -> list[tuple[int, str, str, str]]:
    """(lock id, table, type, state) of each lock ``show_locks`` lists on ``database``."""
    response = client.call("show_locks", ttypes.ShowLocksRequest(dbname=database))
    return sorted(
        (
            element.lockid,
            element.tablename,
            ttypes.LockType._VALUES_TO_NAMES[element.type],
            ttypes.LockState._VALUES_TO_NAMES[element.state],
        )
        for element in response.locks or []
        if element.dbname == database
    )


def assert_locks_are_served(client: MetastoreClient, database: str, table: str) -> None:
    """A shared read lock is granted, listed and heartbeaten, a conflicting exclusive one waits until it is
    released, an unlocked table lists no lock, and a lock taken in a transaction goes with its commit."""
    read = table_lock(client, database, table, ttypes.LockType.SHARED_READ)
    assert ttypes.LockState._VALUES_TO_NAMES[read.state] == "ACQUIRED"
    assert locks_on(client, database) == [(read.lockid, table, "SHARED_READ", "ACQUIRED")]

    exclusive = table_lock(client, database, table, ttypes.LockType.EXCLUSIVE)
    assert ttypes.LockState._VALUES_TO_NAMES[exclusive.state] == "WAITING"
    checked = client.call("check_lock", ttypes.CheckLockRequest(lockid=exclusive.lockid))
    assert ttypes.LockState._VALUES_TO_NAMES[checked.state] == "WAITING"
    assert locks_on(client, database) == [
        (read.lockid, table, "SHARED_READ", "ACQUIRED"),
        (exclusive.lockid, table, "EXCLUSIVE", "WAITING"),
    ]

    before = _last_heartbeat(client, database, read.lockid)
    client.call("heartbeat", ttypes.HeartbeatRequest(lockid=read.lockid))  # Iceberg's lock holder does so
    assert _last_heartbeat(client, database, read.lockid) > before

    client.call("unlock", ttypes.UnlockRequest(lockid=read.lockid))
    checked = client.call("check_lock", ttypes.CheckLockRequest(lockid=exclusive.lockid))
    assert ttypes.LockState._VALUES_TO_NAMES[checked.state] == "ACQUIRED"
    client.call("unlock", ttypes.UnlockRequest(lockid=exclusive.lockid))
    assert locks_on(client, database) == []

    opened = client.call("open_txns", ttypes.OpenTxnRequest(num_txns=1, user="sqlext-test", hostname="localhost"))
    (txnid,) = opened.txn_ids
    assert txnid in _open_txns(client)
    in_txn = table_lock(client, database, table, ttypes.LockType.SHARED_READ, txnid=txnid)
    assert ttypes.LockState._VALUES_TO_NAMES[in_txn.state] == "ACQUIRED"
    assert [lock[2:] for lock in locks_on(client, database)] == [("SHARED_READ", "ACQUIRED")]
    client.call("commit_txn", ttypes.CommitTxnRequest(txnid=txnid))
    assert txnid not in _open_txns(client)
    assert locks_on(client, database) == []


def _last_heartbeat(client: MetastoreClient, database: str, lockid: int) -> int:
    response = client.call("show_locks", ttypes.ShowLocksRequest(dbname=database))
    (element,) = [element for element in response.locks if element.lockid == lockid]
    return int(element.lastheartbeat)


def _open_txns(client: MetastoreClient) -> set[int]:
    info = client.call("get_open_txns_info")
    return {txn.id for txn in info.open_txns if ttypes.TxnState._VALUES_TO_NAMES[txn.state] == "OPEN"}
