"""A Spark Connect client: registers ``format("sqlext")`` twice on its session, then streams hourly event
files into a sqlext table through it and exits when the input is consumed.

Usage: python -m tests.support.connect_job sc://HOST:PORT TABLE INPUT_DIR CHECKPOINT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import sqlext
from tests.support.streams import hourly_event_stream


def main(argv: list[str]) -> int:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    url, table, input_dir, checkpoint = argv[:4]
    spark = SparkSession.builder.remote(url).getOrCreate()
    if not isinstance(spark, ConnectSession):
        print(f"not a Spark Connect session: {type(spark)}", file=sys.stderr)
        return 2
    sqlext.register(spark)
    sqlext.register(spark)  # a second call (e.g. a pipeline file run again) must change nothing
    query = (
        hourly_event_stream(spark, Path(input_dir), None)
        .writeStream.format("sqlext")
        .option("table", table)
        .option("checkpointLocation", Path(checkpoint).as_uri())
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    failure = query.exception()
    if failure is not None:
        print(f"query failed: {failure}", file=sys.stderr)
        return 1
    print(f"connect session {spark.session_id} wrote through format('sqlext')")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
