"""Steps 1-2 of the commit protocol (:mod:`.committer`): a batch's rows written into its hidden staging
dir, the staged files listed with their row counts, and the plan of their final ``k=v`` locations.

The planner also sizes the files Spark writes (``sink.rolling-policy.file-size``) by the bytes per row it
learns from each batch, and reads what Spark planned for a batch from the query checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlext.catalog.formats import ltz_columns, prepare_write
from sqlext.connectors.filesystem.commit_log import CommitLog, LogEntry, PlannedFile, State
from sqlext.connectors.filesystem.escaping import parse_partition_path, partition_path
from sqlext.connectors.filesystem.settings import SPARK_DEFAULT_PARTITION, SinkSettings
from sqlext.errors import CommitError
from sqlext.io import s3magic
from sqlext.io.fs import FileSystem, join

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Hadoop committers' dir of uncommitted task attempts, inside the output (staging) dir.
PENDING_DIR = "_temporary"
#: Write options of the staging write. Algorithm 2 is safe here though Hadoop deprecates it as a job's
#: final commit (MAPREDUCE-7282: a task commit is not atomic): its output dir is the batch's own hidden
#: staging dir, written afresh (``mode("overwrite")``) by every attempt of the batch, and sqlext lists it
#: only after Spark's job succeeded. Spark lets one attempt per task commit and fails the job when that
#: attempt dies during its commit (SPARK-39195), so a succeeded job's staging dir holds exactly the files of
#: the committed attempts; a failed job's partial files are never planned, and its replay overwrites them.
#: ``partitionOverwriteMode=static`` keeps that overwrite wiping the whole staging dir whatever the session's
#: mode (dynamic would keep a failed attempt's files in partitions the replay does not write). No ``_SUCCESS``
#: marker: nothing reads one in a staging dir (the planner lists it only after the job succeeded and skips
#: ``_`` files), and it cost a file (on S3 a PUT) per batch on the batch's critical path.
STAGING_COMMITTER = {
    "mapreduce.fileoutputcommitter.algorithm.version": "2",
    "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "partitionOverwriteMode": "static",
}


@dataclass(frozen=True)
class StagedFile:
    """A data file written into a hidden staging location, with its partition values (None: NULL)."""

    uri: str
    size: int
    values: list[str | None]
    rows: int | None
    #: Written as a pending upload to ``uri`` (S3A's magic committer): the upload (``PlannedFile.upload``).
    upload: dict[str, Any] | None = None


@dataclass(frozen=True)
class BatchInfo:
    """What Spark planned for a batch: the watermark it runs with and its timestamp."""

    watermark_ms: int | None
    batch_time_ms: int


def read_batch_info(checkpoint_fs: FileSystem, checkpoint: str, batch_id: int) -> BatchInfo:
    """Read the watermark and timestamp of a batch from Spark's offset log in the query checkpoint.

    Spark writes ``offsets/<batchId>`` before it runs the batch; its second line holds
    ``batchWatermarkMs`` (the watermark the batch runs with: the max event time seen by the previous
    batches minus the declared lateness) and ``batchTimestampMs``. Both are the same on a replay.
    """
    import json

    uri = join(checkpoint, "offsets", str(batch_id))
    try:
        metadata = json.loads(checkpoint_fs.read_text(uri).splitlines()[1])
    except (FileNotFoundError, IndexError, ValueError) as exc:
        raise CommitError(f"Cannot read Spark's offset log entry {uri}: {exc}") from exc
    watermark = int(metadata.get("batchWatermarkMs", 0))
    return BatchInfo(watermark if watermark > 0 else None, int(metadata.get("batchTimestampMs", 0)))


#: Uncompressed bytes per value by Flink type name, for the first batch's file-size estimate.
_TYPE_WIDTH = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "INTEGER": 4,
    "BIGINT": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
    "DATE": 4,
    "TIMESTAMP": 12,
    "TIMESTAMP_LTZ": 12,
    "DECIMAL": 16,
}


class BatchPlanner:
    """Stages and plans the batches of one writing query (steps 1-2); ``pool`` gives the committer's I/O pool."""

    def __init__(
        self,
        settings: SinkSettings,
        query_name: str,
        fs: FileSystem,
        log: CommitLog,
        pool: Callable[[], ThreadPoolExecutor],
    ) -> None:
        self.settings = settings
        self.query_name = query_name
        self.fs = fs
        self.log = log
        self._pool = pool
        self._bytes_per_row = self._initial_row_size()

    def stage(self, rows: DataFrame, staging: str, uploads: dict[str, str] | None = None) -> None:
        """Step 1: write ``rows`` into the hidden dir ``staging``, laid out and sized by the sink's options;
        with ``uploads`` (:func:`sqlext.io.s3magic.write_options`), appended to the table as pending uploads
        instead (``staging`` is then the table)."""
        writer_input = rows
        keys = list(self.settings.keys)
        if self.settings.parallelism:
            writer_input = (
                writer_input.repartition(self.settings.parallelism, *keys)
                if keys and self.settings.shuffle_by_partition
                else writer_input.repartition(self.settings.parallelism)
            )
        elif keys and self.settings.shuffle_by_partition:
            writer_input = writer_input.repartition(*keys)
        # Each format in the form every reader of the table's HMS descriptor reads (sqlext.catalog.formats).
        ltz = ltz_columns([(c.name, c.type) for c in self.settings.table.physical_columns])
        physical = [(c.name, c.type, c.nullable) for c in self.settings.table.physical_columns]
        frame, spark_format, options = prepare_write(
            self.settings.format,
            self.settings.format_options,
            writer_input,
            keys,
            ltz,
            physical,
            str(self.settings.table.identifier),
        )
        if spark_format == "avro":
            from sqlext.connectors.filesystem.spark_avro import require

            require(frame.sparkSession, self.settings.table.identifier, "write")
        writer = frame.write.format(spark_format).mode("append" if uploads else "overwrite")
        if keys:
            writer = writer.partitionBy(*keys)
        # Hadoop's committer algorithm 2, for this write only (Spark passes write options into the job's
        # Hadoop configuration): a task's commit renames its files straight into the staging dir and the job
        # commit renames nothing, one rename per file instead of algorithm 1's two (see STAGING_COMMITTER).
        options.update(uploads or STAGING_COMMITTER)
        if self.settings.rolling_file_size:
            options["maxRecordsPerFile"] = str(max(1, int(self.settings.rolling_file_size / self._bytes_per_row)))
        writer.options(**options).save(staging)

    def list_staged(self, staging: str) -> list[StagedFile]:
        """The data files Spark's writer left in ``staging`` (``k=v`` dirs, Spark's escaping)."""
        data = []
        for status in self.fs.list_files(staging):
            name = status.relative.rsplit("/", 1)[-1]
            if name.startswith(("_", ".")) or status.relative.startswith(PENDING_DIR + "/"):
                continue  # Spark's _SUCCESS marker, checksums, what a straggling task attempt wrote
            data.append((status, status.relative[: -len(name)].rstrip("/")))
        # Footers (or lines) read on the I/O pool: a batch of many small files has one per file.
        counts = self._pool().map(lambda found: self.settings.count_rows(self.fs, found[0]), data)
        return [
            StagedFile(status.uri, status.size, self._partition_values(directory), rows)
            for (status, directory), rows in zip(data, counts, strict=True)
        ]

    def list_uploads(self, uploads: list[dict[str, Any]]) -> list[StagedFile]:
        """The data files of a batch written as pending uploads (``uploads``: S3A's commits, their final
        keys in ``k=v`` dirs of the table). Their rows are counted once they are published."""
        table = self.settings.path.rstrip("/") + "/"
        found = []
        for upload in uploads:
            uri = s3magic.final_uri(self.settings.path, upload)
            if not uri.startswith(table):
                raise CommitError(f"An upload of the batch goes to {uri}, outside the table {self.settings.path}")
            directory = uri[len(table) :].rpartition("/")[0]
            found.append(StagedFile(uri, int(upload["length"]), self._partition_values(directory), None, upload))
        return found

    def plan(self, batch_id: int, staged: list[StagedFile], info: BatchInfo) -> LogEntry:
        """Step 2: each staged file's final ``k=v`` location, as the batch's ``requested`` log entry."""
        files: list[PlannedFile] = []
        partitions: dict[str, list[str]] = {}
        for item in staged:
            values = item.values
            relative = partition_path(self.settings.keys, values, self.settings.default_partition_name)
            final = join(self.settings.path, relative, item.uri.rsplit("/", 1)[1])
            files.append(PlannedFile(item.uri, final, relative, item.size, item.rows, item.upload))
            if relative:
                partitions[relative] = [self.settings.default_partition_name if v is None else v for v in values]
        self.learn_row_size(files)
        return LogEntry(
            query=self.query_name,
            batch=batch_id,
            state=State.REQUESTED,
            files=files,
            partitions=partitions,
            watermark_ms=info.watermark_ms,
            batch_time_ms=info.batch_time_ms,
        )

    def _partition_values(self, directory: str) -> list[str | None]:
        if not self.settings.keys:
            return []
        values = parse_partition_path(directory, self.settings.keys)
        return [None if value == SPARK_DEFAULT_PARTITION else value for value in values]

    def _initial_row_size(self) -> float:
        """Bytes per row to size files by before a batch has been measured: this query's last
        committed batch if there is one, else an uncompressed guess from the column types (files then
        come out smaller than the target, never larger)."""
        last = self.log.last_batch(self.query_name)
        entry = self.log.get(self.query_name, last) if last is not None else None
        if entry is not None and entry.rows:
            return sum(f.size for f in entry.files) / entry.rows
        return float(sum(_TYPE_WIDTH.get(c.type.split("(")[0].upper(), 32) for c in self.settings.table.data_columns))

    def learn_row_size(self, files: list[PlannedFile]) -> None:
        """Size the next batches' files by the bytes per row of ``files`` (those whose rows are counted)."""
        rows = sum(f.rows or 0 for f in files)
        if rows:
            self._bytes_per_row = sum(f.size for f in files) / rows
