"""The server side of the transports HiveServer2 clients speak: SASL PLAIN framing (or, with ``KERBEROS``
authentication, SASL GSSAPI: :mod:`sqlext.gateway.kerberos`), or none (NOSASL).

PyHive with ``auth='NONE'`` and beeline (any URL without ``auth=noSasl``) open with a SASL negotiation
even when nothing is checked: every negotiation message is a status byte, a 4-byte big-endian length
and a payload. The client sends ``START`` with the mechanism name, then ``OK`` (Python clients) or
``COMPLETE`` (Java clients, whose PLAIN client is complete after its first response) with the PLAIN
response ``authzid NUL authcid NUL password``; the server answers ``COMPLETE``. From then on every
message travels in frames of a 4-byte length and the bytes (PLAIN wraps nothing). A mechanism other
than PLAIN is answered ``BAD`` with the reason, and the connection closed.

NOSASL clients (PyHive ``auth='NOSASL'``, beeline ``;auth=noSasl``) write Thrift's binary protocol
directly, unframed. The first byte tells the two apart: ``START`` is 1, a strict binary-protocol
message begins with 0x80.

Given a login check (see :mod:`sqlext.gateway.auth`), the PLAIN user and password go through it, and a
refused login is answered ``BAD`` with the check's message (HiveServer2's "Error validating the
login"), then the connection is closed; NOSASL clients are then answered with a Thrift exception
saying that a password is needed. Without a login check, as HiveServer2 with
``hive.server2.authentication=NONE``, the user name is taken as given.

The first byte is read, not peeked, so the same code serves a TLS socket.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from enum import IntEnum
from io import BytesIO
from typing import NoReturn

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType
from thrift.transport import TSocket, TTransport
from thrift.transport.TTransport import TTransportException

from sqlext.gateway.kerberos import GssapiAcceptor, KerberosLoginRefused

#: Largest negotiation payload accepted from a client that has not authenticated yet.
MAX_NEGOTIATION_BYTES = 64 * 1024
#: Largest frame accepted after the negotiation (thrift's own default).
MAX_FRAME_BYTES = TTransport.DEFAULT_MAX_FRAME_SIZE
PLAIN = b"PLAIN"
GSSAPI = b"GSSAPI"
_HEADER = struct.Struct(">BI")
_LENGTH = struct.Struct(">i")
#: What NOSASL clients are told when logins need a password.
PASSWORD_NEEDED = (
    "The sqlext gateway requires a user name and password (SASL PLAIN): connect without auth=noSasl / "
    "auth='NOSASL', giving a password."
)


class LoginRefused(Exception):
    """Raised by a login check to refuse; the message is what the client reads."""


#: ``check(user, password)``: returns to let the user in, raises :class:`LoginRefused` to refuse.
LoginCheck = Callable[[str, str], None]


class SaslStatus(IntEnum):
    """Negotiation status bytes of Thrift's SASL transport."""

    START = 1
    OK = 2
    BAD = 3
    ERROR = 4
    COMPLETE = 5


