"""Kerberos for the Hive Metastore: SASL GSSAPI (RFC 4752) on the Thrift transport, as Hive's own client speaks
it to a metastore with ``hive.metastore.sasl.enabled=true``.

The settings are Hive's and Spark's names: ``spark.sqlext.metastore.sasl.enabled`` and
``spark.sqlext.metastore.kerberos.principal`` (the metastore's principal, ``_HOST`` standing for the host of
the URI connected to), and the login is Spark's ``spark.kerberos.principal`` + ``spark.kerberos.keytab``, or,
without them, the user's ticket cache (``kinit``; ``KRB5CCNAME``). GSSAPI is MIT Kerberos's, through
python-gssapi (the ``kerberos`` extra).

With a keytab, tickets are never renewed by hand: the credentials are acquired from the keytab into a memory
cache of this process (``client_keytab``), and MIT's GSSAPI gets a new ticket from the keytab once half of the
current one's lifetime has passed, on the next connection made. A connection whose login the metastore accepted
stays open past its ticket's end (Hive checks tickets when a connection authenticates): a streaming insert commits
over one connection for as long as it runs, and each new one (a reconnect after a transport error, the parallel
lanes of a large commit) gets its service ticket from the refreshed login.

Every GSSAPI failure is raised as :class:`KerberosError` naming what failed and what to set
(:func:`explain`), never as a GSS status or a bare ``TTransportException``.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlext.config import conf_flag
from sqlext.errors import ConfigError, MetastoreError
from sqlext.runtime.gss import forget_keytab_login, gss_text, keytab_login

SASL_ENABLED = "spark.sqlext.metastore.sasl.enabled"
SERVER_PRINCIPAL = "spark.sqlext.metastore.kerberos.principal"
#: The embedded metastore's own keytab (``sqlext metastore start``), Hive's hive.metastore.kerberos.keytab.file.
SERVER_KEYTAB = "spark.sqlext.metastore.kerberos.keytab.file"
CLIENT_PRINCIPAL = "spark.kerberos.principal"
CLIENT_KEYTAB = "spark.kerberos.keytab"

DESCRIPTIONS = {
    SASL_ENABLED: "true: talk SASL GSSAPI (Kerberos) to the metastore (Hive's hive.metastore.sasl.enabled).",
    SERVER_PRINCIPAL: "The metastore's Kerberos principal, e.g. hive/_HOST@REALM (_HOST: the URI's host) "
    "(Hive's hive.metastore.kerberos.principal).",
    SERVER_KEYTAB: "The embedded metastore's keytab (Hive's hive.metastore.kerberos.keytab.file).",
}

#: SASL GSSAPI security layers (RFC 4752 section 3.3).
LAYER_NONE, LAYER_INTEGRITY, LAYER_CONFIDENTIALITY = 1, 2, 4
_LOGIN_HINT = (
    "kinit as the user (the ticket cache KRB5CCNAME), or set spark.kerberos.principal and spark.kerberos.keytab"
)


class KerberosError(MetastoreError):
    """A Kerberos login or a GSSAPI negotiation failed; the message says which and what to set."""


@dataclass(frozen=True)
class MetastoreAuth:
    """How sqlext's metastore connections authenticate: SASL GSSAPI, or not at all (``sasl`` False)."""

    sasl: bool = False
    server_principal: str = ""
    client_principal: str | None = None
    client_keytab: str | None = None

    @classmethod
    def from_values(cls, values: Mapping[str, str]) -> MetastoreAuth:
        """The settings from Spark conf / sqlext config keys (see the module doc)."""
        sasl = conf_flag(values, SASL_ENABLED)
        principal, keytab = values.get(CLIENT_PRINCIPAL) or None, values.get(CLIENT_KEYTAB) or None
        if (principal is None) != (keytab is None):
            given, missing = (CLIENT_PRINCIPAL, CLIENT_KEYTAB) if principal else (CLIENT_KEYTAB, CLIENT_PRINCIPAL)
            raise ConfigError(
                f"'{given}' is set but '{missing}' is not: a keytab login needs both (or neither, for the ticket "
                "cache).",
                option=missing,
            )
        if keytab is not None and not os.path.isfile(keytab):
            raise ConfigError(f"The keytab '{keytab}' ({CLIENT_KEYTAB}) does not exist.", option=CLIENT_KEYTAB)
        auth = cls(sasl, values.get(SERVER_PRINCIPAL, ""), principal, keytab)
        if auth.sasl and not auth.server_principal:
            raise ConfigError(
                f"'{SASL_ENABLED}' is true but '{SERVER_PRINCIPAL}' is not set: name the metastore's principal, "
                "e.g. hive/_HOST@YOUR.REALM (Hive's hive.metastore.kerberos.principal).",
                option=SERVER_PRINCIPAL,
            )
        return auth

    def service_principal(self, host: str) -> str:
        """The metastore's principal for a connection to ``host``: ``_HOST`` replaced by it, lowercased, as
        Hadoop's ``SecurityUtil.getServerPrincipal`` does."""
        return self.server_principal.replace("_HOST", host.lower())


