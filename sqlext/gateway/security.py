"""The gateway's security settings, read from ``spark.sqlext.gateway.*`` keys, and the bind check.

Authentication modes follow HiveServer2's ``hive.server2.authentication``: ``NONE`` (the user name
is taken as the client gives it), ``FILE`` (a users file with salted scrypt hashes, written by
``sqlext gateway passwd``), ``LDAP`` (a simple bind as the user) and ``CUSTOM`` (a Python class, as
HiveServer2's ``hive.server2.custom.authentication.class``). Every mode but ``NONE`` needs SASL PLAIN
with a password, so NOSASL clients are refused.

A gateway runs any SQL its clients send, as the gateway's OS user. Listening on an address other
than loopback with ``NONE`` would let anyone who reaches the port do that under any name: it is
refused unless ``spark.sqlext.gateway.insecure-no-auth`` is ``true`` (``--insecure-no-auth``).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sqlext.config import PREFIX
from sqlext.errors import ConfigError, did_you_mean
from sqlext.gateway.kerberos import GssapiAcceptor
from sqlext.options import parse_duration
from sqlext.runtime.netbind import is_loopback
from sqlext.runtime.paths import default_home

GATEWAY = PREFIX + "gateway."
AUTHENTICATION = GATEWAY + "authentication"
USERS_FILE = GATEWAY + "authentication.file"
CUSTOM_CLASS = GATEWAY + "authentication.class"
LDAP_URL = GATEWAY + "authentication.ldap.url"
LDAP_BASE_DN = GATEWAY + "authentication.ldap.base-dn"
LDAP_USER_DN_PATTERN = GATEWAY + "authentication.ldap.user-dn-pattern"
KERBEROS_PRINCIPAL = GATEWAY + "authentication.kerberos.principal"
KERBEROS_KEYTAB = GATEWAY + "authentication.kerberos.keytab"
FAILURE_DELAY = GATEWAY + "authentication.failure-delay"
FAILURE_DELAY_MAX = GATEWAY + "authentication.failure-delay.max"
ADMINS = GATEWAY + "admins"
AUTHORIZATION = GATEWAY + "authorization"
ALLOWED_LOCATIONS = GATEWAY + "allowed-locations"
DENIED_SETTINGS = GATEWAY + "denied-settings"
INSECURE_NO_AUTH = GATEWAY + "insecure-no-auth"
SSL_CERTFILE = GATEWAY + "ssl.certfile"
SSL_KEYFILE = GATEWAY + "ssl.keyfile"
ENABLE_DOAS = GATEWAY + "enable.doAs"

#: The gateway's keys with their meaning (docs/configuration.md's table is written from this).
KEYS: dict[str, str] = {
    AUTHENTICATION: "How logins are checked: NONE (default: no password), FILE, LDAP, KERBEROS or CUSTOM.",
    KERBEROS_PRINCIPAL: "KERBEROS: the gateway's principal, e.g. hive/_HOST@REALM "
    "(hive.server2.authentication.kerberos.principal).",
    KERBEROS_KEYTAB: "KERBEROS: the gateway's keytab (hive.server2.authentication.kerberos.keytab).",
    USERS_FILE: "FILE: the users file (default $SQLEXT_HOME/gateway/users); `sqlext gateway passwd` writes it.",
    CUSTOM_CLASS: "CUSTOM: class path of a sqlext.gateway.authenticator.Authenticator subclass.",
    LDAP_URL: "LDAP: server URL, ldap://host:389 or ldaps://host:636 (needs the ldap3 package).",
    LDAP_BASE_DN: "LDAP: users bind as uid=<user>,<base-dn>.",
    LDAP_USER_DN_PATTERN: "LDAP: bind DN with %s for the user (instead of base-dn), e.g. cn=%s,ou=people,dc=x.",
    FAILURE_DELAY: "Delay after a failed login from an address, doubled per further failure (default 1 s).",
    FAILURE_DELAY_MAX: "Longest such delay (default 30 s).",
    ADMINS: "Comma-separated users who may do anything (see docs/authorization.md) and see every user's jobs.",
    AUTHORIZATION: "true (default): statements are authorized (docs/authorization.md); false: anyone may do all.",
    ALLOWED_LOCATIONS: "Comma-separated URI prefixes under which users' tables may live (default: the warehouse).",
    DENIED_SETTINGS: "Comma-separated keys users may not SET beyond the built-in list (a trailing '.': a prefix).",
    INSECURE_NO_AUTH: "true: allow listening on a non-loopback address with authentication NONE.",
    SSL_CERTFILE: "PEM certificate (chain): the binary transport speaks TLS.",
    SSL_KEYFILE: "PEM private key of the certificate (default: in the certificate file).",
    ENABLE_DOAS: "true: statements run on HDFS as the signed-in user, a Hadoop proxy user of the gateway's login "
    "(hive.server2.enable.doAs); false (default): as the gateway's own user.",
}


class AuthMode(StrEnum):
    NONE = "NONE"
    FILE = "FILE"
    LDAP = "LDAP"
    KERBEROS = "KERBEROS"
    CUSTOM = "CUSTOM"


def _duration_s(values: Mapping[str, str], key: str, default: str) -> float:
    raw = values.get(key, default)
    try:
        return parse_duration(raw).total_seconds()
    except ValueError as exc:
        raise ConfigError(f"Invalid value for '{key}': '{raw}'. Expected {exc}.", option=key, value=raw) from None


def _flag(values: Mapping[str, str], key: str) -> bool:
    raw = values.get(key, "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"Invalid value for '{key}': '{raw}'. Expected 'true' or 'false'.", option=key, value=raw)
    return raw == "true"


@dataclass(frozen=True)
class GatewaySecurity:
    """Who may log in, who sees every job, and the TLS certificate of one gateway."""

    mode: AuthMode = AuthMode.NONE
    users_file: Path | None = None
    custom_class: str | None = None
    ldap_url: str | None = None
    ldap_base_dn: str | None = None
    ldap_user_dn_pattern: str | None = None
    failure_delay_s: float = 1.0
    failure_delay_max_s: float = 30.0
    admins: frozenset[str] = frozenset()
    insecure_no_auth: bool = False
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    kerberos_principal: str | None = None
    kerberos_keytab: Path | None = None

    @classmethod
    def of(cls, values: Mapping[str, str]) -> GatewaySecurity:
        """Read and check the ``spark.sqlext.gateway.*`` keys of ``values`` (a merged sqlext config)."""
        raw_mode = values.get(AUTHENTICATION, AuthMode.NONE).strip().upper()
        if raw_mode not in AuthMode.__members__:
            allowed = [mode.value for mode in AuthMode]
            raise ConfigError(
                f"Invalid value for '{AUTHENTICATION}': '{raw_mode}'. Allowed: {', '.join(allowed)}."
                + did_you_mean(raw_mode, allowed),
                option=AUTHENTICATION,
                value=raw_mode,
            )
        mode = AuthMode(raw_mode)
        users_file = values.get(USERS_FILE)
        certfile, keyfile = values.get(SSL_CERTFILE), values.get(SSL_KEYFILE)
        if keyfile and not certfile:
            raise ConfigError(f"'{SSL_KEYFILE}' is set but '{SSL_CERTFILE}' is not.", option=SSL_CERTFILE)
        security = cls(
            mode=mode,
            users_file=Path(users_file).expanduser() if users_file else default_users_file(),
            custom_class=values.get(CUSTOM_CLASS) or None,
            ldap_url=values.get(LDAP_URL) or None,
            ldap_base_dn=values.get(LDAP_BASE_DN) or None,
            ldap_user_dn_pattern=values.get(LDAP_USER_DN_PATTERN) or None,
            failure_delay_s=_duration_s(values, FAILURE_DELAY, "1 s"),
            failure_delay_max_s=_duration_s(values, FAILURE_DELAY_MAX, "30 s"),
            admins=frozenset(name.strip() for name in values.get(ADMINS, "").split(",") if name.strip()),
            insecure_no_auth=_flag(values, INSECURE_NO_AUTH),
            ssl_certfile=Path(certfile).expanduser() if certfile else None,
            ssl_keyfile=Path(keyfile).expanduser() if keyfile else None,
            kerberos_principal=values.get(KERBEROS_PRINCIPAL) or None,
            kerberos_keytab=Path(values[KERBEROS_KEYTAB]).expanduser() if values.get(KERBEROS_KEYTAB) else None,
        )
        security._check_mode_settings()
        return security

    def kerberos_acceptor(self) -> GssapiAcceptor | None:
        """The gateway's Kerberos identity under ``KERBEROS`` authentication (checked), else None."""
        if self.mode is not AuthMode.KERBEROS:
            return None
        assert self.kerberos_principal is not None and self.kerberos_keytab is not None
        acceptor = GssapiAcceptor(self.kerberos_principal, self.kerberos_keytab)
        acceptor.check(KERBEROS_PRINCIPAL, KERBEROS_KEYTAB)
        return acceptor

    def _check_mode_settings(self) -> None:
        if self.mode is AuthMode.KERBEROS:
            for key, value in ((KERBEROS_PRINCIPAL, self.kerberos_principal), (KERBEROS_KEYTAB, self.kerberos_keytab)):
                if value is None:
                    raise ConfigError(f"Authentication KERBEROS needs '{key}'.", option=key)
        if self.mode is AuthMode.CUSTOM and not self.custom_class:
            raise ConfigError(f"Authentication CUSTOM needs '{CUSTOM_CLASS}'.", option=CUSTOM_CLASS)
        if self.mode is AuthMode.LDAP:
            if not self.ldap_url:
                raise ConfigError(f"Authentication LDAP needs '{LDAP_URL}'.", option=LDAP_URL)
            if not (self.ldap_base_dn or self.ldap_user_dn_pattern):
                raise ConfigError(
                    f"Authentication LDAP needs '{LDAP_BASE_DN}' or '{LDAP_USER_DN_PATTERN}'.", option=LDAP_BASE_DN
                )
            if self.ldap_user_dn_pattern and "%s" not in self.ldap_user_dn_pattern:
                raise ConfigError(
                    f"'{LDAP_USER_DN_PATTERN}' must contain %s where the user name goes: "
                    f"'{self.ldap_user_dn_pattern}'.",
                    option=LDAP_USER_DN_PATTERN,
                    value=self.ldap_user_dn_pattern,
                )

    @property
    def authenticates(self) -> bool:
        """Whether logins need a valid password."""
        return self.mode is not AuthMode.NONE

    @property
    def tls(self) -> bool:
        return self.ssl_certfile is not None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of the certificate and key (TLS 1.2 or newer), or None without a certificate."""
        if self.ssl_certfile is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"Cannot load the gateway's TLS certificate '{self.ssl_certfile}' ({SSL_CERTFILE}) with key "
                f"'{self.ssl_keyfile or self.ssl_certfile}': {exc}.",
                option=SSL_CERTFILE,
                value=str(self.ssl_certfile),
            ) from exc
        return context

    def check_bind(self, host: str) -> None:
        """Refuse to listen on a non-loopback ``host`` without authentication, unless told it is meant."""
        if self.authenticates or self.insecure_no_auth or is_loopback(host):
            return
        raise ConfigError(
            f"Refusing to listen on {host} without authentication: anyone who reaches the port could run "
            "any SQL there (read and write files, create and drop tables, stop jobs) under any user name. "
            f"Set '{AUTHENTICATION}' to FILE, LDAP, KERBEROS or CUSTOM (see docs/gateway.md, 'HiveServer2 gateway'), "
            f"or, on a network you trust, pass --insecure-no-auth ('{INSECURE_NO_AUTH}=true').",
            option=AUTHENTICATION,
            value=self.mode.value,
        )


def default_users_file() -> Path:
    """Where ``FILE`` authentication looks for users unless told otherwise."""
    return default_home() / "gateway" / "users"
