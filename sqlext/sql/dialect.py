"""The ``flink`` sqlglot dialect, a thin one over Spark's: ``WATERMARK FOR col AS expr``, ``METADATA [FROM
'key'] [VIRTUAL]`` columns, ``ROW<...>``/``ROW(...)``, ``MULTISET`` and ``BYTES`` types, ``TO_TIMESTAMP_LTZ``; and
the values of Flink's string literals (``'...'``, ``U&'...'``)."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import TokenType


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``METADATA [FROM 'key'] [VIRTUAL]`` of a Flink metadata column."""

    arg_types = {"this": False, "virtual": False}  # noqa: RUF012 - sqlglot's declaration style


def _to_timestamp_ltz(args: list[exp.Expr]) -> exp.Expr:
    """Flink's TO_TIMESTAMP_LTZ(epoch, precision): 0 seconds, 3 milliseconds (Flink's default: 3)."""
    scale = args[1] if len(args) > 1 else exp.Literal.number(3)
    return exp.UnixToTime(this=args[0], scale=scale)


class FlinkParser(SparkParser):
    FUNCTIONS = {**SparkParser.FUNCTIONS, "TO_TIMESTAMP_LTZ": _to_timestamp_ltz}  # noqa: RUF012
    CONSTRAINT_PARSERS = {  # noqa: RUF012
        **SparkParser.CONSTRAINT_PARSERS,
        "WATERMARK": lambda self: self.expression(
            exp.WatermarkColumnConstraint(
                this=self._match(TokenType.FOR) and self._parse_column(),
                expression=self._match(TokenType.ALIAS) and self._parse_disjunction(),
            )
        ),
        "METADATA": lambda self: self.expression(
            MetadataColumnConstraint(
                this=self._match(TokenType.FROM) and self._parse_string(),
                virtual=self._match_text_seq("VIRTUAL") or None,
            )
        ),
    }
    SCHEMA_UNNAMED_CONSTRAINTS = {*SparkParser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}  # noqa: RUF012

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        """Spark reads every ``TIMESTAMP`` as TIMESTAMPTZ; in Flink only ``WITH TIME ZONE`` is that
        (and unsupported), so a plain ``TIMESTAMP [WITHOUT TIME ZONE]`` becomes TIMESTAMP again."""
        parsed = super()._parse_types(check_func, schema, allow_identifiers, with_collation)
        if isinstance(parsed, exp.DataType) and parsed.this == exp.DType.TIMESTAMPTZ:
            words = [token.text.upper() for token in self._tokens[max(self._index - 3, 0) : self._index]]
            if words != ["WITH", "TIME", "ZONE"]:
                parsed.set("this", exp.DType.TIMESTAMP)
        return parsed


class Flink(Spark):
    """Flink SQL as far as sqlext needs it: Spark SQL plus Flink's DDL additions."""

    class Tokenizer(Spark.Tokenizer):
        # Flink's string literals: a quote is escaped by doubling it; a backslash is an ordinary character
        # ('\' is one backslash, 'a\tb' four characters). Spark's backslash escapes are not Flink SQL.
        STRING_ESCAPES = ["'"]  # noqa: RUF012
        # The SQL standard's Unicode strings, as Flink documents for special characters (U&'\0009').
        UNICODE_STRINGS = [("U&'", "'"), ("u&'", "'")]  # noqa: RUF012
        KEYWORDS = {  # noqa: RUF012
            **{k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if k != "LIST"},  # not a Flink type
            "BYTES": TokenType.VARBINARY,
            "MULTISET": TokenType.LIST,  # sqlext.sql.types reads LIST as MULTISET
            "ROW": TokenType.STRUCT,
        }

    Parser = FlinkParser


_UNICODE_ESCAPE = re.compile(r"\\(\\|[0-9A-Fa-f]{4}|\+[0-9A-Fa-f]{6})")


def unicode_string_value(text: str) -> str:
    """The value of a ``U&'...'`` literal's text: ``\\XXXX`` and ``\\+XXXXXX`` code points, ``\\\\`` a backslash."""

    def character(match: re.Match[str]) -> str:
        code = match.group(1)
        return "\\" if code == "\\" else chr(int(code.lstrip("+"), 16))

    return _UNICODE_ESCAPE.sub(character, text)


def string_literal_value(node: exp.Expr | None) -> str | None:
    """The value of a string literal (``'...'`` or ``U&'...'``), or None for anything else."""
    if isinstance(node, exp.UnicodeString):
        return unicode_string_value(node.this)
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    return None
