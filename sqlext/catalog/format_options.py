"""The checks Flink's csv and json format factories make on their options (``CsvFormatFactory``,
``JsonFormatOptionsUtil``), made at CREATE TABLE for every table of the format.

Flink makes them when a statement first uses a table (planning an INSERT or a SELECT), and only the
direction it is used in: the json decoding checks for a source, the encoding checks for a sink. sqlext
makes them all at CREATE, as a table is read and written through the same declaration.

- boolean options: ``true`` or ``false`` in any case, nothing else (no spaces), as Flink parses them;
- csv: ``csv.disable-quote-character`` = ``true`` together with ``csv.quote-character``;
- json: ``json.timestamp-format.standard`` exactly ``SQL`` or ``ISO-8601`` (case-sensitive, as Flink's);
  ``json.map-null-key.mode`` one of ``FAIL``, ``DROP``, ``LITERAL`` in any case; ``json.fail-on-missing-field``
  and ``json.ignore-parse-errors`` not both ``true``; sqlext's ``json.encode.non-finite-number.mode`` one of
  ``FAIL``, ``STRING``, ``NULL`` in any case (:mod:`sqlext.catalog.json_numbers`);
- avro (``AvroFileFormatFactory``): ``avro.codec`` one of Avro's codec names (Flink passes it to Avro's
  ``CodecFactory.fromString``; sqlext takes the names Spark's Avro writer writes, without a ``-level``);
  ``avro.timestamp_mapping.legacy`` a boolean;
- raw (``RawFormatFactory``): ``raw.charset`` a charset Spark encodes and decodes, ``raw.endianness``
  ``big-endian`` or ``little-endian``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlext.catalog.json_numbers import NON_FINITE_OPTION, non_finite_mode
from sqlext.errors import OptionError
from sqlext.options import BOOLEAN, STRING, ConfigOption, enum_type, is_true

#: json ``timestamp-format.standard``: Flink's values, compared case-sensitively as Flink does.
JSON_TIMESTAMP_STANDARDS = ("SQL", "ISO-8601")
#: json ``map-null-key.mode``: Flink's ``MapNullKeyMode`` values, in any case.
JSON_MAP_NULL_KEY_MODES = ("FAIL", "DROP", "LITERAL")
#: The boolean options of Flink's csv and json formats.
BOOLEAN_OPTIONS = {
    "csv": (
        "disable-quote-character",
        "allow-comments",
        "ignore-parse-errors",
        "write-bigdecimal-in-scientific-notation",
    ),
    "json": (
        "fail-on-missing-field",
        "ignore-parse-errors",
        "encode.decimal-as-plain-number",
        "encode.ignore-null-fields",
        "decode.json-parser.enabled",
    ),
    "avro": ("timestamp_mapping.legacy",),
}
#: ``avro.codec``: Avro's codec names (``CodecFactory``), Flink's default ``snappy``.
AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")
#: ``raw.charset``: the charsets Spark's ``encode``/``decode`` take (Flink takes any Java charset).
RAW_CHARSETS = ("US-ASCII", "ISO-8859-1", "UTF-8", "UTF-16BE", "UTF-16LE", "UTF-16", "UTF-32")
#: ``raw.endianness``: Flink's values.
RAW_ENDIANNESS = ("big-endian", "little-endian")

#: The options of the avro and raw formats, as Flink declares them, and sqlext's own json option (csv's and
#: json's others are Flink's, checked here); docs/connectors.md is generated from these.
FORMAT_OPTIONS: dict[str, tuple[ConfigOption[Any], ...]] = {
    "json": (NON_FINITE_OPTION,),
    "avro": (
        ConfigOption(
            "avro.codec",
            enum_type(*AVRO_CODECS, case_sensitive=True),
            "snappy",
            "The compression codec of the files written: null (none), deflate, snappy, bzip2, xz or zstandard "
            "(Flink also takes a level, 'deflate-5'; sqlext writes Spark's level, spark.sql.avro.*.level).",
        ),
        ConfigOption(
            "avro.timestamp_mapping.legacy",
            BOOLEAN,
            True,
            "Flink's legacy mapping of timestamps (the default): TIMESTAMP(p <= 3) as Avro's timestamp-millis, no "
            "TIMESTAMP_LTZ. 'false': TIMESTAMP(p <= 6) as local-timestamp-millis/-micros, TIMESTAMP_LTZ(p <= 6) as "
            "timestamp-millis/-micros.",
        ),
    ),
    "raw": (
        ConfigOption("raw.charset", STRING, "UTF-8", "The charset of a STRING column's lines."),
        ConfigOption(
            "raw.endianness",
            enum_type(*RAW_ENDIANNESS, case_sensitive=True),
            "big-endian",
            "Flink's byte order of numeric raw values; checked, without effect on STRING and BYTES (the types "
            "sqlext's raw holds).",
        ),
    ),
}


def check_format_options(fmt: str, options: Mapping[str, str], prefix: str = "") -> None:
    """Refuse what Flink's ``fmt`` format factory refuses; ``options``: the table's options with the
    format's prefix (``{prefix}{fmt}.``) stripped; ``prefix``: a key prefix such as Kafka's ``key.``."""
    for key in BOOLEAN_OPTIONS.get(fmt, ()):
        value = options.get(key)
        if value is not None and value.lower() not in ("true", "false"):
            raise OptionError(
                f"Invalid value for option '{prefix}{fmt}.{key}': '{value}'. Expected 'true' or 'false' (in any "
                "case, as in Flink).",
                option=f"{prefix}{fmt}.{key}",
                value=value,
            )
    if fmt == "csv":
        _check_csv(options, prefix)
    elif fmt == "json":
        _check_json(options, prefix)
    elif fmt == "avro":
        _check_avro(options, prefix)
    elif fmt == "raw":
        _check_raw(options, prefix)
    elif fmt in ("debezium-json", "canal-json", "maxwell-json"):
        from sqlext.catalog.changelog_formats import check_options

        check_options(fmt, options, prefix)


def _check_csv(options: Mapping[str, str], prefix: str) -> None:
    if is_true(options, "disable-quote-character") and "quote-character" in options:
        raise OptionError(
            f"Options '{prefix}csv.disable-quote-character' = 'true' and '{prefix}csv.quote-character' cannot be "
            "set together (Flink refuses them too): drop one of them.",
            option=f"{prefix}csv.quote-character",
            value=options["quote-character"],
        )


def _check_json(options: Mapping[str, str], prefix: str) -> None:
    standard = options.get("timestamp-format.standard")
    if standard is not None and standard not in JSON_TIMESTAMP_STANDARDS:
        raise OptionError(
            f"Unsupported value '{standard}' for option '{prefix}json.timestamp-format.standard'. Supported values "
            f"are {', '.join(JSON_TIMESTAMP_STANDARDS)} (in that case, as in Flink).",
            option=f"{prefix}json.timestamp-format.standard",
            value=standard,
        )
    mode = options.get("map-null-key.mode")
    if mode is not None and mode.upper() not in JSON_MAP_NULL_KEY_MODES:
        raise OptionError(
            f"Unsupported value '{mode}' for option '{prefix}json.map-null-key.mode'. Supported values are "
            f"{', '.join(JSON_MAP_NULL_KEY_MODES)}.",
            option=f"{prefix}json.map-null-key.mode",
            value=mode,
        )
    if is_true(options, "fail-on-missing-field") and is_true(options, "ignore-parse-errors"):
        raise OptionError(
            f"Options '{prefix}json.fail-on-missing-field' and '{prefix}json.ignore-parse-errors' cannot both be "
            "'true' (Flink refuses them too): a missing field would both fail and be skipped.",
            option=f"{prefix}json.fail-on-missing-field",
            value="true",
        )
    non_finite_mode(options, prefix)


def _check_avro(options: Mapping[str, str], prefix: str) -> None:
    codec = options.get("codec")
    if codec is not None and codec not in AVRO_CODECS:
        level = codec.split("-", 1)[0] in AVRO_CODECS
        raise OptionError(
            f"Unsupported value '{codec}' for option '{prefix}avro.codec'. Supported values are "
            f"{', '.join(AVRO_CODECS)}"
            + (
                " (Spark's Avro writer takes the level from the session: spark.sql.avro.deflate.level, "
                "spark.sql.avro.xz.level, spark.sql.avro.zstandard.level)."
                if level
                else "."
            ),
            option=f"{prefix}avro.codec",
            value=codec,
        )


def _check_raw(options: Mapping[str, str], prefix: str) -> None:
    charset = options.get("charset")
    if charset is not None and charset.upper() not in RAW_CHARSETS:
        raise OptionError(
            f"Unsupported '{charset}' charset for option '{prefix}raw.charset'. Supported charsets are "
            f"{', '.join(RAW_CHARSETS)} (Spark's encode and decode).",
            option=f"{prefix}raw.charset",
            value=charset,
        )
    endianness = options.get("endianness")
    if endianness is not None and endianness not in RAW_ENDIANNESS:
        raise OptionError(
            f"Unsupported endianness name '{endianness}' for option '{prefix}raw.endianness'. Supported values "
            f"are {', '.join(RAW_ENDIANNESS)}.",
            option=f"{prefix}raw.endianness",
            value=endianness,
        )
