"""A PySpark job that streams hourly event files into a sqlext table through ``format("sqlext")`` (one file
per batch) and exits when the input is consumed: the process the data source crash test kills and reruns.

Usage: python -m tests.support.datasource_job METASTORE_URI TABLE INPUT_DIR CHECKPOINT_DIR [KEY=VALUE ...]
(the KEY=VALUE pairs: more session conf, e.g. a kerberized metastore's keys)
"""

from __future__ import annotations

import sys
from pathlib import Path

import sqlext
from tests.support.local_spark import local_session
from tests.support.streams import hourly_event_stream


def main(argv: list[str]) -> int:
    metastore_uri, table, input_dir, checkpoint = argv[:4]
    extra = dict(pair.split("=", 1) for pair in argv[4:])
    spark = local_session({"spark.sqlext.metastore.uris": metastore_uri, **extra}, hive=False)
    sqlext.register(spark)
    query = (
        hourly_event_stream(spark, Path(input_dir), None)
        .writeStream.format("sqlext")
        .option("table", table)
        .option("checkpointLocation", Path(checkpoint).as_uri())
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    except Exception as exc:  # the query failed: report it as the job's failure
        print(f"query failed: {exc}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
