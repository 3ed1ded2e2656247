"""One writer per checkpoint: a lease in ``<checkpoint>/sqlext/lease.json``.

Two processes writing one Spark checkpoint corrupt it. A lease (host, pid, a token, start and heartbeat
times) is taken before an insert starts and renewed every :data:`HEARTBEAT_S` while it runs. A second writer
is refused, naming the first. A lease whose owner is gone (its pid no longer runs on this host; an insert of
this very process that ended) or whose heartbeat is older than :data:`LEASE_TIMEOUT_S` is taken over, so a
killed run does not block its restart for long. The filesystem has no create-if-absent, so taking a lease
writes it, waits a moment and reads it back: of two writers racing for it, only the last one to write finds
its own token. An insert writes its lease before it plans its query and reads it back after
(:meth:`Lease.claim`, :meth:`Lease.confirm`): the wait passes while Spark plans.

A ``format("sqlext")`` writer has no process of its own that lives as long as its query (Spark calls it in
short-lived Python workers), so its lease (:func:`claim_per_batch`) is held by the driver's JVM and renewed
at each batch: it is stale when that JVM is gone from this host, or after :data:`BATCH_LEASE_TIMEOUT_S`
without a batch. A writer that finds its lease taken over fails its batch before committing anything.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from sqlext.errors import SqlextError, StateVersionError
from sqlext.io.fs import FileSystem, join
from sqlext.io.records import RecordFormat

log = logging.getLogger("sqlext.checkpoint")

#: Where sqlext keeps its own files inside a Spark checkpoint (next to the trigger state).
STATE_DIR = "sqlext"
LEASE_FILE = "lease.json"
#: A lease whose heartbeat is older than this is taken over.
LEASE_TIMEOUT_S = 30.0
#: How often a running insert renews its lease.
HEARTBEAT_S = 5.0
#: How long taking a lease waits before reading it back (see the module docstring).
LEASE_SETTLE_S = 0.5
#: A lease renewed per batch (``format("sqlext")``) is taken over after this long without a batch.
BATCH_LEASE_TIMEOUT_S = 120.0
#: How a lease is kept alive: by a heartbeat thread (inserts), or by each batch (``format("sqlext")``).
HEARTBEAT_RENEWAL = "heartbeat"
BATCH_RENEWAL = "batch"
#: Version 1: the fields of :class:`LeaseOwner` (leases written before versions were recorded have none).
LEASE_FORMAT = RecordFormat("lease", 1)


class CheckpointInUseError(SqlextError):
    """Another process (or another insert of this one) is writing the checkpoint."""


def lease_uri(checkpoint: str) -> str:
    return join(checkpoint, STATE_DIR, LEASE_FILE)


@dataclass(frozen=True)
class LeaseOwner:
    """Who writes a checkpoint."""

    host: str
    pid: int
    token: str
    pipeline: str
    started_ms: int
    renewed_ms: int
    renewal: str = HEARTBEAT_RENEWAL

    def describe(self) -> str:
        started = datetime.fromtimestamp(self.started_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        kind = "format('sqlext') writer in the Spark driver" if self.renewal == BATCH_RENEWAL else "process"
        return f"{self.pipeline} in {kind} {self.pid} on {self.host}, started {started}"

    @property
    def timeout_s(self) -> float:
        return BATCH_LEASE_TIMEOUT_S if self.renewal == BATCH_RENEWAL else LEASE_TIMEOUT_S

    def is_stale(self, now_ms: int, held_here: set[str]) -> bool:
        """Gone: heartbeat too old, its process no longer runs on this host, or it is this process's
        and no running insert of this process holds it (``held_here``)."""
        if now_ms - self.renewed_ms > self.timeout_s * 1000:
            return True
        if self.renewal == BATCH_RENEWAL:
            return self.host == socket.gethostname() and not _pid_alive(self.pid)
        if self.host != socket.gethostname():
            return False
        if self.pid == os.getpid():
            return self.token not in held_here
        return not _pid_alive(self.pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    return True


def _now_ms() -> int:
    return int(time.time() * 1000)


#: The leases this process holds, by token.
_HELD: dict[str, Lease] = {}
_HELD_LOCK = threading.Lock()


def _held_by_running_inserts() -> set[str]:
    """Tokens of this process's leases whose insert still runs (one that ended gives its lease up within
    a second; a restart right after a stop must not wait for that)."""
    with _HELD_LOCK:
        held = list(_HELD.values())
    return {lease.owner.token for lease in held if lease.holder_alive()}


def is_running(owner: LeaseOwner) -> bool:
    """Whether the lease's holder still runs its insert (from any process: heartbeat, pid, this process's)."""
    return not owner.is_stale(_now_ms(), _held_by_running_inserts())


@dataclass
class Lease:
    """This process's lease on one checkpoint."""

    checkpoint: str
    owner: LeaseOwner
    fs: FileSystem
    released: bool = False
    lost: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _alive: Callable[[], bool] | None = None
    _claimed_at: float = 0.0
    _confirmed: bool = False
    _made_checkpoint: bool = False

    @classmethod
    def acquire(cls, fs: FileSystem, checkpoint: str, pipeline: str) -> Lease:
        """Take the checkpoint's lease (:meth:`claim`, then :meth:`confirm`), or raise
        :class:`CheckpointInUseError` naming its holder."""
        lease = cls.claim(fs, checkpoint, pipeline)
        lease.confirm()
        return lease

    @classmethod
    def claim(cls, fs: FileSystem, checkpoint: str, pipeline: str) -> Lease:
        """Write this process's lease, or raise :class:`CheckpointInUseError` naming a holder that is not
        gone. Until :meth:`confirm`, a writer racing for the lease may still win it, so nothing else may be
        written to the checkpoint; an insert claims before it plans its query and confirms after, so the
        wait passes while Spark plans."""
        current = read_lease(fs, checkpoint)
        if current is not None and not current.is_stale(_now_ms(), _held_by_running_inserts()):
            raise _in_use(checkpoint, current)
        if current is not None:
            with _HELD_LOCK:
                ended_here = _HELD.get(current.token)
            if ended_here is not None:
                ended_here.release()  # now, not at its heartbeat's next tick (which could delete ours)
            else:
                log.warning("%s: taking over the lease of %s, which is gone", checkpoint, current.describe())
        now = _now_ms()
        owner = LeaseOwner(socket.gethostname(), os.getpid(), uuid.uuid4().hex, pipeline, now, now)
        made_checkpoint = not fs.exists(checkpoint)
        _write(fs, checkpoint, owner)
        lease = cls(checkpoint, owner, fs, _claimed_at=time.monotonic(), _made_checkpoint=made_checkpoint)
        with _HELD_LOCK:
            _HELD[owner.token] = lease
        return lease

    def confirm(self) -> None:
        """Once :data:`LEASE_SETTLE_S` has passed since :meth:`claim`, read the lease back: if a racing
        writer's write came last, give the claim up and raise :class:`CheckpointInUseError`."""
        if self._confirmed:
            return
        time.sleep(max(0.0, self._claimed_at + LEASE_SETTLE_S - time.monotonic()))
        try:
            _raise_unless_won(self.fs, self.checkpoint, self.owner)
        except CheckpointInUseError:
            self.release()  # the lease file is the winner's (or gone): release leaves it alone
            raise
        self._confirmed = True

    def holder_alive(self) -> bool:
        """Whether what holds the lease still runs (True until :meth:`keep_while` says how to tell)."""
        return not self.released and (self._alive is None or self._alive())

    def moved_to(self, checkpoint: str) -> None:
        """The checkpoint was moved aside: hold the lease on the (new, empty) one at ``checkpoint``."""
        self.checkpoint = checkpoint
        _write(self.fs, checkpoint, self.owner)

    def renew(self) -> bool:
        """Write a new heartbeat; False (and ``lost``) when another writer took the lease over."""
        with self._lock:
            if self.released:
                return True
            try:
                current = read_lease(self.fs, self.checkpoint)
            except StateVersionError:
                current = None  # a newer sqlext took the lease over
            if current is None or current.token != self.owner.token:
                self.lost = True
                return False
            self.owner = LeaseOwner(**{**asdict(self.owner), "renewed_ms": _now_ms()})
            _write(self.fs, self.checkpoint, self.owner)
            return True

    def release(self) -> None:
        """Give the lease up (idempotent); the lease file goes only if it is still ours."""
        self._stop.set()
        with self._lock:
            if self.released:
                return
            self.released = True
            with _HELD_LOCK:
                _HELD.pop(self.owner.token, None)
            try:
                current = read_lease(self.fs, self.checkpoint)
                if current is not None and current.token == self.owner.token:
                    if self._made_checkpoint and not self._confirmed and self._holds_only_the_lease():
                        # A claim given up (the insert failed before it wrote anything) leaves no empty
                        # checkpoint behind.
                        self.fs.delete_dir(self.checkpoint)
                    else:
                        self.fs.delete_file(lease_uri(self.checkpoint))
            except Exception as exc:  # a stale lease is taken over anyway
                log.warning("%s: could not remove the lease: %s", self.checkpoint, exc)

    def _holds_only_the_lease(self) -> bool:
        listed = [status.relative for status in self.fs.list_files(self.checkpoint)]
        return listed == [f"{STATE_DIR}/{LEASE_FILE}"] and self.fs.list_dirs(self.checkpoint) == [STATE_DIR]

    def keep_while(self, alive: Callable[[], bool], on_lost: Callable[[], None]) -> None:
        """Renew the lease in a daemon thread while ``alive()`` (checked every second), then release it.
        If another writer took it over (this process stalled past the timeout), call ``on_lost`` (which
        stops the insert)."""

        self._alive = alive

        def heartbeat() -> None:
            last = time.monotonic()
            try:
                while not self._stop.wait(1.0) and alive():
                    if time.monotonic() - last < HEARTBEAT_S:
                        continue
                    last = time.monotonic()
                    try:
                        renewed = self.renew()
                    except Exception as exc:  # the filesystem hiccupped: try again at the next beat
                        log.warning("%s: lease not renewed: %s", self.checkpoint, exc)
                        continue
                    if not renewed:
                        log.error("%s: another writer took over this insert's checkpoint; stopping it", self.checkpoint)
                        on_lost()
                        return
            finally:
                if not self.lost:
                    self.release()

        threading.Thread(target=heartbeat, name=f"sqlext-lease-{self.owner.pipeline}", daemon=True).start()