_default = MetastoreAuth()
_default_lock = threading.Lock()


def configure(auth: MetastoreAuth) -> None:
    """Make ``auth`` how this process's metastore clients authenticate unless given another (a session does
    this from its Spark conf)."""
    global _default
    with _default_lock:
        _default = auth


def current() -> MetastoreAuth:
    """The process's metastore authentication (:func:`configure`); no SASL until configured."""
    return _default


def _credentials(auth: MetastoreAuth) -> Any:
    """The keytab login's credentials (made once per process, shared with WebHDFS's), or the ticket cache's as
    it is now (a user's kinit renews it)."""
    import gssapi

    try:
        if auth.client_principal is None or auth.client_keytab is None:
            return gssapi.Credentials(usage="initiate")
        return keytab_login(auth.client_principal, auth.client_keytab).credentials
    except gssapi.exceptions.GSSError as exc:
        raise KerberosError(explain(exc, auth, "log in"), option=_login_option(auth)) from None


def _login_option(auth: MetastoreAuth) -> str:
    return CLIENT_KEYTAB if auth.client_keytab else "KRB5CCNAME"


class GssapiSaslClient:
    """The client side of SASL GSSAPI in the interface ``thrift_sasl.TSaslClientTransport`` drives (``start``,
    ``step``, ``encode``, ``decode``), over python-gssapi."""

    def __init__(self, auth: MetastoreAuth, host: str) -> None:
        import gssapi

        self.auth = auth
        self.service = auth.service_principal(host)
        self._gssapi = gssapi
        self._layer = LAYER_NONE
        self._context: Any = None

    def _fail(self, exc: Exception, doing: str) -> KerberosError:
        return KerberosError(explain(exc, self.auth, doing, self.service), option=SERVER_PRINCIPAL, value=self.service)

    def start(self, mechanism: str) -> tuple[bool, str, bytes]:
        gssapi = self._gssapi
        credentials = _credentials(self.auth)
        try:
            target = gssapi.Name(self.service, gssapi.NameType.kerberos_principal)
            self._context = gssapi.SecurityContext(
                name=target,
                creds=credentials,
                usage="initiate",
                flags=[gssapi.RequirementFlag.mutual_authentication, gssapi.RequirementFlag.integrity],
            )
            token = self._context.step()
        except gssapi.exceptions.GSSError as exc:
            if self.auth.client_principal is not None and self.auth.client_keytab is not None:
                # a keytab replaced meanwhile is read again on the next connection
                forget_keytab_login(self.auth.client_principal, self.auth.client_keytab)
            raise self._fail(exc, "get a ticket for the metastore") from None
        return True, mechanism, token or b""

    def step(self, challenge: bytes) -> tuple[bool, bytes]:
        try:
            if not self._context.complete:
                return True, self._context.step(challenge) or b""
            return True, self._security_layer(challenge)
        except self._gssapi.exceptions.GSSError as exc:
            raise self._fail(exc, "authenticate to the metastore") from None

    def _security_layer(self, challenge: bytes) -> bytes:
        """The server's wrapped offer (layers, max message size) answered with the layer chosen: none when
        offered (Hive's default hadoop.rpc.protection=authentication), else integrity, else confidentiality."""
        offer = self._context.unwrap(challenge).message
        if len(offer) != 4:
            raise KerberosError(f"The metastore's SASL GSSAPI security layer offer is malformed ({len(offer)} bytes).")
        offered = offer[0]
        for layer in (LAYER_NONE, LAYER_INTEGRITY, LAYER_CONFIDENTIALITY):
            if offered & layer:
                self._layer = layer
                break
        else:
            raise KerberosError(f"The metastore offers no SASL GSSAPI security layer this client knows ({offered}).")
        max_size = 0 if self._layer == LAYER_NONE else 0xFFFFFF
        answer = struct.pack(">I", (self._layer << 24) | max_size)
        return bytes(self._context.wrap(answer, False).message)

    def encode(self, data: bytes) -> tuple[bool, bytes]:
        if self._layer == LAYER_NONE:
            return True, data
        wrapped = self._context.wrap(data, self._layer == LAYER_CONFIDENTIALITY).message
        return True, struct.pack(">I", len(wrapped)) + wrapped

    def decode(self, data: bytes) -> tuple[bool, bytes]:
        if self._layer == LAYER_NONE:
            return True, data
        return True, bytes(self._context.unwrap(data[4:]).message)

    def getError(self) -> str:
        return "SASL GSSAPI negotiation failed"


