"""Wait on a condition with a deadline: the tests' only way to synchronise with background work."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
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
    """A TCP port that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
