"""Which errors count as py4j losing the JVM (then the run waits for its exit code to say why), and which are
errors the JVM reported."""

from __future__ import annotations

import logging
import os

import pytest
from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError

from sqlext.spark import memory
from sqlext.spark.memory import is_connection_loss, mentions_out_of_memory
from sqlext.spark.runner import stop_unless_gone


@pytest.mark.parametrize(
    "error",
    [
        Py4JNetworkError("Answer from Java side is empty"),
        ConnectionRefusedError(111, "Connection refused"),
        Py4JError("An error occurred while calling o123.getCause"),
        Py4JError("py4j.reflection.TypeUtil.isInstanceOf does not exist in the JVM"),
        Py4JError("py4j.reflection does not exist in the JVM"),
    ],
)
def test_bridge_failures_count_as_the_jvm_going_away(error: BaseException) -> None:
    assert is_connection_loss(error)


def test_an_error_the_jvm_reported_or_a_plain_python_error_is_not_a_connection_loss() -> None:
    class Reported(Py4JJavaError):
        def __str__(self) -> str:  # py4j's asks the JVM for the Java stack trace
            return "An error occurred while calling o1.start: java.lang.IllegalStateException: boom"

    reported = Reported.__new__(Reported)  # its constructor wants a live Java object

    assert not is_connection_loss(reported)
    assert not is_connection_loss(ValueError("bad value"))


def test_out_of_memory_texts_are_recognised() -> None:
    assert mentions_out_of_memory("Job aborted: java.lang.OutOfMemoryError: Java heap space")
    assert not mentions_out_of_memory("java.io.FileNotFoundException: /x")


class _Session:
    """A session whose ``stop`` fails with ``error`` (as one does on a JVM that is going away)."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error
        self.stop_calls = 0

    def stop(self) -> None:
        self.stop_calls += 1
        if self.error is not None:
            raise self.error


def test_stopping_a_session_whose_jvm_is_going_away_raises_nothing() -> None:
    # 11/26, on a loaded machine: the last line of a run out of memory was once this error's traceback, where
    # the message that says what to set was expected; a stop in the run's `finally` on the dying JVM raises it.
    session = _Session(Py4JError("py4j.reflection does not exist in the JVM"))

    stop_unless_gone(session)

    assert session.stop_calls == 1


def test_a_stop_that_fails_otherwise_still_raises() -> None:
    session = _Session(ValueError("bad value"))

    with pytest.raises(ValueError, match="bad value"):
        stop_unless_gone(session)
    assert session.stop_calls == 1


def test_the_jvm_a_run_launches_ends_at_its_first_out_of_memory_error_keeping_other_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(memory.SUBMIT_OPTS_ENV, "-Dsome.user=option")

    memory.exit_on_out_of_memory()
    memory.exit_on_out_of_memory()

    assert os.environ[memory.SUBMIT_OPTS_ENV] == "-Dsome.user=option -XX:+ExitOnOutOfMemoryError"


def test_py4j_log_records_are_dropped_only_once_the_jvm_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    ended = False
    monkeypatch.setattr(memory, "jvm_ended", lambda: ended)
    quiet = memory._Py4jAfterTheJvmEnded()

    def record(name: str, path: str) -> logging.LogRecord:
        return logging.LogRecord(name, logging.ERROR, path, 1, "Exception while sending command.", None, None)

    from_py4j = record("py4j.clientserver", "/venv/site-packages/py4j/clientserver.py")
    through_root = record("root", "/venv/site-packages/py4j/java_gateway.py")
    ours = record("sqlext.commit", "/repo/sqlext/commit.py")

    assert quiet.filter(from_py4j) and quiet.filter(through_root) and quiet.filter(ours)
    ended = True
    assert not quiet.filter(from_py4j) and not quiet.filter(through_root)
    assert quiet.filter(ours)
