"""The gateway's parts that need no Spark: SASL PLAIN negotiation and framing over a real socket pair,
column batches and null bitmaps, name patterns, operation states, error mapping."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from TCLIService import ttypes
from thrift.transport.TTransport import TTransportException

from sqlext.errors import ParseError, SqlextError, TableNotFoundError
from sqlext.frames import StatementResult
from sqlext.gateway.metadata import name_pattern
from sqlext.gateway.operations import GatewayError, Operation, OperationError
from sqlext.gateway.results import ResultColumn, ResultSet, null_bitmap
from sqlext.gateway.transport import SaslPlainServerTransport, SaslStatus, server_transport

S = ttypes.TOperationState
T = ttypes.TTypeId


@pytest.fixture
def sockets() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def _message(status: int, payload: bytes) -> bytes:
    return struct.pack(">BI", status, len(payload)) + payload


def _read_message(sock: socket.socket) -> tuple[int, bytes]:
    status, length = struct.unpack(">BI", sock.recv(5))
    return status, sock.recv(length) if length else b""


def _accept_in_thread(server: socket.socket) -> tuple[threading.Thread, dict[str, object]]:
    outcome: dict[str, object] = {}

    def accept() -> None:
        try:
            outcome["transport"], outcome["user"] = server_transport(server)
        except TTransportException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=accept)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("response_status", [SaslStatus.OK, SaslStatus.COMPLETE], ids=["python", "java"])
def test_sasl_plain_negotiation_then_length_prefixed_frames(
    sockets: tuple[socket.socket, socket.socket], response_status: SaslStatus
) -> None:
    server, client = sockets
    thread, outcome = _accept_in_thread(server)
    client.sendall(_message(SaslStatus.START, b"PLAIN") + _message(response_status, b"\0alice\0any password"))
    thread.join(10)
    assert outcome["user"] == "alice"
    assert _read_message(client) == (SaslStatus.COMPLETE, b"")

    transport = outcome["transport"]
    assert isinstance(transport, SaslPlainServerTransport)
    client.sendall(struct.pack(">i", 5) + b"hello" + struct.pack(">i", 3) + b"abc")
    assert transport.readAll(8) == b"helloabc"
    transport.write(b"answer")
    transport.write(b"!")
    transport.flush()
    assert client.recv(100) == struct.pack(">i", 7) + b"answer!"


@pytest.mark.parametrize(
    ("messages", "status", "reason"),
    [
        (_message(SaslStatus.START, b"GSSAPI"), SaslStatus.BAD, "Unsupported SASL mechanism 'GSSAPI': use PLAIN"),
        (
            _message(SaslStatus.START, b"PLAIN") + _message(SaslStatus.OK, b"no separators"),
            SaslStatus.BAD,
            "Malformed PLAIN response",
        ),
        (
            _message(SaslStatus.START, b"PLAIN") + _message(SaslStatus.START, b"PLAIN"),
            SaslStatus.ERROR,
            "Expected the PLAIN response, got status START",
        ),
    ],
    ids=["mechanism", "malformed", "out-of-order"],
)
def test_a_failed_negotiation_is_answered_with_its_reason(
    sockets: tuple[socket.socket, socket.socket], messages: bytes, status: SaslStatus, reason: str
) -> None:
    server, client = sockets
    thread, outcome = _accept_in_thread(server)
    client.sendall(messages)
    thread.join(10)
    assert reason in str(outcome["error"])
    answered_status, answered = _read_message(client)
    assert answered_status == status and reason in answered.decode()


def test_a_client_that_does_not_start_sasl_speaks_unframed_binary(sockets: tuple[socket.socket, socket.socket]) -> None:
    server, client = sockets
    client.sendall(b"\x80\x01\x00\x01rest")
    transport, user = server_transport(server)
    assert user is None
    assert transport.readAll(8) == b"\x80\x01\x00\x01rest"


def test_null_bitmap_sets_bit_i_of_byte_i_div_8_and_drops_trailing_zero_bytes() -> None:
    assert null_bitmap([1, None, 3]) == bytes([0b010])
    assert null_bitmap([None] + [0] * 8 + [None]) == bytes([0b1, 0b10])
    assert null_bitmap([1, 2, 3] * 5) == b""


def test_result_sets_fetch_in_batches_and_rewind_on_fetch_first() -> None:
    result = ResultSet(
        [ResultColumn("id", T.BIGINT_TYPE), ResultColumn("s", T.STRING_TYPE)], [(i, None) for i in range(5)]
    )
    first = result.fetch(2)
    assert first.startRowOffset == 0 and first.columns[0].i64Val.values == [0, 1]
    assert first.columns[1].stringVal.values == ["", ""] and first.columns[1].stringVal.nulls == bytes([0b11])
    assert result.fetch(10).columns[0].i64Val.values == [2, 3, 4] and not result.has_more_rows
    assert result.fetch(10).columns[0].i64Val.values == []
    assert result.fetch(1, from_start=True).columns[0].i64Val.values == [0] and result.has_more_rows


def test_a_sqlext_statements_rows_are_sent_with_the_types_its_schema_names() -> None:
    result = ResultSet.of_result(StatementResult("job_name STRING, batches BIGINT", [("insert_t", 3), (None, None)]))
    assert [(c.name, c.type_id) for c in result.columns] == [("job_name", T.STRING_TYPE), ("batches", T.BIGINT_TYPE)]
    sent = result.fetch(10)
    assert sent.columns[0].stringVal.values == ["insert_t", ""] and sent.columns[0].stringVal.nulls == bytes([0b10])
    assert sent.columns[1].i64Val.values == [3, 0] and sent.columns[1].i64Val.nulls == bytes([0b10])


def test_spark_types_map_to_hiveserver2_types_with_decimal_qualifiers() -> None:
    decimal = ResultColumn.of_spark_type("d", "decimal(12,3)")
    qualifiers = decimal.descriptor(1).typeDesc.types[0].primitiveEntry.typeQualifiers.qualifiers
    assert (decimal.type_id, qualifiers["precision"].i32Value, qualifiers["scale"].i32Value) == (T.DECIMAL_TYPE, 12, 3)
    assert ResultColumn.of_spark_type("a", "array<struct<x:int>>").type_id == T.ARRAY_TYPE
    assert ResultColumn.of_spark_type("t", "timestamp_ntz").type_id == T.TIMESTAMP_TYPE
    assert ResultColumn.of_spark_type("i", "interval day to second").type_id == T.STRING_TYPE


def test_jdbc_name_patterns() -> None:
    assert name_pattern("ev%").fullmatch("EVENTS") and not name_pattern("ev%").fullmatch("xevents")
    assert name_pattern("a_c").fullmatch("abc") and not name_pattern("a\\_c").fullmatch("abc")
    assert name_pattern("a\\_c").fullmatch("a_c") and name_pattern("*").fullmatch("anything")
    assert (
        name_pattern(None).fullmatch("")
        and name_pattern("a.b").fullmatch("a.b")
        and not name_pattern("a.b").fullmatch("axb")
    )


def test_an_operation_canceled_before_it_ran_never_runs_and_keeps_its_state() -> None:
    operation = Operation(ttypes.TOperationType.EXECUTE_STATEMENT, "SELECT 1")
    assert operation.cancel()
    ran: list[bool] = []
    operation.run(lambda: ran.append(True) or ResultSet([], []))
    assert ran == [] and operation.state == S.CANCELED_STATE and not operation.cancel()
    with pytest.raises(GatewayError, match="CANCELED_STATE"):
        operation.finished_result()
    assert operation.close() is False and operation.state == S.CLOSED_STATE


def test_a_failed_operation_keeps_sqlexts_message_and_a_sql_state() -> None:
    operation = Operation(ttypes.TOperationType.EXECUTE_STATEMENT, "bad")

    def fail() -> ResultSet:
        raise ParseError("Expected a quoted string, got 'x'")

    operation.run(fail)
    assert operation.state == S.ERROR_STATE and operation.wait(0)
    assert operation.error == OperationError("Expected a quoted string, got 'x'", "42601")
    assert OperationError.of(TableNotFoundError("Table a.b does not exist.")).sql_state == "42P01"
    assert OperationError.of(SqlextError("other")).sql_state == "HY000"
    assert OperationError.of(RuntimeError("boom")) == OperationError("boom", "HY000")
