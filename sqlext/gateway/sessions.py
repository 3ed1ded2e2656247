"""Gateway sessions: one extended Spark session per client session, its operations run in order.

Each client session gets ``spark.newSession()`` (the SparkContext is shared; SQL conf, temporary
views and current database are the session's own) extended with sqlext, so ``SET`` options,
``USE`` and temporary tables of one client never reach another. A session runs its operations one at
a time, in the order they came, on a worker thread of its own: sqlext's session state (options, the
metastore client) is not shared between threads, and one client's slow or failing statement holds up
no other session. Each operation's Spark jobs run in a job group of their own, which is what
cancelling the operation cancels.

Closing a session (or losing its connection) cancels its unfinished operations; the streaming
inserts it started keep running (see :mod:`sqlext.gateway.jobs`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from TCLIService import ttypes

from sqlext.frames import StatementResult
from sqlext.gateway import impersonation
from sqlext.gateway.authz.access import DENIED_SQL_STATE
from sqlext.gateway.authz.authorizer import SessionAuthorizer
from sqlext.gateway.authz.settings import AuthorizationSettings
from sqlext.gateway.jobs import JobRegistry
from sqlext.gateway.operations import InvalidHandleError, Operation, new_handle
from sqlext.gateway.results import ResultSet
from sqlext.spark.session import SqlextSession, extend
from sqlext.sql import statements as p
from sqlext.sql.parser import parse_statement
from sqlext.table import TableIdentifier

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sqlext.gateway")

#: OpenSession configuration keys (as Hive's JDBC driver sends them).
USE_DATABASE = "use:database"
HIVECONF = "set:hiveconf:"
IGNORED_PREFIXES = ("set:hivevar:", "set:system:")


class GatewaySession:
    """One client session: its extended Spark session, its operations and the worker that runs them."""

    def __init__(
        self,
        root: SparkSession,
        user: str,
        jobs: JobRegistry,
        authorization: AuthorizationSettings | None = None,
        impersonate: bool = False,
    ) -> None:
        self.handle = new_handle()
        self.user = user
        #: Statements act on HDFS as the user (spark.sqlext.gateway.enable.doAs: sqlext.gateway.impersonation).
        self.impersonate = impersonate
        self.jobs = jobs
        self.spark: SparkSession = root.newSession()
        self.sqlext: SqlextSession = extend(self.spark)
        self.authorizer = SessionAuthorizer(authorization or AuthorizationSettings(enabled=False), self.sqlext, user)
        self._operations: dict[bytes, Operation] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"gateway-session-{self.key.hex()[:8]}")

    @property
    def key(self) -> bytes:
        return bytes(self.handle.guid)

    def configure(self, configuration: Mapping[str, str]) -> None:
        """Apply OpenSession's configuration as HiveServer2 does: ``use:database``; ``set:hiveconf:k``
        or a plain ``k`` as conf (``spark.*`` keys as Spark conf, Hive's own ``hive.*`` ignored, any
        other as a sqlext session option); ``set:hivevar:`` and ``set:system:`` ignored. Keys are
        authorized as ``SET`` would be, all before any is applied."""
        keys = [key.removeprefix(HIVECONF) for key in configuration if not key.startswith(IGNORED_PREFIXES)]
        self.authorizer.check_settings(key for key in keys if key != USE_DATABASE and not key.startswith("hive."))
        for key, value in configuration.items():
            if key.startswith(HIVECONF):
                self._set_conf(key[len(HIVECONF) :], value)
            elif key.startswith(IGNORED_PREFIXES):
                log.info("session %s: %s ignored (no variable substitution)", self.key.hex(), key)
            elif key != USE_DATABASE:
                self._set_conf(key, value)
        database = configuration.get(USE_DATABASE)
        if database and database.lower() != "default":
            self.sqlext.sql(f"USE `{database}`")

    def _set_conf(self, key: str, value: str) -> None:
        if key.startswith("spark."):
            self.spark.conf.set(key, value)
        elif not key.startswith("hive."):
            self.sqlext.options[key] = value

    # -- operations ------------------------------------------------------------------------------

    def execute_statement(self, statement: str, run_async: bool) -> Operation:
        """Submit a statement; wait for it unless ``run_async``."""
        return self.submit(Operation(ttypes.TOperationType.EXECUTE_STATEMENT, statement), self._execute, run_async)

    def submit(self, operation: Operation, work: Callable[[str], ResultSet], run_async: bool = False) -> Operation:
        """Queue ``work(statement)`` behind the session's earlier operations."""
        with self._lock:
            self._operations[operation.key] = operation
        self._worker.submit(self._run, operation, work)
        if not run_async:
            operation.wait()
        return operation

    def _run(self, operation: Operation, work: Callable[[str], ResultSet]) -> None:
        context = self.spark.sparkContext
        if self.impersonate:
            impersonation.act_as(context, self.user)
        context.setJobGroup(operation.job_group, operation.statement[:200], interruptOnCancel=True)
        operation.run(lambda: work(operation.statement))
        if operation.error is not None and operation.error.sql_state != DENIED_SQL_STATE:  # denials log themselves
            first_line = operation.error.message.strip().splitlines()[0] if operation.error.message.strip() else ""
            log.info("session %s: %r failed: %s", self.key.hex()[:8], operation.statement[:100], first_line)

    def _execute(self, statement: str) -> ResultSet:
        answered = self.authorizer.answer(statement)
        if answered is None:
            answered = self.jobs.execute(statement, self.user, self._owns)
        if answered is not None:
            return answered
        after = self.authorizer.check(statement)  # before anything runs
        answer = self.sqlext.run(statement)
        after()
        result = ResultSet.of_result(answer) if isinstance(answer, StatementResult) else ResultSet.of_frame(answer)
        if "job_id" in result.column_names:  # a streaming INSERT started: the gateway keeps its job
            row = dict(zip(result.column_names, result.rows[0], strict=True))
            job_name = row.get("job_name") or ""
            self.jobs.record(self.spark, row["job_id"], job_name, self.user, self._insert_target(statement))
        return result

    def _owns(self, table: str) -> bool:
        return self.authorizer.owns(TableIdentifier.parse(table))

    def _insert_target(self, statement: str) -> str:
        parsed = parse_statement(statement)
        return str(self.sqlext.resolve(parsed.target)) if isinstance(parsed, p.Insert) else ""

    def operation(self, handle: ttypes.TOperationHandle) -> Operation | None:
        with self._lock:
            return self._operations.get(bytes(handle.operationId.guid))

    def cancel(self, operation: Operation) -> None:
        if operation.cancel():
            self.spark.sparkContext.cancelJobGroup(operation.job_group)

    def close_operation(self, operation: Operation) -> None:
        with self._lock:
            self._operations.pop(operation.key, None)
        if operation.close():
            self.spark.sparkContext.cancelJobGroup(operation.job_group)

    def close(self) -> None:
        """Cancel what has not finished, stop the worker, close the metastore connection."""
        with self._lock:
            operations = list(self._operations.values())
        for operation in operations:
            self.close_operation(operation)
        self._worker.shutdown(wait=False, cancel_futures=True)
        self.sqlext.catalog.client.close()


