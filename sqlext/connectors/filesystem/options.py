"""Options of the ``filesystem`` connector: Flink's ``FileSystemConnectorOptions``, same keys, same
defaults and meanings, plus sqlext's own additions (marked "sqlext:" in their descriptions).

Differences from Flink, on purpose:
- ``partition.default-name`` defaults to Hive's ``__HIVE_DEFAULT_PARTITION__`` (Flink's filesystem
  connector uses ``__DEFAULT_PARTITION__``): every sqlext table lives in the HMS and every HMS reader
  reads Hive's name back as NULL.
- ``sink.partition-commit.policy.kind`` of a partitioned table defaults to ``metastore,success-file``
  (Flink commits nothing without it).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlext.connectors.filesystem.incremental.window import FORM as WINDOW_FORM
from sqlext.connectors.filesystem.incremental.window import KEY as WINDOW_KEY
from sqlext.connectors.filesystem.incremental.window import Window, check_window, parse_window
from sqlext.connectors.filesystem.streaming_options import (  # noqa: F401 - the connector's options, in one place
    DISCOVERY_AUTO,
    DISCOVERY_LISTING,
    INCLUDE_ALL,
    INCLUDE_LATEST,
    ORDER_CREATE_TIME,
    ORDER_PARTITION_NAME,
    ORDER_PARTITION_TIME,
    PARTITION_ORDERS,
    STREAMING_SOURCE_CONSUME_ORDER,
    STREAMING_SOURCE_CONSUME_START_OFFSET,
    STREAMING_SOURCE_ENABLE,
    STREAMING_SOURCE_MONITOR_INTERVAL,
    STREAMING_SOURCE_OPTIONS,
    STREAMING_SOURCE_PARTITION_DISCOVERY,
    STREAMING_SOURCE_PARTITION_INCLUDE,
    STREAMING_SOURCE_PARTITION_ORDER,
    STREAMING_SOURCE_READ_RECOMMITS,
    STREAMING_SOURCE_READ_RECOMMITS_RETAINED,
)
from sqlext.options import (
    BOOLEAN,
    DURATION,
    INT,
    MEMORY_SIZE,
    STRING,
    ZONE_FORM,
    ConfigOption,
    OptionType,
    enum_list_type,
    enum_type,
    non_negative,
    parallelism,
    parse_zone_id,
    positive,
)

FORMATS = ("parquet", "orc", "csv", "json", "avro", "raw", "debezium-json", "canal-json", "maxwell-json")
TRIGGER_PROCESS_TIME = "process-time"
TRIGGER_PARTITION_TIME = "partition-time"
POLICY_METASTORE = "metastore"
POLICY_SUCCESS_FILE = "success-file"
POLICY_CUSTOM = "custom"
POLICY_DONE_PARTITION = "done-partition"
POLICY_MARK_EVENT = "mark-event"
POLICY_HTTP_REPORT = "http-report"
EXPIRATION_VALUES_TIME = "values-time"
EXPIRATION_UPDATE_TIME = "update-time"
DEFAULT_POLICIES = (POLICY_METASTORE, POLICY_SUCCESS_FILE)
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def _time_zone(zone: str) -> str | None:
    try:
        parse_zone_id(zone)
    except ValueError:
        return f"Expected {ZONE_FORM}."
    return None


def _semicolon_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(";") if item.strip()]


SEMICOLON_LIST: OptionType[list[str]] = OptionType("List<String>", _semicolon_list, ";".join, "values separated by ';'")

PATH = ConfigOption("path", STRING, None, "The path of a directory (a URI: file://, hdfs://, s3a://, ...).")
FORMAT = ConfigOption(
    "format",
    enum_type(*FORMATS),
    None,
    "The file format: parquet, orc, csv, json, avro (needs Spark's spark-avro jar, see docs/connectors.md), raw, or "
    "the change-event formats debezium-json, canal-json, maxwell-json (docs/connectors.md).",
)
PARTITION_DEFAULT_NAME = ConfigOption(
    "partition.default-name",
    STRING,
    HIVE_DEFAULT_PARTITION,
    "The partition directory name for a NULL or empty partition value. Defaults to Hive's name, which "
    "every HMS reader reads back as NULL (Flink's filesystem default is __DEFAULT_PARTITION__).",
)

SOURCE_MONITOR_INTERVAL = ConfigOption(
    "source.monitor-interval",
    DURATION,
    None,
    "Interval at which the source looks for new files and partitions. Each new file is read once, whatever "
    "its modification time (Spark's own file stream skips files a week older than the newest). Unset: the "
    "source is bounded and reads what is there once.",
    check=positive,
)
SOURCE_PATH_REGEX = ConfigOption(
    "source.path.regex-pattern", STRING, None, "Only files whose full path matches this regex are read."
)
SOURCE_MAX_FILES_PER_TRIGGER = ConfigOption(
    "source.max-files-per-trigger",
    INT,
    None,
    "sqlext: at most this many new files per micro-batch of a streaming read (Flink has no such cap).",
    check=positive,
)
SOURCE_IGNORE_CORRUPT_FILES = ConfigOption(
    "source.ignore-corrupt-files",
    BOOLEAN,
    False,
    "sqlext: skip source files that cannot be read as the table's format (corrupt, truncated, not of that "
    "format, or with a column of another type than the table's), each with a warning in Spark's log naming it. "
    "Default false: such a file stops the insert at the batch that reads it, with an error naming the file (as "
    "in Flink); set this and run the insert again to skip it. Columns missing from a file read as NULL either way.",
)
WINDOW: OptionType[Window] = OptionType("String", parse_window, str, WINDOW_FORM)
INCREMENTAL_BETWEEN_TIMESTAMP = ConfigOption(
    WINDOW_KEY,
    WINDOW,
    None,
    "Paimon's: read only the rows committed after START and up to END, 'START,END' in epoch milliseconds (START "
    "exclusive, END inclusive), each row once: new partitions and late re-commits alike, compacted rows once. A "
    "batch read only (in an OPTIONS hint); the table's commit log must still cover the window "
    "(sink.commit-log.retained-batches). See docs/incremental-reads.md.",
    check=check_window,
)

ROLLING_FILE_SIZE = ConfigOption(
    "sink.rolling-policy.file-size",
    MEMORY_SIZE,
    128 << 20,
    "The maximum part file size before rolling to a new file (within one micro-batch).",
)
ROLLING_ROLLOVER_INTERVAL = ConfigOption(
    "sink.rolling-policy.rollover-interval",
    DURATION,
    None,
    "Accepted for Flink DDL. Files never stay open across micro-batches in sqlext: each batch (Flink's "
    "checkpoint) closes its files, so files roll at least once per batch; set the trigger interval to bound "
    "how long rows wait.",
    check=positive,
)
ROLLING_INACTIVITY_INTERVAL = ConfigOption(
    "sink.rolling-policy.inactivity-interval",
    DURATION,
    None,
    "Accepted for Flink DDL; as for rollover-interval, every micro-batch closes its files.",
    check=positive,
)
ROLLING_CHECK_INTERVAL = ConfigOption(
    "sink.rolling-policy.check-interval",
    DURATION,
    None,
    "Accepted for Flink DDL; rolling is decided per micro-batch, so there is nothing to check between.",
    check=positive,
)
SHUFFLE_BY_PARTITION = ConfigOption(
    "sink.shuffle-by-partition.enable",
    BOOLEAN,
    False,
    "Cluster rows by partition values before writing: fewer files per partition, at the cost of a shuffle.",
)
SINK_PARALLELISM = ConfigOption(
    "sink.parallelism",
    INT,
    None,
    "Number of writer tasks. Unset or -1: the parallelism of the input.",
    check=parallelism,
)

COMMIT_TRIGGER = ConfigOption(
    "sink.partition-commit.trigger",
    enum_type(TRIGGER_PROCESS_TIME, TRIGGER_PARTITION_TIME),
    TRIGGER_PROCESS_TIME,
    "When a partition is committed: 'process-time' (machine time: first seen + delay), or "
    "'partition-time' (the watermark passes the time extracted from the partition values + delay).",
)
COMMIT_DELAY = ConfigOption(
    "sink.partition-commit.delay",
    DURATION,
    timedelta(0),
    "The partition is not committed until this delay has passed ('1 h' for hourly partitions).",
    check=non_negative,
)
WATERMARK_TIME_ZONE = ConfigOption(
    "sink.partition-commit.watermark-time-zone",
    STRING,
    "UTC",
    "Time zone in which a watermark (epoch millis) is turned into a local timestamp to compare with "
    "partition times: 'UTC' for TIMESTAMP watermarks, the session zone (e.g. 'Asia/Shanghai') for "
    "TIMESTAMP_LTZ ones.",
    check=_time_zone,
)
COMMIT_POLICY_KIND = ConfigOption(
    "sink.partition-commit.policy.kind",
    enum_list_type(
        POLICY_METASTORE,
        POLICY_SUCCESS_FILE,
        POLICY_CUSTOM,
        POLICY_DONE_PARTITION,
        POLICY_MARK_EVENT,
        POLICY_HTTP_REPORT,
    ),
    None,
    "Policies run, in this order, on each partition when it is committed: 'metastore' (add or alter the HMS "
    "partition with statistics), 'success-file' (write the success file), 'custom' (the policy class); "
    "sqlext, after Paimon's partition.mark-done-action: 'done-partition' (add the partition whose last value "
    "ends in '.done' to the HMS), 'mark-event' (mark the HMS partition LOAD_DONE), 'http-report' (POST a JSON "
    "report to sink.partition-commit.http-report.url). "
    "Unset on a partitioned table: 'metastore,success-file' (Flink commits nothing without it).",
)
COMMIT_POLICY_CLASS = ConfigOption(
    "sink.partition-commit.policy.class",
    STRING,
    None,
    "The custom policy: a Python class path 'package.module.Class' implementing PartitionCommitPolicy.",
)
COMMIT_POLICY_CLASS_PARAMETERS = ConfigOption(
    "sink.partition-commit.policy.class.parameters",
    SEMICOLON_LIST,
    None,
    "Parameters passed to the custom policy's constructor, separated by ';'.",
)
SUCCESS_FILE_NAME = ConfigOption(
    "sink.partition-commit.success-file.name",
    STRING,
    "_SUCCESS",
    "The name of the success file written by the 'success-file' policy.",
)


def _http_url(url: str) -> str | None:
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return None if parsed.scheme in ("http", "https") and parsed.netloc else "Expected an http:// or https:// URL."


HTTP_REPORT_URL = ConfigOption(
    "sink.partition-commit.http-report.url",
    STRING,
    None,
    "sqlext: where the 'http-report' policy POSTs a JSON document per committed partition (required with it).",
    check=_http_url,
    fallback_keys=("partition.mark-done-action.http.url",),
)
HTTP_REPORT_TIMEOUT = ConfigOption(
    "sink.partition-commit.http-report.timeout",
    DURATION,
    timedelta(seconds=5),
    "sqlext: how long the 'http-report' policy retries a report (with backoff) before the insert fails "
    "naming the URL; a restart reports again.",
    check=positive,
)
HTTP_REPORT_PARAMS = ConfigOption(
    "sink.partition-commit.http-report.params",
    STRING,
    None,
    "sqlext: a string passed through as 'params' in every report of the 'http-report' policy.",
    fallback_keys=("partition.mark-done-action.http.params",),
)
COMMIT_IDLE_TIMEOUT = ConfigOption(
    "sink.partition-commit.idle-timeout",
    DURATION,
    None,
    "sqlext: with 'partition-time', when no new data arrives for this long, pending partitions whose "
    "time + delay is behind the wall clock (in the watermark time zone) are committed anyway. Unset: "
    "they wait for the watermark, as in Flink.",
    check=positive,
)

TIME_EXTRACTOR_KIND = ConfigOption(
    "partition.time-extractor.kind",
    enum_type("default", "custom", case_sensitive=True),
    "default",
    "How partition times are extracted: 'default' (timestamp-pattern/formatter) or 'custom' (the class).",
)
TIME_EXTRACTOR_CLASS = ConfigOption(
    "partition.time-extractor.class",
    STRING,
    None,
    "The custom extractor: a Python class path implementing PartitionTimeExtractor.",
)
TIME_EXTRACTOR_PATTERN = ConfigOption(
    "partition.time-extractor.timestamp-pattern",
    STRING,
    None,
    "How to build a timestamp from partition values, e.g. '$dt', '$year-$month-$day $hour:00:00', "
    "'$dt $hr:00:00'. Unset: the first partition value.",
)
TIME_EXTRACTOR_FORMATTER = ConfigOption(
    "partition.time-extractor.timestamp-formatter",
    STRING,
    None,
    "A date-time pattern (Java DateTimeFormatter letters: yyyy MM dd HH mm ss) for the timestamp built by "
    "the pattern, e.g. 'yyyyMMdd'. Unset: 'yyyy-M-d[ H:m:s[.fraction]]', resolved leniently as Flink does.",
)

AUTO_COMPACTION = ConfigOption(
    "auto-compaction",
    BOOLEAN,
    False,
    "Merge a partition's small files into files near compaction.file-size before it is committed.",
)
COMMIT_LOG_RETAINED_BATCHES = ConfigOption(
    "sink.commit-log.retained-batches",
    INT,
    100,
    "sqlext: how many of a writing query's latest batches its commit log keeps (`sqlext commits` shows "
    "them); older entries are deleted, as Spark keeps spark.sql.streaming.minBatchesToRetain batches of its "
    "checkpoint. A restart only ever needs the latest.",
    check=positive,
)
COMMIT_LOG_ARCHIVE_RETAINED_BATCHES = ConfigOption(
    "sink.commit-log.archive.retained-batches",
    INT,
    10000,
    "sqlext: how many of a writing query's entries that sink.commit-log.retained-batches expired the table's "
    "commit log archive keeps (in _sqlext/archive/, a file of JSON lines per 100 entries, as Hudi archives its "
    "timeline; `sqlext commits --archived` shows them); older ones are deleted. 0: none, expired entries are "
    "deleted.",
    check=non_negative,
)
COMMIT_ASYNC = ConfigOption(
    "sink.partition-commit.async",
    BOOLEAN,
    True,
    "sqlext: a streaming insert moves each batch's files into place and commits its partitions on a background "
    "committer while Spark writes the next batch, as Flink commits while the next checkpoint's data flows: one "
    "batch at a time, in batch order, and the next batch waits when the commit falls behind. 'false': each batch "
    "is committed before Spark starts the next. Batch mode and format('sqlext') always commit before returning.",
)

PARTITION_EXPIRATION_TIME = ConfigOption(
    "partition.expiration-time",
    DURATION,
    None,
    "sqlext: (Paimon's option) partitions older than this are dropped from the HMS and their files deleted, "
    "by a running streaming insert every partition.expiration-check-interval and by 'sqlext expire'. "
    "Unset: partitions never expire.",
    check=positive,
)
PARTITION_EXPIRATION_CHECK_INTERVAL = ConfigOption(
    "partition.expiration-check-interval",
    DURATION,
    timedelta(hours=1),
    "sqlext: (Paimon's option) how often a running streaming insert looks for expired partitions.",
    check=positive,
)
PARTITION_EXPIRATION_STRATEGY = ConfigOption(
    "partition.expiration-strategy",
    enum_type(EXPIRATION_VALUES_TIME, EXPIRATION_UPDATE_TIME, case_sensitive=True),
    EXPIRATION_VALUES_TIME,
    "sqlext: (Paimon's option) a partition's age is counted from 'values-time' (the time extracted from its "
    "values with partition.time-extractor.*, in sink.partition-commit.watermark-time-zone) or 'update-time' "
    "(its last commit).",
)

COMPACTION_FILE_SIZE = ConfigOption(
    "compaction.file-size",
    MEMORY_SIZE,
    None,
    "The target size of compacted files. Unset: sink.rolling-policy.file-size.",
)

FORMAT_OPTION_PREFIXES = tuple(
    ConfigOption(f"{fmt}.", STRING, None, f"Options passed through to the {fmt} format.", prefix=True)
    for fmt in FORMATS
)

SOURCE_OPTIONS: tuple[ConfigOption[Any], ...] = (
    SOURCE_MONITOR_INTERVAL,
    SOURCE_PATH_REGEX,
    SOURCE_MAX_FILES_PER_TRIGGER,
    SOURCE_IGNORE_CORRUPT_FILES,
    INCREMENTAL_BETWEEN_TIMESTAMP,
)

SINK_OPTIONS: tuple[ConfigOption[Any], ...] = (
    ROLLING_FILE_SIZE,
    ROLLING_ROLLOVER_INTERVAL,
    ROLLING_INACTIVITY_INTERVAL,
    ROLLING_CHECK_INTERVAL,
    SHUFFLE_BY_PARTITION,
    SINK_PARALLELISM,
    COMMIT_TRIGGER,
    COMMIT_DELAY,
    WATERMARK_TIME_ZONE,
    COMMIT_POLICY_KIND,
    COMMIT_POLICY_CLASS,
    COMMIT_POLICY_CLASS_PARAMETERS,
    SUCCESS_FILE_NAME,
    HTTP_REPORT_URL,
    HTTP_REPORT_TIMEOUT,
    HTTP_REPORT_PARAMS,
    COMMIT_IDLE_TIMEOUT,
    COMMIT_LOG_RETAINED_BATCHES,
    COMMIT_LOG_ARCHIVE_RETAINED_BATCHES,
    COMMIT_ASYNC,
    TIME_EXTRACTOR_KIND,
    TIME_EXTRACTOR_CLASS,
    TIME_EXTRACTOR_PATTERN,
    TIME_EXTRACTOR_FORMATTER,
    AUTO_COMPACTION,
    COMPACTION_FILE_SIZE,
    PARTITION_EXPIRATION_TIME,
    PARTITION_EXPIRATION_CHECK_INTERVAL,
    PARTITION_EXPIRATION_STRATEGY,
)

REQUIRED_OPTIONS: tuple[ConfigOption[Any], ...] = (PATH, FORMAT)
OPTIONAL_OPTIONS: tuple[ConfigOption[Any], ...] = (
    PARTITION_DEFAULT_NAME,
    *SOURCE_OPTIONS,
    *STREAMING_SOURCE_OPTIONS,
    *SINK_OPTIONS,
    *FORMAT_OPTION_PREFIXES,
)
