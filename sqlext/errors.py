"""The one error hierarchy of sqlext.

Every error a user can cause or meet derives from :class:`SqlextError` and carries structured fields
(statement, line, column, option, value) next to its message, so callers (the CLI, the session
extension, a gateway) can show them without parsing text.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


class SqlextError(Exception):
    """Root of all sqlext errors.

    The message is complete on its own; the keyword fields repeat its key facts for programs.
    """

    def __init__(
        self,
        message: str,
        *,
        statement: str | None = None,
        line: int | None = None,
        column: int | None = None,
        option: str | None = None,
        value: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.statement = statement
        self.line = line
        self.column = column
        self.option = option
        self.value = value


class MetastoreError(SqlextError):
    """The Hive Metastore could not be started, reached or answered an error."""


class MetastoreUnavailableError(MetastoreError):
    """The Hive Metastore did not answer within the retry deadline."""


class JavaNotFoundError(MetastoreError):
    """No ``java`` executable was found to run the embedded metastore."""


class ConfigError(SqlextError):
    """A configuration key or value is invalid."""


class OptionError(ConfigError):
    """A table option (a WITH option) is unknown, missing or has a value of the wrong form."""


class FactoryError(SqlextError):
    """No connector factory, or more than one, answers to an identifier."""


class ParseError(SqlextError):
    """A statement could not be parsed."""


class ValidationError(SqlextError):
    """A statement parsed but is not valid (unknown table, unsupported type, bad combination)."""


class TableNotFoundError(ValidationError):
    """A statement names a table the metastore does not have."""


class TableExistsError(ValidationError):
    """CREATE TABLE of a table that exists, without IF NOT EXISTS."""


class CommitError(SqlextError):
    """A batch or a partition could not be committed."""


class PartitionTimeError(CommitError):
    """A partition's time could not be extracted from its values."""


class PolicyError(CommitError):
    """A partition commit policy could not be loaded or failed."""


class StateVersionError(SqlextError):
    """State that sqlext persisted (commit log, trigger state, lease, checkpoint identity, users file, ...) was
    written by a newer release, in a format this one does not read, or is not sqlext's (docs/resuming.md)."""


class FileSystemError(SqlextError):
    """A path's filesystem cannot be reached in this process (unknown scheme, no JVM, bad mount table)."""


def did_you_mean(word: str, choices: Iterable[str], before: str = "") -> str:
    """Return `` Did you mean 'x'?`` (after ``before``, such as the full stop of the sentence it follows) for
    the closest choice, or an empty string when none is close."""
    matches = get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"{before} Did you mean '{matches[0]}'?" if matches else ""
