"""Wait on a condition with a deadline: the tests' only way to synchronise with background work."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout_s: float = 60.0, interval_s: float = 0.2, what: str = "") -> T:
    """Poll ``condition`` until it returns something truthy; fail the test at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what or condition}")
        time.sleep(interval_s)


def free_port() -> int:
    """A TCP port that nothing listens on right now, below the kernel's ephemeral range: a test that
    stops a server and starts it again on the same port must not find it taken meanwhile by a JVM
    that asked the kernel for any port (Spark's driver and block manager do)."""
    low, _ = _ephemeral_range()
    for _ in range(200):
        port = random.randrange(max(1024, low - 12_000), low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port below the ephemeral range (from {low})")


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999
