"""Flink itself, as a server for the differential tests. Run with the Flink venv's python (it imports
pyflink, which sqlext's venv does not have); :mod:`tests.support.flink` starts it once per session.

It reads one JSON request a line on stdin and answers each with one line on stdout starting with
``REPLY_MARK`` (Flink and py4j may print other lines). All jobs run in one local mini-cluster JVM (the
py4j gateway PyFlink starts), so only the first request pays for the JVM start.

Requests (``op``):
- ``run``: ``mode`` (``streaming``/``batch``), ``config`` (table config), ``statements`` (DDL first, then
  INSERTs, all INSERTs in one job through a StatementSet), ``wait`` (true: until the job ends; false:
  start it and answer with its ``job`` id).
- ``cancel``: ``job``: cancel a started job and wait until it is gone.
- ``query``: ``mode``, ``config``, ``statements`` (DDL, then a SELECT), ``row_kinds`` (true: each row's kind
  first, as ``+I``/``-U``/``+U``/``-D``): the SELECT's rows.
- ``explain``: ``statements`` (DDL, then one INSERT): plan the INSERT without running it, which makes the
  connector factories validate every option.
- ``extract``: ``pattern``, ``formatter``, ``keys``, ``values``: Flink's ``DefaultPartTimeExtractor``.
- ``partition_path``: ``keys``, ``values``: the partition path Flink's filesystem sink writes for them
  (``PartitionPathUtils.generatePartitionPath``, escaping included).
- ``predicate``: ``options``, ``keys``, ``partition`` (``k=v/k=v``), ``watermark``, ``create_proc``,
  ``current_proc``: Flink's ``PartitionCommitPredicate`` (the partition-time / process-time decision).

Every answer is ``{"ok": ...}`` or ``{"error": "<java class>: <message>"}``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import traceback
from typing import Any

REPLY_MARK = "@@flink-reply@@ "


class Driver:
    def __init__(self) -> None:
        self.jobs: dict[str, Any] = {}
        self._gateway: Any = None
        self._explain_env: Any = None

    @property
    def jvm(self) -> Any:
        if self._gateway is None:
            from pyflink.java_gateway import get_gateway

            self._gateway = get_gateway()
        return self._gateway.jvm

    def table_env(self, mode: str, config: dict[str, str]) -> Any:
        from pyflink.table import EnvironmentSettings, TableEnvironment

        settings = EnvironmentSettings.in_batch_mode() if mode == "batch" else EnvironmentSettings.in_streaming_mode()
        env = TableEnvironment.create(settings)
        for key, value in config.items():
            env.get_config().set(key, value)
        return env

    def op_run(self, request: dict[str, Any]) -> Any:
        env = self.table_env(request.get("mode", "streaming"), request.get("config", {}))
        inserts = []
        for statement in request["statements"]:
            if statement.lstrip().upper().startswith("INSERT"):
                inserts.append(statement)
            else:
                env.execute_sql(statement)
        statement_set = env.create_statement_set()
        for insert in inserts:
            statement_set.add_insert_sql(insert)
        result = statement_set.execute()
        client = result.get_job_client()
        job = str(client.get_job_id())
        if request.get("wait", True):
            result.wait()  # raises if the job failed
        else:
            self.jobs[job] = result
        return {"job": job}

    def op_query(self, request: dict[str, Any]) -> Any:
        """DDL, then a SELECT whose rows are returned, each value tagged by :func:`encode`."""
        env = self.table_env(request.get("mode", "batch"), request.get("config", {}))
        *ddl, query = request["statements"]
        for statement in ddl:
            env.execute_sql(statement)
        kinds = request.get("row_kinds", False)  # each row's kind first (+I, -U, +U, -D)
        with env.execute_sql(query).collect() as results:
            return [
                [*([str(row.get_row_kind())] if kinds else []), *(encode(value) for value in row)] for row in results
            ]

    def op_cancel(self, request: dict[str, Any]) -> Any:
        result = self.jobs.pop(request["job"])
        client = result.get_job_client()
        client.cancel().result()
        with contextlib.suppress(Exception):  # a cancelled job's result ends with an exception
            result.wait()
        return {"job": request["job"]}

    def op_explain(self, request: dict[str, Any]) -> Any:
        # One environment for every explain (creating one costs more than planning): its tables are
        # dropped after each request.
        if self._explain_env is None:
            self._explain_env = self.table_env("streaming", {})
        env = self._explain_env
        *ddl, insert = request["statements"]
        try:
            for statement in ddl:
                env.execute_sql(statement)
            return env.explain_sql(insert) is not None
        finally:
            for table in env.list_tables():
                env.execute_sql(f"DROP TABLE `{table}`")

    def op_extract(self, request: dict[str, Any]) -> Any:
        jvm = self.jvm
        extractor = jvm.org.apache.flink.connector.file.table.DefaultPartTimeExtractor(
            request.get("pattern"), request.get("formatter")
        )
        return str(extractor.extract(self.java_list(request["keys"]), self.java_list(request["values"])))

    def op_partition_path(self, request: dict[str, Any]) -> Any:
        spec = self.jvm.java.util.LinkedHashMap()
        for key, value in zip(request["keys"], request["values"], strict=True):
            spec.put(key, value)
        return str(self.jvm.org.apache.flink.table.utils.PartitionPathUtils.generatePartitionPath(spec))

    def op_predicate(self, request: dict[str, Any]) -> Any:
        jvm = self.jvm
        conf = jvm.org.apache.flink.configuration.Configuration()
        for key, value in request["options"].items():
            conf.setString(key, value)
        stream = jvm.org.apache.flink.connector.file.table.stream
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        predicate = stream.PartitionCommitPredicate.create(conf, loader, self.java_list(request["keys"]))
        context = stream.PartitionCommitPredicate.createPredicateContext(
            request["partition"], request["create_proc"], request["current_proc"], request["watermark"]
        )
        return bool(predicate.isPartitionCommittable(context))

    def java_list(self, items: list[str]) -> Any:
        java_list = self.jvm.java.util.ArrayList()
        for item in items:
            java_list.add(item)
        return java_list

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return {"ok": getattr(self, f"op_{request['op']}")(request)}
        except Exception as exc:
            return {"error": java_message(exc)}


def encode(value: Any) -> Any:
    """A value PyFlink collected, as JSON: scalars as they are, others as ``{"$": kind, "v": ...}``."""
    import base64
    import datetime
    import decimal
    import math

    from pyflink.common import Row

    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if isinstance(value, decimal.Decimal):
        return {"$": "decimal", "v": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"$": "bytes", "v": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime.datetime):
        return {"$": "datetime", "v": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$": "date", "v": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"$": "time", "v": value.isoformat()}
    if isinstance(value, Row):
        return {"$": "row", "v": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"$": "map", "v": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return {"$": "unknown", "v": repr(value)}


def java_message(exc: Exception) -> str:
    """The innermost Java exception's class and message (py4j wraps them), else Python's."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    messages = []
    while java is not None:
        messages.append(f"{java.getClass().getName()}: {java.getMessage()}")
        java = java.getCause()
    return "\n".join(messages)


def main() -> int:
    driver = Driver()
    print(REPLY_MARK + json.dumps({"ok": "ready"}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        started = time.monotonic()
        reply = driver.handle(json.loads(line))
        reply["seconds"] = round(time.monotonic() - started, 2)
        print(REPLY_MARK + json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
