"""From change-event messages (one json text a message: a line of a file, a Kafka record's value) to rows
with their row kind, as Flink 2.3's ``DebeziumJsonDeserializationSchema``, ``CanalJsonDeserializationSchema``
and ``MaxwellJsonDeserializationSchema`` emit them; in Spark expressions, on the JVM.

- ``debezium-json``: ``op`` ``c`` or ``r`` -> ``+I`` of ``after``; ``u`` -> ``-U`` of ``before`` then ``+U`` of
  ``after``; ``d`` -> ``-D`` of ``before``. With ``schema-include`` the event is the message's ``payload``.
  A ``u`` or ``d`` without ``before`` fails as in Flink (its "REPLICA IDENTITY" message).
- ``canal-json``: ``type`` ``INSERT`` -> ``+I`` of each row of ``data``; ``UPDATE`` -> for each row, ``-U`` of
  the row of ``old`` laid over it (a field ``old`` does not hold is the row's), then ``+U`` of the row;
  ``DELETE`` -> ``-D`` of each row; ``CREATE`` (a DDL event) -> nothing. Messages whose ``database`` /
  ``table`` do not match ``database.include`` / ``table.include`` (whole match) are skipped.
- ``maxwell-json``: ``type`` ``insert`` / ``update`` / ``delete``, as canal's with one row in ``data``.
- an empty message (a blank line, a Kafka tombstone) is skipped, as Flink skips an empty one.
- what Flink refuses (malformed json, an unknown ``op`` or ``type``, a field that does not read as its
  column's type) fails the query with Flink's message, prefixed with the table and where the message came
  from (a file, a Kafka topic-partition-offset); with ``<format>.ignore-parse-errors`` the message is skipped.
  The failure is raised while the micro-batch is read, so nothing of that batch is written or committed.

Fields are read as json text and converted to the column's type (a number given as a string, ``"1"``, reads
as Flink's json reads it: canal writes every value so); a nested ROW, ARRAY or MAP from its json text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlext.catalog import changelog_formats as cf
from sqlext.options import is_true
from sqlext.table import Column, TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

_ROW = "map<string,string>"
#: What each format's message is read as (Spark DDL); ``__corrupt`` holds a message that is not json.
_ENVELOPES = {
    cf.DEBEZIUM: f"before {_ROW}, after {_ROW}, op string, source {_ROW}, ts_ms bigint",
    cf.CANAL: (
        f"data array<{_ROW}>, old array<{_ROW}>, type string, database string, table string, es bigint, "
        "ts bigint, pkNames array<string>, sqlType map<string,int>"
    ),
    cf.MAXWELL: f"data {_ROW}, old {_ROW}, type string, database string, table string, ts bigint, "
    "primary_key_columns array<string>",
}
_NAMES = {cf.DEBEZIUM: "Debezium", cf.CANAL: "Canal", cf.MAXWELL: "Maxwell"}
_EVENT = "__sqlext_event"
_MESSAGE = "__sqlext_message"
_SCALARS = ("tinyint", "smallint", "int", "bigint", "float", "double", "boolean", "string", "date", "timestamp")


@dataclass(frozen=True)
class ChangelogDecoding:
    """How one table's messages are decoded: the format, its options (prefix stripped) and the columns."""

    table: TableDefinition
    fmt: str
    options: Mapping[str, str]
    columns: tuple[Column, ...]

    @property
    def ignore_parse_errors(self) -> bool:
        return is_true(self.options, "ignore-parse-errors")

    def decode(
        self,
        frame: DataFrame,
        message: SparkColumn,
        location: SparkColumn,
        keep: Sequence[SparkColumn] = (),
        metadata_keys: Sequence[str] = (),
    ) -> DataFrame:
        """``frame``'s messages (the json text ``message``) as rows: every column of :attr:`columns` (by name),
        the format's metadata of ``metadata_keys`` (columns named :func:`meta_column`), the row kind
        (:data:`sqlext.catalog.changelog_formats.ROW_KIND`), and ``keep``; a key the message cannot have
        (``schema`` without ``schema-include``) is left out, read as NULL.
        ``location``: where a message came from, for errors (``file /p/part-0``)."""
        from pyspark.sql import functions as F

        text = message.alias(_MESSAGE)
        parsed = F.from_json(
            F.col(_MESSAGE), self._envelope(), {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "__corrupt"}
        )
        messages = frame.select(text, location.alias("__sqlext_location"), *keep)
        messages = messages.where(F.col(_MESSAGE).isNotNull() & (F.trim(F.col(_MESSAGE)) != ""))
        messages = messages.select("*", parsed.alias("__sqlext_parsed"))
        root = F.col("__sqlext_parsed")
        if self.fmt == cf.DEBEZIUM and is_true(self.options, "schema-include"):
            root = F.col("__sqlext_parsed.payload")
        events, event_error, included = _EVENTS[self.fmt](root, F.col(_MESSAGE), self.options)
        corrupt = F.col("__sqlext_parsed.__corrupt").isNotNull() | F.col("__sqlext_parsed").isNull()
        corrupt_text = F.format_string(f"Corrupt {_NAMES[self.fmt]} JSON message '%s'.", F.col(_MESSAGE))
        error = F.when(corrupt, corrupt_text).otherwise(event_error)
        readers = _meta_table()[self.fmt]
        if self.fmt == cf.DEBEZIUM and is_true(self.options, "schema-include"):
            readers["schema"] = lambda _: F.col("__sqlext_parsed.schema")
        metadata = {key: readers[key](root).alias(meta_column(key)) for key in metadata_keys if key in readers}
        checked = self._checked(messages.where(included | corrupt), error)
        exploded = checked.select("*", *metadata.values(), F.explode(F.when(error.isNull(), events)).alias(_EVENT))
        typed = {c.name: _typed(c) for c in self.columns}
        field_error = F.coalesce(
            *(
                F.when(_text(c).isNotNull() & typed[c.name].isNull(), F.lit(f"field '{c.name}' is not a {c.type}"))
                for c in self.columns
            ),
            F.lit(None).cast("string"),
        )
        bad_field = F.format_string(f"Corrupt {_NAMES[self.fmt]} JSON message '%s' (%s).", F.col(_MESSAGE), field_error)
        rows = exploded.select(
            "*",
            *(value.alias(name) for name, value in typed.items()),
            F.col(f"{_EVENT}.kind").alias(cf.ROW_KIND),
        )
        rows = self._checked(rows, F.when(field_error.isNotNull(), bad_field))
        return rows.drop(_EVENT, "__sqlext_parsed", _MESSAGE, "__sqlext_location")

    def _envelope(self) -> str:
        envelope = _ENVELOPES[self.fmt] + ", __corrupt string"
        if self.fmt == cf.DEBEZIUM and is_true(self.options, "schema-include"):
            return f"schema string, payload struct<{_ENVELOPES[self.fmt]}>, __corrupt string"
        return envelope

    def _checked(self, frame: DataFrame, error: SparkColumn) -> DataFrame:
        """``frame`` without the rows ``error`` holds for (``ignore-parse-errors``), or failing on the first."""
        from pyspark.sql import functions as F

        if self.ignore_parse_errors:
            return frame.where(error.isNull())
        where = F.concat(F.lit(f"Table {self.table.identifier}, "), F.col("__sqlext_location"), F.lit(": "))
        failure = F.raise_error(F.concat(where, error, F.lit(_HINT.format(fmt=self.fmt))))
        return frame.where(F.when(error.isNull(), F.lit(True)).otherwise(failure.cast("boolean")))


