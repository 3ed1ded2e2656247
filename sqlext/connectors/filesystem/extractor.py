"""Partition time extraction (Flink's ``PartitionTimeExtractor``).

``default``: build a timestamp string from the partition values with
``partition.time-extractor.timestamp-pattern`` (``$dt $hr:00:00``; unset: the first value), then parse
it with ``partition.time-extractor.timestamp-formatter``. ``custom``: a Python class
(``partition.time-extractor.class``) implementing :class:`PartitionTimeExtractor`. Times are local
date-times (no zone), as in Flink.

Parsing is Flink's ``DefaultPartTimeExtractor`` (checked against Flink itself in
``tests/connectors/filesystem/test_flink_conformance.py``):

- the pattern's ``$key`` placeholders are replaced in the order of the partition keys;
- without a formatter, the text must be ``y-M-d`` or ``y-M-d H:m:s[.fraction]`` (1-2 digit fields,
  nothing else around them), resolved leniently as Java does: ``2026-13-01`` is ``2027-01-01``;
- with a formatter (Java ``DateTimeFormatter`` letters ``y u M d H m s S`` and literals, ``'quoted'``
  text), fields are as wide as their letters (``MM``: two digits, ``M``: one or more), resolved as
  Java's default ``SMART`` style does (``2026-02-30`` is the last day of February, month 13 is an
  error); a pattern without a time of day gives midnight, one without a full date is an error.
"""

from __future__ import annotations

import calendar
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from sqlext.errors import OptionError, PartitionTimeError
from sqlext.loading import load_class

#: Java pattern letters sqlext's formatter understands -> the field each sets.
_FIELDS = {"y": "year", "u": "year", "M": "month", "d": "day", "H": "hour", "m": "minute", "s": "second"}
_DEFAULT_FORM = "y-M-d[ H:m:s[.fraction]]"
#: A ``$name`` left in a timestamp pattern once every partition key's placeholder is replaced.
_PLACEHOLDER = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")


class PartitionTimeExtractor(ABC):
    """Extracts the time of a partition from its keys and values. Must be deterministic."""

    @abstractmethod
    def extract(self, keys: Sequence[str], values: Sequence[str]) -> datetime:
        """The partition's local date-time."""


@dataclass(frozen=True)
class DateTimePattern:
    """A Java ``DateTimeFormatter`` pattern compiled to a regex with one group per field."""

    regex: re.Pattern[str]
    fields: tuple[str, ...]
    lenient: bool = False

    @classmethod
    def of(cls, pattern: str) -> DateTimePattern:
        """Compile ``pattern`` as ``DateTimeFormatter.ofPattern`` reads it; ValueError if it cannot."""
        parts: list[str] = []
        fields: list[str] = []
        index = 0
        while index < len(pattern):
            char = pattern[index]
            if char == "'":
                end = index + 1
                text = []
                while True:
                    if end >= len(pattern):
                        raise ValueError(f"Pattern ends with an incomplete string literal: {pattern}")
                    if pattern[end] == "'":
                        if end + 1 < len(pattern) and pattern[end + 1] == "'":
                            text.append("'")
                            end += 2
                            continue
                        break
                    text.append(pattern[end])
                    end += 1
                parts.append(re.escape("".join(text) if end > index + 1 else "'"))
                index = end + 1
                continue
            count = 1
            while index + count < len(pattern) and pattern[index + count] == char:
                count += 1
            index += count
            if char.isascii() and char.isalpha():
                parts.append(_letter_regex(char, count))
                fields.append("fraction" if char == "S" else "year2" if char in "yu" and count == 2 else _FIELDS[char])
            elif char in "[]{}#":
                raise ValueError(f"Pattern character '{char}' is not supported: {pattern}")
            else:
                parts.append(re.escape(char * count))
        return cls(re.compile("".join(parts)), tuple(fields))

    def parse(self, text: str) -> datetime:
        """The local date-time ``text`` holds (midnight when the pattern has no hour); ValueError if none."""
        match = self.regex.fullmatch(text)
        if not match:
            raise ValueError(text)
        values: dict[str, str] = {}
        for name, value in zip(self.fields, match.groups(), strict=True):
            if value is None:  # an optional section that is absent
                continue
            if name in values and values[name] != value:
                raise ValueError(text)  # Java: conflicting values for one field
            values[name] = value
        if "year2" in values:
            values["year"] = str(2000 + int(values.pop("year2")))
        if not {"year", "month", "day"} <= values.keys():
            raise ValueError(text)
        numbers = {name: int(value) for name, value in values.items() if name != "fraction"}
        micros = int(values.get("fraction", "0")[:6].ljust(6, "0"))
        if "hour" not in values and ("minute" in values or "second" in values or "fraction" in values):
            numbers.pop("minute", None), numbers.pop("second", None)  # no time of day: midnight, as Java
            micros = 0
        if "minute" not in values and ("second" in values or "fraction" in values):
            numbers.pop("hour", None), numbers.pop("second", None)
            micros = 0
        if self.lenient:
            return _resolve_lenient(numbers, micros)
        return _resolve_smart(numbers, micros)


def _letter_regex(letter: str, count: int) -> str:
    """The digits one run of a pattern letter reads (``DateTimeFormatterBuilder.appendPattern``)."""
    if letter in "yu":
        if count == 2:
            return r"(\d{2})"  # reduced two-digit year, base 2000
        return rf"(\d{{{count},19}})" if count >= 3 else r"(\d{1,19})"
    if letter == "S":
        return rf"(\d{{{count}}})"
    if letter not in _FIELDS:
        raise ValueError(f"Pattern letter '{letter}' is not supported in partition times (use y M d H m s S)")
    if count > 2:
        raise ValueError(f"Too many pattern letters: {letter * count}")
    return r"(\d{2})" if count == 2 else r"(\d{1,19})"


