"""Who may log in: the authenticators behind the gateway's SASL PLAIN negotiation.

An authenticator answers one question, whether a user name and password are valid, as HiveServer2's
``PasswdAuthenticationProvider`` does. The built-ins are the users file (``FILE``,
:mod:`sqlext.gateway.passwords`) and an LDAP simple bind (``LDAP``); ``CUSTOM`` loads any subclass of
:class:`Authenticator` by class path, constructed with the merged sqlext configuration (so it can read
keys of its own). Only ``True`` lets a user in: ``False``, ``None`` or an exception refuse.

:class:`LoginGuard` puts an authenticator behind the per-address slow-down of
:mod:`sqlext.gateway.throttle` and logs each refusal (user and address, never the password).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlext.errors import ConfigError, PolicyError
from sqlext.gateway.authenticator import Authenticator
from sqlext.gateway.passwords import FileAuthenticator
from sqlext.gateway.security import CUSTOM_CLASS, AuthMode, GatewaySecurity
from sqlext.gateway.throttle import LoginThrottle
from sqlext.gateway.transport import LoginRefused

log = logging.getLogger("sqlext.gateway")

#: What a refused client reads: HiveServer2's own words, whatever the reason.
LOGIN_REFUSED = "Error validating the login"
THROTTLED = "Too many failed logins from this address: try again later"


class LdapAuthenticator(Authenticator):
    """``LDAP`` authentication: a simple bind as the user's DN, as HiveServer2's LDAP mode does.

    The DN is ``user-dn-pattern`` with ``%s`` replaced, else ``uid=<user>,<base-dn>``; the user name
    is escaped as an RDN value. An empty password is refused before any bind (LDAP servers take it
    for an anonymous bind and answer success).
    """

    def __init__(self, url: str, base_dn: str | None, user_dn_pattern: str | None) -> None:
        try:
            import ldap3
        except ImportError as exc:
            raise ConfigError(
                "Authentication LDAP needs the ldap3 package: pip install 'sqlext[ldap]' (or ldap3)."
            ) from exc
        self._ldap3: Any = ldap3
        self.url = url
        self.base_dn = base_dn
        self.user_dn_pattern = user_dn_pattern

    def user_dn(self, user: str) -> str:
        from ldap3.utils.dn import escape_rdn

        escaped = escape_rdn(user)
        if self.user_dn_pattern:
            return self.user_dn_pattern.replace("%s", escaped)
        return f"uid={escaped},{self.base_dn}"

    def authenticate(self, user: str, password: str) -> bool:
        if not user or not password:
            return False
        ldap3 = self._ldap3
        server = ldap3.Server(self.url, connect_timeout=10)
        connection = ldap3.Connection(server, user=self.user_dn(user), password=password, receive_timeout=10)
        try:
            return bool(connection.bind())
        finally:
            connection.unbind()


def load_authenticator(security: GatewaySecurity, conf: Mapping[str, str]) -> Authenticator | None:
    """The authenticator ``security`` asks for (None for ``NONE``); ``conf`` goes to a custom one."""
    if security.mode in (AuthMode.NONE, AuthMode.KERBEROS):  # KERBEROS: the transport's GSSAPI negotiation
        return None
    if security.mode is AuthMode.FILE:
        assert security.users_file is not None
        if not security.users_file.is_file():
            raise ConfigError(
                f"Authentication FILE: the users file {security.users_file} does not exist; "
                "add a user with 'sqlext gateway passwd USER'."
            )
        return FileAuthenticator(security.users_file)
    if security.mode is AuthMode.LDAP:
        assert security.ldap_url is not None
        return LdapAuthenticator(security.ldap_url, security.ldap_base_dn, security.ldap_user_dn_pattern)
    return _custom(security.custom_class or "", conf)


def _custom(class_path: str, conf: Mapping[str, str]) -> Authenticator:
    from sqlext.loading import load_class

    try:
        loaded = load_class(class_path, Authenticator, CUSTOM_CLASS)
    except PolicyError as exc:
        raise ConfigError(exc.message, option=CUSTOM_CLASS, value=class_path) from exc
    try:
        authenticator: Authenticator = loaded(conf)
    except Exception as exc:
        raise ConfigError(
            f"Cannot construct the authenticator '{class_path}' ({CUSTOM_CLASS}) with the configuration: {exc}",
            option=CUSTOM_CLASS,
            value=class_path,
        ) from exc
    return authenticator


class LoginGuard:
    """Checks logins with an authenticator, slowing down addresses that keep failing."""

    def __init__(self, authenticator: Authenticator, throttle: LoginThrottle) -> None:
        self.authenticator = authenticator
        self.throttle = throttle

    def check(self, address: str, user: str, password: str) -> None:
        """Return if ``user`` may log in from ``address``; else raise :class:`LoginRefused`."""
        if not self.throttle.admit(address):
            log.warning("login of user %r from %s refused unchecked: too many failed logins", user, address)
            raise LoginRefused(THROTTLED)
        accepted = False
        try:
            accepted = self._authenticate(address, user, password)
        finally:
            failures = self.throttle.finished(address, accepted)
        if not accepted:
            log.warning("login refused: user %r from %s (%d failed in a row from there)", user, address, failures)
            raise LoginRefused(LOGIN_REFUSED)

    def _authenticate(self, address: str, user: str, password: str) -> bool:
        try:
            return self.authenticator.authenticate(user, password) is True
        except Exception as exc:  # its message might quote the password: only the type is logged
            log.warning("authenticator failed for user %r from %s: %s", user, address, type(exc).__name__)
            return False
