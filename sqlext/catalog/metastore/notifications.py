"""The Hive Metastore's notification log, read for one table: what Hive replication and Impala's event processor
read instead of listing a table again.

A metastore writes the log when ``hive.metastore.transactional.event.listeners`` (or ``.event.listeners``) names
``org.apache.hive.hcatalog.listener.DbNotificationListener``. Each DDL then gets an event: an id, a type
(``ADD_PARTITION``, ``ALTER_PARTITION``, ``DROP_PARTITION``, ``ALTER_TABLE``, ...), the database and table, and a
message: JSON (formats ``json-0.2`` in Hive 2.3, ``json-2.0`` in 3.1 and 4) or, with Hive 4's
``GzipJSONMessageEncoder``, base64 of gzipped JSON (``gzip(json-2.0)``).

:func:`table_changes` reads the events after an id, keeps the table's, and decodes its partition events into
:class:`PartitionChange` values; anything it cannot vouch for (a table-level event, a message it cannot decode, a
gap in the ids because the metastore's cleaner removed events not yet read) comes back as a reason to list the
table again (:attr:`TableChanges.relist`). The request-side db/table filter of Hive 4's
``NotificationEventRequest`` is not used: the client's Thrift types lack it, and filtering here costs little.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hmsclient.genthrift.hive_metastore import ttypes
from thrift.Thrift import TApplicationException, TMessageType, TType

from sqlext.errors import MetastoreUnavailableError

log = logging.getLogger(__name__)

#: Events asked for per ``get_next_notification`` call.
PAGE_SIZE = 1000
ADD, ALTER, DROP = "ADD_PARTITION", "ALTER_PARTITION", "DROP_PARTITION"
#: Where each partition event's message keeps the partitions' values (key -> value maps).
_VALUES_FIELD = {ADD: "partitions", DROP: "partitions", ALTER: "keyValues"}


@dataclass(frozen=True)
class PartitionChange:
    """One partition added, altered (committed again) or dropped, by its values in the table's key order."""

    kind: str
    values: tuple[str, ...]


@dataclass
class TableChanges:
    """What the events after an id say about one table."""

    #: The newest event id read: where the next read starts.
    last_id: int
    changes: list[PartitionChange] = field(default_factory=list)
    #: Why the table must be listed again (None: the changes are all there is).
    relist: str | None = None


def current_event_id(client: Any) -> int | None:
    """The newest event id of the metastore: 0 while its log is empty (or it writes none), None when it serves
    none (the call fails)."""
    try:
        event_id = int(client.call("get_current_notificationEventId").eventId or 0)
    except MetastoreUnavailableError:
        raise
    except Exception as exc:  # an old or restricted metastore: no log to read
        log.info("Hive Metastore at %s gives no notification event id (%s): partitions are listed", client.uri, exc)
        return None
    return event_id


def locks_event_ids(client: Any) -> bool:
    """Whether the metastore allocates event ids under a row lock held until its DDL commits (Hive 3.0+,
    HIVE-16886: ``select ... from NOTIFICATION_SEQUENCE for update``), told by a method Hive 3.0 added
    (``get_metastore_db_uuid``): Hive 2.3 answers "Invalid method name".

    Without that lock (Hive 2.3.10's ``ObjectStore.addNotificationEvent`` reads and bumps the sequence unlocked)
    two concurrent DDLs may take one id, or commit out of id order, and a reader past the id loses an event."""
    thrift_client = client._client  # connected by the caller's call just before; the client's Thrift types
    try:  # lack the method, so it is asked for as an empty call, and its answer skipped
        thrift_client._oprot.writeMessageBegin("get_metastore_db_uuid", TMessageType.CALL, thrift_client._seqid)
        thrift_client._oprot.writeStructBegin("get_metastore_db_uuid_args")
        thrift_client._oprot.writeFieldStop()
        thrift_client._oprot.writeStructEnd()
        thrift_client._oprot.writeMessageEnd()
        thrift_client._oprot.trans.flush()
        _, kind, _ = thrift_client._iprot.readMessageBegin()
        if kind == TMessageType.EXCEPTION:
            error = TApplicationException()
            error.read(thrift_client._iprot)
            thrift_client._iprot.readMessageEnd()
            return error.type != TApplicationException.UNKNOWN_METHOD
        thrift_client._iprot.skip(TType.STRUCT)
        thrift_client._iprot.readMessageEnd()
        return True
    except Exception as exc:  # the connection is in an unknown state: the next call reconnects
        client.close()
        log.info("Hive Metastore at %s: could not tell its version (%s): partitions are listed", client.uri, exc)
        return False


def table_changes(client: Any, database: str, table: str, keys: Sequence[str], last_id: int) -> TableChanges:
    """The changes of ``database.table``'s partitions in the events after ``last_id``."""
    result = TableChanges(last_id)
    expected = last_id + 1
    for event in _events_after(client, last_id):
        if event.eventId > expected:
            return TableChanges(last_id, relist=f"events {expected}-{event.eventId - 1} were cleaned before read")
        expected = event.eventId + 1
        result.last_id = event.eventId
        if (event.dbName or "").lower() != database.lower() or (event.tableName or "").lower() != table.lower():
            continue
        changes = decode(event, keys)
        if changes is None:
            return TableChanges(last_id, relist=f"event {event.eventId} ({event.eventType}) changes the table")
        result.changes.extend(changes)
    if result.last_id == last_id:
        newest = current_event_id(client) or 0
        if newest > last_id:  # the log moved on, yet nothing after last_id is left
            return TableChanges(last_id, relist=f"events {last_id + 1}-{newest} were cleaned before read")
    return result


def _events_after(client: Any, last_id: int) -> Iterator[Any]:
    while True:
        response = client.call("get_next_notification", ttypes.NotificationEventRequest(last_id, PAGE_SIZE))
        events = sorted(response.events or [], key=lambda event: event.eventId)
        yield from events
        if len(events) < PAGE_SIZE:
            return
        last_id = events[-1].eventId


def decode(event: Any, keys: Sequence[str]) -> list[PartitionChange] | None:
    """The partition changes of one of the table's events; None for any event that is not a partition event
    whose message gives every partition's values (the caller lists the table instead)."""
    if event.eventType not in _VALUES_FIELD:
        return None
    message = message_json(event.message or "", event.messageFormat or "")
    if message is None:
        return None
    found = message.get(_VALUES_FIELD[event.eventType])
    maps = [found] if isinstance(found, dict) else found
    if not isinstance(maps, list) or not maps:
        return None
    changes = []
    for mapping in maps:
        values = _values(mapping, keys)
        if values is None:
            return None
        changes.append(PartitionChange(event.eventType, values))
    return changes


def message_json(message: str, message_format: str) -> dict[str, Any] | None:
    """An event's message as JSON, plain or gzipped and base64-encoded (``gzip(...)``); None if neither."""
    try:
        if message_format.startswith("gzip("):
            message = gzip.decompress(base64.b64decode(message)).decode("utf-8")
        decoded = json.loads(message)
    except (ValueError, OSError, EOFError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _values(mapping: Any, keys: Sequence[str]) -> tuple[str, ...] | None:
    if not isinstance(mapping, dict):
        return None
    by_key = {str(key).lower(): value for key, value in mapping.items()}
    values = [by_key.get(key.lower()) for key in keys]
    if len(by_key) != len(keys) or any(not isinstance(value, str) for value in values):
        return None
    return tuple(str(value) for value in values)
