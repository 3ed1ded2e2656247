"""Every option of the ``kafka`` connector, declared once (Flink's ``KafkaConnectorOptions``: same keys,
types and defaults). Lists are separated by ``;`` as in Flink (``'topic' = 'a;b'``)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from sqlext.connectors.kafka import confluent_options as co
from sqlext.options import (
    DURATION,
    STRING,
    ConfigOption,
    OptionType,
    enum_type,
    non_negative,
)

FORMATS = (
    "json",
    "csv",
    "raw",
    "avro-confluent",
    "debezium-avro-confluent",
    "debezium-json",
    "canal-json",
    "maxwell-json",
)
#: The formats, as the option descriptions list them (the change-event ones only as values: Flink refuses a
#: changelog key format).
VALUE_FORMATS_TEXT = ", ".join(FORMATS[:-1]) + f" or {FORMATS[-1]}"
EARLIEST, LATEST, GROUP_OFFSETS, TIMESTAMP, SPECIFIC_OFFSETS = (
    "earliest-offset",
    "latest-offset",
    "group-offsets",
    "timestamp",
    "specific-offsets",
)
UNBOUNDED = "unbounded"
STARTUP_MODES = (EARLIEST, LATEST, GROUP_OFFSETS, TIMESTAMP, SPECIFIC_OFFSETS)
BOUNDED_MODES = (UNBOUNDED, LATEST, GROUP_OFFSETS, TIMESTAMP, SPECIFIC_OFFSETS)
ALL, EXCEPT_KEY = "ALL", "EXCEPT_KEY"
SPECIFIC_OFFSETS_FORM = "partition:0,offset:42;partition:1,offset:300"


def _semicolon_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(";") if item.strip()]


def _long(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text.strip()) or not -(1 << 63) <= int(text) < 1 << 63:
        raise ValueError("a 64-bit integer")
    return int(text)


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise ValueError(f"a regular expression ({exc})") from None
    return text


LIST: OptionType[list[str]] = OptionType("List<String>", _semicolon_list, ";".join, "values separated by ';'")
LONG: OptionType[int] = OptionType("Long", _long, form="a 64-bit integer")
REGEX: OptionType[str] = OptionType("String", _regex, form="a regular expression")


def parse_specific_offsets(text: str, key: str) -> dict[int, int]:
    """``partition:0,offset:42;partition:1,offset:300`` -> {0: 42, 1: 300}; ValueError with Flink's message."""
    message = f"Invalid properties '{key}' should follow the format '{SPECIFIC_OFFSETS_FORM}', but is '{text}'."
    offsets: dict[int, int] = {}
    for pair in text.split(";"):
        match = re.fullmatch(r"partition:([+-]?\d+),offset:([+-]?\d+)", pair)
        if not match:
            raise ValueError(message)
        offsets[int(match.group(1))] = int(match.group(2))
    return offsets


