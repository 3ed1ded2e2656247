"""A running insert and its sink table's columns, which an ``ALTER TABLE`` may change while it runs
(:mod:`sqlext.sql.schema_change`).

The insert goes on writing the columns it started with: a column added since is absent from its files, which
every reader reads as NULL (the formats' readers follow added columns: :mod:`sqlext.catalog.evolution`); a
widened column is written in its old type, which readers read as the new one; a dropped column is still
written, and no reader reads it. Nothing fails, so the insert's log says it, once for each change it sees:
at a partition commit (which reads the table from the metastore anyway) and every
:data:`CHECK_INTERVAL_S` from the insert's watcher thread. Restarted with a SELECT that fills the added
columns, the insert resumes its checkpoint (:mod:`sqlext.jobs.checkpoint`) and writes them.
"""

from __future__ import annotations

import logging
import threading
import time

from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.hms import PARAM_PREFIX, from_hms
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.table import TableDefinition

log = logging.getLogger("sqlext.commit")

#: How often a running insert asks the metastore for its sink table's columns, besides at its commits.
CHECK_INTERVAL_S = 30.0
#: How long that question waits for the metastore (the watcher thread must not stall).
CHECK_DEADLINE_S = 2.0
SCHEMA_PARAM = f"{PARAM_PREFIX}schema"


def schema_changes(started: TableDefinition, current: TableDefinition) -> list[str]:
    """What changed in the data columns since the insert started, as the insert's log says it."""
    before = {c.name.lower(): c for c in started.data_columns}
    after = {c.name.lower(): c for c in current.data_columns}
    added = [c for key, c in after.items() if key not in before]
    dropped = [c for key, c in before.items() if key not in after]
    changes = []
    if added:
        shown = ", ".join(f"`{c.name}` {c.type}" for c in added)
        changes.append(f"gained {shown}, which this insert writes as NULL")
    if dropped:
        shown = ", ".join(f"`{c.name}`" for c in dropped)
        changes.append(f"no longer has {shown}, which this insert still writes (and no reader reads)")
    for key, column in after.items():
        if key in before and before[key].type != column.type:
            changes.append(
                f"has `{column.name}` as {column.type}, which this insert writes as {before[key].type} "
                "(read as the new type)"
            )
    return changes


class SchemaWatch:
    """Logs, once per change, that the sink table's columns differ from those the insert started with."""

    def __init__(self, table: TableDefinition, query_name: str, metastore_uri: str | None) -> None:
        self.table = table
        self.query_name = query_name
        self.metastore_uri = metastore_uri
        self._seen: str | None = None
        self._next_check = time.monotonic() + CHECK_INTERVAL_S
        self._lock = threading.Lock()

    def observe(self, hms_table: ttypes.Table) -> None:
        """Compare the table as the metastore holds it now with the one the insert started with."""
        schema = (hms_table.parameters or {}).get(SCHEMA_PARAM)
        with self._lock:
            if schema is None or schema == self._seen:
                return
            first, self._seen = self._seen is None, schema
        changes = schema_changes(self.table, from_hms(hms_table))
        if changes:
            log.warning(
                "%s: sink table %s changed (ALTER TABLE) since this insert started: it %s. The insert goes on; "
                "restart it with a SELECT that fills the new columns to write them (it resumes its checkpoint).",
                self.query_name,
                self.table.identifier,
                "; ".join(changes),
            )
        elif not first:
            log.info(
                "%s: sink table %s changed again; its columns are those this insert writes",
                self.query_name,
                self.table.identifier,
            )

    def check(self) -> None:
        """Every :data:`CHECK_INTERVAL_S`: ask the metastore (briefly; a metastore that does not answer is asked
        again next time)."""
        if self.metastore_uri is None or time.monotonic() < self._next_check:
            return
        self._next_check = time.monotonic() + CHECK_INTERVAL_S
        ident = self.table.identifier
        try:
            with MetastoreClient(self.metastore_uri, RetryPolicy(deadline_s=CHECK_DEADLINE_S)) as client:
                found = client.get_table(ident.database, ident.name)
        except Exception as exc:  # only a log line depends on it
            log.debug("%s: could not read %s's columns: %s", self.query_name, ident, exc)
            return
        if found is not None:
            self.observe(found)
