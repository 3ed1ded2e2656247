"""A Spark Declarative Pipelines flow into a sqlext table: partitions committed into the HMS.

SDP hands this file a Spark Connect session as ``spark``. ``sqlext.register`` makes ``format("sqlext")``
available on it; the sink's table and its partition commit come from the sqlext DDL in setup.sql.
"""

from pyspark import pipelines as dp

import sqlext

spark = globals()["spark"]  # provided by spark-pipelines
sqlext.register(spark)

INPUT = spark.conf.get("spark.sqlext.example.input", "file:///tmp/sqlext-sdp/input")

dp.create_sink("events_sink", format="sqlext", options={"table": "sdp_demo.events"})


@dp.append_flow(target="events_sink")
def events():
    return (
        spark.readStream.schema("id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP")
        .parquet(INPUT)
        .selectExpr(
            "id", "user_id", "amount", "ts", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr"
        )
    )
