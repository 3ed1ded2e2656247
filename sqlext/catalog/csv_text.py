"""csv text as sqlext writes it and its own source reads it (:class:`CsvTextForm`).

Text in Hive's ``LazySimpleSerDe`` form: no quoting, the escape character before the delimiter, itself,
the quote character, and ``\\n``/``\\r`` for line breaks (``serialization.escape.crlf``), NULL as the null
literal (escaped when ``csv.escape-character`` is declared, as Flink's reader compares after unescaping),
Hive's text forms of values, ``TIMESTAMP_LTZ`` in UTC with ``Z`` (Flink's form).
"""

from __future__ import annotations

import base64
import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import reduce
from typing import TYPE_CHECKING, Any

from sqlext.errors import OptionError
from sqlext.options import is_true

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

#: Hive's ``timestamp.formats`` (Joda patterns) for a ``TIMESTAMP_LTZ`` written as Flink's csv and json read
#: it (UTC, ``Z``); Hive and Trino try them first and fall back to their own form for other timestamps. A
#: Joda ``S`` run reads at most as many digits as it has letters (``SSS`` failed on ``.500000Z`` in Trino),
#: so nine, for any fraction; Joda keeps milliseconds.
HIVE_LTZ_TIMESTAMP_FORMATS = "yyyy-MM-dd HH:mm:ss.SSSSSSSSSZ,yyyy-MM-dd HH:mm:ssZ"


