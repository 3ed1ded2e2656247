"""``sqlext run FILE.sql``: run a SQL file like Flink's ``sql-client -f``, and the spark-submit driver.

Statements run in order on an extended session; ``SET`` lines apply to what follows. Streaming inserts
are started, then waited for: the command ends when they end (bounded inputs) or on Ctrl-C / SIGTERM,
which stops them cleanly (Spark finishes the batch being committed before the query stops). Each insert
has a stable name (from its sink table, or ``SET 'pipeline.name'``) that names its checkpoint under the
checkpoint root, so running the same file again resumes the inserts where they stopped (each only its
own checkpoint, see :mod:`sqlext.jobs.checkpoint`; ``--fresh`` starts them over). A failing
statement stops the run with exit code 1 and is named with its line; the inserts started before it are stopped
as on SIGTERM, so that the session is never stopped under a running query.
"""

from __future__ import annotations

import logging
import re
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from sqlext.errors import SqlextError
from sqlext.runtime.console import quiet_third_party_warnings, setup_command_logging
from sqlext.spark import memory
from sqlext.spark.driver_start import start_driver

log = logging.getLogger("sqlext.run")
#: What a run's statements import, imported while the driver JVM starts (pyspark.testing.utils: pandas, which
#: pyspark 4's ``functions.lit`` imports at its first call).
RUN_MODULES = (
    "sqlext.spark.session",
    "sqlext.catalog.hms",
    "sqlext.metrics",
    "sqlext.jobs.insert",
    "sqlext.connectors.filesystem.csv_records_jvm",
    "pyspark.sql.functions",
    "pyspark.testing.utils",
)
WAIT_SLICE_S = 1
#: Spark's error for a file it cannot read (corrupt, truncated, another format, a column of another type).
_UNREADABLE_FILE = re.compile(
    r"\[(?P<error>FAILED_READ_FILE[A-Z_.]*)\] Encountered error while reading file (?P<file>\S+?)\.?\s"
)


def brief(statement: str) -> str:
    """A statement as an error names it: its lines joined into one, comment lines left out, cut with ``...`` at
    100 characters (its first line alone, ``... WITH (``, read as an empty ``WITH ()`` once the message closed
    its own parenthesis after it)."""
    lines = (line.strip() for line in statement.splitlines())
    text = " ".join(line for line in lines if line and not line.startswith("--"))
    return text if len(text) <= 100 else text[:97] + "..."


def _line_of(text: str, statement: str) -> int:
    index = text.find(statement)
    return text.count("\n", 0, index) + 1 if index >= 0 else 0


def _columns_and_rows(result: Any) -> tuple[list[str], Sequence[Sequence[Any]]]:
    """A statement's columns and rows: a sqlext result's as they are, a Spark DataFrame's collected."""
    from sqlext.frames import StatementResult

    if isinstance(result, StatementResult):
        return result.columns, result.rows
    return result.columns, result.collect()


def _show(columns: list[str], rows: Sequence[Sequence[Any]]) -> None:
    if not rows:
        return
    print(" | ".join(columns))
    for row in rows:
        print(" | ".join("" if value is None else str(value) for value in row))


def run_script(text: str, conf: Mapping[str, str], source: str = "<script>") -> int:
    """Run a script's statements; wait for the streaming inserts it starts. Returns the exit code."""
    setup_command_logging()
    memory.exit_on_out_of_memory()
    start_driver(conf, meanwhile=RUN_MODULES)  # the statements' imports while the JVM starts, not before it
    from sqlext.spark.session import spark_session
    from sqlext.sql.parser import split_statements

    # The commands after a run (sqlext commits, the next run) use the embedded metastore it may start: kept.
    spark = spark_session(app_name=f"sqlext run {source}", conf=dict(conf), keep_metastore=True)
    spark.sparkContext.setLogLevel("ERROR")
    session = spark._sqlext_session  # type: ignore[attr-defined]
    memory.quiet_threads_once_the_jvm_ended()
    started: list[str] = []
    try:
        for number, statement in enumerate(split_statements(text), start=1):
            where = f"{source}:{_line_of(text, statement)} (statement {number}: {brief(statement)})"
            try:
                result = session.run(statement)
            except SqlextError as exc:
                explained = memory.explain(exc.__cause__) if exc.__cause__ is not None else None
                if explained:
                    return _last_word(f"sqlext: error in {where}:\n{explained}")
                print(f"sqlext: error in {where}:\n{exc.message}", file=sys.stderr)
                return stop_after_failed_statement(spark, started)
            except Exception as exc:  # Spark's own errors for statements passed through
                explained = memory.explain(exc)
                if explained is not None:
                    return _last_word(f"sqlext: error in {where}:\n{explained}")
                print(f"sqlext: error in {where}:\n{exc}", file=sys.stderr)
                gone = memory.is_connection_loss(exc)  # no query left to stop
                return 1 if gone else stop_after_failed_statement(spark, started)
            columns, rows = _columns_and_rows(result)
            if "job_id" in columns:
                job = dict(zip(columns, rows[0], strict=True))
                started.append(job["job_id"])
                print(f"started {job['job_name']} (job id {job['job_id']}) writing {job['sink']}", flush=True)
            else:
                _show(columns, rows)
        return wait_for_inserts(spark, started)
    except Exception as exc:  # the JVM gone (py4j lost it): say why, when it ran out of memory
        explained = memory.explain(exc)
        if explained is None:
            raise
        _let_inserts_end(started)  # their own last log lines come first: this says what to do
        return _last_word(f"sqlext: {explained}")
    finally:
        stop_unless_gone(spark)


