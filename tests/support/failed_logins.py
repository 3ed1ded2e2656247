"""``python -m tests.support.failed_logins PORT CAFILE ATTEMPTS THREADS``: wrong passwords in a bounded loop.

Run as a process of its own (as an attacker is), from 127.0.0.2: a loopback address other than the
legitimate clients' 127.0.0.1, so the gateway sees two addresses. Over TLS when CAFILE is not ``-``.
Prints each answer's reason, one per line.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
from pathlib import Path

ATTACKER_ADDRESS = "127.0.0.2"


def _message(status: int, payload: bytes) -> bytes:
    return struct.pack(">BI", status, len(payload)) + payload


def failed_login(port: int, context: ssl.SSLContext | None) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=120, source_address=(ATTACKER_ADDRESS, 0)) as raw:
        sock = context.wrap_socket(raw, server_hostname="127.0.0.1") if context else raw
        sock.sendall(_message(1, b"PLAIN") + _message(2, b"\0alice\0guess"))
        header = b""
        while len(header) < 5:
            chunk = sock.recv(5 - len(header))
            if not chunk:
                return "closed"
            header += chunk
        status, length = struct.unpack(">BI", header)
        reason = b""
        while len(reason) < length:
            reason += sock.recv(length - len(reason))
        return f"{status} {reason.decode()}"


def start(port: int, cafile: Path | None, attempts: int, threads: int) -> subprocess.Popen[str]:
    """Start the attack as a process of its own; its stdout has the answers once it ends."""
    args = [str(port), str(cafile) if cafile else "-", str(attempts), str(threads)]
    return subprocess.Popen(
        [sys.executable, "-m", __name__, *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def main() -> None:
    port, cafile, attempts, threads = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    context = ssl.create_default_context(cafile=cafile) if cafile != "-" else None
    answers: list[str] = []
    lock = threading.Lock()
    remaining = [attempts]

    def attack() -> None:
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            answer = failed_login(port, context)
            with lock:
                answers.append(answer)

    workers = [threading.Thread(target=attack) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print("\n".join(answers))


if __name__ == "__main__":
    main()