def unescape_field_delimiter(value: str) -> str:
    """``csv.field-delimiter`` as Flink reads it: Java's backslash escapes in the value are unescaped, so
    ``'\\t'`` is a tab and ``'\\\\'`` a backslash (a lone ``'\\'`` stays a backslash)."""
    if "\\" not in value or value == "\\":
        return value
    return value.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _single_char(options: Mapping[str, str], key: str, default: str) -> str:
    value = options.get(key, default)
    if key == "field-delimiter":
        value = unescape_field_delimiter(value)
    if len(value) != 1:
        raise OptionError(f"Option 'csv.{key}' must be a single character, got '{value}'.", option=f"csv.{key}")
    return value


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
    #: Whether the table declares ``csv.escape-character``: Flink's reader then unescapes a field (quoted
    #: too) before it compares it with the null literal, so NULL is written escaped.
    escape_declared: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> CsvTextForm:
        """From a table's ``csv.*`` options (prefix stripped)."""
        quote = None if is_true(options, "disable-quote-character") else _single_char(options, "quote-character", '"')
        form = cls(
            delimiter=_single_char(options, "field-delimiter", ","),
            escape=_single_char(options, "escape-character", "\\"),
            quote=quote,
            null_literal=options.get("null-literal", "\\N"),
            ignore_parse_errors=is_true(options, "ignore-parse-errors"),
            allow_comments=is_true(options, "allow-comments"),
            escape_declared="escape-character" in options,
        )
        special = {"field-delimiter": form.delimiter, "escape-character": form.escape}
        if form.quote is not None:
            special["quote-character"] = form.quote
        if len(set(special.values())) != len(special) or set(special.values()) & {"\n", "\r"}:
            raise OptionError(
                "csv options: the field delimiter, escape and quote characters must differ from each other and "
                f"from line breaks; got {', '.join(f'csv.{k}={v!r}' for k, v in special.items())}.",
                option="csv.escape-character",
            )
        form.collisions()  # refuses a null literal that some string cannot be told apart from
        return form

    @property
    def null_text(self) -> str:
        """How NULL is written: the null literal, escaped when ``csv.escape-character`` is declared (Flink's
        csv reader unescapes a field before comparing it with the literal; the HMS gets this text)."""
        return self.standard(self.null_literal) if self.escape_declared else self.null_literal

    @property
    def null_forms(self) -> tuple[str, ...]:
        """Unquoted fields read as NULL: :attr:`null_text`, and the bare literal (Flink's writer's NULL)."""
        return tuple(dict.fromkeys((self.null_text, self.null_literal)))

    def standard(self, text: str) -> str:
        """``text`` in this form, escaped (the Python twin of :meth:`escape_text`)."""
        return "".join(self._escaped_char(c) for c in text)

    def _escaped_char(self, char: str) -> str:
        e = self.escape
        if char in (e, self.delimiter) or (self.quote is not None and char == self.quote):
            return e + char
        return {"\n": e + "n", "\r": e + "r"}.get(char, char)

    def _distinct(self, text: str) -> str | None:
        """``text`` written so that it differs from its :meth:`standard` form yet reads back the same in
        Hive and in sqlext: one more escape, before the first character Hive unescapes to itself (any
        character but ``n`` and ``r``, which Hive reads as line breaks); None if there is none."""
        for index, char in enumerate(text):
            if self._escaped_char(char) == char and char not in "nr":
                return self.standard(text[:index]) + self.escape + char + self.standard(text[index + 1 :])
        return None

    def collisions(self) -> dict[str, str]:
        """Strings whose :meth:`standard` form would read as NULL, and the form written instead."""
        found = {}
        for text in (self.null_literal, self.hive_unescape(self.null_literal)):
            if self.standard(text) in self.null_forms:
                written = self._distinct(text)
                if written is None:
                    raise OptionError(
                        f"Option 'csv.null-literal' = {self.null_literal!r}: the string {text!r} could not be "
                        "written so that it reads back as a string and not as NULL. Choose another null literal.",
                        option="csv.null-literal",
                        value=self.null_literal,
                    )
                found[text] = written
        return found

    def hive_unescape(self, text: str) -> str:
        """``text`` as Hive's ``LazySimpleSerDe`` unescapes a string (``n``/``r`` after the escape: line breaks)."""
        e, out, index = self.escape, [], 0
        while index < len(text):
            if text[index] == e and index + 1 < len(text):
                out.append({"n": "\n", "r": "\r"}.get(text[index + 1], text[index + 1]))
                index += 2
            else:
                out.append(text[index])
                index += 1
        return "".join(out)

    def serde(self) -> dict[str, str]:
        """LazySimpleSerDe's parameters for this form."""
        return {
            "field.delim": self.delimiter,
            "serialization.format": self.delimiter,
            "escape.delim": self.escape,
            "serialization.escape.crlf": "true",
            "serialization.null.format": self.null_text,
            "timestamp.formats": HIVE_LTZ_TIMESTAMP_FORMATS,
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

    def line(self, frame: DataFrame, columns: Sequence[str], ltz: Collection[str] = ()) -> SparkColumn:
        """One text line per row of ``frame``: its ``columns`` in this form (``ltz``: the ``TIMESTAMP_LTZ``
        ones, written in UTC with ``Z`` as Flink's csv reads them)."""
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
            elif name in ltz:
                text = utc_text(value)
            else:
                text = value.cast("string")
            escaped = self.escape_text(text) if self._may_need_escapes(kind) else text
            if kind == "string":
                for string, written in self.collisions().items():
                    escaped = F.when(text == F.lit(string), F.lit(written)).otherwise(escaped)
            fields.append(F.coalesce(escaped, F.lit(self.null_text)))
        return F.concat_ws(self.delimiter, *fields)

    def _may_need_escapes(self, kind: str) -> bool:
        """Whether a value of Spark type ``kind`` may, as text, hold a character this form escapes (the
        escapes of every field cost a fifth of a csv write; numbers, dates and booleans never need one
        unless a delimiter or escape character is among their characters)."""
        characters = _TEXT_CHARACTERS.get(kind.split("(", 1)[0])
        specials = {self.escape, self.delimiter, "\n", "\r", *((self.quote,) if self.quote else ())}
        return characters is None or bool(specials & set(characters))

    # -- reading ------------------------------------------------------------------------------------

    def _field(
        self, line_end: str, char: Callable[[str], str] | None = None, open_quote: bool = False, text_end: str = "\\z"
    ) -> str:
        """A Java regex matching one field, ended by the delimiter or ``line_end`` (a lookahead). Runs of
        plain characters are matched possessively, so a long value does not deepen the regex's recursion.
        ``char`` writes a character as a regex atom (default: Java's); ``open_quote`` adds, before the
        unquoted form, a quoted field whose closing quote is not in the text (it runs to ``text_end``, the
        text's end: Java's ``\\z``, Python's ``\\Z``)."""
        char = char or _regex_char
        d, e = char(self.delimiter), char(self.escape)
        unquoted = f"(?:[^{e}{d}\\r\\n]++|{e}.)*+"
        if self.quote is None:
            return unquoted
        q = char(self.quote)
        inside = f"(?:[^{q}{e}]++|{q}{q}|{e}.)*+" if self.escape_declared else f"(?:[^{q}]++|{q}{q})*+"
        unclosed = f"{q}{inside}{text_end}|" if open_quote else ""
        return f"(?:{q}{inside}{q}(?={d}|{line_end})|{unclosed}{unquoted})"

    def field_pattern(self) -> str:
        """A Java regex matching the delimiter before a field, and the field (group 1), in one record."""
        return f"(?s){_regex_char(self.delimiter)}({self._field('$')})"

    def record_pattern(self, more_text: bool = False) -> str:
        """A Java regex matching one record of a file's text (group 1), and the line break after it: a
        quoted field may hold line breaks (Flink's csv quotes such values). ``more_text``: as
        :meth:`python_record_pattern`'s."""
        end = "\\r\\n|\\n|\\r|\\z"
        field = self._field(f"(?:{end})", open_quote=more_text)
        return f"(?s)(?!\\z)({field}(?:{_regex_char(self.delimiter)}{field})*+)(?:{end})?"

    def python_record_pattern(self, more_text: bool) -> str:
        """:meth:`record_pattern` as a Python regex (the same records of the same text). ``more_text``: the
        text is a piece of a longer one, so a quoted field not closed in it takes the rest of the piece
        (a record that reaches the piece's end is the only one that more text can change)."""
        end = "\\r\\n|\\n|\\r|\\Z"
        field = self._field(f"(?:{end})", _python_regex_char, open_quote=more_text, text_end="\\Z")
        return f"(?s)(?!\\Z)({field}(?:{_python_regex_char(self.delimiter)}{field})*+)(?:{end})?"

    def unescape(self, raw: SparkColumn, quoted: bool = False) -> SparkColumn:
        """A raw field without its escapes (``\\n`` and ``\\r``: line breaks, as Hive reads them); for the
        inside of a quoted field (``quoted``) also a doubled quote character as one."""
        from pyspark.sql import functions as F

        e = _regex_char(self.escape)
        # Regular expressions rather than a function over the characters: Spark compiles them into the
        # query's generated code, where a lambda (``transform``) turned that off for the whole projection.
        # An escape starts a pair where it is the odd one of a run of escapes (the run is paired from its
        # start); such pairs before ``n`` and ``r`` become line breaks first, then every pair its second
        # character (and, inside quotes, a doubled quote one quote).
        text = raw
        for letter, line_break in (("n", "\n"), ("r", "\r")):
            text = F.regexp_replace(text, f"(?s)(?<!{e})((?:{e}{e})*+){e}{letter}", "$1" + line_break)
        if quoted and self.quote:
            q = _regex_char(self.quote)
            text = F.regexp_replace(text, f"(?s)({q}){q}|{e}(.)", "$1$2")
        else:
            text = F.regexp_replace(text, f"(?s){e}(.)", "$1")
        plain = F.instr(raw, self.escape) == 0
        if quoted and self.quote:
            plain = plain & (F.instr(raw, self.quote) == 0)
        return F.when(plain, raw).otherwise(text)

    def parse(
        self, lines: SparkColumn, types: Sequence[tuple[str, str]]
    ) -> tuple[list[SparkColumn], SparkColumn | None]:
        """:meth:`typed` of :meth:`split`, in one projection; see both. A caller that can project twice should
        (:meth:`split` first): every field repeats the split, and Spark analyses each copy at planning."""
        plain, fields = self.split(lines, len(types))
        return self.typed(plain, fields, types)

    def split(
        self, lines: SparkColumn, count: int, accepted: tuple[int, int] | None = None
    ) -> tuple[SparkColumn, SparkColumn]:
        """(whether a line is plain, its raw fields) of ``lines`` (text). A line with another number of fields
        than ``count`` fails the read, unless ``ignore_parse_errors`` (:meth:`typed` then skips it). ``accepted``:
        the fewest and most fields a line may hold instead (a table whose columns changed: a missing last field
        reads NULL, one past the last column is not read, as in Hive's SerDe). A plain line has no escape, quote
        or line break character (most lines): it is split at its delimiters, in a fraction of the time of the
        field regex."""
        from pyspark.sql import functions as F

        # One substring test per character: a regex character class over every line cost more than the split.
        specials = (self.escape, "\n", "\r", *([self.quote] if self.quote else []))
        plain = ~reduce(operator.or_, (lines.contains(F.lit(char)) for char in specials))
        split = F.split(lines, _split_literal(self.delimiter), -1)
        matched = F.regexp_extract_all(F.concat(F.lit(self.delimiter), lines), F.lit(self.field_pattern()), 1)
        fields = F.when(plain, split).otherwise(matched)
        if not self.ignore_parse_errors:
            fewest, most = accepted or (count, count)
            expected = str(count) if fewest == most else f"{fewest} to {most}"
            message = F.concat(F.lit(f"csv line without {expected} fields: "), F.substring(lines, 1, 200))
            fields = F.when(_sized(fields, count, accepted), fields).otherwise(F.raise_error(message))
        return plain, fields

    def typed(
        self,
        plain: SparkColumn,
        fields: SparkColumn,
        types: Sequence[tuple[str, str]],
        accepted: tuple[int, int] | None = None,
    ) -> tuple[list[SparkColumn], SparkColumn | None]:
        """The typed fields of :meth:`split`'s ``plain`` and ``fields``, one per ``types`` entry ((name, Spark
        type)), and, with ``ignore_parse_errors``, whether the line parsed (else None). A field that is not of
        its type fails the read; with ``ignore_parse_errors`` the line is to be skipped instead (Flink drops
        such a row), as is a line with another number of fields. An empty field is NULL in a column that is
        not a string or bytes (Flink's csv writes NULL so). ``accepted``: as :meth:`split`'s."""
        from pyspark.sql import functions as F

        parsed = _sized(fields, len(types), accepted)
        columns = []
        # A plain line's fields are cast as they are: the same values as unquoting and unescaping give.
        # Whether a line parsed is built only where it is used: as a large expression, Spark's analysis of
        # it was a noticeable part of an insert's start-up.
        for index, (name, kind) in enumerate(types):
            raw = F.get(fields, index)
            plain_null, plain_value = self._typed_plain(raw, kind)
            full_null, full_value = self._typed(raw, kind)
            null = F.lit(None).cast(kind)
            plain_column = F.when(plain_null, null).otherwise(plain_value)
            full_column = F.when(full_null, null).otherwise(full_value)
            columns.append(F.when(plain, plain_column).otherwise(full_column).alias(name))
            if self.ignore_parse_errors:
                is_null = F.when(plain, plain_null).otherwise(full_null)
                # A field past a short line's end (a column added since it was written) is NULL, and fine.
                value = F.when(plain, plain_value).otherwise(full_value)
                parsed = parsed & (raw.isNull() | is_null | value.isNotNull())
        return columns, parsed if self.ignore_parse_errors else None

    def typed_texts(
        self, texts: Sequence[SparkColumn], types: Sequence[tuple[str, str]]
    ) -> tuple[list[SparkColumn], SparkColumn | None]:
        """:meth:`typed` of fields already unquoted and unescaped, None for NULL (``CsvFields.java``, see
        ``csv_records_jvm.field_settings``): one cast each, and with ``ignore_parse_errors`` whether every value
        parsed."""
        from pyspark.sql import functions as F

        values = [self._cast(text, kind) for text, (_, kind) in zip(texts, types, strict=True)]
        columns = [value.alias(name) for value, (name, _) in zip(values, types, strict=True)]
        if not self.ignore_parse_errors:
            return columns, None
        parsed = [text.isNull() | value.isNotNull() for text, value in zip(texts, values, strict=True)]
        return columns, reduce(operator.and_, parsed, F.lit(True))

    def _typed_plain(self, raw: SparkColumn, kind: str) -> tuple[SparkColumn, SparkColumn]:
        """:meth:`_typed` of a field with no escape and no quote character: nothing to unquote or unescape."""
        from pyspark.sql import functions as F

        is_null = raw.isin(*self.null_forms)
        if kind not in ("string", "binary"):
            is_null = is_null | (raw == F.lit(""))
        return raw.isNull() | is_null, self._cast(raw, kind)

    def _typed(self, raw: SparkColumn, kind: str) -> tuple[SparkColumn, SparkColumn]:
        """(is NULL, value) of one raw field; with ``ignore_parse_errors`` a bad value is NULL, else it fails."""
        from pyspark.sql import functions as F

        if self.quote is not None:
            q = self.quote
            quoted = F.startswith(raw, F.lit(q)) & F.endswith(raw, F.lit(q)) & (F.length(raw) >= 2)
            inside = F.substring(raw, 2, F.length(raw) - 2)
            # Inside quotes Flink's csv applies the escape character only when the table declares one.
            if self.escape_declared:
                inner = self.unescape(inside, quoted=True)
            else:
                inner = F.replace(inside, F.lit(q * 2), F.lit(q))
            text = F.when(quoted, inner).otherwise(self.unescape(raw))
            is_null = ~quoted & raw.isin(*self.null_forms)
        else:
            text = self.unescape(raw)
            is_null = raw.isin(*self.null_forms)
        if kind not in ("string", "binary"):
            is_null = is_null | (raw == F.lit(""))
        return raw.isNull() | F.coalesce(is_null, F.lit(False)), self._cast(text, kind)

    def _cast(self, text: SparkColumn, kind: str) -> SparkColumn:
        """An unescaped field's text as ``kind``; with ``ignore_parse_errors`` a bad value is NULL."""
        from pyspark.sql import functions as F

        if kind == "string":
            return text
        if kind == "binary":
            return F.unbase64(text) if not self.ignore_parse_errors else F.try_to_binary(text, F.lit("base64"))
        return text.try_cast(kind) if self.ignore_parse_errors else text.cast(kind)

    def encode_value(self, value: Any, ltz: bool = False) -> str:
        """One Python value (as pyarrow gives it) in this form; the Python twin of :meth:`line` (``ltz``:
        a ``TIMESTAMP_LTZ``, written in UTC with ``Z``)."""
        if value is None:
            return self.null_text
        if isinstance(value, str):
            return self.collisions().get(value) or self.standard(value)
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, bytes):
            text = base64.b64encode(value).decode("ascii")
        elif isinstance(value, Decimal):
            text = format(value, "f")
        elif isinstance(value, datetime):
            if ltz and value.tzinfo is not None:
                value = value.astimezone(UTC)
            text = value.replace(tzinfo=None).isoformat(sep=" ")
            if "." in text:
                text = text.rstrip("0")
            text += "Z" if ltz else ""
        else:
            text = value.isoformat() if isinstance(value, date) else str(value)
        return self.standard(text)

    def encode_rows(self, rows: Any, ltz: Collection[str] = ()) -> bytes:
        """A pyarrow table as lines of this form (timestamps as wall-clock time in their column's zone;
        ``ltz``: the ``TIMESTAMP_LTZ`` columns, written in UTC with ``Z``)."""
        columns = [rows.column(i).to_pylist() for i in range(rows.num_columns)]
        is_ltz = [name in ltz for name in rows.column_names]
        lines = (
            self.delimiter.join(self.encode_value(v, zoned) for v, zoned in zip(values, is_ltz, strict=True)) + "\n"
            for values in zip(*columns, strict=True)
        )
        return "".join(lines).encode("utf-8")


