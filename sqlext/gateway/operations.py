"""One operation of a gateway session (a statement or a metadata request), from submission to close.

States follow HiveServer2's: PENDING while it waits for the session's earlier operations, RUNNING,
then FINISHED (its rows are ready), ERROR (with sqlext's or Spark's message) or CANCELED; CLOSED once
the client closes it. A canceled or closed operation keeps that state whatever its work does after.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from TCLIService import ttypes

from sqlext.errors import (
    ConfigError,
    FactoryError,
    MetastoreError,
    ParseError,
    SqlextError,
    TableNotFoundError,
    ValidationError,
)
from sqlext.gateway.authz.access import DENIED_SQL_STATE, AuthorizationError
from sqlext.gateway.results import ResultSet
from sqlext.io import hadoop_security

S = ttypes.TOperationState
TERMINAL = frozenset({S.FINISHED_STATE, S.ERROR_STATE, S.CANCELED_STATE, S.CLOSED_STATE})

#: SQLSTATE of sqlext's errors, by the nearest class in the error's hierarchy.
_SQL_STATES: dict[type[SqlextError], str] = {
    AuthorizationError: DENIED_SQL_STATE,
    ParseError: "42601",
    TableNotFoundError: "42P01",
    ValidationError: "42000",
    ConfigError: "42000",
    FactoryError: "42000",
    MetastoreError: "08S01",
    SqlextError: "HY000",
}


class GatewayError(SqlextError):
    """A request the gateway cannot serve (an unsupported call, an operation in the wrong state)."""


class InvalidHandleError(GatewayError):
    """A session or operation handle the gateway does not know (closed, or never opened here)."""


@dataclass(frozen=True)
class OperationError:
    """What a failed operation tells its client."""

    message: str
    sql_state: str = "HY000"
    error_code: int = 0

    @classmethod
    def of(cls, exc: BaseException) -> OperationError:
        """sqlext's message for its own errors, Spark's (with its SQLSTATE) for Spark's."""
        if isinstance(exc, SqlextError):
            return cls(exc.message, next(_SQL_STATES[c] for c in type(exc).__mro__ if c in _SQL_STATES))
        message = str(exc) or type(exc).__name__
        denied = hadoop_security.permission_denied(message)
        if denied is not None:  # HDFS refused the user (the gateway's doAs): said first, Spark's words after
            message = f"{denied}.\n{message}"
        return cls(message, _spark_sql_state(exc) or "HY000")


def _spark_sql_state(exc: BaseException) -> str | None:
    get_state = getattr(exc, "getSqlState", None)
    if not callable(get_state):
        return None
    try:
        state = get_state()
    except Exception:  # a Spark error without a JVM side has no state to give
        return None
    return str(state) if state else None


def new_handle() -> ttypes.THandleIdentifier:
    return ttypes.THandleIdentifier(guid=uuid.uuid4().bytes, secret=uuid.uuid4().bytes)


def _now_ms() -> int:
    return int(time.time() * 1000)


class Operation:
    """An operation's state, result or error; its work runs on the session's worker thread."""

    def __init__(self, kind: int, statement: str = "") -> None:
        self.handle = new_handle()
        self.kind = kind
        self.statement = statement
        self.state = S.PENDING_STATE
        self.result: ResultSet | None = None
        self.error: OperationError | None = None
        self.started_ms = 0
        self.completed_ms = 0
        self._lock = threading.Lock()
        self._done = threading.Event()

    @property
    def key(self) -> bytes:
        return bytes(self.handle.guid)

    @property
    def job_group(self) -> str:
        """The Spark job group its Spark jobs run in (what cancelling it cancels)."""
        return f"sqlext-gateway-{uuid.UUID(bytes=self.key)}"

    @property
    def thrift_handle(self) -> ttypes.TOperationHandle:
        return ttypes.TOperationHandle(operationId=self.handle, operationType=self.kind, hasResultSet=True)

    def run(self, work: Callable[[], ResultSet]) -> None:
        """Run ``work`` unless the operation was canceled first; keep its rows or its error."""
        with self._lock:
            if self.state != S.PENDING_STATE:
                return
            self.state = S.RUNNING_STATE
            self.started_ms = _now_ms()
        try:
            result = work()
        except Exception as exc:
            self._finish(S.ERROR_STATE, error=OperationError.of(exc))
        else:
            self._finish(S.FINISHED_STATE, result=result)

    def _finish(self, state: int, result: ResultSet | None = None, error: OperationError | None = None) -> None:
        with self._lock:
            if self.state in TERMINAL:
                return  # canceled or closed meanwhile: that is what the client was told
            self.state, self.result, self.error = state, result, error
            self.completed_ms = _now_ms()
        self._done.set()

    def cancel(self) -> bool:
        """Cancel it; False when it had already ended."""
        with self._lock:
            if self.state in TERMINAL:
                return False
            self.state = S.CANCELED_STATE
            self.completed_ms = _now_ms()
        self._done.set()
        return True

    def close(self) -> bool:
        """Close it and drop its rows; True when it had not ended yet (its work is to be cancelled)."""
        with self._lock:
            was_running = self.state not in TERMINAL
            self.state, self.result = S.CLOSED_STATE, None
            self.completed_ms = self.completed_ms or _now_ms()
        self._done.set()
        return was_running

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until it ends; False when ``timeout_s`` passed first."""
        return self._done.wait(timeout_s)

    def finished_result(self) -> ResultSet:
        """Its rows; a :class:`GatewayError` (or its own error) unless it finished."""
        with self._lock:
            state, result, error = self.state, self.result, self.error
        if error is not None:
            raise GatewayError(error.message)
        if state != S.FINISHED_STATE or result is None:
            raise GatewayError(f"The operation has no result set: it is {S._VALUES_TO_NAMES[state]}.")
        return result
