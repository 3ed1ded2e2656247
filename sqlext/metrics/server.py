"""The HTTP server of a process running inserts: ``/metrics`` for Prometheus, ``/`` the live status page.

One per process, started when a session is extended with ``spark.sqlext.metrics.port`` set (``0``: a
free port, logged); later sessions of the process share it. It serves from a daemon thread, and listens
on ``spark.sqlext.metrics.host`` (default 127.0.0.1).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from sqlext import listeners
from sqlext.config import METRICS_PORT, SqlextConfig
from sqlext.metrics.exporter import InsertMetrics
from sqlext.runtime.netbind import connect_host

log = logging.getLogger("sqlext.metrics")


@dataclass
class MetricsServer:
    """A running endpoint: its metrics, its HTTP server and where it listens."""

    metrics: InsertMetrics
    httpd: ThreadingHTTPServer
    host: str

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        """Where a client on this machine reaches it (``http://host:port``)."""
        return f"http://{connect_host(self.host)}:{self.port}"

    def stop(self) -> None:
        """Stop serving and listening (the metrics of the process are gone with it)."""
        global _RUNNING
        listeners.remove_listener(self.metrics)
        self.httpd.shutdown()
        self.httpd.server_close()
        with _LOCK:
            if _RUNNING is self:
                _RUNNING = None


_RUNNING: MetricsServer | None = None
_LOCK = threading.Lock()


def running_server() -> MetricsServer | None:
    """This process's endpoint, if one runs."""
    return _RUNNING


def serve(port: int, host: str = "127.0.0.1") -> MetricsServer:
    """Start this process's endpoint on ``port`` (0: a free one), or return the running one."""
    global _RUNNING
    with _LOCK:
        if _RUNNING is not None:
            if port not in (0, _RUNNING.port):
                log.warning(
                    "%s=%d asked for, but this process's metrics endpoint runs at %s already; keeping it",
                    METRICS_PORT,
                    port,
                    _RUNNING.url,
                )
            return _RUNNING
        metrics = InsertMetrics()
        httpd = ThreadingHTTPServer((host, port), _handler(metrics))
        httpd.daemon_threads = True
        server = MetricsServer(metrics, httpd, host)
        threading.Thread(target=httpd.serve_forever, name="sqlext-metrics", daemon=True).start()
        listeners.add_listener(metrics)
        _RUNNING = server
    log.info("metrics at %s/metrics, status page at %s/", server.url, server.url)
    return server


def serve_configured(config: SqlextConfig) -> MetricsServer | None:
    """Start the endpoint when ``spark.sqlext.metrics.port`` is set (else nothing)."""
    port = config.metrics_port
    return None if port is None else serve(port, config.metrics_host)


def _handler(metrics: InsertMetrics) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, CONTENT_TYPE_LATEST, generate_latest(metrics.registry))
            elif path in ("/", "/index.html"):
                from sqlext.metrics.page import render_page

                self._send(200, "text/html; charset=utf-8", render_page(metrics).encode())
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found: try /metrics or /\n")

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("metrics endpoint: " + format, *args)

    return Handler
