"""A small Confluent Schema Registry for tests: the part of its REST API (v1) that the clients call, in memory, on
loopback (no real registry can be had here: Karapace is not on PyPI, Apicurio Registry's dependencies are not all
served by Maven Central). Checked against confluent-kafka's own ``SchemaRegistryClient``, ``AvroSerializer`` and
``AvroDeserializer`` (tests/connectors/kafka/test_schema_registry.py), so it answers as the real one does:

- ``POST /subjects/{s}/versions`` registers (a schema already registered anywhere keeps its global id; one the
  subject's compatibility level refuses is HTTP 409, error code 409), ``POST /subjects/{s}`` looks one up;
- ``GET /subjects``, ``/subjects/{s}/versions``, ``/subjects/{s}/versions/{n|latest}``, ``/schemas/ids/{id}``
  (unknown: HTTP 404, error code 40403 "Schema {id} not found"; an unknown subject 40401, version 40402);
- ``POST /compatibility/subjects/{s}/versions/{n|latest}`` (``is_compatible``), ``GET``/``PUT /config[/{s}]``
  (BACKWARD by default; BACKWARD, FORWARD, FULL, NONE and their ``_TRANSITIVE`` forms checked with Avro's own
  reader/writer compatibility checker);
- basic auth (``users``) or bearer tokens (``tokens``): anything else is HTTP 401, error code 401;
- HTTPS with a self-signed certificate (``tls``).

Every request is recorded (:attr:`SchemaRegistry.requests`), so a test can see what a reader fetched.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from tests.support.tls import SelfSigned

_MEDIA = "application/vnd.schemaregistry.v1+json"


class _Refusal(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class SchemaRegistry:
    """The registry's state and its server; :attr:`url` once started."""

    users: dict[str, str] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    schemas: dict[int, dict[str, Any]] = field(default_factory=dict)
    subjects: dict[str, list[int]] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=lambda: {"": "BACKWARD"})
    requests: list[tuple[str, str]] = field(default_factory=list)
    #: Serve HTTPS with this certificate (``tests.support.tls.self_signed``) instead of HTTP.
    tls: SelfSigned | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> SchemaRegistry:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null") if length else None
                try:
                    registry._authorize(self.headers.get("Authorization"))
                    status, answer = registry.answer(method, self.path, body)
                except _Refusal as refusal:
                    status, answer = refusal.status, {"error_code": refusal.code, "message": refusal.message}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", _MEDIA)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_PUT(self) -> None:
                self._serve("PUT")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(self.tls.cert), str(self.tls.key))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="schema-registry").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- the API ------------------------------------------------------------------------------------

    def _authorize(self, header: str | None) -> None:
        if not self.users and not self.tokens:
            return
        kind, _, credentials = (header or "").partition(" ")
        if kind == "Basic" and self.users:
            user, _, password = base64.b64decode(credentials).decode().partition(":")
            if self.users.get(user) == password:
                return
        if kind == "Bearer" and credentials in self.tokens:
            return
        raise _Refusal(401, 401, "Unauthorized")

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """(HTTP status, JSON answer) of a request; :class:`_Refusal` for the API's errors."""
        parts = [unquote(p) for p in urlsplit(path).path.strip("/").split("/")]
        with self._lock:
            self.requests.append((method, urlsplit(path).path))
            return 200, self._route(method, parts, body)

    def _route(self, method: str, parts: list[str], body: Any) -> Any:
        match method, parts:
            case "GET", ["subjects"]:
                return sorted(self.subjects)
            case "GET", ["schemas", "ids", schema_id]:
                return self._by_id(int(schema_id))
            case "POST", ["subjects", subject, "versions"]:
                return {"id": self._register(subject, body)}
            case "POST", ["subjects", subject]:
                return self._lookup(subject, body)
            case "GET", ["subjects", subject, "versions"]:
                return list(range(1, len(self._versions(subject)) + 1))
            case "GET", ["subjects", subject, "versions", version]:
                return self._version(subject, version)
            case "POST", ["compatibility", "subjects", subject, "versions", version]:
                found = self._version(subject, version)
                return {"is_compatible": self._compatible(subject, body["schema"], [found["id"]])}
            case "GET", ["config", *subject]:
                return {"compatibilityLevel": self.config.get("/".join(subject), self.config[""])}
            case "PUT", ["config", *subject]:
                self.config["/".join(subject)] = body["compatibility"].upper()
                return {"compatibility": self.config["/".join(subject)]}
        raise _Refusal(404, 404, f"HTTP 404 Not Found: {method} /{'/'.join(parts)}")

    def _by_id(self, schema_id: int) -> dict[str, Any]:
        if schema_id not in self.schemas:
            raise _Refusal(404, 40403, f"Schema {schema_id} not found")
        found = self.schemas[schema_id]
        return {"schema": found["schema"], **({"schemaType": found["type"]} if found["type"] != "AVRO" else {})}

    def _versions(self, subject: str) -> list[int]:
        if subject not in self.subjects:
            raise _Refusal(404, 40401, f"Subject '{subject}' not found.")
        return self.subjects[subject]

    def _version(self, subject: str, version: str) -> dict[str, Any]:
        ids = self._versions(subject)
        number = len(ids) if version == "latest" else int(version)
        if not 1 <= number <= len(ids):
            raise _Refusal(404, 40402, f"Version {version} not found.")
        return {"subject": subject, "version": number, "id": ids[number - 1], **self._by_id(ids[number - 1])}

    def _register(self, subject: str, body: dict[str, Any]) -> int:
        text, kind = body["schema"], body.get("schemaType", "AVRO")
        canonical = _canonical(text)
        existing = next((i for i, s in self.schemas.items() if s["canonical"] == canonical), None)
        ids = self.subjects.get(subject, [])
        if existing is not None and existing in ids:
            return existing
        if ids and not self._compatible(subject, text, ids):
            raise _Refusal(
                409, 409, f'Schema being registered is incompatible with an earlier schema for subject "{subject}"'
            )
        if existing is None:
            existing = max(self.schemas, default=0) + 1
            self.schemas[existing] = {"schema": text, "type": kind, "canonical": canonical}
        self.subjects.setdefault(subject, []).append(existing)
        return existing

    def _lookup(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        canonical = _canonical(body["schema"])
        for number, schema_id in enumerate(self._versions(subject), start=1):
            if self.schemas[schema_id]["canonical"] == canonical:
                return {"subject": subject, "version": number, "id": schema_id, **self._by_id(schema_id)}
        raise _Refusal(404, 40403, "Schema not found")

    def _compatible(self, subject: str, text: str, ids: list[int]) -> bool:
        level = self.config.get(subject, self.config[""])
        if level == "NONE":
            return True
        against = ids if level.endswith("_TRANSITIVE") else ids[-1:]
        new = _parse(text)
        for old in (_parse(self.schemas[i]["schema"]) for i in against):
            backward = _can_read(new, old)
            forward = _can_read(old, new)
            if level.startswith("BACKWARD") and not backward:
                return False
            if level.startswith("FORWARD") and not forward:
                return False
            if level.startswith("FULL") and not (backward and forward):
                return False
        return True


def _parse(text: str) -> Any:
    import avro.schema

    return avro.schema.parse(text)


def _canonical(text: str) -> str:
    return json.dumps(_parse(text).to_json(), sort_keys=True)


def _can_read(reader: Any, writer: Any) -> bool:
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
    return bool(result.compatibility == SchemaCompatibilityType.compatible)


@pytest.fixture
def schema_registry() -> Iterator[SchemaRegistry]:
    """A fresh registry without authentication, stopped after the test."""
    registry = SchemaRegistry().start()
    yield registry
    registry.stop()
