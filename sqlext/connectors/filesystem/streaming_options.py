"""The ``streaming-source.*`` options of the ``filesystem`` connector (Flink's Hive streaming source's keys, same
defaults and meanings, plus sqlext's own, marked "sqlext:"): declared here, read by
:mod:`sqlext.connectors.filesystem.streaming.settings`; :mod:`sqlext.connectors.filesystem.options` lists them
with the connector's other options."""

from __future__ import annotations

from typing import Any

from sqlext.options import (
    BOOLEAN,
    DURATION,
    INT,
    STRING,
    ConfigOption,
    enum_type,
    positive,
)

ORDER_PARTITION_NAME = "partition-name"
ORDER_CREATE_TIME = "create-time"
ORDER_PARTITION_TIME = "partition-time"
PARTITION_ORDERS = (ORDER_CREATE_TIME, ORDER_PARTITION_TIME, ORDER_PARTITION_NAME)
INCLUDE_ALL = "all"
INCLUDE_LATEST = "latest"

STREAMING_SOURCE_ENABLE = ConfigOption(
    "streaming-source.enable",
    BOOLEAN,
    False,
    "In a streaming query, read the table as a stream of committed partitions: each partition's rows once the "
    "partition is in the metastore, in 'streaming-source.partition-order', from "
    "'streaming-source.consume-start-offset' (see docs/streaming-reads.md). Partitions must be committed "
    "atomically (sqlext's sink does).",
)
STREAMING_SOURCE_PARTITION_INCLUDE = ConfigOption(
    "streaming-source.partition.include",
    enum_type(INCLUDE_ALL, INCLUDE_LATEST, case_sensitive=True),
    INCLUDE_ALL,
    "Which partitions a streaming read reads: 'all', or 'latest': only the newest committed partition in "
    "'streaming-source.partition-order', reloaded at 'streaming-source.monitor-interval'; 'latest' is only for "
    "a temporal (lookup) join, JOIN t FOR SYSTEM_TIME AS OF s.proc_time (see docs/streaming-reads.md).",
)
STREAMING_SOURCE_MONITOR_INTERVAL = ConfigOption(
    "streaming-source.monitor-interval",
    DURATION,
    None,
    "How often the streaming source asks the metastore for newly committed partitions. Unset: 1 min (as "
    "Flink's Hive streaming read). The query's trigger interval also paces it: a micro-batch asks at most once. "
    "For a temporal join of the latest partition, how often the newest partition is looked up and reloaded; "
    "unset: 60 min (as in Flink).",
    check=positive,
)
STREAMING_SOURCE_PARTITION_ORDER = ConfigOption(
    "streaming-source.partition-order",
    enum_type(*PARTITION_ORDERS, case_sensitive=True),
    ORDER_PARTITION_NAME,
    "The order in which partitions are read and compared with the start offset: 'partition-name' (alphabetical "
    "order of the names), 'create-time' (when the partition was created in the metastore, i.e. committed; Flink "
    "takes the directory's modification time), 'partition-time' (the time extracted from the partition values "
    "with partition.time-extractor.*). A partition that appears after a later one was read is skipped, as in Flink.",
)
STREAMING_SOURCE_CONSUME_ORDER = ConfigOption(
    "streaming-source.consume-order",
    enum_type(*PARTITION_ORDERS, case_sensitive=True),
    None,
    "Deprecated (as in Flink): the former name of 'streaming-source.partition-order'.",
)
STREAMING_SOURCE_CONSUME_START_OFFSET = ConfigOption(
    "streaming-source.consume-start-offset",
    STRING,
    None,
    "Where a new streaming read starts: for 'create-time' and 'partition-time' a timestamp "
    "'yyyy-[m]m-[d]d [hh:mm:ss]' (partitions from that time on), for 'partition-name' a partition name such as "
    "'dt=2020-10-01/hr=00' (partitions from that name on). Unset: every partition. A restarted query resumes "
    "from its checkpoint instead.",
)
STREAMING_SOURCE_READ_RECOMMITS = ConfigOption(
    "streaming-source.read-recommits",
    BOOLEAN,
    True,
    "sqlext: when a partition that was read is committed again (late data), read the files that commit added, "
    "once. Flink never reads rows added to a partition after it was read (false).",
)
STREAMING_SOURCE_READ_RECOMMITS_RETAINED = ConfigOption(
    "streaming-source.read-recommits.retained-partitions",
    INT,
    1000,
    "sqlext: with 'streaming-source.read-recommits', how many of the partitions read last the source's offset "
    "keeps the read files of (the offset is in every checkpoint, so this bounds its size: about 60 bytes a "
    "file). A re-commit of a partition read before those is not read, as in Flink.",
    check=positive,
)
DISCOVERY_AUTO, DISCOVERY_LISTING = "auto", "listing"
STREAMING_SOURCE_PARTITION_DISCOVERY = ConfigOption(
    "streaming-source.partition-discovery",
    enum_type(DISCOVERY_AUTO, DISCOVERY_LISTING, case_sensitive=True),
    DISCOVERY_AUTO,
    "sqlext: how a streaming read finds new partitions after its first poll (which lists the table): 'auto' reads "
    "the metastore's notification log when it keeps one (DbNotificationListener, Hive 3.0+), so a poll costs the "
    "new events, not the table; 'listing' lists the table's partition names at every poll, as Flink does.",
)

STREAMING_SOURCE_OPTIONS: tuple[ConfigOption[Any], ...] = (
    STREAMING_SOURCE_ENABLE,
    STREAMING_SOURCE_PARTITION_INCLUDE,
    STREAMING_SOURCE_MONITOR_INTERVAL,
    STREAMING_SOURCE_PARTITION_ORDER,
    STREAMING_SOURCE_CONSUME_ORDER,
    STREAMING_SOURCE_CONSUME_START_OFFSET,
    STREAMING_SOURCE_READ_RECOMMITS,
    STREAMING_SOURCE_READ_RECOMMITS_RETAINED,
    STREAMING_SOURCE_PARTITION_DISCOVERY,
)
