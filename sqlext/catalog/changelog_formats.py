"""The change-event formats as Flink 2.3's ``flink-json`` declares them (``DebeziumJsonFormatFactory``,
``CanalJsonFormatFactory``, ``MaxwellJsonFormatFactory``): their options, the metadata each offers (read as
``value.<key>`` by the Kafka connector; Flink's filesystem connector offers none of them), and the checks made
on the options at CREATE TABLE; and which formats' rows are a changelog (those three and Kafka's
``debezium-avro-confluent``, whose options are the Kafka connector's: :mod:`sqlext.connectors.kafka.confluent_options`).

How the row kind of a decoded row travels, whatever its format: as the column :data:`ROW_KIND` (``+I``, ``-U``,
``+U``, ``-D``, Flink's ``RowKind.shortString()``) after the table's columns (see docs/connectors.md,
"Change-event formats").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlext.errors import OptionError
from sqlext.options import BOOLEAN, STRING, ConfigOption, enum_type

DEBEZIUM, CANAL, MAXWELL = "debezium-json", "canal-json", "maxwell-json"
#: The change-event formats of flink-json, as Flink names them (their options and metadata below).
CHANGELOG_FORMATS = (DEBEZIUM, CANAL, MAXWELL)
#: Flink's Avro change-event format (``flink-avro-confluent-registry``), a Kafka value format.
DEBEZIUM_AVRO_CONFLUENT = "debezium-avro-confluent"
#: Every format whose rows are a changelog, each row with its kind in :data:`ROW_KIND`.
CHANGELOG_ROW_FORMATS = (*CHANGELOG_FORMATS, DEBEZIUM_AVRO_CONFLUENT)
#: The column that carries a row's kind, after the table's own columns.
ROW_KIND = "__sqlext_row_kind"
#: Flink's row kinds, as ``RowKind.shortString()`` prints them.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "+I", "-U", "+U", "-D"


def _common(fmt: str) -> tuple[ConfigOption[Any], ...]:
    return (
        ConfigOption(
            f"{fmt}.ignore-parse-errors",
            BOOLEAN,
            False,
            "Skip a message that cannot be parsed (malformed json, an unknown op or type, a field of another "
            "type) instead of failing.",
        ),
        ConfigOption(
            f"{fmt}.timestamp-format.standard",
            enum_type("SQL", "ISO-8601", case_sensitive=True),
            "SQL",
            "The form of TIMESTAMP and TIMESTAMP_LTZ values: 'SQL' (yyyy-MM-dd HH:mm:ss.fff) or 'ISO-8601' "
            "(yyyy-MM-ddTHH:mm:ss.fff); the reader takes either.",
        ),
        ConfigOption(
            f"{fmt}.map-null-key.mode",
            enum_type("FAIL", "DROP", "LITERAL"),
            "FAIL",
            "What the writer does with a NULL map key: FAIL, DROP the entry, or write map-null-key.literal.",
        ),
        ConfigOption(
            f"{fmt}.map-null-key.literal", STRING, "null", "The key written for a NULL map key in mode LITERAL."
        ),
        ConfigOption(
            f"{fmt}.encode.decimal-as-plain-number",
            BOOLEAN,
            False,
            "Write decimals in plain notation (0.000000027), never scientific (2.7E-8).",
        ),
        ConfigOption(f"{fmt}.encode.ignore-null-fields", BOOLEAN, False, "Leave NULL fields out of the rows written."),
    )


#: The options of each change-event format (docs/connectors.md is generated from these).
CHANGELOG_OPTIONS: dict[str, tuple[ConfigOption[Any], ...]] = {
    DEBEZIUM: (
        ConfigOption(
            f"{DEBEZIUM}.schema-include",
            BOOLEAN,
            False,
            'The messages carry Debezium\'s schema ({"schema": ..., "payload": {...}}, Kafka Connect\'s '
            "value.converter.schemas.enable).",
        ),
        *_common(DEBEZIUM),
    ),
    CANAL: (
        *_common(CANAL),
        ConfigOption(
            f"{CANAL}.database.include",
            STRING,
            None,
            "A regular expression (Java's) the whole 'database' of a message must match for it to be read.",
        ),
        ConfigOption(
            f"{CANAL}.table.include",
            STRING,
            None,
            "A regular expression (Java's) the whole 'table' of a message must match for it to be read.",
        ),
    ),
    MAXWELL: _common(MAXWELL),
}

#: The metadata each format offers: key -> (Flink type, description).
METADATA: dict[str, dict[str, tuple[str, str]]] = {
    DEBEZIUM: {
        "schema": ("STRING", "the message's schema (with schema-include)"),
        "ingestion-timestamp": ("TIMESTAMP_LTZ(3)", "ts_ms: when the connector processed the event"),
        "source.timestamp": ("TIMESTAMP_LTZ(3)", "source.ts_ms: when the change was made in the database"),
        "source.database": ("STRING", "source.db"),
        "source.schema": ("STRING", "source.schema"),
        "source.table": ("STRING", "source.table (or source.collection)"),
        "source.properties": ("MAP<STRING, STRING>", "every field of source"),
    },
    CANAL: {
        "database": ("STRING", "database"),
        "table": ("STRING", "table"),
        "sql-type": ("MAP<STRING, INT>", "sqlType"),
        "pk-names": ("ARRAY<STRING>", "pkNames"),
        "ingestion-timestamp": ("TIMESTAMP_LTZ(3)", "ts"),
        "event-timestamp": ("TIMESTAMP_LTZ(3)", "es"),
    },
    MAXWELL: {
        "database": ("STRING", "database"),
        "table": ("STRING", "table"),
        "primary-key-columns": ("ARRAY<STRING>", "primary_key_columns"),
        "ingestion-timestamp": ("TIMESTAMP_LTZ(3)", "ts (seconds, as milliseconds x 1000)"),
    },
}


def is_changelog_format(fmt: str | None) -> bool:
    """Whether ``fmt``'s rows are a changelog (+I, -U, +U, -D): one of :data:`CHANGELOG_ROW_FORMATS`."""
    return fmt in CHANGELOG_ROW_FORMATS


def check_options(fmt: str, options: Mapping[str, str], prefix: str = "") -> None:
    """Refuse a value Flink's format factory refuses; ``options``: the table's options of the format, prefix
    (``{prefix}{fmt}.``) stripped."""
    for option in CHANGELOG_OPTIONS[fmt]:
        key = option.key[len(fmt) + 1 :]
        if key in options:
            option.parse(options[key], f"{prefix}{option.key}")
    known = {option.key[len(fmt) + 1 :] for option in CHANGELOG_OPTIONS[fmt]}
    unknown = sorted(set(options) - known)
    if unknown:
        raise OptionError(
            f"Unsupported options found for '{prefix}{fmt}': {', '.join(prefix + fmt + '.' + k for k in unknown)}. "
            f"Supported options: {', '.join(prefix + o.key for o in CHANGELOG_OPTIONS[fmt])}.",
            option=f"{prefix}{fmt}.{unknown[0]}",
        )
    for regex_key in ("database.include", "table.include"):
        if regex_key in options:
            try:
                re.compile(options[regex_key])
            except re.error as exc:
                raise OptionError(
                    f"Invalid regular expression for option '{prefix}{fmt}.{regex_key}': '{options[regex_key]}' "
                    f"({exc}).",
                    option=f"{prefix}{fmt}.{regex_key}",
                    value=options[regex_key],
                ) from None
