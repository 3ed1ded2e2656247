"""A driver process that streams hourly event files into a sqlext table and exits when the input is
consumed: the process crash tests kill (fault points) and restart.

Usage: python -m tests.support.sink_job METASTORE_URI TABLE_PATH INPUT_DIR CHECKPOINT_DIR [OPTIONS_JSON [DATABASE]]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from sqlext.connectors.filesystem.sink import FileSystemSink, running_insert
from sqlext.io.fs import backend_name
from sqlext.sink import InsertPlan
from tests.support.local_spark import local_session
from tests.support.streams import hourly_event_stream
from tests.support.tables import events_table

QUERY_NAME = "crash_job"


def main(argv: list[str]) -> int:
    metastore_uri, table_path, input_dir, checkpoint = argv[:4]
    options = json.loads(argv[4]) if len(argv) > 4 else {}
    spark = local_session({"spark.hadoop.hive.metastore.uris": metastore_uri})
    # What the crash tests assert on: which filesystem implementation the commit path runs on (SQLEXT_FS).
    print(f"commit path filesystem: {backend_name(Path(table_path).as_uri())}", file=sys.stderr, flush=True)
    database = argv[5] if len(argv) > 5 else "crash_db"
    table = events_table(database, "events", Path(table_path), **options)
    rows = hourly_event_stream(spark, Path(input_dir), "0 seconds")
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore_uri), config=None
    )
    plan = InsertPlan(QUERY_NAME, Path(checkpoint).as_uri(), available_now=True)
    query = FileSystemSink(context).start_stream(rows, plan)
    running = running_insert(str(query.id))
    assert running is not None
    running.wait()
    failure = query.exception()
    spark.stop()
    if failure is not None:
        print(f"query failed: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