def transport(auth: MetastoreAuth, host: str, socket: Any) -> Any:
    """The SASL GSSAPI transport over ``socket`` (a thrift ``TSocket``) to a metastore on ``host``.

    Opening it connects the socket (whose errors are the transport's: the client retries them), then negotiates;
    a negotiation the metastore refuses or breaks off raises :class:`KerberosError`, which is not retried."""
    try:
        from thrift_sasl import TSaslClientTransport
    except ImportError:
        raise _missing("thrift_sasl") from None
    try:
        import gssapi  # noqa: F401
    except ImportError:
        raise _missing("gssapi") from None
    from thrift.transport.TTransport import TTransportException

    class SaslTransport(TSaslClientTransport):
        def open(self) -> None:
            if not socket.isOpen():
                socket.open()
            try:
                super().open()
            except (TTransportException, EOFError, OSError) as exc:
                raise KerberosError(_refused(auth, host, exc), option=SERVER_PRINCIPAL) from None

    return SaslTransport(lambda: GssapiSaslClient(auth, host), "GSSAPI", socket)


def _refused(auth: MetastoreAuth, host: str, exc: Exception) -> str:
    said = " ".join(str(getattr(exc, "message", None) or exc).split())
    return (
        f"Kerberos: the metastore at {host} refused the SASL GSSAPI login of "
        f"{auth.client_principal or 'the ticket cache principal'} for service {auth.service_principal(host)} "
        f"(it said: {said or 'nothing; it closed the connection'}). Check that {SERVER_PRINCIPAL} is the "
        "metastore's own principal (its hive.metastore.kerberos.principal; _HOST is replaced by the host of "
        "spark.sqlext.metastore.uris), that the metastore has SASL enabled (hive.metastore.sasl.enabled=true), "
        "and that both use the same realm."
    )


def _missing(package: str) -> KerberosError:
    return KerberosError(
        f"{SASL_ENABLED}=true needs the {package} package: pip install 'sqlext[kerberos]' "
        "(python-gssapi builds against MIT Kerberos: apt-get install libkrb5-dev).",
        option=SASL_ENABLED,
    )


