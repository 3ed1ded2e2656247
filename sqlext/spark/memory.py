"""A Spark JVM that ran out of memory, told as such: which setting to raise, and that a rerun resumes.

When the driver's JVM runs out of heap (in local mode the tasks run in it too), Spark's handler of uncaught
errors ends the JVM with exit code 52, and what Python sees next is py4j losing its connection
(``Py4JNetworkError``, ``ConnectionRefusedError``). A JVM that ``sqlext run`` launches ends at once at its first
``OutOfMemoryError`` instead, with exit code 3 (:func:`exit_on_out_of_memory`): before that, a JVM out of heap
could answer py4j for a long while with errors ("... does not exist in the JVM") as it failed to load classes
and shut down, and those, not the message, were a run's last word. An executor that runs out of memory fails
its task with ``java.lang.OutOfMemoryError`` in the error's text. Both are turned into :func:`out_of_memory_message`.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

log = logging.getLogger(__name__)

#: Spark's exit code for an uncaught ``OutOfMemoryError`` (``SparkExitCode.OOM``).
OOM_EXIT_CODE = 52
#: The JVM's exit code when ``-XX:+ExitOnOutOfMemoryError`` ends it.
EXIT_ON_OOM_CODE = 3
EXIT_ON_OOM_OPTION = "-XX:+ExitOnOutOfMemoryError"
#: The driver JVM options spark-submit adds for the JVM it launches (besides ``spark.driver.*JavaOptions``).
SUBMIT_OPTS_ENV = "SPARK_SUBMIT_OPTS"
#: How long a lost connection waits for the JVM's exit code before it is taken for a bridge failure.
JVM_EXIT_WAIT_S = 60.0
_OOM_TEXTS = ("java.lang.OutOfMemoryError", "OutOfMemoryError: Java heap space")


def out_of_memory_message(where: str) -> str:
    """What to tell a user whose run ran out of memory in ``where`` ("the driver", "an executor")."""
    return (
        f"Spark ran out of memory in {where} (java.lang.OutOfMemoryError). Give it more: set "
        "spark.driver.memory (local mode runs the tasks in the driver's JVM too; e.g. --conf "
        "spark.driver.memory=4g) or spark.executor.memory for executors on a cluster. Then run again: "
        "committed batches stay committed, and each insert resumes at the batch that failed."
    )


def exit_on_out_of_memory() -> None:
    """Make the Spark JVM this process launches from now on end at its first ``OutOfMemoryError``.

    Through ``SPARK_SUBMIT_OPTS``, added to what it holds: the user's ``spark.driver.extraJavaOptions`` (and
    those of ``spark-defaults.conf``) stay as they are. The commit protocol makes an end at any point safe."""
    current = os.environ.get(SUBMIT_OPTS_ENV, "")
    if EXIT_ON_OOM_OPTION not in current.split():
        os.environ[SUBMIT_OPTS_ENV] = f"{current} {EXIT_ON_OOM_OPTION}".strip()


def mentions_out_of_memory(text: str) -> bool:
    """Whether an error's text is a JVM's ``OutOfMemoryError``."""
    return any(marker in text for marker in _OOM_TEXTS)


def jvm_process() -> Any:
    """The process of the JVM this process launched for Spark (``subprocess.Popen``), or None (none, or not ours)."""
    from pyspark import SparkContext

    return getattr(getattr(SparkContext, "_gateway", None), "proc", None)


def jvm_exit_code() -> int | None:
    """The exit code of the JVM this process launched for Spark, once it ended (None: running, or not ours)."""
    proc = jvm_process()
    if proc is None:
        return None
    try:
        code = proc.poll()
        if code is None:
            # The connection broke as the JVM was going down: its shutdown hooks (stopping Spark, removing its
            # temp dirs) can take well over 5 s on a loaded machine (CI, 11/26).
            code = proc.wait(timeout=JVM_EXIT_WAIT_S)
    except Exception:
        return None
    return int(code) if code is not None else None


def is_connection_loss(exc: BaseException) -> bool:
    """Whether ``exc`` is py4j losing the JVM (as opposed to an error the JVM reported)."""
    from py4j.protocol import Py4JError, Py4JJavaError

    if isinstance(exc, ConnectionError) or "Answer from Java side is empty" in str(exc):
        return True
    # Any py4j error other than a Java exception is the bridge failing, not the JVM reporting: as the JVM dies
    # of OOM, calls were seen to fail as "An error occurred while calling ..." and as "py4j.reflection.TypeUtil
    # .isInstanceOf does not exist in the JVM" (CI, 11/25 and 11/26). The caller then waits for the exit code.
    return isinstance(exc, Py4JError) and not isinstance(exc, Py4JJavaError)


def explain(exc: BaseException) -> str | None:
    """The out-of-memory message for ``exc``, when it is one (the JVM ended with Spark's OOM exit code, or an
    error says ``OutOfMemoryError``); else None."""
    if mentions_out_of_memory(str(exc)):
        return out_of_memory_message("an executor" if "executor" in str(exc).lower() else "the driver")
    if is_connection_loss(exc) or jvm_ended():
        code = jvm_exit_code()
        if code in (OOM_EXIT_CODE, EXIT_ON_OOM_CODE):
            return out_of_memory_message("the driver")
        if code is not None:
            return f"Spark's JVM ended with exit code {code} (its log above says why)."
    return None


def jvm_ended() -> bool:
    """Whether the JVM this process launched for Spark has ended."""
    proc = jvm_process()
    return proc is not None and proc.poll() is not None


def quiet_threads_once_the_jvm_ended() -> None:
    """Threads still talking to a JVM that ended fail with py4j errors; their tracebacks, printed after the
    message that says why the JVM ended, would bury it. From now on, a thread that fails once the JVM has
    ended is only logged at debug, and py4j's own log records are dropped once it has; before that, threads
    fail and py4j logs as they always do."""
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        # A bridge failure comes a moment before the JVM's exit: wait for it rather than print a traceback.
        lost = args.exc_value is not None and is_connection_loss(args.exc_value)
        if jvm_ended() or (lost and jvm_exit_code() is not None):
            log.debug("thread %s failed after Spark's JVM ended: %r", getattr(args.thread, "name", "?"), args.exc_value)
            return
        previous(args)

    threading.excepthook = hook
    # py4j logs, rather than raises, what fails in its own threads: a foreachBatch call that the ended JVM
    # broke is logged with its traceback by the callback server, after the message.
    quiet = _Py4jAfterTheJvmEnded()
    for name in ("", "py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(name).addFilter(quiet)


class _Py4jAfterTheJvmEnded(logging.Filter):
    """Drops py4j's own log records once the JVM has ended (they are about the connection it left)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from_py4j = record.name.startswith("py4j") or f"{os.sep}py4j{os.sep}" in record.pathname
        return not (from_py4j and jvm_ended())
