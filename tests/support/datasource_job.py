"""A PySpark job that streams hourly event files into a sqlext table through ``format("sqlext")`` (one file
per batch) and exits when the input is consumed: the process the data source crash test kills and reruns.

Usage: python -m tests.support.datasource_job METASTORE_URI TABLE INPUT_DIR CHECKPOINT_DIR
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import sqlext
from sqlext.paths import packaged_conf_dir
from tests.support.streams import hourly_event_stream


def main(argv: list[str]) -> int:
    from pyspark.sql import SparkSession

    metastore_uri, table, input_dir, checkpoint = argv[:4]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    log4j = (packaged_conf_dir() / "log4j2.properties").resolve().as_uri()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sqlext.metastore.uris", metastore_uri)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j}")
        .getOrCreate()
    )
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
