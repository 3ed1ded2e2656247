"""One Flink SQL job as Flink's users run it on one machine: ``python flink_job.py statements.json``
with the Flink venv's python (it imports pyflink, which sqlext's venv does not have; nothing here imports
sqlext). PyFlink starts a local mini-cluster in its own JVM; the table config comes from the file.

The file holds ``{"mode": "streaming"|"batch", "config": {...}, "statements": [...]}``: DDL first, then
INSERTs, all INSERTs in one job (a StatementSet). The process ends when the job has ended (a bounded
source's end ends it); a failed job exits non-zero with Flink's message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    request = json.loads(Path(path).read_text())
    batch = request["mode"] == "batch"
    settings = EnvironmentSettings.in_batch_mode() if batch else EnvironmentSettings.in_streaming_mode()
    env = TableEnvironment.create(settings)
    for key, value in request["config"].items():
        env.get_config().set(key, value)
    statements = env.create_statement_set()
    for statement in request["statements"]:
        if statement.lstrip().upper().startswith("INSERT"):
            statements.add_insert_sql(statement)
        else:
            env.execute_sql(statement)
    statements.execute().wait()


if __name__ == "__main__":
    main(sys.argv[1])
