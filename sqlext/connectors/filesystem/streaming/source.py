"""The streaming read of committed partitions (Flink's Hive streaming source, ``streaming-source.*``).

In a streaming query, a partitioned ``filesystem`` table with ``'streaming-source.enable' = 'true'`` is read
by a Spark streaming source (a Python data source, :class:`CommittedPartitionSource`) that emits the rows of
each partition once the partition is in the metastore: committed by sqlext's sink, or added by anything else
(``ALTER TABLE ... ADD PARTITION``, ``MSCK REPAIR``, Hive). How it goes:

- discovery asks the metastore for the table's partitions, at most once per
  ``streaming-source.monitor-interval`` (default 1 min) and once per micro-batch;
- each partition has an order key (``streaming-source.partition-order``): its name, its creation time in the
  metastore (the time it was committed), or the time extracted from its values. Partitions are read in that
  order from ``streaming-source.consume-start-offset``; as in Flink, a partition whose key is below the newest
  key read is skipped (it came too late for the order);
- the source's offset, kept by Spark in the query's checkpoint, says what has been read: the newest key, the
  partitions read at that key, and (``streaming-source.read-recommits``) the files read of every partition,
  with the metastore's statistics of the partition when they were read. The end offset of a micro-batch also
  lists the files that batch reads, so that a replayed batch reads exactly those again and a restarted query
  neither skips nor repeats a file;
- a partition read before whose statistics change in the metastore (a late-data re-commit alters the
  partition with new ``numFiles``/``totalSize``) is listed again, and the files not read before are read;
- files are read on the executors with pyarrow (parquet and orc); hidden files (``_``/``.``) and the
  success file are never read;
- progress: the end offset of a micro-batch also carries the commit time of the newest partition read so far
  and how far the source was behind the newest commit in the metastore when it planned the batch
  (:func:`batch_progress`); :class:`ProgressLogger` logs it once a batch, and the reader's
  ``reportLatestOffset`` shows the metastore side (:func:`latest_report`) in Spark's progress.

The pure parts need no Spark: :mod:`.streaming_settings` (the options), :mod:`.streaming_partitions`
(discovery and order keys), :mod:`.streaming_offsets` (:func:`next_offset` and the offset's form) and
:mod:`.streaming_spec` (what the source's processes are told); :mod:`.partition_stream` is the Spark data
source; :func:`read_stream` builds the DataFrame.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.streaming.settings import StreamingSourceSettings, check_readable
from sqlext.connectors.filesystem.streaming.spec import FORMAT_NAME, SourceSpec
from sqlext.errors import ValidationError
from sqlext.options import Options
from sqlext.table import TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlext.registry import SourceContext

log = logging.getLogger("sqlext.streaming_source")


def read_stream(context: SourceContext) -> DataFrame:
    """The streaming DataFrame of a table read as committed partitions (see the module docstring)."""
    from sqlext import config as cfg

    table, spark = context.table, context.spark
    settings = StreamingSourceSettings.from_table(table)
    check_readable(table, settings)
    uris = spark.conf.get(cfg.METASTORE_URIS, None)
    if not uris:
        raise ValidationError(
            f"Table {table.identifier} is read as a stream of committed partitions, which needs the metastore: "
            f"set '{cfg.METASTORE_URIS}'.",
            option=cfg.METASTORE_URIS,
        )
    from sqlext.catalog.metastore import security

    spec = SourceSpec.of_table(table, uris, _hadoop_conf(spark), security.current())
    register(spark)
    frame = spark.readStream.format(FORMAT_NAME).schema(spec.schema_ddl()).option("spec", spec.to_json()).load()
    return frame.select(*_output_columns(table))


def _output_columns(table: TableDefinition) -> list[Any]:
    """The table's physical columns in order; partition values as the table's types, the default partition
    name as NULL (as the batch read does)."""
    from pyspark.sql import functions as F

    from sqlext.sql.types import spark_type

    keys = {key.lower() for key in table.partition_keys}
    nulls = {Options(table.options).get(fso.PARTITION_DEFAULT_NAME), fso.HIVE_DEFAULT_PARTITION}
    selected = []
    for column in table.physical_columns:
        value = F.col(f"`{column.name}`")
        if column.name.lower() in keys:
            value = F.when(value.isin(*nulls), F.lit(None)).otherwise(value).cast(spark_type(column.type))
        selected.append(value.alias(column.name))
    return selected


def _hadoop_conf(spark: Any) -> dict[str, str]:
    from sqlext.io import arrowfs

    try:
        conf = dict(spark.conf.getAll)
    except Exception:  # an older Connect server without GetAll
        conf = {}
    return arrowfs.carried(conf)


_registered: set[int] = set()


def register(spark: Any) -> None:
    """Register the committed-partitions data source on a session; idempotent."""
    if id(spark) in _registered:
        return
    from sqlext.connectors.filesystem.streaming.partition_stream import CommittedPartitionSource, ProgressLogger

    spark.dataSource.register(CommittedPartitionSource)
    try:
        spark.streams.addListener(ProgressLogger())
    except Exception as exc:  # Spark Connect runs Python listeners on the server; progress is still in lastProgress
        log.debug("no per-batch progress log for the streaming source: %s", exc)
    _registered.add(id(spark))
