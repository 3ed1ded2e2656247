"""The file formats as every HMS reader reads them back: the descriptor each format gets in the HMS
(SerDe, input/output formats, SerDe parameters), how sqlext writes its files, and how sqlext's own
source reads csv text.

What every reader of a table's HMS descriptor must read back exactly is what was written, so each
format is written in the form its Hive SerDe reads (Spark, Trino and Flink read that form too):

- **parquet**: Spark's writer with ``spark.sql.parquet.writeLegacyFormat=true`` (Hive's layout: decimals
  as fixed-length byte arrays, lists and maps as Hive 2 reads them) and INT96 timestamps, given per
  write (never the session's setting). pyarrow rewrites keep the layout of the files they merge.
- **orc**: Spark's orc writer, as is.
- **csv**: text in Hive's ``LazySimpleSerDe`` form (see :class:`CsvTextForm`): no quoting, the escape
  character before the delimiter, itself, the quote character, and ``\\n``/``\\r`` for line breaks
  (``serialization.escape.crlf``), NULL as the null literal, Hive's text forms of values.
- **json**: Spark's json writer with timestamps as ``yyyy-MM-dd HH:mm:ss.ffffff`` (what Hive's JSON
  SerDes and Flink's json ``SQL`` standard read), decimals as numbers, bytes in base64, NULL fields as
  ``null``; the HMS gets hcatalog's ``JsonSerDe`` (Hive 3/4 and Trino), Spark reads through the
  table's provider parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlext.errors import OptionError, ValidationError

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
#: The JSON SerDe Hive 3/4 (hive-hcatalog-core) and Trino both know; not shipped in pyspark's Hive 2.3 jars.
JSON_SERDE = "org.apache.hive.hcatalog.data.JsonSerDe"

#: Spark writer options that make parquet files Hive's SerDe reads (decimals, lists, maps; INT96 times).
PARQUET_WRITE_OPTIONS = {
    "spark.sql.parquet.writeLegacyFormat": "true",
    "spark.sql.parquet.outputTimestampType": "INT96",
}
#: Flink json ``timestamp-format.standard`` -> the pattern sqlext writes (Spark's, microseconds).
JSON_WRITE_TIMESTAMP_FORMATS = {
    "SQL": "yyyy-MM-dd HH:mm:ss.SSSSSS",
    "ISO-8601": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}
#: Types csv cannot hold (Flink's csv format refuses them too).
CSV_UNSUPPORTED = ("ARRAY", "MAP", "MULTISET", "ROW")


@dataclass(frozen=True)
class HiveStorage:
    """What the HMS gets for a format: SerDe, input and output formats, SerDe parameters."""

    serde: str
    input_format: str
    output_format: str
    parameters: dict[str, str]


def hive_storage(fmt: str, format_options: Mapping[str, str]) -> HiveStorage:
    """The HMS descriptor of a filesystem table in ``fmt`` (``format_options``: its ``<fmt>.*`` options,
    prefix stripped)."""
    if fmt == "parquet":
        return HiveStorage(
            "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
            "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            {},
        )
    if fmt == "orc":
        return HiveStorage(
            "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
            "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
            "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
            {},
        )
    if fmt == "json":
        return HiveStorage(JSON_SERDE, TEXT_INPUT, TEXT_OUTPUT, {})
    return HiveStorage(LAZY_SIMPLE_SERDE, TEXT_INPUT, TEXT_OUTPUT, CsvTextForm.from_options(format_options).serde())


def check_columns(fmt: str, columns: Sequence[tuple[str, str]]) -> None:
    """Refuse a column whose type the format cannot hold (``columns``: (name, Flink type))."""
    if fmt != "csv":
        return
    for name, flink_type in columns:
        if flink_type.upper().startswith(CSV_UNSUPPORTED):
            raise ValidationError(
                f"Column '{name}' has type {flink_type}, which format 'csv' cannot hold (csv holds no ARRAY, "
                "MAP, MULTISET or ROW, as in Flink). Use format 'json', 'parquet' or 'orc', or flatten the column.",
                value=flink_type,
            )


def _single_char(options: Mapping[str, str], key: str, default: str) -> str:
    value = options.get(key, default)
    if len(value) != 1:
        raise OptionError(f"Option 'csv.{key}' must be a single character, got '{value}'.", option=f"csv.{key}")
    return value


def _enabled(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


@dataclass(frozen=True)
class CsvTextForm:
    """csv text as Hive's ``LazySimpleSerDe`` writes and reads it, from a table's Flink csv options.

    - fields separated by ``field-delimiter`` (default ``,``), never quoted;
    - the escape character (``escape-character``, default ``\\``; Flink has none by default) before the
      delimiter, the escape character itself and the quote character; line feed and carriage return as
      ``\\n`` and ``\\r`` (Hive's ``serialization.escape.crlf``);
    - NULL as ``null-literal`` (default ``\\N``, Hive's; Flink writes an empty field), so an empty string
      stays an empty string;
    - values in Hive's text forms: ``true``/``false``, decimals in plain notation, dates ``yyyy-MM-dd``,
      timestamps ``yyyy-MM-dd HH:mm:ss[.f...]`` (also what Flink's csv reads), bytes in base64.

    Reading (sqlext's source) also takes what Flink's csv writes with its defaults: a field quoted with
    ``quote-character`` (``""`` inside for a quote), an empty field of a non-string column as NULL.
    """

    delimiter: str = ","
    escape: str = "\\"
    quote: str | None = '"'
    null_literal: str = "\\N"
    ignore_parse_errors: bool = False
    allow_comments: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> CsvTextForm:
        """From a table's ``csv.*`` options (prefix stripped)."""
        quote = None if _enabled(options, "disable-quote-character") else _single_char(options, "quote-character", '"')
        form = cls(
            delimiter=_single_char(options, "field-delimiter", ","),
            escape=_single_char(options, "escape-character", "\\"),
            quote=quote,
            null_literal=options.get("null-literal", "\\N"),
            ignore_parse_errors=_enabled(options, "ignore-parse-errors"),
            allow_comments=_enabled(options, "allow-comments"),
        )
        special = {"field-delimiter": form.delimiter, "escape-character": form.escape}
        if form.quote is not None:
            special["quote-character"] = form.quote
        if len(set(special.values())) != len(special) or set(special.values()) & {"\n", "\r"}:
            raise OptionError(
                "csv options: the field delimiter, escape and quote characters must differ from each other and "
                f"from line breaks; got {', '.join(f'{k}={v!r}' for k, v in special.items())}.",
                option="csv.escape-character",
            )
        return form

    def serde(self) -> dict[str, str]:
        """LazySimpleSerDe's parameters for this form."""
        return {
            "field.delim": self.delimiter,
            "serialization.format": self.delimiter,
            "escape.delim": self.escape,
            "serialization.escape.crlf": "true",
            "serialization.null.format": self.null_literal,
        }

    # -- writing ------------------------------------------------------------------------------------

    def escape_text(self, value: SparkColumn) -> SparkColumn:
        """A string column with this form's escapes (the escape character first, so none is doubled twice)."""
        from pyspark.sql import functions as F

        escaped = F.replace(value, F.lit(self.escape), F.lit(self.escape * 2))
        for special in (self.delimiter, *((self.quote,) if self.quote else ())):
            escaped = F.replace(escaped, F.lit(special), F.lit(self.escape + special))
        escaped = F.replace(escaped, F.lit("\n"), F.lit(self.escape + "n"))
        return F.replace(escaped, F.lit("\r"), F.lit(self.escape + "r"))

    def line(self, frame: DataFrame, columns: Sequence[str]) -> SparkColumn:
        """One text line per row of ``frame``: its ``columns`` in this form."""
        from pyspark.sql import functions as F

        fields = []
        types = dict(frame.dtypes)
        for name in columns:
            value = F.col(f"`{name}`")
            kind = types[name]
            if kind == "binary":  # Spark's base64 may wrap lines as MIME does; Hive's reader wants one line
                text = F.regexp_replace(F.base64(value), "[\\r\\n]", "")
            elif kind == "string":
                text = value
            else:
                text = value.cast("string")
            fields.append(F.coalesce(self.escape_text(text), F.lit(self.null_literal)))
        return F.concat_ws(self.delimiter, *fields)

    # -- reading ------------------------------------------------------------------------------------

    def _pattern(self) -> str:
        """A Java regex matching the delimiter before a field, and the field (group 1)."""
        d, e = _regex_char(self.delimiter), _regex_char(self.escape)
        unquoted = f"(?:[^{e}{d}]|{e}.)*"
        if self.quote is None:
            return f"(?s){d}({unquoted})"
        q = _regex_char(self.quote)
        return f"(?s){d}({q}(?:[^{q}]|{q}{q})*{q}(?={d}|$)|{unquoted})"

    def unescape(self, raw: SparkColumn) -> SparkColumn:
        """A raw unquoted field without its escapes (``\\n`` and ``\\r``: line breaks)."""
        from pyspark.sql import functions as F

        e = self.escape
        tokens = F.regexp_extract_all(raw, F.lit(f"(?s)({_regex_char(e)}.|.)"), 1)

        def decode(token: SparkColumn) -> SparkColumn:
            return (
                F.when(token == F.lit(e + "n"), F.lit("\n"))
                .when(token == F.lit(e + "r"), F.lit("\r"))
                .when(F.length(token) == 2, F.substring(token, 2, 1))
                .otherwise(token)
            )

        return F.when(F.instr(raw, e) == 0, raw).otherwise(F.array_join(F.transform(tokens, decode), ""))

    def parse(self, lines: SparkColumn, types: Sequence[tuple[str, str]]) -> list[SparkColumn]:
        """The typed fields of ``lines`` (text), one per ``types`` entry ((name, Spark type)); a line with
        another number of fields fails the read unless ``ignore_parse_errors`` (then its fields are NULL)."""
        from pyspark.sql import functions as F

        fields = F.regexp_extract_all(F.concat(F.lit(self.delimiter), lines), F.lit(self._pattern()), 1)
        count_ok = F.size(fields) == F.lit(len(types))
        if not self.ignore_parse_errors:
            fields = F.when(
                count_ok,
                fields,
            ).otherwise(
                F.raise_error(
                    F.concat(
                        F.lit(f"csv line has a number of fields other than {len(types)}: "), F.substring(lines, 1, 200)
                    )
                )
            )
        columns = []
        for index, (name, kind) in enumerate(types):
            raw = F.get(fields, index)
            columns.append(self._typed(raw, kind).alias(name))
        return columns

    def _typed(self, raw: SparkColumn, kind: str) -> SparkColumn:
        from pyspark.sql import functions as F

        if self.quote is not None:
            q = self.quote
            quoted = F.startswith(raw, F.lit(q)) & F.endswith(raw, F.lit(q)) & (F.length(raw) >= 2)
            inner = F.replace(F.substring(raw, 2, F.length(raw) - 2), F.lit(q * 2), F.lit(q))
            text = F.when(quoted, inner).otherwise(self.unescape(raw))
            is_null = ~quoted & (raw == F.lit(self.null_literal))
        else:
            text = self.unescape(raw)
            is_null = raw == F.lit(self.null_literal)
        if kind not in ("string", "binary"):
            is_null = is_null | (raw == F.lit(""))  # Flink writes NULL as an empty field
        if kind == "string":
            value = text
        elif kind == "binary":
            value = F.unbase64(text) if not self.ignore_parse_errors else F.try_to_binary(text, F.lit("base64"))
        elif self.ignore_parse_errors:
            value = text.try_cast(kind)
        else:
            value = text.cast(kind)
        return F.when(raw.isNull() | is_null, F.lit(None).cast(kind)).otherwise(value)


def _regex_char(char: str) -> str:
    """One character as a Java regex atom (also inside a character class)."""
    return f"\\x{{{ord(char):x}}}"


def prepare_write(
    fmt: str, format_options: Mapping[str, str], rows: DataFrame, keys: Sequence[str]
) -> tuple[DataFrame, str, dict[str, str]]:
    """The frame, Spark format and writer options that write ``rows`` in the form every reader of the
    table's HMS descriptor reads back (see the module docstring)."""
    if fmt == "parquet":
        return rows, "parquet", {**format_options, **PARQUET_WRITE_OPTIONS}
    if fmt == "csv":
        from pyspark.sql import functions as F

        form = CsvTextForm.from_options(format_options)
        data = [name for name in rows.columns if name not in keys]
        frame = rows.select(form.line(rows, data).alias("value"), *(F.col(f"`{k}`") for k in keys))
        return frame, "text", {}
    if fmt == "json":
        return rows, "json", json_write_options(format_options)
    return rows, fmt, dict(format_options)


def json_write_options(format_options: Mapping[str, str]) -> dict[str, str]:
    """Spark json writer options from a table's Flink json options."""
    standard = format_options.get("timestamp-format.standard", "SQL").strip().upper()
    pattern = JSON_WRITE_TIMESTAMP_FORMATS.get(standard)
    if pattern is None:
        raise OptionError(
            f"Invalid value for option 'json.timestamp-format.standard': '{standard}'. "
            f"Expected one of: {', '.join(JSON_WRITE_TIMESTAMP_FORMATS)}.",
            option="json.timestamp-format.standard",
            value=standard,
        )
    return {
        "timestampFormat": pattern,
        "timestampNTZFormat": pattern,
        "dateFormat": "yyyy-MM-dd",
        "ignoreNullFields": str(_enabled(format_options, "encode.ignore-null-fields")).lower(),
    }


def spark_column_types(table: Any) -> list[tuple[str, str]]:
    """(name, Spark type) of a table's physical non-partition columns."""
    from sqlext.types import spark_type

    keys = {key.lower() for key in table.partition_keys}
    return [(c.name, spark_type(c.type)) for c in table.physical_columns if c.name.lower() not in keys]
