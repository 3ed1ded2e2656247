"""A filesystem sink's settings, read once from the table's options through their declarations."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlext.connectors.filesystem import files
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.done_policies import MARK_DONE_POLICIES
from sqlext.connectors.filesystem.extractor import PartitionTimeExtractor, check_timestamp_pattern, create_extractor
from sqlext.connectors.filesystem.policies import PartitionCommitPolicy, create_policies
from sqlext.errors import ValidationError
from sqlext.io.fs import FileStatus, FileSystem, normalize
from sqlext.options import Options
from sqlext.table import TableDefinition

#: Spark's own name for NULL/empty partition values when it writes partitioned files.
SPARK_DEFAULT_PARTITION = fso.HIVE_DEFAULT_PARTITION


@dataclass(frozen=True)
class SinkSettings:
    """What the writer and committer need from the table definition."""

    table: TableDefinition
    path: str
    format: str
    keys: tuple[str, ...]
    default_partition_name: str
    trigger: str
    delay: timedelta
    time_zone: str
    idle_timeout: timedelta | None
    rolling_file_size: int
    shuffle_by_partition: bool
    parallelism: int | None
    format_options: dict[str, str]
    auto_compaction: bool
    compaction_file_size: int
    retained_batches: int
    #: Entries expired from the log that its archive keeps (``sink.commit-log.archive.retained-batches``).
    archived_batches: int = 0
    #: Whether a streaming insert commits a batch while the next one is written (``sink.partition-commit.async``).
    commit_async: bool = True
    #: Whether the commit reads the written files for ``numRows`` (Flink's
    #: ``table.exec.hive.sink.statistic-auto-gather.enable``, a session option: see :mod:`sqlext.jobs.insert`).
    gather_statistics: bool = True

    @classmethod
    def from_table(cls, table: TableDefinition) -> SinkSettings:
        options = Options(table.options)
        fmt = options.require(fso.FORMAT)
        rolling = options.get(fso.ROLLING_FILE_SIZE)
        return cls(
            table=table,
            path=normalize(options.require(fso.PATH)),
            format=fmt,
            keys=tuple(table.partition_keys),
            default_partition_name=options.get(fso.PARTITION_DEFAULT_NAME),
            trigger=options.get(fso.COMMIT_TRIGGER),
            delay=options.get(fso.COMMIT_DELAY),
            time_zone=options.get(fso.WATERMARK_TIME_ZONE),
            idle_timeout=options.get(fso.COMMIT_IDLE_TIMEOUT),
            rolling_file_size=rolling,
            shuffle_by_partition=options.get(fso.SHUFFLE_BY_PARTITION),
            parallelism=None if options.get(fso.SINK_PARALLELISM) == -1 else options.get(fso.SINK_PARALLELISM),
            format_options=options.with_prefix(f"{fmt}."),
            auto_compaction=options.get(fso.AUTO_COMPACTION),
            compaction_file_size=options.get(fso.COMPACTION_FILE_SIZE) or rolling,
            retained_batches=options.get(fso.COMMIT_LOG_RETAINED_BATCHES),
            archived_batches=options.get(fso.COMMIT_LOG_ARCHIVE_RETAINED_BATCHES),
            commit_async=options.get(fso.COMMIT_ASYNC),
        )

    def __post_init__(self) -> None:
        if self.auto_compaction:
            from sqlext.connectors.filesystem.compaction.merge import check_mergeable

            check_mergeable(self.table, self.format)

    def count_rows(self, fs: FileSystem, status: FileStatus) -> int | None:
        """Rows of a written data file for the partition statistics (:func:`files.count_rows`); None, without
        reading it, when the insert gathers no statistics."""
        return files.count_rows(fs, status, self.format) if self.gather_statistics else None

    @property
    def options(self) -> Options:
        return Options(self.table.options)

    @property
    def partitioned(self) -> bool:
        return bool(self.keys)

    def extractor(self) -> PartitionTimeExtractor:
        """The table's partition time extractor; a ``default`` one's pattern checked against the keys."""
        options = self.options
        if options.get(fso.TIME_EXTRACTOR_KIND) != "custom":
            check_timestamp_pattern(options.get(fso.TIME_EXTRACTOR_PATTERN), self.keys, self.table.identifier)
        return create_extractor(
            options.get(fso.TIME_EXTRACTOR_KIND),
            options.get(fso.TIME_EXTRACTOR_CLASS),
            options.get(fso.TIME_EXTRACTOR_PATTERN),
            options.get(fso.TIME_EXTRACTOR_FORMATTER),
        )

    def commit_extractor(self) -> PartitionTimeExtractor | None:
        """The extractor the commit trigger uses: None for ``process-time``, which extracts no partition time
        (so, as in Flink, its table may name a ``custom`` kind without a class)."""
        return self.extractor() if self.trigger == fso.TRIGGER_PARTITION_TIME else None

    def policies(self) -> list[PartitionCommitPolicy]:
        return create_policies(self.options, MARK_DONE_POLICIES) if self.partitioned else []

    def check_partition_time_needs_watermark(self, has_watermark: bool) -> None:
        """``partition-time`` without a watermark never commits in Flink; here it is an error."""
        if self.partitioned and self.trigger == fso.TRIGGER_PARTITION_TIME and not has_watermark:
            raise ValidationError(
                f"Table {self.table.identifier} commits partitions by 'partition-time', but the query "
                "feeding it has no watermark, so no partition would ever be committed. Either declare "
                "'WATERMARK FOR <column> AS <column> - INTERVAL ...' on the source table, or set "
                "'sink.partition-commit.trigger' = 'process-time' on the sink table.",
                option=fso.COMMIT_TRIGGER.key,
                value=self.trigger,
            )
