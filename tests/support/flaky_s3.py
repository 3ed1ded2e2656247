"""A flaky S3 endpoint for tests: a loopback HTTP proxy in front of the S3 server that, for a deterministic
share of the requests of chosen operations, answers ``503 SlowDown`` (AWS's throttling error, with its XML
body) or closes the connection without answering (a reset: the socket is closed with ``SO_LINGER`` 0 after the
request head is read, before anything reaches the server). Every other request is passed on byte for byte and
its answer relayed, so the server's request log holds exactly the requests that got through.

Which requests fail: the ``n``-th request (from 0) of an operation, counted per operation by AWS's name
(:attr:`tests.support.s3_server.S3Request.operation`), fails with ``SlowDown`` when ``n % every == 1`` and is
reset when ``n % every == 3``, ``every`` being that operation's period in :class:`FaultPlan`. A retry is the
next request of its operation, so one request is never failed twice in a row unless others of its operation
run between its attempts. Every injected fault is recorded (:attr:`FlakyS3Proxy.injected`) and logged as a JSON
line.
"""

from __future__ import annotations

import http.client
import json
import socket
import socketserver
import struct
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from io import BufferedIOBase
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from tests.support.s3_server import S3Request

SLOW_DOWN = "503 SlowDown"
RESET = "reset"
#: AWS's body for a throttled request.
SLOW_DOWN_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>flaky-proxy</RequestId></Error>"
)
#: Headers that describe one hop of a connection, not the message: never relayed as they are.
_HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "expect", "te"})


@dataclass(frozen=True)
class FaultPlan:
    """Per operation (AWS's name), the period of its faults: of each ``every`` requests, the second gets
    ``SlowDown`` and the fourth a reset. Operations not named pass untouched."""

    every: dict[str, int] = field(
        default_factory=lambda: {
            "PutObject": 8,
            "UploadPart": 4,
            "CompleteMultipartUpload": 4,
            "GetObject": 8,
            "ListObjects": 16,
        }
    )

    def fault(self, operation: str, n: int) -> str | None:
        """The fault for the ``n``-th request of ``operation`` (from 0), or None to pass it on."""
        period = self.every.get(operation)
        if period is None or period < 4:
            return None
        return {1: SLOW_DOWN, 3: RESET}.get(n % period)


@dataclass(frozen=True)
class Injection:
    """A fault the proxy injected: what it did to which request."""

    fault: str
    operation: str
    method: str
    bucket: str
    key: str


class FlakyS3Proxy(socketserver.ThreadingTCPServer):
    """The running proxy: its endpoint (give it as ``fs.s3a.endpoint``), its faults so far."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: str, plan: FaultPlan, log: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        target = urlsplit(upstream)
        self.upstream = (target.hostname or "127.0.0.1", target.port or 80)
        self.plan = plan
        self.injected: list[Injection] = []
        self.passed: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._log = log.open("a", buffering=1)

    @property
    def endpoint(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def decide(self, request: S3Request) -> str | None:
        """Count the request against its operation and say whether (and how) it fails."""
        operation = request.operation
        with self._lock:
            fault = self.plan.fault(operation, self._seen[operation])
            self._seen[operation] += 1
            if fault is None:
                self.passed[operation] += 1
                return None
            injection = Injection(fault, operation, request.method, request.bucket, request.key)
            self.injected.append(injection)
            self._log.write(json.dumps(asdict(injection)) + "\n")
        return fault

    def server_close(self) -> None:
        super().server_close()
        self._log.close()


class _Handler(socketserver.StreamRequestHandler):
    """One client connection: its requests in turn (keep-alive), each failed or passed on."""

    server: FlakyS3Proxy

    def handle(self) -> None:
        while (head := _read_head(self.rfile)) is not None:
            method, target, headers = head
            fault = self.server.decide(_as_request(method, target, headers))
            waits_to_send = _header(headers, "expect").lower() == "100-continue"
            if fault == RESET:
                self._reset()
                return
            if fault == SLOW_DOWN:
                if not waits_to_send:
                    _read_body(self.rfile, headers)
                # Not sent, a body leaves the connection unusable for another request: it is closed.
                answer_headers = [("Content-Type", "application/xml")] + [("Connection", "close")] * waits_to_send
                self._answer(503, "Slow Down", answer_headers, SLOW_DOWN_BODY, method)
                if waits_to_send:
                    return
                continue
            if waits_to_send:
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = _read_body(self.rfile, headers)
            status, reason, answer_headers, answer = self._pass_on(method, target, headers, body)
            self._answer(status, reason, answer_headers, answer, method)

    def _pass_on(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(*self.server.upstream, timeout=120)
        try:
            connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                if name.lower() not in _HOP_HEADERS or (name.lower() == "transfer-encoding" and body):
                    connection.putheader(name, value)
            connection.endheaders()
            if body:
                connection.send(body)
            answer = connection.getresponse()
            return answer.status, answer.reason, answer.getheaders(), answer.read()
        finally:
            connection.close()

    def _answer(self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes, method: str) -> None:
        lines = [f"HTTP/1.1 {status} {reason}"]
        relayed = [(n, v) for n, v in headers if n.lower() not in _HOP_HEADERS or (n, v) == ("Connection", "close")]
        lines += [f"{name}: {value}" for name, value in relayed if name.lower() != "content-length"]
        if method == "HEAD":  # the length of what a GET would answer, no body
            lines += [f"Content-Length: {value}" for name, value in headers if name.lower() == "content-length"]
            body = b""
        elif status not in (204, 304):
            lines.append(f"Content-Length: {len(body)}")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def _reset(self) -> None:
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


def _read_head(stream: BufferedIOBase) -> tuple[str, str, list[tuple[str, str]]] | None:
    """A request's line and headers, or None at the end of the connection."""
    try:
        line = stream.readline(65536)
    except OSError:
        return None
    if not line.strip():
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers = []
    while (header := stream.readline(65536)) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    return method, target, headers


def _read_body(stream: BufferedIOBase, headers: list[tuple[str, str]]) -> bytes:
    """The request's body as sent (a chunked body with its chunk framing, to be passed on as it is)."""
    if _header(headers, "transfer-encoding").lower() == "chunked":
        raw = bytearray()
        while True:
            size_line = stream.readline(65536)
            raw += size_line
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (trailer := stream.readline(65536)) not in (b"\r\n", b"\n", b""):
                    raw += trailer
                return bytes(raw + b"\r\n")
            raw += stream.read(size + 2)
    return stream.read(int(_header(headers, "content-length") or 0))


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((value for key, value in headers if key.lower() == name), "")


def _as_request(method: str, target: str, headers: list[tuple[str, str]]) -> S3Request:
    """The request as the S3 server's log would count it (path-style addressing)."""
    parts = urlsplit(target)
    bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
    query = parse_qs(parts.query, keep_blank_values=True)
    copy_source = _header(headers, "x-amz-copy-source") or None
    return S3Request(method, bucket, key, query, copy_source, 0, 0)


@contextmanager
def flaky_s3(upstream: str, log: Path, plan: FaultPlan | None = None) -> Iterator[FlakyS3Proxy]:
    """A proxy in front of ``upstream`` (the S3 server's endpoint), serving until the block ends."""
    proxy = FlakyS3Proxy(upstream, plan or FaultPlan(), log)
    thread = threading.Thread(target=proxy.serve_forever, name="flaky-s3", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(timeout=10)
