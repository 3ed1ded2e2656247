"""The ``filesystem`` connector's read path.

As a source:

- bounded without ``source.monitor-interval``: a batch read (``spark.read``) of the files there; in a
  streaming insert the same table is read by a file stream that the insert runs with Spark's
  ``availableNow`` trigger (see :meth:`ConnectorFactory.is_bounded`), so it reads what is there and ends;
- unbounded with ``source.monitor-interval``: a file stream (``spark.readStream``) that picks up new files
  and new partition directories. Spark lists the directory once per micro-batch, so the insert's trigger
  interval (``execution.checkpointing.interval``), not the monitor interval, paces the listing;
- the ``path`` must exist (as in Flink; the empty directory the metastore made at CREATE TABLE counts as
  missing until something is written there, see :func:`_check_path_exists`);
- partition columns come from ``k=v`` directories (read as strings, then cast to the column type);
  ``__HIVE_DEFAULT_PARTITION__`` and the table's ``partition.default-name`` read as NULL;
- ``source.path.regex-pattern`` must match the whole path of a file (its URI path, decoded, as Flink
  matches ``Path.getPath()``: ``/data/t/dt=1/part-0.csv``);
- metadata columns ``file.path``, ``file.name``, ``file.size``, ``file.modification-time`` come from
  Spark's hidden ``_metadata`` column; ``file.path`` is the decoded path part of the file's URI, as Flink's
  ``Path.getPath()`` (``/data/t/dt=1/part-0.csv``, no ``file:`` or ``s3a://bucket``);
- csv is read as text and parsed in the form sqlext writes (Hive's ``LazySimpleSerDe`` form, see
  :class:`sqlext.catalog.formats.CsvTextForm`), which also takes what Flink's csv writes (quoted fields, line
  breaks inside quotes, joined from lines in bounded memory: see
  :mod:`sqlext.connectors.filesystem.csv_records`); json options
  lose their prefix and take Spark's names (see :func:`reader_options`);
- a file that cannot be read as the format (corrupt, truncated, another format, a column of another type)
  fails the batch that reads it with Spark's error naming the file, so the insert stops before anything of
  that batch is written; ``source.ignore-corrupt-files`` (Spark's ``ignoreCorruptFiles``) skips such files
  instead, also for the replay of a batch that failed on one. parquet and orc columns are matched by name:
  a column missing from a file reads as NULL, a column the table does not declare is not read. An empty
  (0-byte) file has no rows and is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlext.catalog.csv_text import unescape_field_delimiter
from sqlext.catalog.evolution import file_fields
from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.incremental.plan import RowRanges
from sqlext.connectors.filesystem.incremental.window import Window
from sqlext.errors import FileSystemError
from sqlext.options import Options
from sqlext.table import Column, TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

    from sqlext.registry import SourceContext

log = logging.getLogger("sqlext.connectors.filesystem.source")

#: Flink's metadata keys -> fields of Spark's hidden ``_metadata`` column.
METADATA_FIELDS = {
    "file.path": "file_path",
    "file.name": "file_name",
    "file.size": "file_size",
    "file.modification-time": "file_modification_time",
}
#: Flink csv/json option names -> Spark reader option names (values unchanged).
_RENAMED = {
    "field-delimiter": "sep",
    "quote-character": "quote",
    "escape-character": "escape",
    "null-literal": "nullValue",
}
#: Spark's streaming file source skips a new file modified more than ``maxFileAge`` (7 days) before the newest
#: file it has seen; Flink's reads every new file. A century keeps files copied with their times (``cp -p``,
#: ``distcp -p``). The cost is Flink's too: the paths of every file read are remembered.
_EVERY_FILE_AGE = "36500d"
#: Flink json ``timestamp-format.standard`` -> Spark's ``timestampFormat``.
_JSON_TIMESTAMP_FORMATS = {
    "SQL": "yyyy-MM-dd HH:mm:ss[.SSSSSSSSS][XXX]",
    "ISO-8601": "yyyy-MM-dd'T'HH:mm:ss[.SSSSSSSSS][XXX]",
}


def read_table(context: SourceContext) -> DataFrame:
    """A (streaming when ``context.streaming``) read of the table's files; see the module docstring. With
    ``incremental-between-timestamp``, a batch read of the rows committed in that window
    (:mod:`sqlext.connectors.filesystem.incremental`)."""
    window = Options(context.table.options).get(fso.INCREMENTAL_BETWEEN_TIMESTAMP)
    if window is not None and not context.streaming:
        return _read_window(context, window)
    _check_path_exists(context.table)
    return _read(context)


def _check_path_exists(table: TableDefinition) -> None:
    """A source's ``path`` must exist, as in Flink ("File ... does not exist"): a typo fails the statement
    naming it, rather than reading no rows. The empty directory the metastore made at CREATE TABLE, that
    nothing was written into since, counts as missing (:mod:`sqlext.catalog.locations`), but for a watched
    source (``source.monitor-interval``), which waits for its files with a warning. Flink reads no rows where
    a *partitioned* table's path does not exist; sqlext fails there too (docs/connectors.md)."""
    from sqlext.catalog.locations import made_and_unwritten
    from sqlext.io.fs import FileSystem

    options = Options(table.options)
    path = options.require(fso.PATH)
    if not FileSystem(path).exists(path):
        made = ""
    elif made_and_unwritten(path):
        if options.get(fso.SOURCE_MONITOR_INTERVAL) is not None:  # a watched directory may wait for its files
            log.warning(
                "%s is read from '%s', an empty directory the metastore made at CREATE TABLE: nothing was written "
                "there yet, and the read waits for files. Check the table's 'path' for a typo.",
                table.identifier,
                path,
            )
            return
        made = " (the metastore made an empty directory there at CREATE TABLE, and nothing was written into it since)"
    else:
        return
    raise FileSystemError(
        f"Table {table.identifier} is read from '{path}', which does not exist{made}. Check the table's 'path' "
        "for a typo (SHOW CREATE TABLE shows it), and that this process may see it. A table's path exists once "
        "something is written there: a sink's may be missing, a source's may not.",
        option=fso.PATH.key,
        value=path,
    )


