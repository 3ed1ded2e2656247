"""A changelog written as change events, as Flink 2.3's serialization schemas write them (checked against
Flink's own output, ``tests/connectors/changelog/test_flink_changelog.py``): Flink cannot pair a ``-U`` with
its ``+U``, so an update is written as a delete of the old row and an insert of the new one. The events hold
only these fields (Flink's write no source, timestamps or ids):

- ``debezium-json``: ``{"before":null,"after":{row},"op":"c"}`` for ``+I`` and ``+U``,
  ``{"before":{row},"after":null,"op":"d"}`` for ``-U`` and ``-D``;
- ``canal-json``: ``{"data":[{row}],"type":"INSERT"}`` / ``"DELETE"``;
- ``maxwell-json``: ``{"data":{row},"type":"insert"}`` / ``"delete"``.

The row is written as sqlext's json writer writes one (:func:`sqlext.catalog.formats.json_write_options`):
timestamps by ``<format>.timestamp-format.standard``, NULL fields as ``null`` unless
``<format>.encode.ignore-null-fields`` (which, as in Flink, leaves out a null ``before`` or
``after`` too). A row without a row kind (an insert-only query) is a ``+I``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sqlext.catalog import changelog_formats as cf

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame


def event_lines(
    fmt: str, json_options: Mapping[str, str], rows: DataFrame, keys: Sequence[str]
) -> tuple[DataFrame, str, dict[str, str]]:
    """The frame (a ``value`` line an event, and the partition keys), Spark format and writer options that
    write ``rows`` (the table's columns and, for a changelog, :data:`formats.ROW_KIND`) as ``fmt``'s events;
    ``json_options``: Spark's json writer options of the format's options (``formats.json_write_options``)."""
    from pyspark.sql import functions as F

    options = dict(json_options)
    data = [name for name in rows.columns if name not in keys and name != cf.ROW_KIND]
    kind = F.col(cf.ROW_KIND) if cf.ROW_KIND in rows.columns else F.lit(cf.INSERT)
    added = kind.isin(cf.INSERT, cf.UPDATE_AFTER)
    row = F.struct(*(F.col(f"`{name}`") for name in data))
    event = _event(fmt, added, row)
    # Flink's serializer writes the envelope as one json row: ignore-null-fields leaves out a null
    # "before"/"after" as well.
    line = F.to_json(event, options)
    return rows.select(line.alias("value"), *(F.col(f"`{k}`") for k in keys)), "text", {"lineSep": "\n"}


def _event(fmt: str, added: SparkColumn, row: SparkColumn) -> SparkColumn:
    from pyspark.sql import functions as F

    null = F.lit(None)
    if fmt == cf.DEBEZIUM:
        return F.struct(
            F.when(added, null).otherwise(row).alias("before"),
            F.when(added, row).otherwise(null).alias("after"),
            F.when(added, F.lit("c")).otherwise(F.lit("d")).alias("op"),
        )
    data = F.array(row) if fmt == cf.CANAL else row
    kind = F.when(added, F.lit("insert")).otherwise(F.lit("delete"))
    return F.struct(data.alias("data"), (F.upper(kind) if fmt == cf.CANAL else kind).alias("type"))
