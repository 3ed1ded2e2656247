"""Whose checkpoint is it: the identity of a streaming insert's checkpoint, and its one writer.

Spark resumes a streaming query from whatever checkpoint it is pointed at. The checkpoint of an insert is
``<checkpoint root>/<pipeline.name>``, and names repeat: a table dropped and created again, two metastores
holding tables of the same name, a changed query on the same sink. Resuming a stranger's checkpoint skips
the data it already read (or fails on its paths), so each checkpoint records whose it is, in
``<checkpoint>/sqlext/identity.json``, before its query starts:

- the **metastore** (its URIs, normalised);
- the **sink table**: its name and its id (``sqlext.table-id``, a uuid sqlext stores in the table's
  parameters at CREATE; for a table created before sqlext stored one, its HMS create time);
- the **sources**: each sqlext table the query reads, with its id;
- the **query**: the SELECT as sqlext runs it (sqlglot's canonical text, tables qualified) and the
  static partition values; and the sink's columns it writes, in order (the query's values go to them by
  position).

At start (:func:`prepare`) an insert resumes a checkpoint only when it is its own. A checkpoint whose sink
table was dropped and created again is moved aside (``<checkpoint>.replaced-<UTC time>``, logged) and the
insert starts fresh; any other difference (metastore, sink name, query, sources) fails the start with an
error naming the checkpoint, what differs and the ways on. A query that differs only in what it writes to sink
columns an ``ALTER TABLE`` added, dropped or renamed since is the same insert
(:mod:`sqlext.jobs.query_evolution`): it resumes, and says so in its log. ``SET 'sqlext.insert.start' = 'fresh'`` (or
``sqlext run --fresh``) starts over on purpose, ``'resume'`` resumes a checkpoint whose query changed.

One writer per checkpoint: :func:`prepare` takes the checkpoint's lease (:mod:`sqlext.jobs.lease`) first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlext import config as cfg
from sqlext.errors import SqlextError, ValidationError
from sqlext.io.fs import FileSystem, join, normalize
from sqlext.io.records import RecordFormat
from sqlext.jobs.lease import STATE_DIR, Lease, read_lease
from sqlext.jobs.query_evolution import follows_schema_change

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sqlext.checkpoint")

START_OPTION = "sqlext.insert.start"
IDENTITY_FILE = "identity.json"
IDENTITY_VERSION = 1
#: Version 1: as below (identities always said so).
IDENTITY_FORMAT = RecordFormat("checkpoint identity", IDENTITY_VERSION)
#: Version 1: query, checkpoint, identity (an identity record of its own) and start time; those written
#: before versions were recorded have none.
INSERT_RECORD_FORMAT = RecordFormat("insert record", 1)


class StartMode(StrEnum):
    """``sqlext.insert.start``: what an insert does with the checkpoint it finds."""

    AUTO = "auto"  # resume its own checkpoint; replace one of a dropped sink; refuse any other
    FRESH = "fresh"  # move any checkpoint aside and start over
    RESUME = "resume"  # resume the checkpoint even if the query or its sources changed

    @classmethod
    def parse(cls, raw: str | None) -> StartMode:
        value = (raw or cls.AUTO.value).strip().lower()
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(f"'{m.value}'" for m in cls)
            raise ValidationError(
                f"Invalid value for '{START_OPTION}': '{raw}'. Expected one of {allowed}.",
                option=START_OPTION,
                value=raw,
            ) from None


class CheckpointMismatchError(SqlextError):
    """An insert found a checkpoint that is not its own."""


# -- identity ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableRef:
    """A table as an identity knows it: its name and its id (which a recreated table does not share)."""

    name: str
    id: str

    def __str__(self) -> str:
        return f"{self.name} (id {self.id})"


@dataclass(frozen=True)
class InsertIdentity:
    """Whose checkpoint it is (see the module docstring)."""

    pipeline: str
    metastore: str
    sink: TableRef
    sources: tuple[TableRef, ...]
    query: str
    #: The sink's columns the query writes, in order (empty in identities written before sqlext recorded them).
    sink_columns: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """A short hash of the query text and the sources' ids."""
        text = json.dumps([self.query, [asdict(s) for s in self.sources]])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def to_json(self) -> dict[str, Any]:
        return IDENTITY_FORMAT.stamp(
            {
                "pipeline": self.pipeline,
                "metastore": self.metastore,
                "sink": asdict(self.sink),
                "sources": [asdict(s) for s in self.sources],
                "query": self.query,
                "sink_columns": list(self.sink_columns),
                "fingerprint": self.fingerprint,
            }
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "checkpoint identity") -> InsertIdentity:
        """The identity in ``data`` (read from ``where``), refusing a format newer than this release reads."""
        data = IDENTITY_FORMAT.checked(data, where)
        return cls(
            pipeline=str(data.get("pipeline", "")),
            metastore=str(data.get("metastore", "")),
            sink=TableRef(**data["sink"]),
            sources=tuple(TableRef(**s) for s in data.get("sources", [])),
            query=str(data.get("query", "")),
            sink_columns=tuple(data.get("sink_columns", ())),
        )

    def describe(self) -> str:
        """One line: metastore, sink, sources, query fingerprint."""
        sources = ", ".join(str(s) for s in self.sources) or "none"
        return f"metastore {self.metastore}; sink {self.sink}; sources {sources}; query {self.fingerprint}"


