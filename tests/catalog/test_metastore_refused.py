"""A metastore URI where nothing listens is an error at once for a session's catalog and the ``sqlext`` commands
that reach it (no minute of retries), while a connection lost after the client had connected is retried up to the
deadline."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.cli.main import main
from sqlext.config import METASTORE_RETRY_DEADLINE, SqlextConfig
from sqlext.errors import MetastoreUnavailableError
from tests.support.waiting import free_port


def test_a_refused_first_connection_fails_at_once_naming_the_uri() -> None:
    uri = f"thrift://127.0.0.1:{free_port()}"
    client = MetastoreClient(uri, RetryPolicy(deadline_s=60.0, refused_first_connect_fails=True))

    began = time.monotonic()
    with pytest.raises(MetastoreUnavailableError) as failed:
        client.get_all_databases()

    assert time.monotonic() - began < 5, "it waited for a metastore nothing suggests is starting"
    assert f"Nothing listens at {uri}: the connection to the Hive Metastore was refused" in failed.value.message
    assert "spark.sqlext.metastore.retry.deadline" in failed.value.message


def test_a_connection_refused_after_the_client_had_connected_is_retried_to_the_deadline() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept_one_then_go_away() -> None:
        connection, _ = listener.accept()
        connection.close()  # the call fails with the connection lost; then nothing listens there any more
        listener.close()

    server = threading.Thread(target=accept_one_then_go_away, daemon=True)
    server.start()
    client = MetastoreClient(
        f"thrift://127.0.0.1:{port}", RetryPolicy(deadline_s=1.5, refused_first_connect_fails=True)
    )

    with pytest.raises(MetastoreUnavailableError) as failed:
        client.get_all_databases()
    server.join(5)

    assert "did not answer 'get_all_databases' within 1.5 s" in failed.value.message


def test_a_session_waits_for_the_metastore_only_when_a_deadline_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SQLEXT_CONF", raising=False)

    default = RetryPolicy.configured(SqlextConfig.load({}))
    configured = RetryPolicy.configured(SqlextConfig.load({METASTORE_RETRY_DEADLINE: "5 s"}))

    assert (default.deadline_s, default.refused_first_connect_fails) == (60.0, True)
    assert (configured.deadline_s, configured.refused_first_connect_fails) == (5.0, False)


COMMANDS = [["commits", "db.t"], ["compact", "db.t"], ["expire", "db.t"], ["status", "db.t"]]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_command_given_a_uri_where_nothing_listens_fails_at_once_naming_it(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SQLEXT_CONF", raising=False)
    uri = f"thrift://127.0.0.1:{free_port()}"

    began = time.monotonic()
    code = main([*command, "--metastore-uri", uri])

    assert time.monotonic() - began < 5, "it waited for a metastore nothing suggests is starting"
    assert code == 1
    assert f"sqlext: error: Nothing listens at {uri}: the connection to the Hive Metastore was refused" in (
        capsys.readouterr().err
    )


def test_a_command_waits_for_the_metastore_up_to_a_configured_deadline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SQLEXT_CONF", raising=False)
    uri = f"thrift://127.0.0.1:{free_port()}"

    code = main(["compact", "db.t", "--metastore-uri", uri, "--conf", f"{METASTORE_RETRY_DEADLINE}=1 s"])

    assert code == 1
    assert f"Hive Metastore at {uri} did not answer 'get_table_req' within 1 s" in capsys.readouterr().err