def _take(fs: FileSystem, checkpoint: str, owner: LeaseOwner) -> None:
    """Write ``owner`` as the lease, wait, read it back: raise if a racing writer's write came last."""
    _write(fs, checkpoint, owner)
    time.sleep(LEASE_SETTLE_S)
    _raise_unless_won(fs, checkpoint, owner)


def _raise_unless_won(fs: FileSystem, checkpoint: str, owner: LeaseOwner) -> None:
    """Read the lease back: raise :class:`CheckpointInUseError` if a racing writer's write came last."""
    winner = read_lease(fs, checkpoint)
    if winner is None or winner.token != owner.token:
        raise _in_use(checkpoint, winner or owner)


def claim_per_batch(fs: FileSystem, home: str, pipeline: str, pid: int, token: str) -> LeaseOwner:
    """Take or renew the lease in ``home`` for a writer renewing it at each batch (``format("sqlext")``),
    held by process ``pid`` (the Spark driver's JVM) under ``token``; raise :class:`CheckpointInUseError`
    naming the holder if another writer holds it and is not gone."""
    current = read_lease(fs, home)
    now = _now_ms()
    if current is not None and current.token == token:
        renewed = LeaseOwner(**{**asdict(current), "renewed_ms": now})
        _write(fs, home, renewed)
        return renewed
    if current is not None and not current.is_stale(now, set()):
        raise _in_use(home, current)
    if current is not None:
        log.warning("%s: taking over the lease of %s, which is gone", home, current.describe())
    owner = LeaseOwner(socket.gethostname(), pid, token, pipeline, now, now, BATCH_RENEWAL)
    _take(fs, home, owner)
    return owner


