"""Compaction's rewriting (:mod:`.compaction`): what merging needs to know of a data file (its rows and its
shape: schema, timestamp encoding, compression), which formats merge, and the rewrite of a group of files
into one, in the files' format and encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlext.connectors.filesystem import options as fso
from sqlext.errors import CommitError, ValidationError
from sqlext.io.fs import FileStatus, FileSystem
from sqlext.table import TableDefinition

#: Formats whose files can be merged: columnar ones through pyarrow, line-oriented ones by concatenation.
MERGEABLE_FORMATS = ("parquet", "orc", "csv", "json")
_COPY_CHUNK = 8 << 20


@dataclass(frozen=True)
class SourceFile:
    """A data file that may be merged: its status, row count and ``shape`` (files merge only with
    files of the same shape: same schema, timestamp encoding and compression)."""

    status: FileStatus
    rows: int | None
    shape: str


# -- formats ---------------------------------------------------------------------------------------


def describe_file(fs: FileSystem, status: FileStatus, file_format: str) -> SourceFile:
    """Read what merging needs from a file's footer (columnar formats); line formats need nothing."""
    if file_format == "parquet":
        import pyarrow.parquet as pq

        with fs.open_input(status.uri) as handle:
            parquet = pq.ParquetFile(handle)
            return SourceFile(status, parquet.metadata.num_rows, _parquet_shape(parquet))
    if file_format == "orc":
        import pyarrow.orc as orc

        with fs.open_input(status.uri) as handle:
            orc_file = orc.ORCFile(handle)
            return SourceFile(status, orc_file.nrows, f"{orc_file.schema}|{orc_file.compression}")
    return SourceFile(status, None, "")


#: The footer keys with which Spark marks a parquet file's dates / INT96 timestamps as rebased to the hybrid
#: calendar (written with the session's rebase modes ``LEGACY``; see :mod:`sqlext.jobs.calendar_rebase`). A
#: merged file keeps the first file's keys (pyarrow writes the values as they are), so files merge only with
#: files marked alike: Spark would read the others' dates before 1582-10-15 shifted.
SPARK_LEGACY_MARKERS = (b"org.apache.spark.legacyDateTime", b"org.apache.spark.legacyINT96")


def _parquet_shape(parquet: Any) -> str:
    schema = parquet.schema_arrow
    markers = [key.decode() for key in SPARK_LEGACY_MARKERS if key in (schema.metadata or {})]
    return f"{schema.remove_metadata()}|int96={_has_int96(parquet)}|{_parquet_codec(parquet)}|{','.join(markers)}"


def _has_int96(parquet: Any) -> bool:
    """Spark writes timestamps as INT96 (the encoding Hive's SerDe reads); pyarrow reads them as
    nanoseconds and would write INT64 unless told, so a rewrite keeps what the files have."""
    schema = parquet.schema
    return any(schema.column(i).physical_type == "INT96" for i in range(len(schema)))


def _parquet_codec(parquet: Any) -> str:
    metadata = parquet.metadata
    if metadata.num_row_groups and metadata.num_columns:
        codec = str(metadata.row_group(0).column(0).compression).lower()
        return "none" if codec == "uncompressed" else codec
    return "snappy"


def merge_files(fs: FileSystem, sources: Sequence[SourceFile], target: str, file_format: str) -> None:
    """Write the rows of ``sources`` (in order) into the new file ``target``, in the sources' format
    and encoding, reading one source at a time."""
    writers: dict[str, Callable[[FileSystem, Sequence[SourceFile], str], None]] = {
        "parquet": _merge_parquet,
        "orc": _merge_orc,
    }
    writers.get(file_format, _concatenate)(fs, sources, target)


class FilesNotMergeable(CommitError):
    """A group of files pyarrow cannot rewrite without changing a value; the partition stays as it is."""


#: INT96 timestamps (Spark's, microseconds) read as microseconds: as nanoseconds, years after 2262 overflow.
INT96_UNIT = "us"


def _merge_parquet(fs: FileSystem, sources: Sequence[SourceFile], target: str) -> None:
    """Keep the files' layout: INT96 timestamps stay INT96 (read at Spark's microsecond precision),
    decimals stay fixed-length byte arrays (pyarrow's default, Hive's layout), the codec stays."""
    import pyarrow.parquet as pq

    with fs.open_input(sources[0].status.uri) as handle:
        first = pq.ParquetFile(handle, coerce_int96_timestamp_unit=INT96_UNIT)
        schema, int96, codec = first.schema_arrow, _has_int96(first), _parquet_codec(first)
    with (
        fs.open_output(target) as out,
        pq.ParquetWriter(out, schema, compression=codec, use_deprecated_int96_timestamps=int96) as writer,
    ):
        for source in sources:
            with fs.open_input(source.status.uri) as handle:
                writer.write_table(pq.ParquetFile(handle, coerce_int96_timestamp_unit=INT96_UNIT).read())


def _merge_orc(fs: FileSystem, sources: Sequence[SourceFile], target: str) -> None:
    """pyarrow reads ORC timestamps as nanoseconds only: a file with a timestamp outside 1677-09-21 to
    2262-04-11 cannot be rewritten, and its group is left as it is (:class:`FilesNotMergeable`)."""
    import pyarrow as pa
    import pyarrow.orc as orc

    # Whole files in memory: the ORC reader must not outlive an open handle (it aborts the process).
    codec = str(orc.ORCFile(pa.BufferReader(fs.read_bytes(sources[0].status.uri))).compression).lower()
    tables = []
    for source in sources:
        try:
            tables.append(orc.ORCFile(pa.BufferReader(fs.read_bytes(source.status.uri))).read())
        except pa.ArrowInvalid as exc:
            raise FilesNotMergeable(f"{source.status.uri}: {exc}", value=source.status.uri) from exc
    with fs.open_output(target) as out:
        writer = orc.ORCWriter(out, compression="uncompressed" if codec == "none" else codec)
        for table in tables:
            writer.write(table)
        writer.close()


def _concatenate(fs: FileSystem, sources: Sequence[SourceFile], target: str) -> None:
    """Line formats (csv without header, json lines): the merged file is the files one after another, copied
    a chunk at a time (a file's size does not matter)."""
    with fs.open_output(target) as out:
        for source in sources:
            last = b"\n"
            with fs.open_input(source.status.uri) as handle:
                while chunk := handle.read(_COPY_CHUNK):
                    out.write(chunk)
                    last = bytes(chunk[-1:])
            if last != b"\n":
                out.write(b"\n")


def check_mergeable(table: TableDefinition, file_format: str) -> None:
    """Refuse formats whose files cannot be merged safely."""
    if file_format not in MERGEABLE_FORMATS:
        raise ValidationError(
            f"Table {table.identifier}: files of format '{file_format}' cannot be compacted; "
            f"compaction supports {', '.join(MERGEABLE_FORMATS)}.",
            option=fso.AUTO_COMPACTION.key,
            value=file_format,
        )
    if file_format == "csv" and str(table.options.get("csv.header", "false")).lower() == "true":
        raise ValidationError(
            f"Table {table.identifier}: csv files with a header line cannot be compacted by concatenation.",
            option="csv.header",
            value="true",
        )
