"""A driver process that writes hourly event files into a sqlext table with one batch-mode insert
(``INSERT INTO``, or ``INSERT OVERWRITE`` with ``--overwrite``), for tests that trace the process.

Usage: python -m tests.support.batch_job METASTORE_URI TABLE_PATH INPUT_DIR OPTIONS_JSON DATABASE [--overwrite]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from sqlext.connectors.filesystem.sink import FileSystemSink
from sqlext.sink import InsertPlan
from tests.support.local_spark import local_session
from tests.support.streams import EVENT_DDL
from tests.support.tables import events_table

QUERY_NAME = "batch_job"


def main(argv: list[str]) -> int:
    metastore_uri, table_path, input_dir, options, database = argv[:5]
    spark = local_session({"spark.hadoop.hive.metastore.uris": metastore_uri})
    table = events_table(database, "events", Path(table_path), **json.loads(options))
    rows = (
        spark.read.schema(EVENT_DDL)
        .parquet(Path(input_dir).as_uri())
        .selectExpr(
            "id", "user_id", "amount", "ts", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr"
        )
    )
    context = SimpleNamespace(
        spark=spark, table=table, catalog=SimpleNamespace(metastore_uri=metastore_uri), config=None
    )
    overwrite = "--overwrite" in argv[5:]
    plan = InsertPlan(QUERY_NAME, Path(table_path, "_checkpoint").as_uri(), overwrite=overwrite)
    FileSystemSink(context).write_batch(rows, plan)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
