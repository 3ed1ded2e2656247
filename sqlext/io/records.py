"""Records that outlive the release that wrote them: every file sqlext persists carries a format version.

A streaming insert runs for months and is upgraded under it: stop, upgrade, start. Its state (the commit
log, the trigger state, the lease, the checkpoint's identity, ...) must then be read by the new release as
the old one meant it, and a release must never misread state that a newer one wrote. So each kind of record
is declared once, as a :class:`RecordFormat` (what it is and the newest version this release writes), and
written and read through it:

- written: the record holds its version (the ``version`` key, unless the format names another);
- read: every version up to the declared one is accepted (the record's reader upgrades an older one as it
  reads it); a record without a version was written before versions were recorded and reads as version 1,
  the format every such record has; a newer version is refused with :class:`~sqlext.errors.StateVersionError`
  naming the file, the version found, the newest this release reads, and what to do. The caller refuses
  before it writes anything (see docs/resuming.md).

``tests/jobs/test_resume_fixtures.py`` fails when a run writes a record without its version, and resumes the state
earlier releases wrote (``tests/fixtures/state/``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlext.errors import StateVersionError
from sqlext.io.fs import FileSystem

#: What a record written before format versions were recorded reads as.
UNVERSIONED = 1
#: Where users read about compatibility across releases.
DOCS = "docs/resuming.md"


@dataclass(frozen=True)
class RecordFormat:
    """One kind of persisted record and the newest format version of it this release reads and writes."""

    #: What the record is, for errors ("commit log entry").
    kind: str
    version: int
    #: The key holding the version (``v`` for the streaming source's offsets, which Spark keeps).
    key: str = "version"

    def stamp(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` with this release's version."""
        return {self.key: self.version, **{k: v for k, v in data.items() if k != self.key}}

    def version_of(self, data: Any, where: str) -> int:
        """The version of a record read from ``where``: 1 when it has none; refused when newer than this
        release reads (:class:`~sqlext.errors.StateVersionError`) or not a record of this kind."""
        if not isinstance(data, Mapping):
            raise StateVersionError(
                f"{where}: expected a {self.kind} (a JSON object), found {type(data).__name__}. It was not "
                f"written by sqlext, or was damaged; see {DOCS}.",
                value=where,
            )
        found = data.get(self.key, UNVERSIONED)
        if not isinstance(found, int) or isinstance(found, bool) or found < 1:
            raise StateVersionError(
                f"{where}: the {self.kind} has format version {found!r}; expected a whole number from 1 to "
                f"{self.version}. It was not written by sqlext, or was damaged; see {DOCS}.",
                value=str(found),
            )
        if found > self.version:
            raise newer_error(where, self.kind, found, self.version)
        return found

    def checked(self, data: Any, where: str) -> dict[str, Any]:
        """``data`` (a record read from ``where``) once :meth:`version_of` accepts it, without its version key."""
        self.version_of(data, where)
        return {k: v for k, v in data.items() if k != self.key}

    def dumps(self, data: Mapping[str, Any], indent: int | None = 1) -> str:
        return json.dumps(self.stamp(data), indent=indent, sort_keys=True)

    def loads(self, text: str, where: str) -> dict[str, Any]:
        return self.checked(json.loads(text), where)

    def write(self, fs: FileSystem, uri: str, data: Mapping[str, Any]) -> None:
        """Write ``data`` as a record of this format (atomically, as :meth:`FileSystem.write_text` writes)."""
        fs.write_text(uri, self.dumps(data))

    def read(self, fs: FileSystem, uri: str) -> dict[str, Any]:
        """Read the record at ``uri`` (``FileNotFoundError`` if there is none), refusing a newer version."""
        return self.loads(fs.read_text(uri), uri)


def newer_error(where: str, kind: str, found: int, newest: int) -> StateVersionError:
    """The error for state a newer release wrote (also for records whose version is not kept in JSON)."""
    return StateVersionError(
        f"{where}: the {kind} has format version {found}, written by a newer sqlext; this release reads "
        f"versions 1 to {newest}. Upgrade sqlext to the release that wrote it (or a later one) to go on; this "
        f"release wrote nothing. To go back to this release, see 'Downgrading' in {DOCS}.",
        value=str(found),
    )