def _last_word(text: str) -> int:
    """Print why the run ends, its JVM gone (out of memory), as the run's last line; exit code 1. Nothing is
    logged after it: the threads still running (py4j's callback server, a commit that needed the JVM) would only
    log the lost connection, under the line that says what to set."""
    logging.disable(logging.CRITICAL)
    print(text, file=sys.stderr, flush=True)
    return 1


def stop_unless_gone(spark: Any) -> None:
    """Stop the session, unless its JVM ended or is ending: a JVM that ran out of memory may still be shutting
    down when the run has said so, and stopping it then fails on the bridge (a py4j error that would print
    a traceback under the message that says what to set)."""
    if memory.jvm_ended():
        return
    try:
        spark.stop()
    except Exception as exc:
        if not memory.is_connection_loss(exc):
            raise
        log.debug("the session was not stopped: its JVM is going away (%s)", exc)


def stop_after_failed_statement(spark: Any, job_ids: list[str]) -> int:
    """A statement failed: the file's remaining statements do not run (as Flink's ``sql-client -f`` stops at its
    first error), and the inserts it started are stopped as SIGTERM stops them, once their batch in progress is
    committed (Flink's jobs run on in the cluster; these run in this process, which ends). Exit code 1."""
    if job_ids:
        print(
            f"sqlext: stopping the {len(job_ids)} insert(s) started before the failed statement, each after its "
            "batch in progress; what they committed stays committed, and running the file again resumes them",
            file=sys.stderr,
        )
        wait_for_inserts(spark, job_ids, stop_now=True)
    return 1


def wait_for_inserts(spark: Any, job_ids: list[str], *, stop_now: bool = False) -> int:
    """Wait until every started insert ended; SIGTERM/SIGINT (or ``stop_now``) stop them cleanly. Exit code
    0 or 1."""
    from sqlext.connectors.filesystem.sink import query_ended, running_insert

    stop = threading.Event()
    if stop_now:
        stop.set()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        print(f"sqlext: {signal.Signals(signum).name} received, stopping {len(job_ids)} insert(s)", file=sys.stderr)
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    failed = False
    try:
        for job_id in job_ids:
            running = running_insert(job_id)
            # spark.streams forgets a query once it ended: one that failed fast is only known to its insert.
            query = running.query if running is not None else spark.streams.get(job_id)
            while query is not None and not stop.is_set():
                if query_ended(query, WAIT_SLICE_S):
                    break
            if stop.is_set() and query is not None:
                for other in job_ids:
                    handle = running_insert(other)
                    if handle is not None:
                        handle.stop()  # waits for the batch being committed to finish
            commit_failure = _commit_failure(running) if running is not None else None
            if query is not None and (query.exception() is not None or commit_failure is not None):
                failure = str(query.exception() or commit_failure)
                print(f"sqlext: insert {query.name} failed: {failure}{failure_hint(failure)}", file=sys.stderr)
                failed = True
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _release_checkpoints(job_ids)
    return 1 if failed else 0


def _commit_failure(running: Any) -> Exception | None:
    """Wait for the insert's last commits; the error of one that failed after its query's last batch (a
    background commit, the end of input), reported as the insert's failure like a failed batch."""
    try:
        running.wait()
    except Exception as exc:
        return exc
    return None


def _let_inserts_end(job_ids: list[str], timeout_s: float = 30) -> None:
    """Wait a little for the inserts' watcher threads to end (they log their own failure as they end)."""
    from sqlext.connectors.filesystem.sink import running_insert

    for job_id in job_ids:
        running = running_insert(job_id)
        if running is not None:
            running.finished.wait(timeout_s)


def _release_checkpoints(job_ids: list[str]) -> None:
    """The run ends: give up the checkpoints' leases now rather than leave them to expire."""
    from sqlext.jobs.checkpoint import started_checkpoint

    for job_id in job_ids:
        prepared = started_checkpoint(job_id)
        if prepared is not None:
            prepared.lease.release()


def failure_hint(failure: str) -> str:
    """What to do about a failed insert, when its error says (empty when sqlext has nothing to add)."""
    if memory.mentions_out_of_memory(failure):
        return f"\nsqlext: {memory.explain(RuntimeError(failure))}"
    unreadable = _UNREADABLE_FILE.search(failure)
    if unreadable:
        return (
            f"\nsqlext: source file {unreadable.group('file')} could not be read ({unreadable.group('error')}). "
            "Replace it with a readable file, or skip such files with ALTER TABLE <source> SET "
            "('source.ignore-corrupt-files' = 'true'); then run again: the insert resumes at the batch that "
            "failed, and nothing of that batch was committed."
        )
    from sqlext.registry import explain_query_failure

    explained = explain_query_failure(failure)
    return f"\nsqlext: {explained}" if explained else ""


def run_file(path: str | Path, conf: Mapping[str, str]) -> int:
    file = Path(path)
    if not file.is_file():
        print(f"sqlext: no such SQL file: {file}", file=sys.stderr)
        return 2
    return run_script(file.read_text(), conf, str(file))


def submit_main() -> None:
    """Entry point of the spark-submit driver: ``spark-submit [--conf spark.sqlext.*=...] DRIVER FILE.sql``."""
    if len(sys.argv) != 2:
        print("usage: spark-submit [--conf spark.sqlext.key=value ...] <sqlext driver> FILE.sql", file=sys.stderr)
        sys.exit(2)
    quiet_third_party_warnings()
    sys.exit(run_file(sys.argv[1], {}))
