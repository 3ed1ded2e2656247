"""GSSAPI (MIT Kerberos through python-gssapi) as sqlext's Kerberos logins share it: the metastore client's, the
gateway's and WebHDFS's. What an error says in one line (:func:`gss_text`), and one keytab login per
(principal, keytab) in a process (:func:`keytab_login`), so that the metastore client and WebHDFS of one
process hold one ticket-granting ticket, in one memory credential cache, renewed from the keytab by MIT's
library."""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass
from typing import Any


def gss_text(exc: Exception) -> str:
    """``exc``'s message (python-gssapi's ``gen_message()`` where it has one) with its whitespace folded."""
    generator = getattr(exc, "gen_message", None)
    text = generator() if callable(generator) else str(exc)
    return " ".join(str(text).split())


@dataclass(frozen=True)
class KeytabLogin:
    """A login from a keytab: its initiator credentials and the memory credential cache that holds them."""

    credentials: Any
    ccache: str


_lock = threading.Lock()
_logins: dict[tuple[str, str], KeytabLogin] = {}
#: A cache of its own for each login made: a forgotten login's cache name is never reused.
_serial = itertools.count()


def keytab_login(principal: str, keytab: str, *, acquire: bool = False) -> KeytabLogin:
    """The process's login as ``principal`` from ``keytab``, made once (``acquire``: get its ticket now, so that
    a keytab without the principal's key fails here). Raises python-gssapi's ``GSSError``, which the caller
    words for what it was logging in to."""
    import gssapi

    with _lock:
        login = _logins.get((principal, keytab))
        if login is None:
            ccache = f"MEMORY:sqlext-{os.getpid()}-{next(_serial)}"
            name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
            store: dict[bytes | str, bytes | str] = {"client_keytab": keytab, "ccache": ccache}
            credentials = gssapi.Credentials(name=name, usage="initiate", store=store)
            if acquire:
                credentials.inquire()
            login = KeytabLogin(credentials, ccache)
            _logins[(principal, keytab)] = login
        return login


def forget_keytab_login(principal: str, keytab: str) -> None:
    """Drop a login, so that the next :func:`keytab_login` reads the keytab again (one replaced meanwhile)."""
    with _lock:
        _logins.pop((principal, keytab), None)