def _read(context: SourceContext, files: Sequence[str] = (), rows: RowRanges = ()) -> DataFrame:
    """The table's files, or only ``files`` (partition columns still from their ``k=v`` directories), or only
    the ``rows`` (ranges of row indexes, parquet) of the one file in ``files``."""
    table = context.table
    options = Options(table.options)
    fmt = options.require(fso.FORMAT)
    reader_opts = reader_options(fmt, options.with_prefix(f"{fmt}."))
    if options.get(fso.SOURCE_IGNORE_CORRUPT_FILES):
        reader_opts["ignoreCorruptFiles"] = "true"
    if context.streaming:
        reader: Any = context.spark.readStream
        reader_opts["maxFileAge"] = _EVERY_FILE_AGE
        max_files = options.get(fso.SOURCE_MAX_FILES_PER_TRIGGER)
        if max_files:
            reader_opts["maxFilesPerTrigger"] = str(max_files)
    else:
        reader = context.spark.read
    path = options.require(fso.PATH)
    if files:
        reader = reader.option("basePath", path)
    paths: Any = list(files) or path
    if fmt == "csv":
        frame = _read_csv_text(context.spark, reader, table, options, reader_opts, paths)
    elif fmt == "avro":
        frame = _read_avro(context.spark, reader, table, options, reader_opts, paths)
    elif fmt == "raw":
        frame = _read_raw(reader, table, options, reader_opts, paths)
    elif fmt in ("debezium-json", "canal-json", "maxwell-json"):
        from sqlext.connectors.changelog.files import read_events

        frame = read_events(reader, table, options.with_prefix(f"{fmt}."), reader_opts, paths)
    else:
        schema = _read_schema(table)
        frame = reader.format(fmt).schema(schema).options(**reader_opts).load(paths)
    from pyspark.sql import functions as F

    from sqlext.catalog.changelog_formats import ROW_KIND

    if rows:
        frame = frame.where(_in_ranges(rows))
    pattern = options.get(fso.SOURCE_PATH_REGEX)
    if pattern:
        frame = frame.where(_file_path_of_uri().rlike(f"^(?:{pattern})$"))
    default_name = options.get(fso.PARTITION_DEFAULT_NAME)
    kind = [F.col(ROW_KIND)] if ROW_KIND in frame.columns else []  # a changelog's row kinds
    return frame.select(*(_output_column(column, table, default_name) for column in _source_columns(table)), *kind)


