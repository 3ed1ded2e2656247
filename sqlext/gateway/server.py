"""The gateway's Thrift server: a thread per client connection, each with its own TCLIService handler.

It listens only once Spark is up, so a port that answers is a gateway ready for statements. On
SIGTERM (``sqlext gateway stop``) or Ctrl-C it stops accepting, closes the sessions, stops the
streaming inserts (each after the batch being committed; they resume from their checkpoints when
started again) and Spark.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Mapping
from types import FrameType

from TCLIService import TCLIService
from thrift.protocol import TBinaryProtocol
from thrift.transport.TTransport import TTransportException

from sqlext.gateway.service import GatewayService
from sqlext.gateway.sessions import Gateway
from sqlext.gateway.transport import server_transport

log = logging.getLogger("sqlext.gateway")
#: How often the accept loop looks whether it should stop.
ACCEPT_POLL_S = 0.5


class GatewayServer:
    """Accepts HiveServer2 clients on ``host:port`` (port 0: any free port, see :attr:`port`)."""

    def __init__(self, gateway: Gateway, host: str, port: int) -> None:
        self.gateway = gateway
        self._listener = socket.create_server((host, port), backlog=128)
        self._listener.settimeout(ACCEPT_POLL_S)
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()

    def serve_forever(self) -> None:
        """Accept connections until :meth:`shutdown`."""
        log.info("sqlext gateway listening on %s:%d", self.host, self.port)
        with self._listener:
            while not self._stopping.is_set():
                try:
                    connection, _ = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    if self._stopping.is_set():
                        break
                    raise
                with self._lock:
                    self._connections.add(connection)
                threading.Thread(target=self._serve, args=(connection,), daemon=True, name="gateway-client").start()

    def shutdown(self) -> None:
        """Stop accepting and drop the open connections (their sessions are closed)."""
        self._stopping.set()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def _serve(self, connection: socket.socket) -> None:
        service: GatewayService | None = None
        try:
            transport, user = server_transport(connection)
            protocol = TBinaryProtocol.TBinaryProtocol(transport)
            service = GatewayService(self.gateway, user)
            processor = TCLIService.Processor(service)
            while not self._stopping.is_set():
                processor.process(protocol, protocol)
        except (TTransportException, EOFError, OSError) as exc:
            log.debug("connection ended: %s", exc)
        except Exception:
            log.exception("connection failed")
        finally:
            if service is not None:
                service.close()
            with self._lock:
                self._connections.discard(connection)
            connection.close()


def run(host: str, port: int, master: str | None, conf: Mapping[str, str]) -> int:
    """Start Spark, serve until SIGTERM or Ctrl-C, then stop the jobs and Spark. Returns the exit code."""
    from pyspark.logger import PySparkLogger

    from sqlext.session import spark_session

    # A client's failing statement is answered to that client (and logged in a line by the session);
    # pyspark would add the JVM stack trace of each one.
    PySparkLogger.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    spark = spark_session(app_name=f"sqlext gateway :{port}", master=master, conf=dict(conf))
    spark.sparkContext.setLogLevel("WARN")
    gateway = Gateway(spark)
    server = GatewayServer(gateway, host, port)

    def stop(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        server.shutdown()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever()
    finally:
        gateway.shutdown()
        spark.stop()
    log.info("sqlext gateway stopped")
    return 0
