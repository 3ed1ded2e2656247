"""The test servers' processes (Kafka broker, S3 server, HDFS mini cluster): started with their output in a
log, waited on until they answer, stopped gently and then firmly."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.support.waiting import wait_for


def start_daemon(
    command: Sequence[str],
    log: Path,
    ready: Callable[[], object],
    what: str,
    timeout_s: float,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``command`` with its output appended to ``log`` and wait until ``ready()`` is true; fail with the
    log's tail if the process exits first. A process that does not get ready is stopped before the failure
    is raised (nothing is left running for a fixture that never got its handle)."""
    with log.open("ab") as out:
        process = subprocess.Popen(list(command), stdout=out, stderr=out, cwd=cwd)
    try:
        wait_for(lambda: process.poll() is not None or ready(), timeout_s, what=f"{what} to answer")
    except BaseException:
        stop_daemon(process)
        raise
    exited = process.poll()
    assert exited is None, f"{what} exited with {exited}: {log.read_text(errors='replace')[-3000:]}"
    return process


def stop_daemon(process: subprocess.Popen[bytes] | None, grace_s: float = 30) -> None:
    """SIGTERM, then SIGKILL if the process has not ended after ``grace_s``; nothing if it already ended."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
