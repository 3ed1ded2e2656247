"""Failed logins slow their address down, and no one else.

Logins from one address are checked one at a time. After a failed one, the address's next check
waits: ``failure-delay`` after the first failure, doubled after each further one, at most
``failure-delay.max``. So opening many connections at once does not speed guessing up (nor make the
gateway hash many passwords at once); beyond :data:`MAX_WAITING` attempts waiting for their turn,
more are refused without their password being checked. A success, or a quiet
:data:`FORGET_AFTER_S`, clears the address's record.

The waiting happens on the waiting connection's own thread: other addresses' logins, and every
session already open, go on meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: Attempts from one address allowed to wait for their turn at once.
MAX_WAITING = 4
#: An address without a failure for this long starts afresh.
FORGET_AFTER_S = 900.0
#: Addresses remembered at most (the oldest forgotten first).
MAX_ADDRESSES = 10_000


@dataclass
class _Record:
    failures: int = 0
    last_failure: float = 0.0
    waiting: int = 0
    turn: threading.Lock = field(default_factory=threading.Lock)


class LoginThrottle:
    """One login check at a time per address, delayed after failures (``clock`` and ``sleep`` are
    replaceable for tests). Each :meth:`admit` that returns True must be followed by :meth:`finished`."""

    def __init__(
        self,
        delay_s: float = 1.0,
        max_delay_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self.delay_s = delay_s
        self.max_delay_s = max(max_delay_s, delay_s)
        self._clock = clock
        self._stopping = threading.Event()
        self._sleep = sleep if sleep is not None else self._stopping.wait
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def delay(self, failures: int) -> float:
        """The wait before the next check after ``failures`` failures in a row."""
        if failures <= 0:
            return 0.0
        return min(self.delay_s * 2 ** min(failures - 1, 32), self.max_delay_s)

    def admit(self, address: str) -> bool:
        """Wait for the address's turn to check a password; False (at once) when too many attempts of
        that address wait already, or (after waiting) when the gateway stops."""
        with self._lock:
            record = self._records.setdefault(address, _Record())
            if record.waiting >= MAX_WAITING:
                return False
            record.waiting += 1
        try:
            record.turn.acquire()
            with self._lock:
                now = self._clock()
                if now - record.last_failure > FORGET_AFTER_S:
                    record.failures = 0
                wait = record.last_failure + self.delay(record.failures) - now
            if wait > 0:
                self._sleep(wait)
        finally:
            with self._lock:
                record.waiting -= 1
        if self._stopping.is_set():
            record.turn.release()
            return False
        return True

    def finished(self, address: str, accepted: bool) -> int:
        """End the address's turn with the check's outcome; return its failures in a row."""
        with self._lock:
            record = self._records[address]
            if accepted:
                record.failures = 0
            else:
                record.failures += 1
                record.last_failure = self._clock()
            failures = record.failures
            record.turn.release()
            self._forget(self._clock())
        return failures

    def failures(self, address: str) -> int:
        with self._lock:
            record = self._records.get(address)
            return record.failures if record else 0

    def stop(self) -> None:
        """Release every waiting attempt (refused): the gateway is stopping."""
        self._stopping.set()

    def _forget(self, now: float) -> None:
        def idle(record: _Record) -> bool:
            return record.waiting == 0 and not record.turn.locked()

        done = [
            a
            for a, r in self._records.items()
            if idle(r) and (r.failures == 0 or now - r.last_failure > FORGET_AFTER_S)
        ]
        for address in done:
            del self._records[address]
        if len(self._records) >= MAX_ADDRESSES:
            oldest = sorted((r.last_failure, a) for a, r in self._records.items() if idle(r))
            for _, address in oldest[: len(self._records) - MAX_ADDRESSES + 1]:
                del self._records[address]