def _read_window(context: SourceContext, window: Window) -> DataFrame:
    """The rows committed in ``window``: the files it holds read whole, merged files in part, one union."""
    from functools import reduce

    from sqlext.connectors.filesystem.incremental.plan import plan_window

    table = context.table
    plan = plan_window(table, window)
    log.info(
        "%s: incremental read of the commits in (%s, %s]: %d file(s) whole, %d in part (merged); %d committed then "
        "and since replaced or deleted",
        table.identifier,
        window.start_ms,
        window.end_ms,
        len(plan.whole),
        len(plan.parts),
        len(plan.gone),
    )
    frames = [_read(context, plan.whole)] if plan.whole else []
    frames += [_read(context, [uri], ranges) for uri, ranges in plan.parts]
    if not frames:
        schema = ", ".join(f"`{c.name}` {_spark_type(c.type)}" for c in _source_columns(table))
        return context.spark.createDataFrame([], schema)
    return reduce(lambda left, right: left.unionByName(right), frames)


def _in_ranges(rows: RowRanges) -> SparkColumn:
    """Parquet rows whose index (Spark's ``_metadata.row_index``) is in one of the ``[start, stop)`` ranges."""
    from functools import reduce

    from pyspark.sql import functions as F

    index = F.col("_metadata.row_index")
    return reduce(lambda a, b: a | b, [(index >= start) & (index < stop) for start, stop in rows])


def reader_options(fmt: str, format_options: Mapping[str, str]) -> dict[str, str]:
    """Spark reader options from a table's format options (prefix already stripped).

    csv and json: ``field-delimiter`` -> ``sep``, ``quote-character`` -> ``quote``, ``escape-character``
    -> ``escape``, ``null-literal`` -> ``nullValue``, ``allow-comments=true`` -> ``comment='#'``,
    ``disable-quote-character=true`` -> ``quote=''``, json ``timestamp-format.standard`` ->
    ``timestampFormat``; a malformed record fails the read (``mode=FAILFAST``) as in Flink, unless
    ``ignore-parse-errors=true`` (``mode=DROPMALFORMED``). Other keys, and every parquet/orc option,
    pass through unchanged.
    """
    if fmt not in ("csv", "json"):
        return dict(format_options)
    mapped = {"mode": "FAILFAST"}
    for key, value in format_options.items():
        enabled = value.strip().lower() == "true"
        if key == "ignore-parse-errors":
            mapped["mode"] = "DROPMALFORMED" if enabled else "FAILFAST"
        elif key == "allow-comments":
            if enabled:
                mapped["comment"] = "#"
        elif key == "disable-quote-character":
            if enabled:
                mapped["quote"] = ""
        elif key == "timestamp-format.standard":
            mapped["timestampFormat"] = _JSON_TIMESTAMP_FORMATS.get(value.strip().upper(), value)
        elif key == "field-delimiter":
            mapped["sep"] = unescape_field_delimiter(value)
        else:
            mapped[_RENAMED.get(key, key)] = value
    return mapped


def _read_csv_text(
    spark: Any, reader: Any, table: TableDefinition, options: Options, reader_opts: Mapping[str, str], paths: Any
) -> DataFrame:
    """csv files parsed in the form sqlext writes (:class:`sqlext.catalog.formats.CsvTextForm`). With a quote
    character (the default) the lines are joined into records where a quoted field holds line breaks (Flink's
    csv quotes such values), in bounded memory and with large files split across tasks (see
    :mod:`sqlext.connectors.filesystem.csv_records`); without one, line by line. Columns that are ``k=v``
    directories come from the path (partition keys, and, as Spark's csv
    reader does, any other column named like such a directory). ``paths``: the table's path, or its files."""
    from pyspark.sql import functions as F

    from sqlext.catalog.csv_text import CsvTextForm

    form = CsvTextForm.from_options(options.with_prefix("csv."))
    path = options.require(fso.PATH)
    from_dirs = _directory_columns(spark, path, table)
    dir_columns = [c for c in table.physical_columns if _is_partition_key(c, table) or c.name.lower() in from_dirs]
    data = [(c.name, _spark_type(c.type)) for c in table.physical_columns if c not in dir_columns]
    schema = ", ".join(["value string", *(f"`{c.name}` string" for c in dir_columns)])
    passed = {k: v for k, v in reader_opts.items() if k in ("ignoreCorruptFiles", "maxFilesPerTrigger", "maxFileAge")}
    metadata = [F.col("_metadata").alias("_metadata")] if _reads_metadata(table, options) else []
    kept = [*(F.col(f"`{c.name}`") for c in dir_columns), *metadata]
    others = [
        F.col(f"`{c.name}`") if _is_partition_key(c, table) else F.col(f"`{c.name}`").cast(_spark_type(c.type))
        for c in dir_columns
    ]
    # A table whose columns changed holds lines of its older column counts (ALTER TABLE: schema evolution).
    accepted = file_fields(table.extra)
    if form.quote is not None:
        from sqlext.connectors.filesystem.csv_records import record_fields, records
        from sqlext.connectors.filesystem.csv_records_jvm import field_column

        files = reader.format("text").schema(schema).options(**passed, lineSep="\n").load(paths)
        hadoop = _spark_conf(spark)
        fields = record_fields(files, kept, form, hadoop, data, accepted)
        if fields is not None:
            texts = [F.col(field_column(index)) for index in range(len(data))]
            typed, parsed = form.typed_texts(texts, data)
            return _typed(fields, [*typed, *others, *metadata], parsed)
        lines = records(files, kept, form, hadoop, on_jvm=False)  # the JVM cannot run the joiner here
    else:
        lines = reader.format("text").schema(schema).options(**passed).load(paths)
    if form.allow_comments:
        lines = lines.where(~F.startswith(F.col("value"), F.lit("#")))
    plain, split = form.split(F.col("value"), len(data), accepted)
    lines = lines.select(plain.alias("__sqlext_plain"), split.alias("__sqlext_fields"), *kept)
    typed, parsed = form.typed(F.col("__sqlext_plain"), F.col("__sqlext_fields"), data, accepted)
    return _typed(lines, [*typed, *others, *metadata], parsed)