def normalize_metastore(uris: str) -> str:
    """One spelling of a metastore's URIs: trimmed, lower case, sorted, comma-separated."""
    return ",".join(sorted(u.strip().lower().rstrip("/") for u in uris.split(",") if u.strip()))


def metastore_dir_name(uris: str) -> str:
    """A directory name for a metastore (the default checkpoint root has one per metastore)."""
    text = normalize_metastore(uris).replace("thrift://", "")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text) or "metastore"


class Verdict(StrEnum):
    SAME = "same"
    SINK_REPLACED = "sink-replaced"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class Comparison:
    """How a checkpoint's stored identity compares to the insert that found it."""

    verdict: Verdict
    differences: tuple[str, ...] = ()
    #: Why a checkpoint whose identity differs is still the insert's (SAME only), for its log.
    notes: tuple[str, ...] = ()


def compare(stored: InsertIdentity, current: InsertIdentity) -> Comparison:
    """SAME: resume. SINK_REPLACED: the sink table of that name is a new table (dropped and created
    again): the checkpoint belongs to a table that no longer exists. CONFLICT: another metastore, another
    sink, or another query or sources on this sink; ``differences`` says what, for the user."""
    if stored.metastore != current.metastore:
        return Comparison(
            Verdict.CONFLICT, (f"metastore: the checkpoint's is {stored.metastore}, this insert's {current.metastore}",)
        )
    if stored.sink.name != current.sink.name:
        return Comparison(
            Verdict.CONFLICT,
            (f"sink table: the checkpoint's is {stored.sink.name}, this insert's {current.sink.name}",),
        )
    if stored.sink.id != current.sink.id:
        return Comparison(
            Verdict.SINK_REPLACED,
            (f"sink table {current.sink.name}: the checkpoint's has id {stored.sink.id}, this one {current.sink.id}",),
        )
    differences = []
    if [s.name for s in stored.sources] != [s.name for s in current.sources]:
        was = ", ".join(s.name for s in stored.sources) or "none"
        now = ", ".join(s.name for s in current.sources) or "none"
        differences.append(f"source tables: the checkpoint's read {was}, this insert reads {now}")
    else:
        for old, new in zip(stored.sources, current.sources, strict=True):
            if old.id != new.id:
                differences.append(
                    f"source table {new.name} was created again (the checkpoint's has id {old.id}, this one {new.id})"
                )
    notes: tuple[str, ...] = ()
    if stored.query != current.query:
        note = follows_schema_change(stored.query, stored.sink_columns, current.query, current.sink_columns)
        if note is None:
            differences.append(
                f"query: the checkpoint's ran\n    {stored.query}\n  this insert runs\n    {current.query}"
            )
        else:
            notes = (note,)
    return Comparison(Verdict.CONFLICT, tuple(differences)) if differences else Comparison(Verdict.SAME, notes=notes)


def identity_uri(checkpoint: str) -> str:
    return join(checkpoint, STATE_DIR, IDENTITY_FILE)


def write_identity(fs: FileSystem, checkpoint: str, identity: InsertIdentity) -> None:
    fs.write_text(identity_uri(checkpoint), json.dumps(identity.to_json(), indent=1, sort_keys=True))


def read_identity(fs: FileSystem, checkpoint: str) -> InsertIdentity | None:
    uri = identity_uri(checkpoint)
    if not fs.exists(uri):
        return None
    return InsertIdentity.from_json(json.loads(fs.read_text(uri)), uri)


