"""The oldest partitions of a table by the times their names say: what a ``values-time`` expirer checks
between two listings of the table's partition names (see :mod:`sqlext.connectors.filesystem.expiration`).

A horizon is filled from a full listing with the :data:`HORIZON_SIZE` oldest ``(time, name)`` pairs and a
*bound*: every partition listed and not kept is at least that old (None: every partition is kept). While the
due cutoff is at or before the bound, the partitions due are exactly the kept ones older than the cutoff
(as of the listing; partitions committed since are added when older than the bound); past it, the expirer
lists again. Its memory is bounded by the size, not the table.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable

#: The partitions a horizon keeps: each a ``(time, name)`` pair and a name's entry, about 250 bytes, so
#: 10,000 take about 2.5 MB; at one partition an hour, a listing every 10,000 hours of expired partitions.
HORIZON_SIZE = 10_000


class Horizon:
    """The oldest partitions of a table by name time (epoch ms), sorted, at most ``size`` of them."""

    def __init__(self, size: int | None = None) -> None:
        self.size = HORIZON_SIZE if size is None else size
        self._entries: list[tuple[int, str]] = []
        self._times: dict[str, int] = {}
        #: Every partition not kept has a time at or after this; None: none is left out.
        self.bound: int | None = None

    def fill(self, timed: Iterable[tuple[int, str]]) -> None:
        """Keep the oldest of a full listing's ``(time, name)`` pairs (forgetting what was kept)."""
        oldest = heapq.nsmallest(self.size + 1, timed)
        # The first one left out bounds the rest: each is at least as old.
        self.bound = oldest.pop()[0] if len(oldest) > self.size else None
        self._entries = oldest
        self._times = {name: at for at, name in oldest}

    def covers(self, due_before_ms: int) -> bool:
        """Whether every partition older than ``due_before_ms`` is kept (as far as the listing and the
        partitions added since tell)."""
        return self.bound is None or due_before_ms <= self.bound

    def older_than(self, due_before_ms: int) -> list[str]:
        """The names kept whose time is before ``due_before_ms``, oldest first."""
        end = bisect.bisect_left(self._entries, (due_before_ms, ""))
        return [name for _, name in self._entries[:end]]

    def add(self, name: str, at: int) -> None:
        """A partition committed since the listing: kept when it is older than the bound (a newer one is
        covered by the bound already). When the horizon overflows, its newest leaves and lowers the bound."""
        if name in self._times or (self.bound is not None and at >= self.bound):
            return
        bisect.insort(self._entries, (at, name))
        self._times[name] = at
        if len(self._entries) > self.size:
            newest, left = self._entries.pop()
            del self._times[left]
            self.bound = newest

    def discard(self, names: Iterable[str]) -> None:
        """Forget partitions that are gone from the HMS (expired here, or dropped by someone else)."""
        for name in names:
            at = self._times.pop(name, None)
            if at is not None:
                del self._entries[bisect.bisect_left(self._entries, (at, name))]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._times