class Gateway:
    """All sessions of one gateway process, on one root Spark session, and their jobs."""

    def __init__(
        self,
        spark: SparkSession,
        admins: frozenset[str] = frozenset(),
        authorization: AuthorizationSettings | None = None,
        impersonate: bool = False,
    ) -> None:
        self.spark = spark
        self.authorization = authorization
        self.impersonate = impersonate
        self.jobs = JobRegistry(admins)
        self._sessions: dict[bytes, GatewaySession] = {}
        self._lock = threading.Lock()

    def open_session(self, user: str, configuration: Mapping[str, str] | None = None) -> GatewaySession:
        session = GatewaySession(self.spark, user, self.jobs, self.authorization, self.impersonate)
        try:
            session.configure(configuration or {})
        except Exception:
            session.close()
            raise
        with self._lock:
            self._sessions[session.key] = session
        log.info("session %s opened for %s", session.key.hex(), user)
        return session

    def session(self, handle: ttypes.TSessionHandle) -> GatewaySession:
        with self._lock:
            session = self._sessions.get(bytes(handle.sessionId.guid)) if handle else None
        if session is None:
            raise InvalidHandleError("Invalid SessionHandle: the session is closed or was never opened here.")
        return session

    def operation(self, handle: ttypes.TOperationHandle) -> tuple[GatewaySession, Operation]:
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            operation = session.operation(handle) if handle else None
            if operation is not None:
                return session, operation
        raise InvalidHandleError("Invalid OperationHandle: the operation is closed or was never started here.")

    def close_session(self, key: bytes) -> bool:
        with self._lock:
            session = self._sessions.pop(key, None)
        if session is None:
            return False
        session.close()
        log.info("session %s closed", key.hex())
        return True

    @property
    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)

    def shutdown(self) -> None:
        """Close every session and stop the running jobs (each after the batch being committed)."""
        with self._lock:
            keys = list(self._sessions)
        for key in keys:
            self.close_session(key)
        self.jobs.stop_all()
