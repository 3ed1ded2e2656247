"""The interface of the gateway's authenticators (the users file, LDAP, a ``CUSTOM`` class): one question,
whether a user name and password are valid, as HiveServer2's ``PasswdAuthenticationProvider`` asks it."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["Authenticator"]


class Authenticator(ABC):
    """Checks a user's password. Subclass it for ``CUSTOM`` authentication."""

    @abstractmethod
    def authenticate(self, user: str, password: str) -> bool:
        """True when ``password`` is ``user``'s. Called from many threads at once."""
