"""Decoding the metastore's notification events (sqlext.catalog.metastore.notifications), without a metastore."""

from __future__ import annotations

import base64
import gzip
import json
from types import SimpleNamespace
from typing import Any

from sqlext.catalog.metastore.notifications import ADD, ALTER, DROP, PartitionChange, decode, table_changes

KEYS = ("dt", "hr")


def _event(kind: str, message: Any, fmt: str = "json-0.2", event_id: int = 1, table: str = "t") -> Any:
    text = message if isinstance(message, str) else json.dumps(message)
    return SimpleNamespace(
        eventId=event_id, eventType=kind, dbName="db", tableName=table, message=text, messageFormat=fmt
    )


def test_partition_events_give_their_values_in_key_order() -> None:
    added = _event(ADD, {"partitions": [{"hr": "01", "dt": "2026-12-02"}, {"dt": "2026-12-02", "hr": "02"}]})
    assert decode(added, KEYS) == [
        PartitionChange(ADD, ("2026-12-02", "01")),
        PartitionChange(ADD, ("2026-12-02", "02")),
    ]
    assert decode(_event(ALTER, {"keyValues": {"dt": "d", "hr": "h"}}), KEYS) == [PartitionChange(ALTER, ("d", "h"))]
    assert decode(_event(DROP, {"partitions": [{"DT": "d", "HR": "h"}]}), KEYS) == [PartitionChange(DROP, ("d", "h"))]


def test_a_gzipped_message_is_decoded() -> None:
    message = base64.b64encode(gzip.compress(json.dumps({"partitions": [{"dt": "d", "hr": "h"}]}).encode()))
    assert decode(_event(ADD, message.decode(), "gzip(json-2.0)"), KEYS) == [PartitionChange(ADD, ("d", "h"))]


def test_what_cannot_be_vouched_for_is_none() -> None:
    assert decode(_event("ALTER_TABLE", {}), KEYS) is None
    assert decode(_event(ADD, "not json"), KEYS) is None
    assert decode(_event(ADD, "H4sI-broken", "gzip(json-2.0)"), KEYS) is None
    assert decode(_event(ADD, {"partitions": [{"dt": "d"}]}), KEYS) is None  # a key missing
    assert decode(_event(ADD, {"partitionListJson": []}), KEYS) is None  # no values


class _Log:
    """A metastore whose log holds ``events``, for ``get_next_notification`` and the current id."""

    def __init__(self, events: list[Any], current: int) -> None:
        self.events, self.current, self.uri = events, current, "thrift://fake:9083"

    def call(self, method: str, *args: Any) -> Any:
        if method == "get_current_notificationEventId":
            return SimpleNamespace(eventId=self.current)
        request = args[0]
        after = [event for event in self.events if event.eventId > request.lastEvent]
        return SimpleNamespace(events=after[: request.maxEvents])


def test_other_tables_are_skipped_and_a_gap_or_a_table_event_asks_for_a_listing() -> None:
    ours = _event(ADD, {"partitions": [{"dt": "d", "hr": "h"}]}, event_id=6)
    theirs = _event(ADD, {"partitions": [{"x": "1"}]}, event_id=7, table="other")
    changes = table_changes(_Log([ours, theirs], 7), "DB", "T", KEYS, 5)
    assert (changes.last_id, changes.changes, changes.relist) == (7, [PartitionChange(ADD, ("d", "h"))], None)
    assert table_changes(_Log([ours], 6), "db", "t", KEYS, 4).relist == "events 5-5 were cleaned before read"
    assert table_changes(_Log([], 9), "db", "t", KEYS, 7).relist == "events 8-9 were cleaned before read"
    assert table_changes(_Log([], 7), "db", "t", KEYS, 7).relist is None
    dropped = _event("DROP_TABLE", {}, event_id=8)
    assert "DROP_TABLE" in str(table_changes(_Log([ours, theirs, dropped], 8), "db", "t", KEYS, 5).relist)
