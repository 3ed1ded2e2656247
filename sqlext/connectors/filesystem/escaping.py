"""Partition paths as Flink's filesystem connector writes them: ``k1=v1/k2=v2`` with the escaping of
Flink's ``PartitionPathUtils`` (Hive's ``FileUtils.escapePathName`` plus ``}``).

Escaped as ``%XX`` (upper-case hex): 0x01-0x1F, ``"``, ``#``, ``%``, ``'``, ``*``, ``/``, ``:``, ``=``,
``?``, ``\\``, 0x7F, ``{``, ``}``, ``[``, ``]``, ``^``; everything else, non-ASCII too, is kept. Every
reader unescapes any ``%XX``, so Hive and Spark read Flink's extra ``%7D`` back as ``}``. No value can add
a path segment or climb out of the table dir (``..`` stays a plain name inside ``k=..``). NULL and empty
values become the table's ``partition.default-name``. The HMS keeps the unescaped values; only paths are
escaped. NUL is refused (Flink writes ``%00``): a metastore on PostgreSQL cannot store it in a value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlext.errors import ValidationError

_ESCAPED = frozenset([*range(0x01, 0x20), *b"\"#%'*/:=?\\", 0x7F, *b"{}[]^"])
#: A partition path segment longer than this is refused (most filesystems cap a name at 255 bytes).
MAX_SEGMENT_BYTES = 255


def escape_path_name(value: str) -> str:
    """Hive's ``FileUtils.escapePathName`` for one name or value."""
    if "\0" in value:
        raise ValidationError(f"Partition value {value!r} contains a NUL character, which no path may hold.")
    return "".join(f"%{ord(ch):02X}" if ord(ch) in _ESCAPED else ch for ch in value)


def unescape_path_name(text: str) -> str:
    """Inverse of :func:`escape_path_name` (``%XX`` sequences with two hex digits)."""
    out: list[str] = []
    index = 0
    while index < len(text):
        if text[index] == "%" and index + 2 < len(text) and _is_hex(text[index + 1 : index + 3]):
            out.append(chr(int(text[index + 1 : index + 3], 16)))
            index += 3
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in pair)


def partition_path(keys: Sequence[str], values: Sequence[str | None], default_name: str) -> str:
    """``k1=v1/k2=v2`` for these values, NULL/empty as ``default_name``, each segment escaped."""
    segments = []
    for key, value in zip(keys, values, strict=True):
        text = default_name if value is None or value == "" else value
        segment = f"{escape_path_name(key)}={escape_path_name(text)}"
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise ValidationError(
                f"Partition value of '{key}' is too long for a path ({len(segment.encode())} bytes after "
                f"escaping; at most {MAX_SEGMENT_BYTES}): {text[:40]!r}..."
            )
        segments.append(segment)
    return "/".join(segments)


def parse_partition_path(path: str, keys: Sequence[str]) -> list[str]:
    """The unescaped values of a ``k1=v1/k2=v2`` path, checked against the expected keys in order."""
    segments = [segment for segment in path.strip("/").split("/") if segment]
    if len(segments) != len(keys):
        raise ValidationError(f"Partition path '{path}' does not have the keys {', '.join(keys)}.")
    values = []
    for key, segment in zip(keys, segments, strict=True):
        name, sep, value = segment.partition("=")
        if not sep or unescape_path_name(name).lower() != key.lower():
            raise ValidationError(f"Partition path segment '{segment}' is not '{key}=<value>'.")
        values.append(unescape_path_name(value))
    return values


def spec_of(keys: Sequence[str], values: Sequence[str]) -> dict[str, str]:
    return dict(zip(keys, values, strict=True))


def values_in_order(keys: Sequence[str], spec: Mapping[str, str]) -> list[str]:
    return [spec[key] for key in keys]
