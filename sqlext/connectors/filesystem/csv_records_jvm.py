"""The csv source's record joining on the JVM: ``CsvRecordJoiner.java``, the twin of
:class:`sqlext.connectors.filesystem.csv_records.RecordJoiner`, run by ``Dataset.mapPartitions`` in the executors'
JVMs. It gives the same records by the same rules, without sending every line to a Python worker and back (the
Python pass cost a second or more per process to start its workers, and a copy of every line and its file's path).

The class is built with the package (``sqlext-csv.jar``, :mod:`sqlext.javac`), loaded on the driver by a class loader
of its own, and added to the session's jars for the executors (``addJar``). A session without a JVM of its own
(Spark Connect), or an installation without the jar, joins records in Python instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlext import javac
from sqlext.catalog.csv_text import CsvTextForm
from sqlext.runtime import jvm_classes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

CLASS = "io.sqlext.csv.CsvRecordJoiner"
JAR = "sqlext-csv.jar"

_lock = threading.Lock()
#: SparkContext (its JVM object's id, its application) -> the joiner's class there, or None where it cannot load.
_loaded: dict[tuple[int, str], Any] = {}


def jvm_records(
    framed: DataFrame,
    width: int,
    form: CsvTextForm,
    hadoop: Mapping[str, str],
    fields: Mapping[str, str] | None = None,
) -> DataFrame | None:
    """``framed`` (the line, the carried columns, then the file and range columns) as one row per record: the
    record and the carried columns (``width`` columns in all, as the first ``width`` of ``framed``); with
    ``fields`` (:func:`field_settings`), the record's fields (named by :func:`field_column`) instead of the
    record. None when the JVM cannot run the joiner (then the caller joins in Python)."""
    joiner_class = _joiner_class(framed)
    if joiner_class is None:
        return None
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    assert form.quote is not None
    context: Any = framed.sparkSession.sparkContext
    jvm = context._jvm
    joiner = joiner_class.getDeclaredConstructor(context._gateway.new_array(jvm.java.lang.Class, 0)).newInstance(None)
    settings = {
        "more": form.record_pattern(more_text=True),
        "last": form.record_pattern(more_text=False),
        "quote": form.quote,
        "escape": form.escape,
        "width": str(width),
        **(fields or {}),
        **hadoop,
    }
    for key, value in settings.items():
        joiner.set(key, value)
    schema = _output_schema(framed, width, fields)
    encoder = jvm.org.apache.spark.sql.Encoders.row(jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()))
    # The line's bytes as the file holds them: byte offsets at range boundaries stay exact where a line is not
    # UTF-8 (a string would hold a replacement character of three bytes for each such byte).
    line = framed.columns[0]
    lines = framed.withColumn(line, framed[f"`{line}`"].cast("binary"))
    return ClassicFrame(lines._jdf.mapPartitions(joiner, encoder), framed.sparkSession)


def field_settings(
    form: CsvTextForm, types: Sequence[tuple[str, str]], accepted: tuple[int, int] | None = None
) -> dict[str, str]:
    """The settings of ``CsvFields.java``, which gives a record's fields as :meth:`CsvTextForm.split` and
    :meth:`CsvTextForm.typed` read them, as text (unquoted, unescaped; None for NULL), one per ``types`` entry,
    for :meth:`CsvTextForm.typed_texts`. It skips comments (``allow_comments``), and records with another number
    of fields than ``accepted`` allows when ``ignore_parse_errors`` (else it fails the read, naming the record)."""
    fewest, most = accepted or (len(types), len(types))
    return {
        "fields.pattern": form.field_pattern(),
        "fields.delimiter": form.delimiter,
        "fields.escape-declared": str(form.escape_declared).lower(),
        **{f"fields.null.{index}": text for index, text in enumerate(form.null_forms)},
        "fields.empty-is-null": "".join("n" if kind in ("string", "binary") else "y" for _, kind in types),
        "fields.fewest": str(fewest),
        "fields.most": str(most),
        "fields.skip-bad": str(form.ignore_parse_errors).lower(),
        "fields.comments": str(form.allow_comments).lower(),
    }


def field_column(index: int) -> str:
    """The name of a record's field ``index`` in the joiner's rows with ``fields``."""
    return f"__sqlext_field_{index}"


def _output_schema(framed: DataFrame, width: int, fields: Mapping[str, str] | None) -> StructType:
    """The joiner's rows: the record (or with ``fields`` one string per field), then the carried columns."""
    from pyspark.sql.types import StringType, StructField, StructType

    carried = framed.schema.fields[:width]
    if fields is None:
        return StructType(carried)
    texts = [StructField(field_column(index), StringType()) for index in range(len(fields["fields.empty-is-null"]))]
    return StructType([*texts, *carried[1:]])


def _joiner_class(frame: DataFrame) -> Any:
    """The joiner's class in the frame's JVM (loaded and added to the session's jars at first use), or None (no
    JVM here: Spark Connect; or no jar)."""
    if not hasattr(frame, "_jdf"):
        return None
    context = frame.sparkSession.sparkContext
    with _lock:
        key = jvm_classes.context_key(context)
        if key not in _loaded:
            _loaded[key] = _load(context)
        return _loaded[key]


def _load(context: Any) -> Any:
    try:
        jar = javac.packaged_jar(JAR)
    except javac.MissingJarError as exc:
        log.warning("csv records are joined in Python: %s", exc)
        return None
    jvm = context._jvm
    loader = jvm_classes.added_jar(context, jar, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    log.info("csv records are joined on the JVM (%s)", jar)
    return jvm.java.lang.Class.forName(CLASS, True, loader)
