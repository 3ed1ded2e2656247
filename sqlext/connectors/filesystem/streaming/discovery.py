"""Partition discovery that costs what changed, not the table: the first poll of a process lists the table,
later ones read the metastore's notification log (:mod:`sqlext.catalog.metastore.notifications`) since then
(``streaming-source.partition-discovery`` = ``auto``).

Why nothing is lost. The event id is taken *before* the listing. A metastore that locks its id allocation
(Hive 3.0+; :func:`~sqlext.catalog.metastore.notifications.locks_event_ids`) writes a DDL's event inside the
DDL's own transaction, taking the next id under a row lock held until the commit: ids are given in commit
order, with no holes, and an event is visible exactly when its change is. So a change committed before the id
was read is in the listing, and one committed after it has a larger id and is read from the log; one in both
is applied twice, which is harmless (an add or alter fetches the partition's current state, a drop removes it).
Anything the log cannot vouch for (a table-level event, a message not decoded, ids missing because the cleaner
removed unread events, a metastore without a log or without the lock) makes the next poll a listing again.

The poll then gives :func:`~sqlext.connectors.filesystem.streaming.offsets.next_offset` the snapshots a listing
would have given for the names ``wanted`` keeps (the cache holds every name and the wanted names' snapshots),
so offsets are those of a listing; a restarted query starts a new process, whose first poll lists. The cache
keeps the names ``wanted`` kept (a name it leaves out is not wanted again while partitions are only added), so
a steady poll neither lists nor parses the table's names; a dropped partition makes the next poll a listing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlext.catalog.metastore import notifications
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.escaping import partition_path
from sqlext.connectors.filesystem.streaming.partitions import PartitionSnapshot, poll, snapshot
from sqlext.connectors.filesystem.streaming.spec import SourceSpec
from sqlext.options import Options

log = logging.getLogger("sqlext.streaming_source")

Wanted = Callable[[list[str]], list[str]]


class PartitionDiscovery:
    """The partitions of one table at each poll, from the notification log where the metastore keeps one."""

    def __init__(self, spec: SourceSpec) -> None:
        self.spec = spec
        options = Options(spec.options)
        self.default_name = options.get(fso.PARTITION_DEFAULT_NAME)
        self.use_events = options.get(fso.STREAMING_SOURCE_PARTITION_DISCOVERY) == fso.DISCOVERY_AUTO
        #: The newest event applied; None: the next poll lists the table.
        self.last_id: int | None = None
        self.names: set[str] = set()
        self.snapshots: dict[str, PartitionSnapshot] = {}
        #: Whether :attr:`names` holds the wanted names only (not every name of the table).
        self._pruned = False
        #: Whether the metastore locks its event ids (asked once a process).
        self._locked: bool | None = None

    def poll(self, client: Any, wanted: Wanted | None = None) -> list[PartitionSnapshot]:
        """The table's partitions now (those of the names ``wanted`` keeps, as :func:`partitions.poll`)."""
        if self.use_events and self.last_id is not None and not self._apply_events(client):
            self.last_id = None
        if self.last_id is None and not self._baseline(client):
            return poll(self.spec, client, wanted)
        listed = sorted(self.names)
        names = wanted(listed) if wanted is not None else listed
        missing = [name for name in names if name not in self.snapshots]
        if missing:
            found = client.get_partitions_by_names(self.spec.database, self.spec.table, missing)
            for partition in found:
                fetched = snapshot(self.spec.partition_keys, partition, self.default_name)
                self.snapshots[fetched.name] = fetched
            self.names.difference_update(name for name in missing if name not in self.snapshots)
        keep = set(names)
        self.snapshots = {name: value for name, value in self.snapshots.items() if name in keep}
        if wanted is not None:
            # A name ``wanted`` leaves out is never wanted again while partitions are only added (the offset's
            # key only grows; the lookup join's newest only moves on), so the cache keeps the wanted names only:
            # a poll then costs the new events, not the table's names. A drop makes the next poll list.
            self.names = {name for name in keep if name in self.snapshots}
            self._pruned = True
        return [self.snapshots[name] for name in names if name in self.snapshots]

    def _baseline(self, client: Any) -> bool:
        """List the table's names, after taking the newest event id; False when the log is not to be used."""
        event_id = notifications.current_event_id(client) if self.use_events else None
        if event_id and self._locked is None:
            self._locked = notifications.locks_event_ids(client)
        if event_id is None or self._locked is False:
            self.use_events = False  # no log served, or ids not in commit order: this process lists
        if not event_id or not self._locked:
            return False  # an empty log (none written yet, or no listener): listed, asked again next poll
        self.names = set(client.get_partition_names(self.spec.database, self.spec.table))
        self.snapshots = {}
        self._pruned = False
        self.last_id = event_id
        return True

    def _apply_events(self, client: Any) -> bool:
        """Apply the table's events since the last poll; False when the table must be listed again."""
        assert self.last_id is not None
        keys = [key.lower() for key in self.spec.partition_keys]  # the metastore's names have lower-case keys
        changes = notifications.table_changes(client, self.spec.database, self.spec.table, keys, self.last_id)
        if changes.relist is not None:
            log.info("%s.%s: partitions listed again: %s", self.spec.database, self.spec.table, changes.relist)
            return False
        for change in changes.changes:
            name = partition_path(keys, list(change.values), self.default_name)
            self.snapshots.pop(name, None)  # fetched again (altered: committed again) when wanted
            if change.kind == notifications.DROP:
                if self._pruned:
                    log.info(
                        "%s.%s: partitions listed again: %s was dropped", self.spec.database, self.spec.table, name
                    )
                    return False  # a name left out as not wanted may be wanted again
                self.names.discard(name)
            else:
                self.names.add(name)
        self.last_id = changes.last_id
        return True