class SaslPlainServerTransport(TTransport.TTransportBase):
    """A server transport that negotiates SASL PLAIN, then reads and writes length-prefixed frames."""

    def __init__(
        self,
        transport: TTransport.TTransportBase,
        login: LoginCheck | None = None,
        kerberos: GssapiAcceptor | None = None,
    ) -> None:
        self.transport = transport
        self.login = login
        self.kerberos = kerberos
        self.username: str | None = None
        self._read_buffer = BytesIO(b"")
        self._write_buffer = BytesIO()

    def negotiate(self) -> None:
        """Run the server's part of the negotiation; raise :class:`TTransportException` if it fails."""
        status, mechanism = self._receive()
        if status is not SaslStatus.START:
            self._refuse(SaslStatus.ERROR, f"Expected the SASL START message, got status {status.name}")
        wanted = GSSAPI if self.kerberos is not None else PLAIN
        if mechanism != wanted:
            self._refuse(
                SaslStatus.BAD,
                f"Unsupported SASL mechanism '{mechanism.decode(errors='replace')}': use {wanted.decode()}"
                + (" (Kerberos: beeline ;principal=..., PyHive auth='KERBEROS')" if wanted == GSSAPI else ""),
            )
        status, response = self._receive()
        if self.kerberos is not None:
            self._negotiate_gssapi(status, response)
            return
        if status not in (SaslStatus.OK, SaslStatus.COMPLETE):
            self._refuse(SaslStatus.ERROR, f"Expected the PLAIN response, got status {status.name}")
        parts = response.split(b"\0")
        if len(parts) != 3 or not parts[1]:
            self._refuse(SaslStatus.BAD, "Malformed PLAIN response: expected authzid NUL user NUL password")
        username = parts[1].decode("utf-8", errors="replace")
        if self.login is not None:
            try:
                self.login(username, parts[2].decode("utf-8", errors="replace"))
            except LoginRefused as refused:
                self._refuse(SaslStatus.BAD, str(refused))
        self.username = username
        self._send(SaslStatus.COMPLETE, b"")

    def _negotiate_gssapi(self, status: SaslStatus, token: bytes) -> None:
        assert self.kerberos is not None
        if status not in (SaslStatus.OK, SaslStatus.COMPLETE):
            self._refuse(SaslStatus.ERROR, f"Expected the GSSAPI token, got status {status.name}")

        def receive() -> bytes:
            got, payload = self._receive()
            if got not in (SaslStatus.OK, SaslStatus.COMPLETE):
                self._refuse(SaslStatus.ERROR, f"Expected a GSSAPI response, got status {got.name}")
            return payload

        try:
            self.username = self.kerberos.negotiation().run(token, lambda c: self._send(SaslStatus.OK, c), receive)
        except KerberosLoginRefused as refused:
            self._refuse(SaslStatus.BAD, f"Kerberos login refused: {refused}")
        self._send(SaslStatus.COMPLETE, b"")

    def _receive(self) -> tuple[SaslStatus, bytes]:
        raw_status, length = _HEADER.unpack(self.transport.readAll(_HEADER.size))
        try:
            status = SaslStatus(raw_status)
        except ValueError:
            self._refuse(SaslStatus.ERROR, f"Unknown SASL status byte {raw_status}")
        if length > MAX_NEGOTIATION_BYTES:
            self._refuse(SaslStatus.ERROR, f"SASL message of {length} bytes (at most {MAX_NEGOTIATION_BYTES})")
        return status, self.transport.readAll(length) if length else b""

    def _send(self, status: SaslStatus, payload: bytes) -> None:
        self.transport.write(_HEADER.pack(status, len(payload)) + payload)
        self.transport.flush()

    def _refuse(self, status: SaslStatus, reason: str) -> NoReturn:
        # Thrift's Java server does the same: say why, then close.
        self._send(status, reason.encode())
        self.transport.close()
        raise TTransportException(TTransportException.NOT_OPEN, reason)

    # -- TTransport ------------------------------------------------------------------------------

    def isOpen(self) -> bool:
        return bool(self.transport.isOpen())

    def close(self) -> None:
        self.transport.close()

    def read(self, sz: int) -> bytes:
        data = self._read_buffer.read(sz)
        if data:
            return data
        self._read_frame()
        return self._read_buffer.read(sz)

    def _read_frame(self) -> None:
        (length,) = _LENGTH.unpack(self.transport.readAll(_LENGTH.size))
        if length < 0 or length > MAX_FRAME_BYTES:
            raise TTransportException(TTransportException.SIZE_LIMIT, f"Frame of {length} bytes refused")
        self._read_buffer = BytesIO(self.transport.readAll(length))

    def write(self, buf: bytes) -> None:
        self._write_buffer.write(buf)

    def flush(self) -> None:
        payload = self._write_buffer.getvalue()
        self._write_buffer = BytesIO()
        self.transport.write(_LENGTH.pack(len(payload)) + payload)
        self.transport.flush()


class _Replay(TTransport.TTransportBase):
    """A transport that first returns bytes already read from the one it wraps."""

    def __init__(self, prefix: bytes, transport: TTransport.TTransportBase) -> None:
        self._prefix = prefix
        self.transport = transport

    def isOpen(self) -> bool:
        return bool(self.transport.isOpen())

    def close(self) -> None:
        self.transport.close()

    def read(self, sz: int) -> bytes:
        if self._prefix:
            data, self._prefix = self._prefix[:sz], self._prefix[sz:]
            return data
        return bytes(self.transport.read(sz))

    def write(self, buf: bytes) -> None:
        self.transport.write(buf)

    def flush(self) -> None:
        self.transport.flush()


def server_transport(
    connection: socket.socket, login: LoginCheck | None = None, kerberos: GssapiAcceptor | None = None
) -> tuple[TTransport.TTransportBase, str | None]:
    """The transport an accepted (possibly TLS) connection's client speaks, opened; and the SASL user
    name, if any. With ``login``, only SASL PLAIN clients whose login it accepts get a transport; with
    ``kerberos``, only SASL GSSAPI clients with a ticket for the gateway's principal."""
    raw = TSocket.TSocket()
    raw.setHandle(connection)
    first = raw.read(1)  # raises END_OF_FILE if the client closed without a byte
    stream = _Replay(first, raw)
    if first[0] == SaslStatus.START:
        sasl = SaslPlainServerTransport(TTransport.TBufferedTransport(stream), login, kerberos)
        sasl.negotiate()
        return sasl, sasl.username
    transport = TTransport.TBufferedTransport(stream)
    if login is not None or kerberos is not None:
        _answer_password_needed(transport)
    return transport, None


def _answer_password_needed(transport: TTransport.TTransportBase) -> NoReturn:
    """Answer a NOSASL client's first call with an exception that says a password is needed; close."""
    try:
        protocol = TBinaryProtocol.TBinaryProtocol(transport)
        name, _, seqid = protocol.readMessageBegin()
        protocol.writeMessageBegin(name, TMessageType.EXCEPTION, seqid)
        TApplicationException(TApplicationException.UNKNOWN, PASSWORD_NEEDED).write(protocol)
        protocol.writeMessageEnd()
        transport.flush()
    except Exception:  # not a Thrift call, or the client left: nothing to answer
        pass
    finally:
        transport.close()
    raise TTransportException(TTransportException.NOT_OPEN, "NOSASL client refused: logins need a password")
