"""A Spark Declarative Pipelines definition for tests/io/test_store_paths.py: the hourly input streamed through
one ``format("sqlext")`` sink per table of ``spark.sqlext.test.tables`` (comma-separated, ``db.table``; the
input: ``spark.sqlext.test.input``; both in the pipeline spec's ``configuration``), so one
``spark-pipelines run`` writes a table on S3 and one on HDFS. Copied into the pipeline's ``transformations/``;
``spark-pipelines`` hands it a Spark Connect session as ``spark``, as in examples/sdp.
"""

from typing import Any

from pyspark import pipelines as dp

import sqlext

spark: Any = globals()["spark"]
sqlext.register(spark)

INPUT = spark.conf.get("spark.sqlext.test.input")
TABLES = spark.conf.get("spark.sqlext.test.tables").split(",")


def add_flow(table: str) -> None:
    """A sink into ``table`` and the flow of the input into it."""
    name = table.replace(".", "_")
    dp.create_sink(f"{name}_sink", format="sqlext", options={"table": table})

    @dp.append_flow(target=f"{name}_sink", name=f"{name}_flow")
    def events() -> Any:
        return (
            spark.readStream.schema("id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP")
            .parquet(INPUT)
            .selectExpr(
                "id", "user_id", "amount", "ts", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr"
            )
        )


for each in TABLES:
    add_flow(each)
