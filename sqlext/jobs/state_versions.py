"""An insert's persisted state, read before the insert writes anything: state a newer sqlext wrote is refused.

Each record checks its own format version as it is read (:mod:`sqlext.io.records`), but an insert writes
some of its state (its lease first of all) before it reads the rest. So that an insert whose state is newer
than the code is refused with nothing written, its start reads every record it would read or rewrite
first: the checkpoint's lease, identity and trigger state, the sink table's record of the insert, and the
commit log entries of the insert a restart reads (the newest batch and any batch not completed); for its
streaming and its batch runs (``<checkpoint>/batch``, logged as ``<insert>.batch``). Spark's own files are
Spark's, but the newest ``offsets/<batch>`` holds the offsets of the committed-partitions sources, which are
sqlext's: they are read too.
"""

from __future__ import annotations

import json

from sqlext.connectors.filesystem.commit.partition_commit import trigger_state_uri
from sqlext.connectors.filesystem.commit.trigger import TriggerState
from sqlext.connectors.filesystem.commit_log import CommitLog, State
from sqlext.connectors.filesystem.sink import BATCH_SUFFIX
from sqlext.connectors.filesystem.streaming.offsets import OFFSET_FORMAT
from sqlext.io.fs import FileSystem, join
from sqlext.jobs.checkpoint import INSERT_RECORD_FORMAT, insert_record_uri, read_identity
from sqlext.jobs.lease import read_lease


def refuse_newer_state(checkpoint: str, table_path: str | None, query: str) -> None:
    """Read the state of insert ``query`` (checkpoint ``checkpoint``, sink table at ``table_path`` if it has
    files) as a start would: raise :class:`~sqlext.errors.StateVersionError` for a record a newer sqlext
    wrote. Writes nothing."""
    fs = FileSystem(checkpoint)
    read_lease(fs, checkpoint)
    _refuse_newer_offsets(fs, checkpoint)
    _refuse_newer(checkpoint, table_path, query)
    _refuse_newer(join(checkpoint, "batch"), table_path, query + BATCH_SUFFIX)


def _refuse_newer(checkpoint: str, table_path: str | None, query: str) -> None:
    fs = FileSystem(checkpoint)
    read_identity(fs, checkpoint)
    state_uri = trigger_state_uri(checkpoint)
    if fs.exists(state_uri):
        TriggerState.from_json(fs.read_json(state_uri), state_uri)
    if table_path is None:
        return
    table_fs = FileSystem(table_path)
    record = insert_record_uri(table_path, query)
    if table_fs.exists(record):
        INSERT_RECORD_FORMAT.read(table_fs, record)
    log = CommitLog(table_fs, table_path)
    states = log.states(query)
    newest = max(states, default=None)
    for batch, state in sorted(states.items()):
        if state is not State.COMPLETED or batch == newest:
            log.get(query, batch)


def _refuse_newer_offsets(fs: FileSystem, checkpoint: str) -> None:
    """The committed-partitions sources' offsets in Spark's newest ``offsets/<batch>`` (a ``v1`` line, the
    batch's metadata, then one line per source: its offset, or ``-``)."""
    directory = join(checkpoint, "offsets")
    if not fs.is_dir(directory):
        return
    batches = [int(s.relative) for s in fs.list_files(directory, recursive=False) if s.relative.isdigit()]
    if not batches:
        return
    uri = join(directory, str(max(batches)))
    for line in fs.read_text(uri).splitlines()[2:]:
        try:
            offset = json.loads(line)
        except ValueError:
            continue  # "-": a source without an offset yet
        if isinstance(offset, dict) and {"order", "seen", "batch"} <= offset.keys():
            OFFSET_FORMAT.version_of(offset, f"{uri} (a committed-partitions source's offset)")
