"""``KERBEROS`` authentication of the gateway, as HiveServer2's: the server side of SASL GSSAPI (RFC 4752) on the
Thrift transport, over python-gssapi (the ``kerberos`` extra).

The gateway accepts with its own principal and keytab (``spark.sqlext.gateway.authentication.kerberos.principal``
and ``.keytab``, HiveServer2's ``hive.server2.authentication.kerberos.principal`` / ``.keytab``; ``_HOST`` is this
machine's name). Clients connect as to HiveServer2: beeline ``;principal=hive/HOST@REALM``, PyHive
``auth='KERBEROS', kerberos_service_name='hive'``. The session's user is the client principal's first component
(``alice@REALM`` and ``alice/admin@REALM`` log in as ``alice``), as Hadoop's default ``auth_to_local`` rule maps
principals of the default realm. Only the security layer "none" is offered (HiveServer2's default
``hive.server2.thrift.sasl.qop=auth``): the frames after the login are plain, TLS protects them where wanted.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlext.errors import ConfigError
from sqlext.runtime.gss import gss_text

#: The one SASL GSSAPI security layer offered: none (RFC 4752 section 3.3).
LAYER_NONE = 1
#: Largest message the server takes: irrelevant without a security layer, but the field is there.
MAX_MESSAGE = 0xFFFFFF


@dataclass(frozen=True)
class GssapiAcceptor:
    """The gateway's Kerberos identity: its principal and keytab."""

    principal: str
    keytab: Path

    def check(self, principal_key: str, keytab_key: str) -> None:
        """Fail with what to set when the keytab is missing or python-gssapi is not installed."""
        if not self.keytab.is_file():
            raise ConfigError(f"The gateway's keytab {self.keytab} ({keytab_key}) does not exist.", option=keytab_key)
        try:
            import gssapi  # noqa: F401
        except ImportError:
            raise ConfigError(
                "Authentication KERBEROS needs the gssapi package: pip install 'sqlext[kerberos]' "
                "(it builds against MIT Kerberos: apt-get install libkrb5-dev).",
                option=principal_key,
            ) from None

    @property
    def own_principal(self) -> str:
        """The principal with ``_HOST`` replaced by this machine's name, as HiveServer2 does."""
        return self.principal.replace("_HOST", socket.getfqdn().lower())

    def negotiation(self) -> GssapiNegotiation:
        return GssapiNegotiation(self)


class KerberosLoginRefused(Exception):
    """The client's GSSAPI negotiation failed; the message says why (sent to the client, and logged)."""


class GssapiNegotiation:
    """One client's negotiation: ``run(first_token, send, receive)`` returns the user name."""

    def __init__(self, acceptor: GssapiAcceptor) -> None:
        import gssapi

        self._gssapi: Any = gssapi
        name = gssapi.Name(acceptor.own_principal, gssapi.NameType.kerberos_principal)
        store: dict[bytes | str, bytes | str] = {"keytab": str(acceptor.keytab)}
        try:
            credentials = gssapi.Credentials(name=name, usage="accept", store=store)
        except gssapi.exceptions.GSSError as exc:
            raise KerberosLoginRefused(
                f"the gateway cannot accept as {acceptor.own_principal} with keytab {acceptor.keytab}: {gss_text(exc)}"
            ) from None
        self._context = gssapi.SecurityContext(creds=credentials, usage="accept")

    def run(self, token: bytes, send: Callable[[bytes], None], receive: Callable[[], bytes]) -> str:
        """Accept the client's context tokens, then agree on the security layer; return the user name.
        ``send`` sends an OK challenge, ``receive`` returns the client's next response."""
        try:
            while True:
                reply = self._context.step(token)
                if self._context.complete:
                    if reply:
                        send(reply)
                        receive()  # the client's empty answer to the last context token
                    break
                send(reply or b"")
                token = receive()
            offer = struct.pack(">I", (LAYER_NONE << 24) | MAX_MESSAGE)
            send(bytes(self._context.wrap(offer, False).message))
            answer = bytes(self._context.unwrap(receive()).message)
        except self._gssapi.exceptions.GSSError as exc:
            raise KerberosLoginRefused(f"GSSAPI: {gss_text(exc)}") from None
        if len(answer) < 4 or not answer[0] & LAYER_NONE:
            raise KerberosLoginRefused("the client chose a SASL security layer other than none (qop=auth)")
        return short_name(str(self._context.initiator_name))


def short_name(principal: str) -> str:
    """``alice@REALM`` and ``alice/host@REALM`` -> ``alice`` (Hadoop's default auth_to_local rule)."""
    return principal.split("@", 1)[0].split("/", 1)[0]
