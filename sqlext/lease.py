"""One writer per checkpoint: a lease in ``<checkpoint>/sqlext/lease.json``.

Two processes writing one Spark checkpoint corrupt it. A lease (host, pid, a token, start and heartbeat
times) is taken before an insert starts and renewed every :data:`HEARTBEAT_S` while it runs. A second writer
is refused, naming the first. A lease whose owner is gone (its pid no longer runs on this host; an insert of
this very process that ended) or whose heartbeat is older than :data:`LEASE_TIMEOUT_S` is taken over, so a
killed run does not block its restart for long. The filesystem has no create-if-absent, so taking a lease
writes it, waits a moment and reads it back: of two writers racing for it, only the last one to write finds
its own token.
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

from sqlext.errors import SqlextError
from sqlext.fs import FileSystem, join

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

    def describe(self) -> str:
        started = datetime.fromtimestamp(self.started_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{self.pipeline} in process {self.pid} on {self.host}, started {started}"

    def is_stale(self, now_ms: int, held_here: set[str]) -> bool:
        """Gone: heartbeat too old, its process no longer runs on this host, or it is this process's
        and no running insert of this process holds it (``held_here``)."""
        if now_ms - self.renewed_ms > LEASE_TIMEOUT_S * 1000:
            return True
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

    @classmethod
    def acquire(cls, fs: FileSystem, checkpoint: str, pipeline: str) -> Lease:
        """Take the checkpoint's lease, or raise :class:`CheckpointInUseError` naming its holder."""
        uri = lease_uri(checkpoint)
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
        fs.write_text(uri, json.dumps(asdict(owner)))
        time.sleep(LEASE_SETTLE_S)
        winner = read_lease(fs, checkpoint)
        if winner is None or winner.token != owner.token:
            raise _in_use(checkpoint, winner or owner)
        lease = cls(checkpoint, owner, fs)
        with _HELD_LOCK:
            _HELD[owner.token] = lease
        return lease

    def holder_alive(self) -> bool:
        """Whether what holds the lease still runs (True until :meth:`keep_while` says how to tell)."""
        return not self.released and (self._alive is None or self._alive())

    def moved_to(self, checkpoint: str) -> None:
        """The checkpoint was moved aside: hold the lease on the (new, empty) one at ``checkpoint``."""
        self.checkpoint = checkpoint
        self.fs.write_text(lease_uri(checkpoint), json.dumps(asdict(self.owner)))

    def renew(self) -> bool:
        """Write a new heartbeat; False (and ``lost``) when another writer took the lease over."""
        with self._lock:
            if self.released:
                return True
            current = read_lease(self.fs, self.checkpoint)
            if current is None or current.token != self.owner.token:
                self.lost = True
                return False
            self.owner = LeaseOwner(**{**asdict(self.owner), "renewed_ms": _now_ms()})
            self.fs.write_text(lease_uri(self.checkpoint), json.dumps(asdict(self.owner)))
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
                    self.fs.delete_file(lease_uri(self.checkpoint))
            except Exception as exc:  # a stale lease is taken over anyway
                log.warning("%s: could not remove the lease: %s", self.checkpoint, exc)

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


def read_lease(fs: FileSystem, checkpoint: str) -> LeaseOwner | None:
    uri = lease_uri(checkpoint)
    if not fs.exists(uri):
        return None
    try:
        return LeaseOwner(**json.loads(fs.read_text(uri)))
    except (ValueError, TypeError, FileNotFoundError):
        return None  # being replaced right now, or unreadable: nobody holds it in a readable form


def _in_use(checkpoint: str, owner: LeaseOwner) -> CheckpointInUseError:
    return CheckpointInUseError(
        f"Checkpoint {checkpoint} is being written by {owner.describe()} (last heartbeat "
        f"{max(0, _now_ms() - owner.renewed_ms) / 1000:.0f} s ago): one writer per checkpoint. Stop that insert "
        f"first (Ctrl-C / SIGTERM of its 'sqlext run', or STOP JOB), or give this one another 'pipeline.name'. "
        f"A lease whose process is gone, or silent for {LEASE_TIMEOUT_S:.0f} s, is taken over."
    )
