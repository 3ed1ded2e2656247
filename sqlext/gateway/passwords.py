"""The gateway's users file: one ``user:hash`` line per user, the hash a salted scrypt of the password.

A hash reads ``scrypt$<log2 n>$<r>$<p>$<salt>$<key>`` (salt and key in base64), so stronger
parameters can come later without breaking old lines. ``sqlext gateway passwd USER`` adds a user or
changes a password; the file is rewritten atomically with mode 0600. A running gateway reads the file
again when it changes, so no restart is needed. Lines starting with ``#`` are comments; the first says which
format version the file is in (:data:`USERS_FORMAT`; a file without it, written before versions were recorded,
is version 1), and a file of a newer version is refused (docs/resuming.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import tempfile
import threading
from pathlib import Path

from sqlext.errors import ConfigError
from sqlext.gateway.authenticator import Authenticator
from sqlext.io.records import newer_error

#: scrypt parameters of new hashes: n = 2**14, r = 8 (16 MiB, tens of ms per check), p = 1.
LOG2_N, R, P = 14, 8, 1
SALT_BYTES = 16
KEY_BYTES = 32
SCHEME = "scrypt"
#: The users file's format version: 1, ``user:hash`` lines (hashes say their own scheme and parameters).
USERS_FORMAT = 1
_HEADER = "# sqlext gateway users, format {version}: written by 'sqlext gateway passwd'\n"
_HEADER_VERSION = re.compile(r"#\s*sqlext gateway users, format (\d+)\b")


def hash_password(password: str, salt: bytes | None = None) -> str:
    """A new salted hash of ``password`` in the users file's form."""
    salt = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
    key = _scrypt(password, salt, LOG2_N, R, P)
    encode = base64.b64encode
    return f"{SCHEME}${LOG2_N}${R}${P}${encode(salt).decode()}${encode(key).decode()}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches a hash made by :func:`hash_password` (constant time in the key)."""
    try:
        scheme, log2_n, r, p, salt, key = stored.split("$")
        if scheme != SCHEME:
            return False
        expected = base64.b64decode(key, validate=True)
        computed = _scrypt(password, base64.b64decode(salt, validate=True), int(log2_n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(computed, expected)


def _scrypt(password: str, salt: bytes, log2_n: int, r: int, p: int) -> bytes:
    n = 1 << log2_n
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=256 * n * r, dklen=KEY_BYTES)


def read_users(path: Path) -> dict[str, str]:
    """The users and hashes of a users file (none if it does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    first = text.splitlines()[0] if text else ""
    header = _HEADER_VERSION.match(first)
    if header and int(header.group(1)) > USERS_FORMAT:
        raise newer_error(str(path), "gateway users file", int(header.group(1)), USERS_FORMAT)
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, sep, stored = line.strip().rpartition(":")
        if not sep or not user:
            raise ConfigError(f"{path}:{number}: expected 'user:hash' (written by 'sqlext gateway passwd').")
        users[user] = stored
    return users


def check_user_name(user: str) -> None:
    if not user or user != user.strip() or any(ch in user for ch in ":\n\r\0"):
        raise ConfigError(
            f"Invalid user name {user!r}: it must be non-empty, without ':', line breaks, NUL or "
            "leading/trailing spaces."
        )


def set_password(path: Path, user: str, password: str) -> bool:
    """Add ``user`` with ``password`` to the users file, or change their password; True if added."""
    check_user_name(user)
    if not password:
        raise ConfigError(f"An empty password for '{user}' is refused.")
    users = read_users(path)
    added = user not in users
    users[user] = hash_password(password)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".users-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:  # mkstemp files are 0600
            out.write(_HEADER.format(version=USERS_FORMAT))
            out.writelines(f"{name}:{stored}\n" for name, stored in sorted(users.items()))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return added


class FileAuthenticator(Authenticator):
    """``FILE`` authentication: the password must match the user's hash in the users file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._users: dict[str, str] = {}
        self._seen: tuple[int, int] | None = None
        self._lock = threading.Lock()
        # Unknown users are checked against this, so they take as long to refuse as a wrong password.
        self._decoy = hash_password(secrets.token_urlsafe(16))
        self._load()

    def _load(self) -> dict[str, str]:
        try:
            stat = self.path.stat()
            seen: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            seen = None
        with self._lock:
            if seen != self._seen:
                self._users = read_users(self.path)
                self._seen = seen
            return self._users

    def authenticate(self, user: str, password: str) -> bool:
        users = self._load()
        stored = users.get(user)
        matches = verify_password(password, stored if stored is not None else self._decoy)
        return stored is not None and matches
