"""Partition time extraction (Flink's ``PartitionTimeExtractor``).

``default``: build a timestamp string from the partition values with
``partition.time-extractor.timestamp-pattern`` (``$dt $hr:00:00``; unset: the first value), then parse
it with ``partition.time-extractor.timestamp-formatter`` (Java ``DateTimeFormatter`` letters; unset:
lenient ``yyyy-M-d[ H:m[:s[.fraction]]]``, so ``2026-11-22`` and ``2026-11-22 9:00:00`` both work).
``custom``: a Python class (``partition.time-extractor.class``) implementing
:class:`PartitionTimeExtractor`. Times are local date-times (no zone), as in Flink.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from sqlext.errors import PartitionTimeError
from sqlext.loading import load_class

_LENIENT = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?\s*$")

#: Java DateTimeFormatter letters -> strptime directives (the subset partition formats use).
_JAVA_TO_STRPTIME = (
    ("yyyy", "%Y"),
    ("uuuu", "%Y"),
    ("yy", "%y"),
    ("MM", "%m"),
    ("M", "%m"),
    ("dd", "%d"),
    ("d", "%d"),
    ("HH", "%H"),
    ("H", "%H"),
    ("mm", "%M"),
    ("m", "%M"),
    ("ss", "%S"),
    ("s", "%S"),
    ("SSSSSS", "%f"),
    ("SSS", "%f"),
)


class PartitionTimeExtractor(ABC):
    """Extracts the time of a partition from its keys and values. Must be deterministic."""

    @abstractmethod
    def extract(self, keys: Sequence[str], values: Sequence[str]) -> datetime:
        """The partition's local date-time."""


def java_pattern_to_strptime(pattern: str) -> str:
    """Translate a Java date-time pattern (``yyyyMMdd``, ``yyyy-MM-dd HH:mm:ss``) to strptime form."""
    out = []
    index = 0
    while index < len(pattern):
        if pattern[index] == "'":
            end = pattern.index("'", index + 1)
            out.append(pattern[index + 1 : end].replace("%", "%%"))
            index = end + 1
            continue
        for java, directive in _JAVA_TO_STRPTIME:
            if pattern.startswith(java, index):
                out.append(directive)
                index += len(java)
                break
        else:
            out.append("%%" if pattern[index] == "%" else pattern[index])
            index += 1
    return "".join(out)


class DefaultPartitionTimeExtractor(PartitionTimeExtractor):
    """Flink's default extractor: ``timestamp-pattern`` placeholders, then ``timestamp-formatter``."""

    def __init__(self, pattern: str | None = None, formatter: str | None = None) -> None:
        self.pattern = pattern
        self.formatter = formatter
        self._strptime = java_pattern_to_strptime(formatter) if formatter else None

    def timestamp_string(self, keys: Sequence[str], values: Sequence[str]) -> str:
        if not self.pattern:
            return values[0]
        text = self.pattern
        # Longest keys first, so that $hour is not replaced as $h + "our".
        for key, value in sorted(zip(keys, values, strict=True), key=lambda kv: -len(kv[0])):
            text = text.replace(f"${key}", value)
        return text

    def extract(self, keys: Sequence[str], values: Sequence[str]) -> datetime:
        text = self.timestamp_string(keys, values)
        try:
            if self._strptime:
                return datetime.strptime(text, self._strptime)
            return _parse_lenient(text)
        except ValueError:
            spec = "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
            form = f"formatter '{self.formatter}'" if self.formatter else "the default form 'yyyy-M-d[ H:m:s]'"
            raise PartitionTimeError(
                f"Cannot extract a time from partition '{spec}': '{text}' (from timestamp-pattern "
                f"'{self.pattern or '<first partition value>'}') does not match {form}. Set "
                "'partition.time-extractor.timestamp-pattern' and/or 'timestamp-formatter' to match "
                "the partition values.",
                option="partition.time-extractor.timestamp-pattern",
                value=text,
            ) from None


def _parse_lenient(text: str) -> datetime:
    match = _LENIENT.match(text)
    if not match:
        raise ValueError(text)
    year, month, day, hour, minute, second, fraction = match.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0), micros)


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