_HINT = " Skip such messages with '{fmt}.ignore-parse-errors' = 'true'."


def meta_column(key: str) -> str:
    """The column :meth:`ChangelogDecoding.decode` gives the format's metadata ``key`` (``source.table``)."""
    return "__sqlext_meta_" + key.replace(".", "_").replace("-", "_")


def _event(kind: str, row: SparkColumn, fallback: SparkColumn | None = None) -> SparkColumn:
    from pyspark.sql import functions as F

    return F.struct(
        F.lit(kind).alias("kind"),
        row.alias("row"),
        (fallback if fallback is not None else F.lit(None).cast(_ROW)).alias("over"),
    )


def _debezium(
    root: SparkColumn, message: SparkColumn, options: Mapping[str, str]
) -> tuple[SparkColumn, SparkColumn, SparkColumn]:
    from pyspark.sql import functions as F

    op, before, after = root.getField("op"), root.getField("before"), root.getField("after")
    events = (
        F.when(op.isin("c", "r"), F.array(_event(cf.INSERT, after)))
        .when(op == "u", F.array(_event(cf.UPDATE_BEFORE, before), _event(cf.UPDATE_AFTER, after)))
        .when(op == "d", F.array(_event(cf.DELETE, before)))
    )
    error = F.when(
        ~op.isin("c", "r", "u", "d") | op.isNull(),
        F.format_string('Unknown "op" value "%s". The Debezium JSON message is \'%s\'', op, message),
    ).when(
        before.isNull() & op.isin("u", "d"),
        F.format_string(
            'The "before" field of %s message is null, if you are using Debezium Postgres Connector, please check '
            "the Postgres table has been set REPLICA IDENTITY to FULL level.",
            F.when(op == "u", "UPDATE").otherwise("DELETE"),
        ),
    )
    return events, error, F.lit(True)


