"""A standalone Spark cluster for tests: a master and two workers started from pyspark's own jars
(``bin/spark-class``), on free local ports, with small workers (1 core, 1 GB each); stopped at the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.waiting import free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
WORKERS = 2
#: Per worker; an application's executors take all of it (spark.executor.cores/memory below).
WORKER_CORES, WORKER_MEMORY = 1, "1g"
#: Spark conf an application needs to get one executor on each worker.
EXECUTOR_CONF = {"spark.executor.cores": str(WORKER_CORES), "spark.executor.memory": "512m"}


@dataclass(frozen=True)
class SparkCluster:
    """A running standalone cluster: its master URL and the JSON endpoints of the master and workers."""

    master_url: str
    master_ui: str
    worker_uis: tuple[str, ...]

    def master_state(self) -> dict[str, Any]:
        return _json(f"{self.master_ui}/json")

    def executor_apps_per_worker(self) -> list[set[str]]:
        """For each worker, the ids of the applications it ran (or runs) an executor of."""
        apps = []
        for ui in self.worker_uis:
            state = _json(f"{ui}/json")
            executors = state.get("executors", []) + state.get("finishedexecutors", [])
            apps.append({str(e.get("appid")) for e in executors})
        return apps


def _json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


def _state(url: str) -> dict[str, Any] | None:
    """The JSON state a UI serves at ``url``; None while it is not ready (no answer yet, or, while it starts
    or between two states, an empty or partial body)."""
    try:
        return _json(url)
    except (OSError, ValueError):
        return None


def _alive_workers(cluster: SparkCluster) -> int:
    state = _state(f"{cluster.master_ui}/json") or {}
    return len([w for w in state.get("workers", []) if w.get("state") == "ALIVE"])


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _start(arguments: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(_spark_home() / "bin" / "spark-class"), *arguments],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole, by its id
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """One standalone cluster per test session."""
    home = tmp_path_factory.mktemp("spark-cluster")
    env = {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        # Executors inherit the worker's environment: this interpreter and this checkout of sqlext.
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
        "SPARK_LOG_DIR": str(home / "logs"),
        # No REST submission server: it would take the fixed port 6066.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    master_port, master_ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{master_port}"
    master_ui = f"http://127.0.0.1:{master_ui_port}"
    processes = []
    try:
        master_args = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(master_port)]
        processes.append(_start([*master_args, "--webui-port", str(master_ui_port)], home / "master.log", env))
        wait_for(lambda: _state(f"{master_ui}/json") is not None, 120, 0.5, "the Spark master's web UI")
        worker_uis = []
        for index in range(WORKERS):
            ui_port = free_port()
            work = home / f"worker-{index}"
            work.mkdir()
            arguments = [
                "org.apache.spark.deploy.worker.Worker",
                master_url,
                "--host",
                "127.0.0.1",
                "--webui-port",
                str(ui_port),
                "--cores",
                str(WORKER_CORES),
                "--memory",
                WORKER_MEMORY,
                "--work-dir",
                str(work),
            ]
            processes.append(_start(arguments, home / f"worker-{index}.log", env))
            worker_uis.append(f"http://127.0.0.1:{ui_port}")
        cluster = SparkCluster(master_url, master_ui, tuple(worker_uis))
        wait_for(
            lambda: _alive_workers(cluster) == WORKERS,
            120,
            0.5,
            "both workers to register with the master",
        )
        yield cluster
    finally:
        for process in reversed(processes):
            _stop(process)