_DEFAULT_PATTERN = DateTimePattern(
    re.compile(r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?"),
    ("year", "month", "day", "hour", "minute", "second", "fraction"),
    lenient=True,
)


def _resolve_smart(numbers: dict[str, int], micros: int) -> datetime:
    year, month, day = numbers["year"], numbers["month"], numbers["day"]
    if not (1 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= 31):
        raise ValueError(f"{year}-{month}-{day}")
    day = min(day, calendar.monthrange(year, month)[1])  # SMART: Feb 30 is the last day of February
    hour, minute, second = numbers.get("hour", 0), numbers.get("minute", 0), numbers.get("second", 0)
    if not (0 <= minute <= 59 and 0 <= second <= 59):
        raise ValueError(f"{hour}:{minute}:{second}")
    if hour == 24 and minute == second == micros == 0:  # SMART: 24:00 is the next midnight
        return datetime.combine(date(year, month, day), time()) + timedelta(days=1)
    if not 0 <= hour <= 23:
        raise ValueError(f"{hour}:{minute}:{second}")
    return datetime(year, month, day, hour, minute, second, micros)


def _resolve_lenient(numbers: dict[str, int], micros: int) -> datetime:
    year = numbers["year"]
    months = year * 12 + numbers["month"] - 1
    year, month = divmod(months, 12)
    if not 1 <= year <= 9999:
        raise ValueError(str(year))
    start = datetime(year, month + 1, 1)
    offset = timedelta(
        days=numbers["day"] - 1,
        hours=numbers.get("hour", 0),
        minutes=numbers.get("minute", 0),
        seconds=numbers.get("second", 0),
        microseconds=micros,
    )
    try:
        return start + offset
    except OverflowError:
        raise ValueError(str(offset)) from None


class DefaultPartitionTimeExtractor(PartitionTimeExtractor):
    """Flink's default extractor: ``timestamp-pattern`` placeholders, then ``timestamp-formatter``."""

    def __init__(self, pattern: str | None = None, formatter: str | None = None) -> None:
        self.pattern = pattern
        self.formatter = formatter
        try:
            self._parser = DateTimePattern.of(formatter) if formatter else _DEFAULT_PATTERN
        except ValueError as exc:
            raise PartitionTimeError(
                f"Invalid 'partition.time-extractor.timestamp-formatter' '{formatter}': {exc}.",
                option="partition.time-extractor.timestamp-formatter",
                value=formatter,
            ) from None

    def timestamp_string(self, keys: Sequence[str], values: Sequence[str]) -> str:
        """The pattern with each ``$key`` replaced, in the order of the keys (as Flink does)."""
        if self.pattern is None:
            return values[0]
        text = self.pattern
        for key, value in zip(keys, values, strict=True):
            text = text.replace(f"${key}", value)
        return text

    def extract(self, keys: Sequence[str], values: Sequence[str]) -> datetime:
        text = self.timestamp_string(keys, values)
        try:
            return self._parser.parse(text)
        except ValueError:
            spec = "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
            form = f"formatter '{self.formatter}'" if self.formatter else f"the default form '{_DEFAULT_FORM}'"
            raise PartitionTimeError(
                f"Cannot extract a time from partition '{spec}': '{text}' (from timestamp-pattern "
                f"'{self.pattern or '<first partition value>'}') does not match {form}. Set "
                "'partition.time-extractor.timestamp-pattern' and/or 'timestamp-formatter' to match "
                "the partition values.",
                option="partition.time-extractor.timestamp-pattern",
                value=text,
            ) from None


def check_timestamp_pattern(pattern: str | None, keys: Sequence[str], table: object) -> None:
    """Refuse a ``partition.time-extractor.timestamp-pattern`` naming a ``$placeholder`` that is no partition
    key of ``table`` (``keys``): Flink replaces only the keys' placeholders and fails the running job on the
    text left, at the first partition; that is known from the DDL already."""
    if pattern is None:
        return
    text = pattern
    for key in keys:  # in the keys' order, as Flink replaces them
        text = text.replace(f"${key}", "0")
    unknown = _PLACEHOLDER.findall(text)
    if unknown:
        allowed = ", ".join(f"${key}" for key in keys) or "none: the table is not partitioned"
        raise OptionError(
            f"Table {table}: 'partition.time-extractor.timestamp-pattern' = '{pattern}' names "
            f"{', '.join(dict.fromkeys(unknown))}, which is no partition column, so no partition time could be "
            f"extracted and no partition would be committed. Its placeholders are the partition keys: {allowed}.",
            option="partition.time-extractor.timestamp-pattern",
            value=pattern,
        )


def create_extractor(
    kind: str, class_path: str | None, pattern: str | None, formatter: str | None
) -> PartitionTimeExtractor:
    """The extractor a table's ``partition.time-extractor.*`` options declare."""
    if kind == "custom":
        if not class_path:
            raise PartitionTimeError(
                "partition.time-extractor.kind is 'custom' but 'partition.time-extractor.class' is not set.",
                option="partition.time-extractor.class",
            )
        cls = load_class(class_path, PartitionTimeExtractor, "partition.time-extractor.class")
        return cls()
    return DefaultPartitionTimeExtractor(pattern, formatter)
