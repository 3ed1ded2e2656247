"""sqlext: Flink-style streaming filesystem sinks with partition commit into a real Hive Metastore,
on Spark."""

from sqlext.errors import SqlextError

__all__ = ["SqlextError"]
__version__ = "0.1.0"
