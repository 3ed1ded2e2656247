"""The gateway's Thrift server: a thread per client connection, each with its own TCLIService handler.

A connection's thread does the TLS handshake (when a certificate is configured) and the login, so a
slow or refused client holds up no other. It listens only once Spark is up, so a port that answers is
a gateway ready for statements. On SIGTERM (``sqlext gateway stop``) or Ctrl-C it stops accepting,
closes the sessions, stops the streaming inserts (each after the batch being committed; they resume
from their checkpoints when started again) and Spark.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import signal
import socket
import ssl
import threading
from collections.abc import Mapping
from types import FrameType

from TCLIService import TCLIService
from thrift.protocol import TBinaryProtocol
from thrift.transport.TTransport import TTransportException

from sqlext.gateway.auth import LoginGuard
from sqlext.gateway.kerberos import GssapiAcceptor
from sqlext.gateway.security import GatewaySecurity
from sqlext.gateway.service import GatewayService
from sqlext.gateway.sessions import Gateway
from sqlext.gateway.transport import server_transport

log = logging.getLogger("sqlext.gateway")
#: How often the accept loop looks whether it should stop.
ACCEPT_POLL_S = 0.5
#: How long a new client may take for the TLS handshake and sending its login.
HANDSHAKE_TIMEOUT_S = 30.0


class GatewayServer:
    """Accepts HiveServer2 clients on ``host:port`` (port 0: any free port, see :attr:`port`); with a
    ``guard``, only clients whose SASL PLAIN login it accepts; with ``tls``, over TLS only."""

    def __init__(
        self,
        gateway: Gateway,
        host: str,
        port: int,
        guard: LoginGuard | None = None,
        tls: ssl.SSLContext | None = None,
        kerberos: GssapiAcceptor | None = None,
    ) -> None:
        self.gateway = gateway
        self.guard = guard
        self.kerberos = kerberos
        self.tls = tls
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
                    connection, peer = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    if self._stopping.is_set():
                        break
                    raise
                with self._lock:
                    self._connections.add(connection)
                threading.Thread(
                    target=self._serve, args=(connection, str(peer[0])), daemon=True, name="gateway-client"
                ).start()

    def shutdown(self) -> None:
        """Stop accepting and drop the open connections (their sessions are closed)."""
        self._stopping.set()
        if self.guard is not None:
            self.guard.throttle.stop()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def _serve(self, connection: socket.socket, address: str) -> None:
        service: GatewayService | None = None
        try:
            connection = self._secure(connection, address)
            login = functools.partial(self.guard.check, address) if self.guard is not None else None
            transport, user = server_transport(connection, login, self.kerberos)
            connection.settimeout(None)
            protocol = TBinaryProtocol.TBinaryProtocol(transport)
            authenticated = self.guard is not None or self.kerberos is not None
            service = GatewayService(self.gateway, user, authenticated=authenticated)
            processor = TCLIService.Processor(service)
            while not self._stopping.is_set():
                processor.process(protocol, protocol)
        except ssl.SSLError as exc:
            log.info("TLS handshake with %s failed: %s", address, exc.reason or exc)
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

    def _secure(self, connection: socket.socket, address: str) -> socket.socket:
        """The connection, TLS-wrapped if the gateway speaks TLS (handshake done here, not in accept)."""
        connection.settimeout(HANDSHAKE_TIMEOUT_S)
        if self.tls is None:
            return connection
        with self._lock:
            self._connections.discard(connection)
        wrapped = self.tls.wrap_socket(connection, server_side=True)
        with self._lock:
            self._connections.add(wrapped)
        return wrapped


def run(host: str, port: int, master: str | None, conf: Mapping[str, str]) -> int:
    """Start Spark, serve until SIGTERM or Ctrl-C, then stop the jobs and Spark. Returns the exit code.
    The security settings are checked first: a bad one fails before Spark starts."""
    from pyspark.logger import PySparkLogger

    from sqlext.config import SqlextConfig
    from sqlext.gateway import impersonation
    from sqlext.gateway.auth import load_authenticator
    from sqlext.gateway.authz.settings import AuthorizationSettings
    from sqlext.gateway.throttle import LoginThrottle
    from sqlext.spark.session import spark_session

    config = SqlextConfig.load(conf)
    security = GatewaySecurity.of(config.values)
    security.check_bind(host)
    authorization = AuthorizationSettings.of(config.values, security)
    authenticator = load_authenticator(security, config.values)
    throttle = LoginThrottle(security.failure_delay_s, security.failure_delay_max_s)
    guard = LoginGuard(authenticator, throttle) if authenticator is not None else None
    tls = security.ssl_context()

    # A client's failing statement is answered to that client (and logged in a line by the session);
    # pyspark would add the JVM stack trace of each one.
    PySparkLogger.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    # A server outlives its start command: an embedded metastore it may start stays for the next server.
    launch = {**conf, **impersonation.spark_conf(config.values)}
    spark = spark_session(app_name=f"sqlext gateway :{port}", master=master, conf=launch, keep_metastore=True)
    spark.sparkContext.setLogLevel("WARN")
    impersonate = impersonation.enabled(config.values)
    gateway = Gateway(spark, admins=security.admins, authorization=authorization, impersonate=impersonate)
    server = GatewayServer(gateway, host, port, guard, tls, security.kerberos_acceptor())
    log.info(
        "authentication %s%s, authorization %s, TLS %s, doAs %s",
        security.mode,
        f" (admins: {', '.join(sorted(security.admins))})" if security.admins else "",
        "on" if authorization.enabled else "off",
        "on" if tls else "off",
        "on" if impersonate else "off",
    )

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