def _read_avro(
    spark: Any, reader: Any, table: TableDefinition, options: Options, reader_opts: Mapping[str, str], paths: Any
) -> DataFrame:
    """avro files read by Spark's Avro data source as the Avro types of Flink's schema, then converted to the
    table's columns (:class:`sqlext.catalog.avro_form.AvroForm`). Dates and timestamps are read as written
    (the proleptic Gregorian calendar, as Flink writes them)."""
    from pyspark.sql import functions as F

    from sqlext.catalog.avro_form import AvroForm
    from sqlext.connectors.filesystem.spark_avro import require

    require(spark, table.identifier, "read")
    data = [(c.name, c.type, c.nullable) for c in table.data_columns]
    form = AvroForm.from_options(options.with_prefix("avro."), data)
    types = form.read_schema()
    keys = [c for c in table.physical_columns if _is_partition_key(c, table)]
    schema = ", ".join([*(f"`{name}` {types[name]}" for name, _, _ in data), *(f"`{c.name}` string" for c in keys)])
    # The table's schema as Avro's reader schema: Flink's writer gives its files the schema ["null", record]
    # (a nullable row), which Spark's Avro reader takes only resolved against a record.
    opts = {**reader_opts, "datetimeRebaseMode": "CORRECTED", "avroSchema": form.schema_literal}
    files = reader.format("avro").schema(schema).options(**opts).load(paths)
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    metadata = [F.col("_metadata").alias("_metadata")] if _reads_metadata(table, options) else []
    return files.select(
        *(form.read(files[f"`{name}`"], flink, zone).alias(name) for name, flink, _ in data),
        *(F.col(f"`{c.name}`") for c in keys),
        *metadata,
    )


def _read_raw(
    reader: Any, table: TableDefinition, options: Options, reader_opts: Mapping[str, str], paths: Any
) -> DataFrame:
    """raw files as Flink's filesystem source reads a deserialization format: a record a line (split at line
    feeds, a carriage return before one dropped), its bytes the value (``raw.charset`` decodes a STRING)."""
    from pyspark.sql import functions as F

    [column] = table.data_columns
    keys = [c for c in table.physical_columns if _is_partition_key(c, table)]
    schema = ", ".join(["value string", *(f"`{c.name}` string" for c in keys)])
    passed = {k: v for k, v in reader_opts.items() if k in ("ignoreCorruptFiles", "maxFilesPerTrigger", "maxFileAge")}
    lines = reader.format("text").schema(schema).options(**passed, lineSep="\n").load(paths)
    data = lines["value"].cast("binary")
    crlf = (F.octet_length(data) > 0) & (F.substring(data, -1, 1) == F.lit(bytearray(b"\r")))
    data = F.when(crlf, F.substring(data, 1, F.octet_length(data) - 1)).otherwise(data)
    charset = options.with_prefix("raw.").get("charset", "UTF-8")
    value = data if _spark_type(column.type) == "binary" else F.decode(data, charset)
    metadata = [F.col("_metadata").alias("_metadata")] if _reads_metadata(table, options) else []
    return lines.select(value.alias(column.name), *(F.col(f"`{c.name}`") for c in keys), *metadata)


