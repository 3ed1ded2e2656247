"""The checks Flink's csv and json format factories make on their options (``CsvFormatFactory``,
``JsonFormatOptionsUtil``), made at CREATE TABLE for every table of the format.

Flink makes them when a statement first uses a table (planning an INSERT or a SELECT), and only the
direction it is used in: the json decoding checks for a source, the encoding checks for a sink. sqlext
makes them all at CREATE, as a table is read and written through the same declaration.

- boolean options: ``true`` or ``false`` in any case, nothing else (no spaces), as Flink parses them;
- csv: ``csv.disable-quote-character`` = ``true`` together with ``csv.quote-character``;
- json: ``json.timestamp-format.standard`` exactly ``SQL`` or ``ISO-8601`` (case-sensitive, as Flink's);
  ``json.map-null-key.mode`` one of ``FAIL``, ``DROP``, ``LITERAL`` in any case; ``json.fail-on-missing-field``
  and ``json.ignore-parse-errors`` not both ``true``.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlext.errors import OptionError

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


def _enabled(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


def _check_csv(options: Mapping[str, str], prefix: str) -> None:
    if _enabled(options, "disable-quote-character") and "quote-character" in options:
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
    if _enabled(options, "fail-on-missing-field") and _enabled(options, "ignore-parse-errors"):
        raise OptionError(
            f"Options '{prefix}json.fail-on-missing-field' and '{prefix}json.ignore-parse-errors' cannot both be "
            "'true' (Flink refuses them too): a missing field would both fail and be skipped.",
            option=f"{prefix}json.fail-on-missing-field",
            value="true",
        )
