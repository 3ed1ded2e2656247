"""TCLIService, the HiveServer2 Thrift API, answered for one client connection.

Every call answers with a status: a request that fails (a bad statement, an unknown handle, a call
the gateway does not serve) comes back as ``ERROR_STATUS`` (``INVALID_HANDLE_STATUS`` for handles)
with sqlext's or Spark's message and a SQLSTATE, never as a broken connection, and leaves the session
usable. ``GetOperationStatus`` waits up to :data:`LONG_POLL_S` for a running operation to end, as
HiveServer2 does: Hive's JDBC driver polls without pausing.

The sessions a connection opened are closed when it ends; the streaming inserts they started are not.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from TCLIService import ttypes

from sqlext import __version__
from sqlext.errors import SqlextError
from sqlext.gateway import metadata
from sqlext.gateway.operations import GatewayError, InvalidHandleError, Operation, OperationError
from sqlext.gateway.results import STRING, ResultSet, to_column
from sqlext.gateway.sessions import Gateway, GatewaySession

log = logging.getLogger("sqlext.gateway")

V = ttypes.TProtocolVersion
#: The newest protocol these bindings speak, and the oldest with column-oriented results.
NEWEST_PROTOCOL = max(V._VALUES_TO_NAMES)
OLDEST_PROTOCOL = V.HIVE_CLI_SERVICE_PROTOCOL_V6
LONG_POLL_S = 2.0
LOG_FETCH = 1  # TFetchResultsReq.fetchType: 0 rows, 1 the operation's log
OK = ttypes.TStatus(statusCode=ttypes.TStatusCode.SUCCESS_STATUS)
OpType = ttypes.TOperationType
Call = TypeVar("Call", bound=Callable[..., Any])


def error_status(error: OperationError, code: int = ttypes.TStatusCode.ERROR_STATUS) -> ttypes.TStatus:
    return ttypes.TStatus(
        statusCode=code, errorMessage=error.message, sqlState=error.sql_state, errorCode=error.error_code
    )


def _answers(response: type) -> Callable[[Call], Call]:
    """Turn what a call raises into ``response`` with an error status."""

    def wrap(call: Call) -> Call:
        @functools.wraps(call)
        def answer(self: GatewayService, request: Any) -> Any:
            try:
                return call(self, request)
            except InvalidHandleError as exc:
                return response(
                    status=error_status(OperationError(exc.message), ttypes.TStatusCode.INVALID_HANDLE_STATUS)
                )
            except Exception as exc:
                if not isinstance(exc, SqlextError):
                    log.warning("%s failed: %s", call.__name__, exc)
                return response(status=error_status(OperationError.of(exc)))

        return answer  # type: ignore[return-value]

    return wrap


def _unsupported(name: str, response: type) -> Callable[[Any, Any], Any]:
    def answer(self: GatewayService, request: Any) -> Any:
        message = f"{name} is not supported by the sqlext gateway."
        return response(status=error_status(OperationError(message, "0A000")))

    answer.__name__ = name
    return answer


class GatewayService:
    """The TCLIService handler of one connection (method names are the Thrift API's)."""

    def __init__(self, gateway: Gateway, sasl_user: str | None = None, authenticated: bool = False) -> None:
        self.gateway = gateway
        self.sasl_user = sasl_user
        self.authenticated = authenticated
        self._opened: set[bytes] = set()

    def _user(self, req: ttypes.TOpenSessionReq) -> str:
        # Once a password was checked, the session belongs to that user, whatever name OpenSession claims.
        if self.authenticated and self.sasl_user:
            return self.sasl_user
        return req.username or self.sasl_user or "anonymous"

    def close(self) -> None:
        """The connection ended: close the sessions it opened."""
        for key in list(self._opened):
            self.gateway.close_session(key)
        self._opened.clear()

    # -- sessions --------------------------------------------------------------------------------

    @_answers(ttypes.TOpenSessionResp)
    def OpenSession(self, req: ttypes.TOpenSessionReq) -> ttypes.TOpenSessionResp:
        protocol = min(req.client_protocol, NEWEST_PROTOCOL)
        if protocol < OLDEST_PROTOCOL:
            raise GatewayError(
                f"The sqlext gateway needs {V._VALUES_TO_NAMES[OLDEST_PROTOCOL]} or newer (column-oriented "
                f"results); the client speaks {V._VALUES_TO_NAMES.get(protocol, protocol)}."
            )
        session = self.gateway.open_session(self._user(req), req.configuration)
        self._opened.add(session.key)
        return ttypes.TOpenSessionResp(
            status=OK,
            serverProtocolVersion=protocol,
            sessionHandle=ttypes.TSessionHandle(sessionId=session.handle),
            configuration={},
        )

    @_answers(ttypes.TCloseSessionResp)
    def CloseSession(self, req: ttypes.TCloseSessionReq) -> ttypes.TCloseSessionResp:
        key = self.gateway.session(req.sessionHandle).key
        self.gateway.close_session(key)
        self._opened.discard(key)
        return ttypes.TCloseSessionResp(status=OK)

    @_answers(ttypes.TGetInfoResp)
    def GetInfo(self, req: ttypes.TGetInfoReq) -> ttypes.TGetInfoResp:
        import pyspark

        self.gateway.session(req.sessionHandle)
        info = {
            ttypes.TGetInfoType.CLI_SERVER_NAME: "sqlext gateway",
            ttypes.TGetInfoType.CLI_DBMS_NAME: "sqlext",
            ttypes.TGetInfoType.CLI_DBMS_VER: f"{__version__} (Spark {pyspark.__version__})",
        }
        if req.infoType not in info:
            name = ttypes.TGetInfoType._VALUES_TO_NAMES.get(req.infoType, req.infoType)
            raise GatewayError(f"GetInfo {name} is not supported by the sqlext gateway.")
        return ttypes.TGetInfoResp(status=OK, infoValue=ttypes.TGetInfoValue(stringValue=info[req.infoType]))

    # -- statements ------------------------------------------------------------------------------

    @_answers(ttypes.TExecuteStatementResp)
    def ExecuteStatement(self, req: ttypes.TExecuteStatementReq) -> ttypes.TExecuteStatementResp:
        session = self.gateway.session(req.sessionHandle)
        run_async = bool(req.runAsync)
        operation = session.execute_statement(req.statement or "", run_async)
        return self._started(ttypes.TExecuteStatementResp, session, operation, run_async)

    def _started(self, response: type, session: GatewaySession, operation: Operation, run_async: bool) -> Any:
        """The response to a call that started an operation: its handle, or (run synchronously) its error."""
        if not run_async and operation.error is not None:
            session.close_operation(operation)
            return response(status=error_status(operation.error))
        return response(status=OK, operationHandle=operation.thrift_handle)

    @_answers(ttypes.TGetOperationStatusResp)
    def GetOperationStatus(self, req: ttypes.TGetOperationStatusReq) -> ttypes.TGetOperationStatusResp:
        _, operation = self.gateway.operation(req.operationHandle)
        operation.wait(LONG_POLL_S)
        error = operation.error
        return ttypes.TGetOperationStatusResp(
            status=OK,
            operationState=operation.state,
            sqlState=error.sql_state if error else None,
            errorCode=error.error_code if error else None,
            errorMessage=error.message if error else None,
            operationStarted=operation.started_ms or None,
            operationCompleted=operation.completed_ms or None,
            hasResultSet=True,
        )

    @_answers(ttypes.TCancelOperationResp)
    def CancelOperation(self, req: ttypes.TCancelOperationReq) -> ttypes.TCancelOperationResp:
        session, operation = self.gateway.operation(req.operationHandle)
        session.cancel(operation)
        return ttypes.TCancelOperationResp(status=OK)

    @_answers(ttypes.TCloseOperationResp)
    def CloseOperation(self, req: ttypes.TCloseOperationReq) -> ttypes.TCloseOperationResp:
        session, operation = self.gateway.operation(req.operationHandle)
        session.close_operation(operation)
        return ttypes.TCloseOperationResp(status=OK)

    @_answers(ttypes.TGetResultSetMetadataResp)
    def GetResultSetMetadata(self, req: ttypes.TGetResultSetMetadataReq) -> ttypes.TGetResultSetMetadataResp:
        _, operation = self.gateway.operation(req.operationHandle)
        return ttypes.TGetResultSetMetadataResp(status=OK, schema=operation.finished_result().schema())

    @_answers(ttypes.TFetchResultsResp)
    def FetchResults(self, req: ttypes.TFetchResultsReq) -> ttypes.TFetchResultsResp:
        _, operation = self.gateway.operation(req.operationHandle)
        if req.fetchType == LOG_FETCH:  # no operation log is kept: an empty one
            empty = ttypes.TRowSet(startRowOffset=0, rows=[], columns=[to_column(STRING, [])])
            return ttypes.TFetchResultsResp(status=OK, hasMoreRows=False, results=empty)
        orientation = req.orientation
        if orientation not in (ttypes.TFetchOrientation.FETCH_NEXT, ttypes.TFetchOrientation.FETCH_FIRST):
            name = ttypes.TFetchOrientation._VALUES_TO_NAMES.get(orientation, orientation)
            raise GatewayError(f"Fetch orientation {name} is not supported: use FETCH_NEXT or FETCH_FIRST.")
        result = operation.finished_result()
        rows = result.fetch(req.maxRows or 0, from_start=orientation == ttypes.TFetchOrientation.FETCH_FIRST)
        return ttypes.TFetchResultsResp(status=OK, hasMoreRows=result.has_more_rows, results=rows)

    @_answers(ttypes.TGetLogResp)
    def GetLog(self, req: ttypes.TGetLogReq) -> ttypes.TGetLogResp:
        self.gateway.operation(req.operationHandle)
        return ttypes.TGetLogResp(status=OK, log="")

    # -- catalog browsing ------------------------------------------------------------------------

    def _browse(self, response: type, req: Any, kind: int, work: Callable[[GatewaySession], ResultSet]) -> Any:
        session = self.gateway.session(req.sessionHandle)
        operation = session.submit(Operation(kind), lambda _: work(session))
        return self._started(response, session, operation, run_async=False)

    @_answers(ttypes.TGetCatalogsResp)
    def GetCatalogs(self, req: ttypes.TGetCatalogsReq) -> ttypes.TGetCatalogsResp:
        return self._browse(ttypes.TGetCatalogsResp, req, OpType.GET_CATALOGS, lambda _: metadata.catalogs())

    @_answers(ttypes.TGetSchemasResp)
    def GetSchemas(self, req: ttypes.TGetSchemasReq) -> ttypes.TGetSchemasResp:
        return self._browse(
            ttypes.TGetSchemasResp, req, OpType.GET_SCHEMAS, lambda s: metadata.schemas(s.spark, req.schemaName)
        )

    @_answers(ttypes.TGetTablesResp)
    def GetTables(self, req: ttypes.TGetTablesReq) -> ttypes.TGetTablesResp:
        return self._browse(
            ttypes.TGetTablesResp,
            req,
            OpType.GET_TABLES,
            lambda s: metadata.tables(s.spark, req.schemaName, req.tableName, req.tableTypes),
        )

    @_answers(ttypes.TGetTableTypesResp)
    def GetTableTypes(self, req: ttypes.TGetTableTypesReq) -> ttypes.TGetTableTypesResp:
        return self._browse(ttypes.TGetTableTypesResp, req, OpType.GET_TABLE_TYPES, lambda _: metadata.table_types())

    @_answers(ttypes.TGetColumnsResp)
    def GetColumns(self, req: ttypes.TGetColumnsReq) -> ttypes.TGetColumnsResp:
        return self._browse(
            ttypes.TGetColumnsResp,
            req,
            OpType.GET_COLUMNS,
            lambda s: metadata.columns(s.spark, req.schemaName, req.tableName, req.columnName),
        )

    @_answers(ttypes.TGetTypeInfoResp)
    def GetTypeInfo(self, req: ttypes.TGetTypeInfoReq) -> ttypes.TGetTypeInfoResp:
        return self._browse(ttypes.TGetTypeInfoResp, req, OpType.GET_TYPE_INFO, lambda _: metadata.type_info())

    GetFunctions = _unsupported("GetFunctions", ttypes.TGetFunctionsResp)
    GetPrimaryKeys = _unsupported("GetPrimaryKeys", ttypes.TGetPrimaryKeysResp)
    GetCrossReference = _unsupported("GetCrossReference", ttypes.TGetCrossReferenceResp)
    GetDelegationToken = _unsupported("GetDelegationToken", ttypes.TGetDelegationTokenResp)
    CancelDelegationToken = _unsupported("CancelDelegationToken", ttypes.TCancelDelegationTokenResp)
    RenewDelegationToken = _unsupported("RenewDelegationToken", ttypes.TRenewDelegationTokenResp)