def _typed(lines: DataFrame, columns: Sequence[SparkColumn], parsed: SparkColumn | None) -> DataFrame:
    """``columns`` of ``lines``; with ``parsed`` (``csv.ignore-parse-errors``) only of the lines it holds for."""
    if parsed is None:
        return lines.select(*columns)
    return lines.select(*columns, parsed.alias("__sqlext_parsed")).where("__sqlext_parsed").drop("__sqlext_parsed")


def _reads_metadata(table: TableDefinition, options: Options) -> bool:
    """Whether the read uses ``_metadata``: for a metadata column, or to match ``source.path.regex``."""
    return any(column.metadata_key for column in table.columns) or bool(options.get(fso.SOURCE_PATH_REGEX))


def _spark_conf(spark: Any) -> dict[str, str]:
    """The session's ``spark.hadoop.*`` settings (the executors' Python reads files with them)."""
    try:
        return {k: v for k, v in dict(spark.conf.getAll).items() if k.startswith("spark.hadoop.")}
    except Exception:  # an older Connect server without GetAll
        return {}


def _directory_columns(spark: Any, path: str, table: TableDefinition) -> set[str]:
    """Lower-case names of the table's columns that Spark finds as ``k=v`` directories under ``path``.

    Spark's partition discovery takes the keys of the ``k=v`` directories between ``path`` and the files
    (the same on every path, or the read fails); so one descent along the first such directory of each
    level names them, in a listing per level rather than a Spark read of the whole tree (which ran a Spark
    job for more than 32 directories; Spark lists the files itself when the query runs). As in Spark, a
    ``_`` dir counts only with a ``=`` in its name and a ``.`` dir never. ``spark`` is unused: kept for
    the callers' signature.
    """
    from sqlext.io.fs import FileSystem, join

    names = {c.name.lower() for c in table.physical_columns}
    fs = FileSystem(path)
    found: set[str] = set()
    current = path
    while True:
        partitions = [d for d in fs.list_dirs(current) if "=" in d and not d.startswith(".")]
        if not partitions:
            break
        found.add(partitions[0].split("=", 1)[0].lower())
        current = join(current, partitions[0])
    return found & names


def _spark_type(flink_type: str) -> str:
    from sqlext.sql.types import spark_type

    return spark_type(flink_type)


def _is_partition_key(column: Column, table: TableDefinition) -> bool:
    return column.name.lower() in {key.lower() for key in table.partition_keys}


def _source_columns(table: TableDefinition) -> list[Column]:
    return [column for column in table.columns if column.is_physical or column.metadata_key]


def _read_schema(table: TableDefinition) -> str:
    """The physical columns as a Spark DDL schema; partition keys as strings (cast after NULL mapping)."""
    return ", ".join(
        f"`{c.name}` {'string' if _is_partition_key(c, table) else _spark_type(c.type)}" for c in table.physical_columns
    )


def _file_path_of_uri() -> SparkColumn:
    """The decoded path part of ``_metadata.file_path`` (a URI such as ``file:///data/t/part-0``)."""
    from pyspark.sql import functions as F

    path = F.regexp_replace(F.col("_metadata.file_path"), r"^[A-Za-z][A-Za-z0-9+.\-]*:(//[^/]*)?", "")
    return F.url_decode(F.regexp_replace(path, r"\+", "%2B"))


def _output_column(column: Column, table: TableDefinition, default_name: str) -> SparkColumn:
    from pyspark.sql import functions as F

    if column.metadata_key:
        # file.path is Flink's Path.getPath(): the decoded path, without scheme and authority
        value = (
            _file_path_of_uri()
            if column.metadata_key == "file.path"
            else F.col(f"_metadata.{METADATA_FIELDS[column.metadata_key]}")
        )
        return value.cast(_spark_type(column.type)).alias(column.name)
    value = F.col(f"`{column.name}`")
    if not _is_partition_key(column, table):
        return value
    names = {default_name, fso.HIVE_DEFAULT_PARTITION}
    as_null = F.when(value.isin(*names), F.lit(None)).otherwise(value)
    return as_null.cast(_spark_type(column.type)).alias(column.name)
