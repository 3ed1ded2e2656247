"""Flink itself as the reference implementation: a session fixture that runs Flink SQL in Flink.

``make flink-venv`` installs PyPI's ``apache-flink`` into ``.venv-flink`` (its own venv: it pins
pyarrow and pandas). The ``flink`` fixture starts :mod:`tests.support.flink_driver` once per session with
that venv's python; every request (run a job, explain a statement, call Flink's partition-time extractor
or commit predicate) goes to that one process, so the JVM starts once. A test that needs Flink skips,
with the reason, only when Java or the wheel could not be installed.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support.flink_driver import REPLY_MARK
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
FLINK_VENV = Path(os.environ.get("SQLEXT_FLINK_VENV", ROOT / ".venv-flink"))
DRIVER = Path(__file__).with_name("flink_driver.py")
#: The first request starts the JVM and loads the planner (about 30 s here); jobs take seconds after that.
REQUEST_TIMEOUT_S = 300.0


#: Flink's avro format for SQL, one jar (Avro shaded in); not in the apache-flink wheel.
FLINK_AVRO = "org.apache.flink:flink-sql-avro:2.3.0"


def flink_avro_jar() -> Path:
    """``flink-sql-avro``, fetched once (``sqlext.runtime.jars``): for a job's ``pipeline.jars``."""
    from sqlext.runtime import jars

    [jar] = jars.fetch("flink-sql-avro", [FLINK_AVRO], transitive=False).glob("flink-sql-avro-*.jar")
    return jar


class FlinkError(Exception):
    """Flink refused a statement or a job failed: the message is Flink's (innermost Java cause last)."""


class Flink:
    """A running Flink driver process; see :mod:`tests.support.flink_driver` for the requests."""

    def __init__(self, process: subprocess.Popen[str], log: Path) -> None:
        self.process = process
        self.log = log
        self.parallelism = os.cpu_count() or 1
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()
        self._lock = threading.Lock()
        self._expect_reply()  # "ready"

    def _read(self, stdout: IO[str]) -> None:
        with self.log.open("a") as log:
            for line in stdout:
                if line.startswith(REPLY_MARK):
                    self._replies.put(json.loads(line[len(REPLY_MARK) :]))
                else:
                    log.write(line)
        self._replies.put(None)

    def _expect_reply(self) -> dict[str, Any]:
        try:
            reply = self._replies.get(timeout=REQUEST_TIMEOUT_S)
        except queue.Empty:
            raise AssertionError(f"Flink did not answer within {REQUEST_TIMEOUT_S:g} s; see {self.log}") from None
        if reply is None:
            raise AssertionError(f"the Flink driver exited ({self.process.poll()}); see {self.log}")
        return reply

    def request(self, op: str, **fields: Any) -> Any:
        """Send one request and return its ``ok`` value; raise :class:`FlinkError` with Flink's message."""
        with self._lock:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self.process.stdin.flush()
            reply = self._expect_reply()
        if "error" in reply:
            raise FlinkError(reply["error"])
        return reply["ok"]

    def config(self, **extra: str) -> dict[str, str]:
        """Table config for a job: parallelism = cores, no restarts (a failure fails the job)."""
        return {"parallelism.default": str(self.parallelism), "restart-strategy.type": "none", **extra}

    def run(self, statements: list[str], mode: str = "streaming", **config: str) -> str:
        """Run DDL then every INSERT of ``statements`` as one job, until it ends; its job id."""
        reply = self.request("run", mode=mode, config=self.config(**config), statements=statements, wait=True)
        return str(reply["job"])

    def start(self, statements: list[str], mode: str = "streaming", **config: str) -> str:
        """Start the INSERTs of ``statements`` as one job and return its id (stop it with :meth:`cancel`)."""
        reply = self.request("run", mode=mode, config=self.config(**config), statements=statements, wait=False)
        return str(reply["job"])

    def query(
        self, statements: list[str], mode: str = "batch", row_kinds: bool = False, **config: str
    ) -> list[list[Any]]:
        """Run DDL then a SELECT (the last statement) and return its rows as Python values (``row_kinds``: each
        row's kind first, ``+I``, ``-U``, ``+U`` or ``-D``)."""
        reply = self.request(
            "query", mode=mode, config=self.config(**config), statements=statements, row_kinds=row_kinds
        )
        return [[decode(value) for value in row] for row in reply]

    def cancel(self, job: str) -> None:
        self.request("cancel", job=job)

    def explain(self, statements: list[str]) -> str | None:
        """Plan the last statement (an INSERT) after the DDL before it: None if Flink accepts it, else
        Flink's message. Planning an INSERT validates every option of its source and sink."""
        try:
            self.request("explain", statements=statements)
        except FlinkError as exc:
            return str(exc)
        return None

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def decode(value: Any) -> Any:
    """A value :func:`tests.support.flink_driver.encode` tagged, back in Python form (ROW as a tuple)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind, raw = value["$"], value["v"]
    decoders = {
        "float": float,
        "decimal": Decimal,
        "bytes": base64.b64decode,
        "datetime": datetime.fromisoformat,
        "date": date.fromisoformat,
        "time": lambda text: time.fromisoformat(text).isoformat(),  # sqlext keeps TIME as its text
        "row": lambda items: tuple(decode(v) for v in items),
        "map": lambda pairs: {decode(k): decode(v) for k, v in pairs},
    }
    if kind not in decoders:
        raise AssertionError(f"Flink returned a value the driver cannot encode: {raw}")
    return decoders[kind](raw)


def flink_unavailable() -> str | None:
    """Why Flink cannot run here, or None."""
    if shutil.which("java") is None:
        return "Flink needs Java on PATH"
    failed = FLINK_VENV / ".failed"
    if failed.is_file():
        return f"apache-flink could not be installed (make flink-venv): {failed.read_text().strip()}"
    if not (FLINK_VENV / ".installed").is_file():
        return f"no Flink venv at {FLINK_VENV}: run `make flink-venv` (make test does)"
    return None


@pytest.fixture(scope="session")
def flink(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flink]:
    """Flink (PyFlink's local mini-cluster) in a driver process of its own, for the whole session."""
    reason = flink_unavailable()
    if reason:
        pytest.skip(reason)
    home = tmp_path_factory.mktemp("flink")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYSPARK", "SPARK"))}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [str(FLINK_VENV / "bin" / "python"), "-u", str(DRIVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=home,
        env=env,
    )
    flink = Flink(process, home / "driver.log")
    yield flink
    flink.close()


def completed_checkpoints(directory: Path) -> int:
    """The highest completed checkpoint number under a job's checkpoint dir (0: none yet)."""
    done = [int(p.parent.name[4:]) for p in directory.glob("*/chk-*/_metadata")]
    return max(done, default=0)


def wait_for_checkpoints(directory: Path, count: int, after: int, timeout_s: float = 120) -> int:
    """Wait until checkpoint ``after + count`` has completed; returns the latest completed one."""
    return wait_for(
        lambda: (n := completed_checkpoints(directory)) >= after + count and n,
        timeout_s,
        what=f"Flink checkpoint {after + count} in {directory}",
    )
