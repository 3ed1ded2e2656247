"""sqlext: Flink-style streaming filesystem sinks with partition commit into a real Hive Metastore,
on Spark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlext.errors import SqlextError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sqlext.spark.session import SqlextSession

__all__ = ["SqlextError", "extend", "register", "spark_session"]
__version__ = "0.1.0"


def extend(spark: SparkSession) -> SqlextSession:
    """Make ``spark.sql`` understand sqlext statements (idempotent)."""
    from sqlext.spark.session import extend as _extend

    return _extend(spark)


def spark_session(
    app_name: str = "sqlext",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    *,
    keep_metastore: bool = False,
) -> Any:
    """A Spark session with Hive support on sqlext's metastore, already extended. An embedded metastore it
    starts (no ``spark.sqlext.metastore.uris``, none running) is stopped when Python exits, unless
    ``keep_metastore``."""
    from sqlext.spark.session import spark_session as _spark_session

    return _spark_session(app_name, master, conf, keep_metastore=keep_metastore)


def register(spark: Any) -> None:
    """Register ``format("sqlext")`` (the Python data source) on a Spark session; idempotent."""
    from sqlext.spark.datasource import register as _register

    _register(spark)