def _regex_char(char: str) -> str:
    """One character as a Java regex atom (also inside a character class)."""
    return f"\\x{{{ord(char):x}}}"


def _python_regex_char(char: str) -> str:
    """One character as a Python regex atom (also inside a character class)."""
    return f"\\U{ord(char):08x}"


#: The characters that a value of a Spark type can hold as text (Spark's cast to string, and the ``Z`` of
#: :func:`utc_text`); types not here may hold any.
_TEXT_CHARACTERS = {
    **dict.fromkeys(("tinyint", "smallint", "int", "bigint"), "-0123456789"),
    **dict.fromkeys(("float", "double"), "+-.0123456789EINaefinty"),
    "decimal": "+-.0123456789E",
    "boolean": "truefals",
    "date": "+-0123456789",
    **dict.fromkeys(("timestamp", "timestamp_ntz"), "+-0123456789 :.Z"),
}


def _split_literal(char: str) -> str:
    """``char`` as the regex of Spark's ``split``, in the form Java's ``String.split`` matches without
    compiling a regex for every row: the character itself, or a backslash before a regex metacharacter."""
    return "\\" + char if char in ".$|()[{^?*+\\" else char


def utc_text(value: SparkColumn, pattern: str | None = None) -> SparkColumn:
    """A timestamp column as Flink writes a ``TIMESTAMP_LTZ`` in csv and json: UTC wall-clock time and
    ``Z`` (``pattern``: Spark's datetime pattern; default: Spark's text, trailing zeros dropped)."""
    from pyspark.sql import functions as F

    utc = F.to_utc_timestamp(value, F.current_timezone())
    return F.concat(utc.cast("string") if pattern is None else F.date_format(utc, pattern), F.lit("Z"))


def _sized(fields: SparkColumn, count: int, accepted: tuple[int, int] | None) -> SparkColumn:
    """Whether a line's ``fields`` are as many as ``count``, or within ``accepted`` (fewest, most)."""
    from pyspark.sql import functions as F

    if accepted is None:
        return F.size(fields) == F.lit(count)
    return F.size(fields).between(*accepted)
