"""Kerberos for WebHDFS: SPNEGO (HTTP ``Negotiate``) to a kerberized NameNode, for the Python processes that reach
``hdfs://`` without a JVM (:mod:`sqlext.io.webhdfs`).

It is on when the Hadoop settings say ``hadoop.security.authentication=kerberos`` (``spark.hadoop.`` keys, as for
the JVM). The login is the job's, as Spark's: ``spark.kerberos.principal`` + ``spark.kerberos.keytab``, carried
to Spark's Python workers with the session's Hadoop keys (:func:`sqlext.io.arrowfs.carried`), or, without them,
the user's ticket cache (``kinit``; ``KRB5CCNAME``). :func:`login` makes sure the process has a ticket before the
first WebHDFS call: from a keytab it gets one into a memory credential cache of the process and points
``KRB5CCNAME`` at it (and ``KRB5_CLIENT_KTNAME`` at the keytab, so that MIT Kerberos gets a new ticket from the
keytab when this one nears its end); from the ticket cache it checks that a ticket is there.

The HTTP negotiation is fsspec's (``kerberos=True``: requests-kerberos, the ``kerberos`` extra), for the service
``HTTP/<host of dfs.namenode.http-address>``: the NameNode's ``dfs.web.authentication.kerberos.principal``. Every
failure says what to set: no ticket, a keytab without the principal's key, a NameNode that refused the login
(HTTP 401), a cluster that wants Kerberos from a client whose settings do not say so.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from sqlext.errors import ConfigError, FileSystemError
from sqlext.runtime.gss import gss_text, keytab_login

AUTHENTICATION = "hadoop.security.authentication"
PRINCIPAL = "spark.kerberos.principal"
KEYTAB = "spark.kerberos.keytab"
#: The keys of the login a JVM-less process takes along with the Hadoop settings (Spark's names).
LOGIN_KEYS = (PRINCIPAL, KEYTAB)
EXTRA_HINT = "pip install 'sqlext[webhdfs,kerberos]'"
_LOGIN_HINT = f"kinit as the user (the ticket cache KRB5CCNAME), or set {PRINCIPAL} and {KEYTAB}"

#: Held while the process's Kerberos environment is pointed at a login.
_lock = threading.Lock()


def enabled(conf: Mapping[str, str]) -> bool:
    """Whether the Hadoop settings (bare keys) turn Hadoop's login to Kerberos."""
    return conf.get(AUTHENTICATION, "").strip().lower() == "kerberos"


def login(conf: Mapping[str, str]) -> str:
    """Make sure this process has a Kerberos ticket for WebHDFS (the keytab login of ``conf``, else the ticket
    cache's); return who it is logged in as. Raises :class:`FileSystemError` saying what to set."""
    principal, keytab = conf.get(PRINCIPAL) or None, conf.get(KEYTAB) or None
    if (principal is None) != (keytab is None):
        given, missing = (PRINCIPAL, KEYTAB) if principal else (KEYTAB, PRINCIPAL)
        raise ConfigError(
            f"'{given}' is set but '{missing}' is not: a keytab login needs both (or neither, for the ticket cache).",
            option=missing,
        )
    gssapi = _gssapi()
    if principal is not None and keytab is not None:
        return _keytab_login(gssapi, principal, keytab)
    try:
        credentials = gssapi.Credentials(usage="initiate")
        name, lifetime = str(credentials.name), credentials.lifetime
    except gssapi.exceptions.GSSError as exc:
        raise FileSystemError(
            f"Kerberos: there is no Kerberos ticket for WebHDFS ({AUTHENTICATION}=kerberos) in the ticket cache "
            f"{_ccache()}: {_LOGIN_HINT} (GSSAPI said: {gss_text(exc)}).",
            option=KEYTAB,
        ) from None
    if not lifetime:
        raise FileSystemError(
            f"Kerberos: the ticket of {name} in the ticket cache {_ccache()} has expired: {_LOGIN_HINT}.",
            option=KEYTAB,
        )
    return name


def _keytab_login(gssapi: Any, principal: str, keytab: str) -> str:
    if not os.path.isfile(keytab):
        raise ConfigError(f"The keytab '{keytab}' ({KEYTAB}) does not exist.", option=KEYTAB, value=keytab)
    try:
        login = keytab_login(principal, keytab, acquire=True)
    except gssapi.exceptions.GSSError as exc:
        raise FileSystemError(
            f"Kerberos: the WebHDFS login as {principal} from the keytab {keytab} failed: check {PRINCIPAL} "
            f"and {KEYTAB} (klist -kt {keytab} lists the principals it holds keys for; kinit -kt {keytab} "
            f"{principal} says the same in the shell) (GSSAPI said: {gss_text(exc)}).",
            option=KEYTAB,
            value=keytab,
        ) from None
    with _lock:
        # fsspec's HTTP negotiation takes the process's default credentials: these.
        os.environ["KRB5CCNAME"] = login.ccache
        os.environ["KRB5_CLIENT_KTNAME"] = keytab
    return principal


def refused(address: str, conf: Mapping[str, str], who: str | None, said: str) -> str:
    """Why the NameNode at ``address`` answered HTTP 401, and what to set."""
    host = address.rpartition(":")[0]
    if not enabled(conf):
        return (
            f"The NameNode's WebHDFS at {address} takes Kerberos (SPNEGO) logins only and this process's Hadoop "
            f"login is not Kerberos: set spark.hadoop.{AUTHENTICATION}=kerberos and log in with {PRINCIPAL} and "
            f"{KEYTAB} (or kinit) (HTTP 401: {said})."
        )
    return (
        f"Kerberos: the NameNode's WebHDFS at {address} refused the SPNEGO login of {who or 'the ticket cache'} "
        f"(HTTP 401: {said}){_service_ticket_problem(host)}. The client asks for a ticket for HTTP/{host}, the "
        "NameNode's HTTP principal (dfs.web.authentication.kerberos.principal, with _HOST its host name): check "
        "that spark.hadoop.dfs.namenode.http-address names the NameNode by the host name of that principal, that "
        "the principal is in the KDC and in the NameNode's dfs.web.authentication.kerberos.keytab, and that both "
        "sides use the same realm."
    )


def _service_ticket_problem(host: str) -> str:
    """What the KDC says when asked for the NameNode's HTTP service ticket; empty when it gives one."""
    gssapi = _gssapi()
    try:
        target = gssapi.Name(f"HTTP@{host}", gssapi.NameType.hostbased_service)
        gssapi.SecurityContext(name=target, usage="initiate").step()
    except gssapi.exceptions.GSSError as exc:
        return f"; getting a ticket for HTTP/{host} failed: {gss_text(exc)}"
    return ""


def _gssapi() -> Any:
    try:
        import gssapi
        import requests_kerberos  # noqa: F401 - fsspec's kerberos=True needs it
    except ImportError as exc:
        raise FileSystemError(
            f"WebHDFS with {AUTHENTICATION}=kerberos needs python-gssapi and requests-kerberos ({exc.name} is "
            f"missing): {EXTRA_HINT} (python-gssapi builds against MIT Kerberos: apt-get install libkrb5-dev).",
            option=AUTHENTICATION,
        ) from None
    return gssapi


def _ccache() -> str:
    return os.environ.get("KRB5CCNAME") or "(the default, KRB5CCNAME unset)"