def _rows_events(
    kind_of: Callable[[str], str], names: Sequence[str]
) -> Callable[..., tuple[SparkColumn, SparkColumn, SparkColumn]]:
    """canal and maxwell: ``type`` names (insert, update, delete, and canal's create) in the format's case."""

    def events(
        root: SparkColumn, message: SparkColumn, options: Mapping[str, str]
    ) -> tuple[SparkColumn, SparkColumn, SparkColumn]:
        from pyspark.sql import functions as F

        insert, update, delete, create = (kind_of(n) for n in ("insert", "update", "delete", "create"))
        kind = root.getField("type")
        data, old = root.getField("data"), root.getField("old")
        many = names[0] == "canal"
        rows = data if many else F.array(data)
        olds = old if many else F.array(old)
        pairs = F.transform(
            rows,
            lambda row, i: F.array(
                _event(cf.UPDATE_BEFORE, F.element_at(olds, i + 1), row), _event(cf.UPDATE_AFTER, row)
            ),
        )
        known = [insert, update, delete] + ([create] if many else [])
        events = (
            F.when(kind == insert, F.transform(rows, lambda row: _event(cf.INSERT, row)))
            .when(kind == update, F.flatten(pairs))
            .when(kind == delete, F.transform(rows, lambda row: _event(cf.DELETE, row)))
            .when(kind == create, F.array().cast(f"array<struct<kind:string,row:{_ROW},over:{_ROW}>>"))
        )
        error = F.when(
            ~kind.isin(*known) | kind.isNull(),
            F.format_string(f'Unknown "type" value "%s". The {names[1]} JSON message is \'%s\'', kind, message),
        )
        included = F.lit(True)
        for key in ("database", "table"):
            pattern = options.get(f"{key}.include")
            if pattern:
                included = included & F.coalesce(root.getField(key).rlike(f"^(?:{pattern})$"), F.lit(False))
        return F.coalesce(events, F.array().cast(f"array<struct<kind:string,row:{_ROW},over:{_ROW}>>")), error, included

    return events


_EVENTS = {
    cf.DEBEZIUM: _debezium,
    cf.CANAL: _rows_events(str.upper, ("canal", "Canal")),
    cf.MAXWELL: _rows_events(str.lower, ("maxwell", "Maxwell")),
}


def _millis(column: SparkColumn) -> SparkColumn:
    from pyspark.sql import functions as F

    return F.timestamp_millis(column)


def _meta_table() -> dict[str, dict[str, Callable[[SparkColumn], SparkColumn]]]:
    from pyspark.sql import functions as F

    return {
        cf.DEBEZIUM: {
            "ingestion-timestamp": lambda r: _millis(r.getField("ts_ms")),
            "source.timestamp": lambda r: _millis(r.getField("source").getItem("ts_ms").cast("bigint")),
            "source.database": lambda r: r.getField("source").getItem("db"),
            "source.schema": lambda r: r.getField("source").getItem("schema"),
            "source.table": lambda r: F.coalesce(
                r.getField("source").getItem("table"), r.getField("source").getItem("collection")
            ),
            "source.properties": lambda r: r.getField("source"),
        },
        cf.CANAL: {
            "database": lambda r: r.getField("database"),
            "table": lambda r: r.getField("table"),
            "sql-type": lambda r: r.getField("sqlType"),
            "pk-names": lambda r: r.getField("pkNames"),
            "ingestion-timestamp": lambda r: _millis(r.getField("ts")),
            "event-timestamp": lambda r: _millis(r.getField("es")),
        },
        cf.MAXWELL: {
            "database": lambda r: r.getField("database"),
            "table": lambda r: r.getField("table"),
            "primary-key-columns": lambda r: r.getField("primary_key_columns"),
            "ingestion-timestamp": lambda r: _millis(r.getField("ts") * 1000),
        },
    }


def _text(column: Column) -> SparkColumn:
    """The json text of ``column``'s field in the event: the row's, or, for a ``-U`` of canal and maxwell, the
    row's where ``old`` (the event's ``row``) does not hold the field."""
    from pyspark.sql import functions as F

    row, over = F.col(f"{_EVENT}.row"), F.col(f"{_EVENT}.over")
    own = row.getItem(column.name)
    return F.when(
        over.isNotNull() & ~F.coalesce(F.map_contains_key(row, F.lit(column.name)), F.lit(False)),
        over.getItem(column.name),
    ).otherwise(own)


def _typed(column: Column) -> SparkColumn:
    """``column``'s value from its json text: a scalar cast (NULL if it does not read), bytes from base64, a
    ROW, ARRAY or MAP parsed as json."""
    from pyspark.sql import functions as F

    from sqlext.sql.types import spark_type

    kind = spark_type(column.type)
    text = _text(column)
    if kind == "binary":
        return F.try_to_binary(text, F.lit("base64"))
    if kind.startswith(("array", "map", "struct")):
        return F.from_json(text, kind)
    return text.try_cast(kind)
