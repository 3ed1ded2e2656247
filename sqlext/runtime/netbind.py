"""Listening addresses of the servers sqlext starts: which are loopback, which mean every interface, and
the address a local client connects to."""

from __future__ import annotations

import ipaddress

#: Addresses that make a server listen on every interface.
WILDCARDS = frozenset({"0.0.0.0", "::", "[::]", "*", ""})


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses; any other name counts as reachable from outside."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def connect_host(host: str) -> str:
    """Where a client on this machine reaches a server listening on ``host`` (URI form: IPv6 in brackets)."""
    if host in WILDCARDS:
        return "127.0.0.1"
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else host
