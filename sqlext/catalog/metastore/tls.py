"""TLS to the Hive Metastore, as Hive 4's metastore serves it (``metastore.use.SSL``): the client side for
sqlext's own connections (a TLS socket under Thrift, the server's certificate checked against a truststore) and
for Spark's Hive client (Hive's names under ``spark.hadoop.``), and the server side of ``sqlext metastore start``.

The keys are Hive's, under ``spark.sqlext.metastore.``: ``use.SSL``, ``truststore.path``,
``truststore.password``, ``truststore.type``, and for an embedded metastore ``keystore.path``,
``keystore.password``, ``keystore.type``. Java reads JKS and PKCS12 stores; Python's ``ssl`` reads PEM, and
PKCS12 through ``cryptography`` (installed with the ``kerberos`` extra): a JKS truststore must be converted
(``keytool -importkeystore -deststoretype PKCS12``) for sqlext's own client. A truststore of type ``PEM`` (a file
of CA certificates) serves sqlext's client only (Hive 2.3's client in Spark takes JKS or PKCS12).
"""

from __future__ import annotations

import functools
import logging
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlext.config import conf_flag
from sqlext.errors import ConfigError, MetastoreError

# thrift logs every failed handshake at ERROR; the metastore client reports them itself.
logging.getLogger("thrift.transport.TSSLSocket").setLevel(logging.CRITICAL)

PREFIX = "spark.sqlext.metastore."
USE_SSL = PREFIX + "use.SSL"
TRUSTSTORE_PATH = PREFIX + "truststore.path"
TRUSTSTORE_PASSWORD = PREFIX + "truststore.password"
TRUSTSTORE_TYPE = PREFIX + "truststore.type"
KEYSTORE_PATH = PREFIX + "keystore.path"
KEYSTORE_PASSWORD = PREFIX + "keystore.password"
KEYSTORE_TYPE = PREFIX + "keystore.type"

DESCRIPTIONS = {
    USE_SSL: "true: connect to the metastore over TLS (Hive's metastore.use.SSL, hive.metastore.use.SSL).",
    TRUSTSTORE_PATH: "The truststore holding the metastore's certificate or its CA: PKCS12, JKS (Spark's Hive client "
    "only) or PEM (sqlext's client only); default: the system's CAs (Hive's metastore.truststore.path).",
    TRUSTSTORE_PASSWORD: "The truststore's password (Hive's metastore.truststore.password).",
    TRUSTSTORE_TYPE: "PKCS12, JKS or PEM; default: from the file name (.pem/.crt: PEM, .jks: JKS, else PKCS12) "
    "(Hive's metastore.truststore.type).",
    KEYSTORE_PATH: "The embedded metastore's keystore (its key and certificate), PKCS12 or JKS: "
    "`sqlext metastore start` serves TLS with it, Hive 4 only (Hive's metastore.keystore.path).",
    KEYSTORE_PASSWORD: "The keystore's password (Hive's metastore.keystore.password).",
    KEYSTORE_TYPE: "PKCS12 or JKS; default: from the file name (Hive's metastore.keystore.type).",
}

_TYPES = ("PKCS12", "JKS", "PEM")


def _store_type(path: str, given: str | None, key: str) -> str:
    if given:
        upper = given.strip().upper()
        if upper not in _TYPES:
            raise ConfigError(
                f"Invalid value for '{key}': '{given}'. Expected one of {', '.join(_TYPES)}.", option=key, value=given
            )
        return upper
    suffix = Path(path).suffix.lower()
    return "PEM" if suffix in (".pem", ".crt", ".cer") else "JKS" if suffix == ".jks" else "PKCS12"


@dataclass(frozen=True)
class MetastoreTls:
    """How sqlext's metastore connections use TLS: not at all (``enabled`` False), or with this truststore (None:
    the system's CAs)."""

    enabled: bool = False
    truststore: str | None = None
    truststore_password: str | None = None
    truststore_type: str = "PKCS12"
    #: False only for ``sqlext metastore start``'s question whether its own metastore answers.
    verify: bool = True

    @classmethod
    def from_values(cls, values: Mapping[str, str]) -> MetastoreTls:
        enabled = conf_flag(values, USE_SSL)
        path = values.get(TRUSTSTORE_PATH) or None
        if enabled and path is not None and not Path(path).is_file():
            raise ConfigError(f"The truststore '{path}' ({TRUSTSTORE_PATH}) does not exist.", option=TRUSTSTORE_PATH)
        kind = _store_type(path or "", values.get(TRUSTSTORE_TYPE), TRUSTSTORE_TYPE)
        return cls(enabled, path, values.get(TRUSTSTORE_PASSWORD) or None, kind)

    def context(self) -> ssl.SSLContext:
        """The client's TLS context: the server's certificate checked against the truststore, and its name
        against the host connected to."""
        if not self.verify:
            unverified = ssl.create_default_context()
            unverified.check_hostname = False
            unverified.verify_mode = ssl.CERT_NONE
            return unverified
        return _context(self.truststore, self.truststore_password, self.truststore_type)

    def socket(self, host: str, port: int) -> Any:
        """A Thrift socket to ``host:port``: TLS when enabled (the certificate checked for ``host``), else plain."""
        from thrift.transport import TSocket, TSSLSocket

        if not self.enabled:
            return TSocket.TSocket(host, port)
        return TSSLSocket.TSSLSocket(host, port, ssl_context=self.context(), server_hostname=host)

    def hive_settings(self) -> dict[str, str]:
        """Spark conf giving Spark's Hive client (Hive 2.3) the same TLS."""
        if not self.enabled:
            return {}
        settings = {"spark.hadoop.hive.metastore.use.SSL": "true"}
        if self.truststore is not None:
            settings["spark.hadoop.hive.metastore.truststore.path"] = self.truststore
            settings["spark.hadoop.hive.metastore.truststore.password"] = self.truststore_password or ""
        return settings


