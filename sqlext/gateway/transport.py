"""The server side of the transports HiveServer2 clients speak: SASL PLAIN framing, or none (NOSASL).

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

Like HiveServer2 with ``hive.server2.authentication=NONE``, no password is checked: the user name is
taken as given. Bind the gateway to a trusted interface.
"""

from __future__ import annotations

import socket
import struct
from enum import IntEnum
from io import BytesIO
from typing import NoReturn

from thrift.transport import TSocket, TTransport
from thrift.transport.TTransport import TTransportException

#: Largest negotiation payload accepted from a client that has not authenticated yet.
MAX_NEGOTIATION_BYTES = 64 * 1024
#: Largest frame accepted after the negotiation (thrift's own default).
MAX_FRAME_BYTES = TTransport.DEFAULT_MAX_FRAME_SIZE
PLAIN = b"PLAIN"
_HEADER = struct.Struct(">BI")
_LENGTH = struct.Struct(">i")


class SaslStatus(IntEnum):
    """Negotiation status bytes of Thrift's SASL transport."""

    START = 1
    OK = 2
    BAD = 3
    ERROR = 4
    COMPLETE = 5


class SaslPlainServerTransport(TTransport.TTransportBase):
    """A server transport that negotiates SASL PLAIN, then reads and writes length-prefixed frames."""

    def __init__(self, transport: TTransport.TTransportBase) -> None:
        self.transport = transport
        self.username: str | None = None
        self._read_buffer = BytesIO(b"")
        self._write_buffer = BytesIO()

    def negotiate(self) -> None:
        """Run the server's part of the negotiation; raise :class:`TTransportException` if it fails."""
        status, mechanism = self._receive()
        if status is not SaslStatus.START:
            self._refuse(SaslStatus.ERROR, f"Expected the SASL START message, got status {status.name}")
        if mechanism != PLAIN:
            self._refuse(
                SaslStatus.BAD, f"Unsupported SASL mechanism '{mechanism.decode(errors='replace')}': use PLAIN"
            )
        status, response = self._receive()
        if status not in (SaslStatus.OK, SaslStatus.COMPLETE):
            self._refuse(SaslStatus.ERROR, f"Expected the PLAIN response, got status {status.name}")
        parts = response.split(b"\0")
        if len(parts) != 3 or not parts[1]:
            self._refuse(SaslStatus.BAD, "Malformed PLAIN response: expected authzid NUL user NUL password")
        self.username = parts[1].decode("utf-8", errors="replace")
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


def server_transport(connection: socket.socket) -> tuple[TTransport.TTransportBase, str | None]:
    """The transport an accepted connection's client speaks, opened; and the SASL user name, if any."""
    first = connection.recv(1, socket.MSG_PEEK)
    if not first:
        raise TTransportException(TTransportException.END_OF_FILE, "Client closed the connection before a request")
    raw = TSocket.TSocket()
    raw.setHandle(connection)
    if first[0] == SaslStatus.START:
        sasl = SaslPlainServerTransport(TTransport.TBufferedTransport(raw))
        sasl.negotiate()
        return sasl, sasl.username
    return TTransport.TBufferedTransport(raw), None