_OUTDATED_KEYTAB = (
    "the keytab's key does not match the KDC's (the password was changed or the key rotated: the keytab is "
    "outdated): make a new keytab (kadmin ktadd, ipa-getkeytab, ktpass) and point spark.kerberos.keytab at it"
)
#: GSSAPI minor codes (MIT krb5's error table, as signed 32-bit numbers) and what to do about each.
_MINOR_HINTS: dict[int, str] = {
    # KRB5KRB_AP_ERR_SKEW
    -1765328347: "clock skew: this machine's clock and the KDC's differ by more than 5 minutes; sync the clock "
    "(NTP/chrony), or raise clockskew in krb5.conf",
    # KRB5KRB_AP_ERR_TKT_EXPIRED
    -1765328352: "the ticket has expired; " + _LOGIN_HINT,
    # KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN
    -1765328377: "the server principal is not known to the KDC: set " + SERVER_PRINCIPAL + " to the metastore's "
    "principal (as in its hive.metastore.kerberos.principal, e.g. hive/_HOST@REALM with _HOST its host name)",
    # KRB5KDC_ERR_C_PRINCIPAL_UNKNOWN
    -1765328378: "the client principal is not known to the KDC: check spark.kerberos.principal",
    # KRB5KDC_ERR_NAME_EXP
    -1765328383: "the client principal has expired in the KDC's database: ask the realm's admin to renew it",
    # KRB5KDC_ERR_KEY_EXP
    -1765328361: "the client principal's password has expired: ask the realm's admin, then make a new keytab",
    # KRB5KDC_ERR_PREAUTH_FAILED, KRB5KRB_AP_ERR_BAD_INTEGRITY, KRB5KRB_AP_ERR_BADKEYVER
    -1765328360: _OUTDATED_KEYTAB,
    -1765328353: _OUTDATED_KEYTAB,
    -1765328340: _OUTDATED_KEYTAB,
    # KRB5_KDC_UNREACH
    -1765328228: "the KDC for the realm cannot be reached: check the realm's kdc in krb5.conf (KRB5_CONFIG)",
    # KRB5_REALM_UNKNOWN
    -1765328230: "the realm is unknown: check default_realm and [realms] in krb5.conf (KRB5_CONFIG)",
}


def explain(exc: Exception, auth: MetastoreAuth, doing: str, service: str | None = None) -> str:
    """A message naming what failed, why in a user's words, and what to set."""
    minor = getattr(exc, "min_code", None)
    if isinstance(minor, int) and minor >= 2**31:
        minor -= 2**32  # python-gssapi gives the OM_uint32 as it is; krb5's codes are negative
    who = (
        f"principal {auth.client_principal} with keytab {auth.client_keytab}"
        if auth.client_keytab
        else "the ticket cache " + (os.environ.get("KRB5CCNAME") or "(the default, KRB5CCNAME unset)")
    )
    detail = gss_text(exc)
    hint = _MINOR_HINTS.get(minor) if isinstance(minor, int) else None
    if hint is None and _no_credentials(detail):
        hint = (
            f"the keytab holds no key for {auth.client_principal} (klist -kt {auth.client_keytab} lists those it "
            "holds): check spark.kerberos.principal and spark.kerberos.keytab"
            if auth.client_keytab
            else "there is no Kerberos ticket: " + _LOGIN_HINT
        )
    hint = hint or "check the Kerberos settings: " + _LOGIN_HINT + f", and {SERVER_PRINCIPAL}"
    target = f" {service}" if service else ""
    return f"Kerberos: could not {doing}{target} as {who}: {hint} (GSSAPI said: {detail})."


def _no_credentials(detail: str) -> bool:
    text = detail.lower()
    return "no kerberos credentials" in text or "no credentials" in text or "credentials cache" in text