def _write(fs: FileSystem, checkpoint: str, owner: LeaseOwner) -> None:
    LEASE_FORMAT.write(fs, lease_uri(checkpoint), asdict(owner))


def read_lease(fs: FileSystem, checkpoint: str) -> LeaseOwner | None:
    """The checkpoint's lease, or None; a lease written by a newer sqlext is refused
    (:class:`~sqlext.errors.StateVersionError`), not taken over: that sqlext may still run."""
    uri = lease_uri(checkpoint)
    if not fs.exists(uri):
        return None
    try:
        data = json.loads(fs.read_text(uri))
    except (ValueError, FileNotFoundError):
        return None  # being replaced right now, or unreadable: nobody holds it in a readable form
    fields = LEASE_FORMAT.checked(data, uri)
    try:
        return LeaseOwner(**fields)
    except TypeError:
        return None  # not a lease sqlext wrote: nobody holds it in a readable form


def _in_use(checkpoint: str, owner: LeaseOwner) -> CheckpointInUseError:
    return CheckpointInUseError(
        f"Checkpoint {checkpoint} is being written by {owner.describe()} (last heartbeat "
        f"{max(0, _now_ms() - owner.renewed_ms) / 1000:.0f} s ago): one writer per checkpoint. Stop that one "
        f"first (Ctrl-C / SIGTERM of its 'sqlext run', STOP JOB, or the query's stop() for a format('sqlext') "
        f"writer), or give this one another 'pipeline.name'. "
        f"A lease whose process is gone, or silent for {owner.timeout_s:.0f} s, is taken over."
    )