TOPIC = ConfigOption(
    "topic",
    LIST,
    None,
    "Topic name(s) to read; several separated by ';' ('topic-1;topic-2'). Exactly one of topic and "
    "topic-pattern must be set.",
)
TOPIC_PATTERN = ConfigOption(
    "topic-pattern",
    REGEX,
    None,
    "A regular expression; every topic whose whole name matches is read, also topics created later (found at "
    "scan.topic-partition-discovery.interval).",
)
BOOTSTRAP_SERVERS = ConfigOption(
    "properties.bootstrap.servers", STRING, None, "Comma-separated list of Kafka brokers (host:port)."
)
GROUP_ID = ConfigOption(
    "properties.group.id",
    STRING,
    None,
    "The consumer group: its committed offsets start a 'group-offsets' read; sqlext's own source also commits "
    "each batch's end offsets to it, for monitoring only (the read position lives in Spark's checkpoint).",
)
PROPERTIES = ConfigOption(
    "properties.",
    STRING,
    None,
    "Any other client property, passed to the Kafka client with the prefix removed (e.g. "
    "'properties.security.protocol'); the connector sets the (de)serializers, enable.auto.commit and "
    "the consumer's assignment itself.",
    prefix=True,
)
FORMAT = ConfigOption(
    "format",
    enum_type(*FORMATS),
    None,
    f"The format of the record value: {VALUE_FORMATS_TEXT}. Same as value.format.",
)
VALUE_FORMAT = ConfigOption(
    "value.format",
    enum_type(*FORMATS),
    None,
    f"The format of the record value: {VALUE_FORMATS_TEXT}.",
)
KEY_FORMAT = ConfigOption(
    "key.format",
    enum_type(*FORMATS),
    None,
    "The format of the record key: json, csv, raw or avro-confluent (needs key.fields).",
)
KEY_FIELDS = ConfigOption(
    "key.fields",
    LIST,
    [],
    "Physical columns read from the record key, separated by ';' (in the key format's field order).",
)
KEY_FIELDS_PREFIX = ConfigOption(
    "key.fields-prefix",
    STRING,
    None,
    "A prefix of the key columns' names that the key format does not see (needs value.fields-include EXCEPT_KEY).",
)
VALUE_FIELDS_INCLUDE = ConfigOption(
    "value.fields-include",
    enum_type(ALL, EXCEPT_KEY),
    ALL,
    "ALL: the value holds every physical column; EXCEPT_KEY: every column but the key fields.",
)
STARTUP_MODE = ConfigOption(
    "scan.startup.mode",
    enum_type(*STARTUP_MODES),
    GROUP_OFFSETS,
    "Where a new query starts: earliest-offset, latest-offset, group-offsets (the group's committed offsets; "
    "without one, 'properties.auto.offset.reset', default none: an error), timestamp, specific-offsets. A "
    "restarted query resumes from its checkpoint instead.",
)
STARTUP_SPECIFIC_OFFSETS = ConfigOption(
    "scan.startup.specific-offsets",
    STRING,
    None,
    f"Start offsets for 'specific-offsets' mode, per partition of the single topic: '{SPECIFIC_OFFSETS_FORM}'. "
    "Other partitions start at the group's committed offset, else the earliest.",
)
STARTUP_TIMESTAMP_MILLIS = ConfigOption(
    "scan.startup.timestamp-millis",
    LONG,
    None,
    "Start time for 'timestamp' mode (epoch ms): each partition starts at its first record with a timestamp "
    "at or after it.",
)
BOUNDED_MODE = ConfigOption(
    "scan.bounded.mode",
    enum_type(*BOUNDED_MODES),
    UNBOUNDED,
    "Where the read ends: unbounded, or latest-offset, group-offsets, timestamp, specific-offsets (as for the "
    "startup mode, resolved when the query starts). Bounded, a streaming insert reads to there and ends.",
)
BOUNDED_SPECIFIC_OFFSETS = ConfigOption(
    "scan.bounded.specific-offsets",
    STRING,
    None,
    f"End offsets (exclusive) for 'specific-offsets' bounded mode: '{SPECIFIC_OFFSETS_FORM}'.",
)
BOUNDED_TIMESTAMP_MILLIS = ConfigOption(
    "scan.bounded.timestamp-millis",
    LONG,
    None,
    "End time for 'timestamp' bounded mode (epoch ms): records before it are read.",
)
DISCOVERY_INTERVAL = ConfigOption(
    "scan.topic-partition-discovery.interval",
    DURATION,
    timedelta(minutes=5),
    "How often new partitions (and, with topic-pattern, new topics) are looked for, at most once a batch; "
    "'0 ms' disables (Spark's Kafka source looks at every batch, so '0 ms' reads with sqlext's own source).",
    check=non_negative,
)

FORMAT_OPTION_PREFIXES = tuple(
    ConfigOption(f"{scope}{fmt}.", STRING, None, f"Options of the {scope or 'value '}{fmt} format.", prefix=True)
    for scope in ("", "key.", "value.")
    for fmt in FORMATS
)


def _family(option: ConfigOption[Any]) -> str:
    return f"{option.key}*" if option.prefix else option.key


#: The avro-confluent format's options, listed once under their value-format keys (the same keys work under
#: ``key.avro-confluent.``, ``value.avro-confluent.`` and ``debezium-avro-confluent.``).
CONFLUENT_OPTIONS = tuple(
    ConfigOption(
        f"{co.AVRO_CONFLUENT}.{o.key}",
        o.type,
        o.default,
        f"{o.description} Also as key.{co.AVRO_CONFLUENT}.{_family(o)}, value.{co.AVRO_CONFLUENT}.{_family(o)}, "
        f"{co.DEBEZIUM_AVRO_CONFLUENT}.{_family(o)}.",
        prefix=o.prefix,
    )
    for o in co.OPTIONS
)

REQUIRED_OPTIONS: tuple[ConfigOption[Any], ...] = (BOOTSTRAP_SERVERS,)
OPTIONAL_OPTIONS: tuple[ConfigOption[Any], ...] = (
    TOPIC,
    TOPIC_PATTERN,
    GROUP_ID,
    PROPERTIES,
    FORMAT,
    VALUE_FORMAT,
    KEY_FORMAT,
    KEY_FIELDS,
    KEY_FIELDS_PREFIX,
    VALUE_FIELDS_INCLUDE,
    STARTUP_MODE,
    STARTUP_SPECIFIC_OFFSETS,
    STARTUP_TIMESTAMP_MILLIS,
    BOUNDED_MODE,
    BOUNDED_SPECIFIC_OFFSETS,
    BOUNDED_TIMESTAMP_MILLIS,
    DISCOVERY_INTERVAL,
    *FORMAT_OPTION_PREFIXES,
    *CONFLUENT_OPTIONS,
)