# -- start ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreparedCheckpoint:
    """A checkpoint an insert may now run on: its lease, and whether it resumes."""

    location: str
    identity: InsertIdentity
    lease: Lease
    resumed: bool
    replaced: str | None = None

    def describe(self) -> str:
        return f"checkpoint {self.location}; {self.identity.describe()}"


def _has_progress(fs: FileSystem, checkpoint: str) -> bool:
    """True when Spark has written anything into the checkpoint (more than sqlext's own dir)."""
    if not fs.is_dir(checkpoint):
        return False
    return any(d != STATE_DIR for d in fs.list_dirs(checkpoint)) or bool(fs.list_files(checkpoint, recursive=False))


def _aside_name(location: str) -> str:
    return f"{location.rstrip('/')}.replaced-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"


def move_aside(fs: FileSystem, location: str) -> str:
    """Rename ``location`` to ``<location>.replaced-<UTC time>``; return the new name."""
    target = _aside_name(location)
    fs.move(location, target)
    return target


def prepare(
    location: str,
    identity: InsertIdentity,
    mode: StartMode,
    adopt_unmarked: Callable[[], bool] = lambda: False,
    lease: Lease | None = None,
) -> PreparedCheckpoint:
    """Take the lease of ``location`` (confirm ``lease``, claimed earlier) and decide, from the identity
    stored there, whether the insert resumes it (see the module docstring). ``adopt_unmarked`` says whether
    a checkpoint written before sqlext recorded identities belongs to this insert (else it is moved aside)."""
    fs = FileSystem(location)
    lease = lease or Lease.claim(fs, location, identity.pipeline)
    try:
        lease.confirm()
        replaced = None
        stored = read_identity(fs, location)
        progress = _has_progress(fs, location)
        if progress and mode is StartMode.FRESH:
            replaced = _replace(fs, location, lease, "'sqlext.insert.start' = 'fresh' was given")
        elif progress and stored is None:
            if adopt_unmarked():
                log.info("%s: checkpoint from before identities were recorded; it is this insert's", location)
            else:
                replaced = _replace(fs, location, lease, "it records no identity and its sink has no commit of it")
        elif progress and stored is not None and mode is not StartMode.RESUME:
            comparison = compare(stored, identity)
            if comparison.verdict is Verdict.SINK_REPLACED:
                replaced = _replace(fs, location, lease, comparison.differences[0])
            elif comparison.verdict is Verdict.CONFLICT:
                raise mismatch_error(location, identity, comparison)
            for note in comparison.notes:
                log.warning("%s: resuming although the query changed: %s", location, note)
        write_identity(fs, location, identity)
        resumed = progress and replaced is None
        return PreparedCheckpoint(location, identity, lease, resumed, replaced)
    except BaseException:
        lease.release()
        raise


def _replace(fs: FileSystem, location: str, lease: Lease, why: str) -> str:
    aside = move_aside(fs, location)
    lease.moved_to(location)
    log.warning("%s: not resumed (%s); moved aside to %s; starting fresh", location, why, aside)
    return aside


def mismatch_error(location: str, identity: InsertIdentity, comparison: Comparison) -> CheckpointMismatchError:
    differences = "\n".join(f"- {d}" for d in comparison.differences)
    return CheckpointMismatchError(
        f"Checkpoint {location} of insert '{identity.pipeline}' belongs to another insert; resuming it "
        f"would skip or mix up input. What differs:\n{differences}\n"
        f"Ways on: give this insert its own checkpoint with SET 'pipeline.name' = '<new name>'; or start "
        f"over on this one with SET '{START_OPTION}' = 'fresh' (`sqlext run --fresh`; the old checkpoint is "
        f"moved aside, and the insert reads its sources from the start); or, if the change keeps the "
        f"checkpoint valid, SET '{START_OPTION}' = 'resume'.",
        option=START_OPTION,
    )


