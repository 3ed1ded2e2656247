"""A real HTTP server on loopback that records what is POSTed to it: the receiver of ``http-report`` tests.

It can be down for a while: it answers 503 to its first ``refuse_first`` requests (each is still
recorded as an attempt), then 200.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Receiver:
    """The server's address and what it received."""

    url: str
    refuse_first: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)
    #: The documents it accepted (answered 200), in order.
    accepted: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reports(self, partition: str) -> list[dict[str, Any]]:
        with self.lock:
            return [doc for doc in self.accepted if doc["partition"] == partition]


@contextmanager
def http_receiver(refuse_first: int = 0) -> Iterator[Receiver]:
    """Serve on 127.0.0.1 (a free port) until the block ends."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with receiver.lock:
                receiver.attempts.append(body)
                refused = len(receiver.attempts) <= receiver.refuse_first
                if not refused:
                    receiver.accepted.append(body)
            self.send_response(503 if refused else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(f"http://127.0.0.1:{server.server_address[1]}/partitions", refuse_first)
    thread = threading.Thread(target=server.serve_forever, name="http-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
