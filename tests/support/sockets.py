"""What the OS says a process listens on: its TCP listening sockets, read from /proc (Linux)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

LISTEN = "0A"


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    # /proc/net/tcp{,6} print each 32-bit word of the address in host (little-endian) order.
    ordered = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(ordered) == 4:
        return ipaddress.IPv4Address(ordered)
    v6 = ipaddress.IPv6Address(ordered)
    return v6.ipv4_mapped or v6


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def listening(pid: int) -> set[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]]:
    """(address, port) of every TCP socket ``pid`` listens on (IPv4-mapped IPv6 addresses as IPv4)."""
    inodes = _socket_inodes(pid)
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == LISTEN and inode in inodes:
                host, port = local.split(":")
                found.add((_address(host), int(port, 16)))
    return found


def listeners_on(port: int) -> set[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]]:
    """Every TCP listening socket of the machine on ``port``, whoever holds it."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            host, hex_port = fields[1].split(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                found.add((_address(host), port))
    return found