def set_aside_commit_log(table_path: str, query: str, staging: bool = True) -> str | None:
    """A fresh checkpoint numbers its batches from 0 again: move the query's earlier commit log (and, with
    ``staging``, its staging dir) in the sink table aside, or the new batches would be taken for replays
    of committed ones and skipped. Returns where the log went (None: there was none)."""
    from sqlext.connectors.filesystem.commit_log import LOG_DIR, STAGING_DIR, CommitLog

    fs = FileSystem(table_path)
    if CommitLog(fs, table_path).last_batch(query) is None:
        return None
    log_dir = join(table_path, LOG_DIR, query)
    aside = _aside_name(log_dir)
    fs.move(log_dir, aside)
    staging_dir = join(table_path, STAGING_DIR, query)
    if staging and fs.is_dir(staging_dir):
        fs.move(staging_dir, _aside_name(staging_dir))
    log.warning(
        "%s: a fresh checkpoint of '%s' starts at batch 0; its earlier commit log moved aside to %s",
        table_path,
        query,
        aside,
    )
    return aside


#: Where a sink table records the checkpoint of each insert writing it (for ``sqlext commits``).
INSERTS_DIR = "_sqlext/inserts"


@dataclass(frozen=True)
class RecordedInsert:
    """An insert as its sink table records it: its checkpoint and identity."""

    query: str
    checkpoint: str
    identity: InsertIdentity
    started: str

    def describe(self, fs: FileSystem | None = None) -> str:
        """Lines for ``sqlext commits``: checkpoint, identity, and who writes it now."""
        state = ""
        if fs is not None:
            try:
                owner = read_lease(FileSystem(self.checkpoint), self.checkpoint)
            except Exception:  # another filesystem, unreachable from here: say nothing about it
                owner = None
            state = f"; running: {owner.describe()}" if owner else "; not running"
        return (
            f"insert {self.query}: checkpoint {self.checkpoint} (started {self.started}{state})\n"
            f"  {self.identity.describe()}"
        )


def record_in_table(table_path: str, prepared: PreparedCheckpoint) -> None:
    """Record in the sink table which checkpoint the insert runs on, and whose it is."""
    data = {
        "query": prepared.identity.pipeline,
        "checkpoint": prepared.location,
        "identity": prepared.identity.to_json(),
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
    uri = insert_record_uri(table_path, prepared.identity.pipeline)
    INSERT_RECORD_FORMAT.write(FileSystem(table_path), uri, data)


def insert_record_uri(table_path: str, query: str) -> str:
    return join(table_path, INSERTS_DIR, f"{query}.json")


def recorded_inserts(table_path: str, query: str | None = None) -> list[RecordedInsert]:
    """The inserts a sink table records (see :func:`record_in_table`), by name."""
    fs = FileSystem(table_path)
    found = []
    for status in fs.list_files(join(table_path, INSERTS_DIR), recursive=False):
        if not status.relative.endswith(".json"):
            continue
        data = INSERT_RECORD_FORMAT.read(fs, status.uri)
        if query is None or data["query"] == query:
            identity = InsertIdentity.from_json(data["identity"], f"{status.uri} (its identity)")
            found.append(RecordedInsert(data["query"], data["checkpoint"], identity, data["started"]))
    return sorted(found, key=lambda r: r.query)


# -- what runs -----------------------------------------------------------------------------------

#: The checkpoint of each insert this process started, by streaming query id (for SHOW JOBS).
STARTED: dict[str, PreparedCheckpoint] = {}


def started_checkpoint(job_id: str) -> PreparedCheckpoint | None:
    return STARTED.get(job_id)


def checkpoint_root(spark: SparkSession, config: Any, metastore_uri: str | None = None) -> str:
    """``spark.sqlext.checkpoint.root`` (runtime conf, then startup conf), else Spark's
    ``spark.sql.streaming.checkpointLocation``, else ``$SQLEXT_HOME/checkpoints/<metastore>`` (one dir
    per metastore, so that tables of the same name in two metastores never share a checkpoint;
    ``metastore_uri`` defaults to the session's ``spark.sqlext.metastore.uris``)."""
    root = configured_root(spark, config)
    if root:
        return root
    uri = metastore_uri or spark.conf.get(cfg.METASTORE_URIS, None)
    return join(legacy_default_root(), metastore_dir_name(uri)) if uri else legacy_default_root()


def configured_root(spark: SparkSession, config: Any) -> str | None:
    root = spark.conf.get(cfg.CHECKPOINT_ROOT, None) or (config.get(cfg.CHECKPOINT_ROOT) if config else None)
    root = root or spark.conf.get("spark.sql.streaming.checkpointLocation", None)
    return normalize(root) if root else None


def legacy_default_root() -> str:
    """``$SQLEXT_HOME/checkpoints``: the default root before it had a dir per metastore."""
    from sqlext.runtime.paths import default_home

    return normalize((default_home() / "checkpoints").as_uri())