@functools.lru_cache(maxsize=8)
def _context(truststore: str | None, password: str | None, kind: str) -> ssl.SSLContext:
    if truststore is None:
        return ssl.create_default_context()
    if kind == "PEM":
        return ssl.create_default_context(cafile=truststore)
    if kind == "JKS":
        raise ConfigError(
            f"The truststore '{truststore}' is JKS, which sqlext's own metastore client (Python) cannot read: convert "
            f"it to PKCS12 (keytool -importkeystore -srckeystore {truststore} -destkeystore truststore.p12 "
            "-deststoretype PKCS12), which Spark's Hive client reads too, or give the CA as PEM.",
            option=TRUSTSTORE_PATH,
            value=truststore,
        )
    return ssl.create_default_context(cadata=_pkcs12_certificates(truststore, password))


def _pkcs12_certificates(path: str, password: str | None) -> str:
    """The certificates of a PKCS12 truststore, as PEM (keytool's trusted entries and openssl's)."""
    try:
        from cryptography.hazmat.primitives.serialization import Encoding, pkcs12
    except ImportError:
        raise ConfigError(
            f"Reading the PKCS12 truststore '{path}' needs the cryptography package (pip install 'sqlext[kerberos]'); "
            f"or give the CA as PEM ({TRUSTSTORE_TYPE}=PEM).",
            option=TRUSTSTORE_PATH,
        ) from None
    try:
        store = pkcs12.load_pkcs12(Path(path).read_bytes(), password.encode() if password else None)
    except (ValueError, OSError) as exc:
        raise ConfigError(
            f"The truststore '{path}' cannot be read as PKCS12 with the password {TRUSTSTORE_PASSWORD} gives: {exc}.",
            option=TRUSTSTORE_PATH,
        ) from None
    certificates = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certificates.append(store.cert.certificate)
    if not certificates:
        raise ConfigError(f"The truststore '{path}' holds no certificate.", option=TRUSTSTORE_PATH)
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certificates)


@dataclass(frozen=True)
class ServerTls:
    """The embedded metastore's keystore (``sqlext metastore start``)."""

    keystore: Path
    password: str
    kind: str = "PKCS12"

    @classmethod
    def from_values(cls, values: Mapping[str, str]) -> ServerTls | None:
        path = values.get(KEYSTORE_PATH)
        if not path:
            return None
        return cls(
            Path(path), values.get(KEYSTORE_PASSWORD, ""), _store_type(path, values.get(KEYSTORE_TYPE), KEYSTORE_TYPE)
        )

    def check(self, version: str) -> None:
        """The keystore exists, and the metastore is Hive 4's (the one release sqlext starts that serves TLS)."""
        if version != "4":
            raise MetastoreError(
                f"TLS ({KEYSTORE_PATH}) is served by Hive 4's metastore only (metastore.use.SSL); this one is Hive "
                f"{version}: start it with --version 4, or without a keystore.",
                option=KEYSTORE_PATH,
            )
        if not self.keystore.is_file():
            raise MetastoreError(
                f"The metastore's keystore {self.keystore} does not exist.",
                option=KEYSTORE_PATH,
                value=str(self.keystore),
            )
        if self.kind == "PEM":
            raise MetastoreError(
                "The metastore's keystore must be PKCS12 or JKS (Hive reads no PEM keystore).", option=KEYSTORE_TYPE
            )

    def hive_properties(self) -> tuple[tuple[str, str], ...]:
        """hive-site.xml of Hive 4's metastore."""
        return (
            ("metastore.use.SSL", "true"),
            ("metastore.keystore.path", str(self.keystore.resolve())),
            ("metastore.keystore.password", self.password),
            ("metastore.keystore.type", self.kind.lower()),
        )


_default = MetastoreTls()
_default_lock = threading.Lock()


def configure(settings: MetastoreTls) -> None:
    """Make ``settings`` the TLS of this process's metastore clients unless given another."""
    global _default
    with _default_lock:
        _default = settings


def current() -> MetastoreTls:
    """The process's metastore TLS (:func:`configure`); none until configured."""
    return _default


def failure(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error under a transport error (thrift keeps it as ``inner``), if it is one."""
    inner = exc if isinstance(exc, ssl.SSLError) else getattr(exc, "inner", None)
    return inner if isinstance(inner, ssl.SSLError) else None


def explain(error: ssl.SSLError, uri: str) -> MetastoreError:
    """A TLS failure named: an untrusted certificate, a name it does not hold, a server that speaks no TLS."""
    reason = getattr(error, "verify_message", None) or getattr(error, "reason", None) or str(error)
    if isinstance(error, ssl.SSLCertVerificationError):
        if "mismatch" in str(reason).lower() or "hostname" in str(reason).lower():
            what = "a certificate for another host name: connect by a name the certificate holds"
        else:
            what = (
                f"a certificate this client does not trust: set {TRUSTSTORE_PATH} to a truststore holding it or its "
                "CA (Hive's metastore.truststore.path)"
            )
        return MetastoreError(
            f"TLS: the metastore at {uri} presented {what}. TLS said: {reason}.", option=TRUSTSTORE_PATH
        )
    return MetastoreError(
        f"TLS: the handshake with the metastore at {uri} failed ({reason}): it may not serve TLS; set {USE_SSL}=true "
        "only for a metastore with metastore.use.SSL=true.",
        option=USE_SSL,
    )
