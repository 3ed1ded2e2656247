"""Statement results (none for DDL, as Spark's; ``DESCRIBE`` rows; a started insert's id), and DataFrames of
them that cost no Spark job.

A sqlext statement's result is a :class:`StatementResult`: rows in Python. ``spark.sql`` makes it a
DataFrame; ``sqlext run`` prints it and the HiveServer2 gateway sends it as it is, without building one
(the JVM round trips of a first DataFrame and its ``collect`` were a second of each run's start-up).

``spark.createDataFrame(list_of_tuples)`` builds its rows from an RDD, so reading them back (``collect``, as
``sqlext run`` does to print each result) runs a Spark job: on a 2-core machine under load, the first job
of a process took 26 s, which ``sqlext run`` paid for its first DDL statement. A frame built on the JVM from
a list of rows is a ``LocalRelation``: Spark reads it back on the driver without a job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def local_frame(spark: SparkSession, schema: str, rows: Sequence[tuple[Any, ...]]) -> DataFrame:
    """A DataFrame of ``rows`` (values: ``str``, ``int``, ``bool`` or ``None``) with the DDL ``schema``,
    read back without a Spark job."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    struct = StructType.fromDDL(schema) if schema else StructType([])
    assert isinstance(struct, StructType)
    session = getattr(spark, "_jsparkSession", None)
    if session is None:  # not a classic session with a JVM at hand (Spark Connect): Spark's own way
        return spark.createDataFrame(list(rows), struct)
    jvm = spark._jvm
    assert jvm is not None
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    java_rows = jvm.java.util.ArrayList()
    for row in rows:
        values = gateway.new_array(jvm.java.lang.Object, len(row))
        for index, value in enumerate(row):
            values[index] = value
        java_rows.add(jvm.org.apache.spark.sql.RowFactory.create(values))
    return DataFrame(session.createDataFrame(java_rows, session.parseDataType(struct.json())), spark)


@dataclass(frozen=True)
class StatementResult:
    """A sqlext statement's result: ``rows`` whose columns the DDL ``schema`` names (``name TYPE, ...``)."""

    schema: str
    rows: Sequence[tuple[Any, ...]]

    @property
    def fields(self) -> list[tuple[str, str]]:
        """(name, Spark type in lower case) of each column, in order (the schema's types are simple ones)."""
        named = (column.strip().split(" ", 1) for column in self.schema.split(",") if column.strip())
        return [(name, kind.strip().lower()) for name, kind in named]

    @property
    def columns(self) -> list[str]:
        """The column names, in order."""
        return [name for name, _ in self.fields]

    def frame(self, spark: SparkSession) -> DataFrame:
        """The rows as a DataFrame read back without a Spark job (see :func:`local_frame`)."""
        return local_frame(spark, self.schema, self.rows)


#: What a statement without rows of its own returns: no columns, no rows, as Spark's DDL and ``USE``.
NO_ROWS = StatementResult("", [])
#: What sqlext's Flink-only commands without rows (``STOP JOB``) return, as Flink's SQL client shows them.
OK = StatementResult("result STRING", [("OK",)])
