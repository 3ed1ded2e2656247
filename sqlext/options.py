"""Typed option declarations, in the spirit of Flink's ``ConfigOption``.

Each option is declared once, with key, type, default and description; validation, the generated
options reference and the code that reads options all come from that one declaration. Values are
written as Flink writes them: durations ``'10 s'``, ``'1 min'``, ``'1 h'``, ``'2 d'``, ``'100ms'``;
memory sizes ``'128MB'``, ``'1 gb'``; booleans ``'true'``/``'false'``; lists comma-separated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta, timezone, tzinfo
from typing import Any, Generic, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlext.errors import OptionError, did_you_mean

T = TypeVar("T")

_DURATION_UNITS: dict[str, float] = {}
_duration_names: tuple[tuple[tuple[str, ...], float], ...] = (
    (("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1e-9),
    (("us", "µs", "micro", "micros", "microsecond", "microseconds"), 1e-6),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), 1e-3),
    (("s", "sec", "secs", "second", "seconds"), 1.0),
    (("min", "m", "minute", "minutes"), 60.0),
    (("h", "hour", "hours"), 3600.0),
    (("d", "day", "days"), 86400.0),
)
for _names, _seconds in _duration_names:
    for _name in _names:
        _DURATION_UNITS[_name] = _seconds

_MEMORY_UNITS: dict[str, int] = {}
for _names, _bytes in (
    (("b", "bytes"), 1),
    (("k", "kb", "kibibytes"), 1 << 10),
    (("m", "mb", "mebibytes"), 1 << 20),
    (("g", "gb", "gibibytes"), 1 << 30),
    (("t", "tb", "tebibytes"), 1 << 40),
):
    for _name in _names:
        _MEMORY_UNITS[_name] = _bytes

#: Flink's ``TimeUtils.parseDuration`` / ``MemorySize.parse``: whole numbers only, unit optional.
_AMOUNT = re.compile(r"^\s*(\d+)\s*([a-zA-Zµ]*)\s*$")
_INTEGER = re.compile(r"^[+-]?\d+$")

ZONE_FORM = "a Time Zone Database (TZDB) id such as 'America/Los_Angeles', a fixed offset such as 'GMT-03:00', or 'UTC'"
DURATION_FORM = "a duration such as '100ms', '10 s', '1 min', '1 h' or '2 d' (a number without unit is ms)"
MEMORY_FORM = "a memory size such as '512kb', '128MB' or '1 gb' (a number without unit is bytes)"

#: Longest duration accepted. Flink takes any Java Duration, but a delay or interval past a century only
#: means "never", and partition time plus a longer one would overflow the calendar.
MAX_DURATION = timedelta(days=36_500)
#: Largest memory size and integer, as in Flink: a Java long of bytes, a Java int.
MAX_MEMORY_SIZE = (1 << 63) - 1
INT_RANGE = (-(1 << 31), (1 << 31) - 1)


def parse_duration(text: str) -> timedelta:
    """Parse a Flink duration (``'10 s'``, ``'1 min'``, ``'100ms'``; a bare number is milliseconds)."""
    match = _AMOUNT.match(text)
    if not match:
        raise ValueError(DURATION_FORM)
    amount, unit = int(match.group(1)), match.group(2).lower()
    if unit and unit not in _DURATION_UNITS:
        raise ValueError(DURATION_FORM)
    try:
        seconds = amount * (_DURATION_UNITS[unit] if unit else 1e-3)
    except OverflowError:  # a 400-digit number
        seconds = float("inf")
    if not seconds <= MAX_DURATION.total_seconds():
        raise ValueError(f"{DURATION_FORM}, at most {format_duration(MAX_DURATION)} (100 years)")
    return timedelta(seconds=seconds)


def parse_memory_size(text: str) -> int:
    """Parse a Flink memory size into bytes (``'128MB'``, ``'1 gb'``; a bare number is bytes)."""
    match = _AMOUNT.match(text)
    if not match:
        raise ValueError(MEMORY_FORM)
    amount, unit = int(match.group(1)), match.group(2).lower()
    if unit and unit not in _MEMORY_UNITS:
        raise ValueError(MEMORY_FORM)
    size = amount * (_MEMORY_UNITS[unit] if unit else 1)
    if size > MAX_MEMORY_SIZE:
        raise ValueError(f"{MEMORY_FORM}, less than 8 EiB (a 64-bit number of bytes)")
    if size <= 0:
        raise ValueError(MEMORY_FORM + ", greater than 0")
    return size


def format_duration(value: timedelta) -> str:
    """The shortest Flink form of a duration: ``'1 h'``, ``'90 s'``, ``'100 ms'``."""
    millis = round(value.total_seconds() * 1000)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if millis and millis % size == 0:
            return f"{millis // size} {unit}"
    return f"{millis} ms"


def format_memory_size(value: int) -> str:
    """The shortest Flink form of a memory size: ``'128mb'``, ``'1gb'``, ``'100b'``."""
    for unit, size in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if value % size == 0:
            return f"{value // size}{unit}"
    return f"{value}b"


_GMT_OFFSET = re.compile(r"^GMT([+-])(\d{1,2})(?::?(\d{2}))?$")


def parse_zone_id(text: str) -> tzinfo:
    """A time zone id as Flink's filesystem connector takes one (``java.util.TimeZone`` and
    ``java.time.ZoneId`` must agree on it): a TZDB id such as ``'Asia/Shanghai'`` or ``'UTC'`` (exact
    case), or a fixed offset ``'GMT+8'``, ``'GMT-03:00'``. ValueError for anything else (``'Z'``,
    ``'+08:00'``, ``'UTC+8'``, ``'utc'``)."""
    offset = _GMT_OFFSET.match(text)
    if offset:
        sign, hours, minutes = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hours > 18 or minutes > 59 or (hours == 18 and minutes):
            raise ValueError(ZONE_FORM)
        delta = timedelta(hours=hours, minutes=minutes)
        return timezone(-delta if sign == "-" else delta)
    if text != text.strip() or not text or text.startswith(("/", ".")) or ".." in text:
        raise ValueError(ZONE_FORM)
    try:
        zone = ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(ZONE_FORM) from None
    if text not in _zone_ids() or text in _JAVA_SHORT_IDS:
        # Not a region Java knows, or one of Java's old three-letter ids (TimeZone maps 'EST' to -05:00,
        # ZoneId to the region EST, so Flink refuses them).
        raise ValueError(ZONE_FORM)
    return zone


def _zone_ids() -> set[str]:
    from zoneinfo import available_timezones

    global _ZONE_IDS
    if _ZONE_IDS is None:
        _ZONE_IDS = available_timezones() | {"UTC", "GMT"}
    return _ZONE_IDS


_ZONE_IDS: set[str] | None = None
#: ``java.time.ZoneId.SHORT_IDS``.
_JAVA_SHORT_IDS = frozenset(
    [
        "EST",
        "MST",
        "HST",
        "ACT",
        "AET",
        "AGT",
        "ART",
        "AST",
        "BET",
        "BST",
        "CAT",
        "CNT",
        "CST",
        "CTT",
        "EAT",
        "ECT",
        "IET",
        "IST",
        "JST",
        "MIT",
        "NET",
        "NST",
        "PLT",
        "PNT",
        "PRT",
        "PST",
        "SST",
        "VST",
    ]
)


def _parse_bool(text: str) -> bool:
    lowered = text.lower()  # Flink: equalsIgnoreCase, no trimming
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("'true' or 'false'")


def is_true(raw: Mapping[str, str], key: str) -> bool:
    """Whether a raw boolean format option is ``true`` (any case, spaces around); unset or another value: false
    (the value was checked where the options were validated)."""
    return raw.get(key, "false").strip().lower() == "true"


def _parse_int(text: str) -> int:
    low, high = INT_RANGE
    if not _INTEGER.fullmatch(text):  # Java's Integer.parseInt: no spaces, no '_', no '.'
        raise ValueError("an integer")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"an integer from {low} to {high} (a 32-bit integer, as in Flink)")
    return value


def _parse_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


@dataclass(frozen=True)
class OptionType(Generic[T]):
    """A value type: its name in docs, how to parse it, how to print a value back."""

    name: str
    parse: Callable[[str], T]
    render: Callable[[T], str] = str
    form: str = ""


STRING: OptionType[str] = OptionType("String", lambda text: text, form="any string")
INT: OptionType[int] = OptionType("Integer", _parse_int, form="an integer")
BOOLEAN: OptionType[bool] = OptionType("Boolean", _parse_bool, lambda v: str(v).lower(), "'true' or 'false'")
DURATION: OptionType[timedelta] = OptionType("Duration", parse_duration, format_duration, DURATION_FORM)
MEMORY_SIZE: OptionType[int] = OptionType("MemorySize", parse_memory_size, format_memory_size, MEMORY_FORM)
LIST: OptionType[list[str]] = OptionType("List<String>", _parse_list, ",".join, "a comma-separated list")


def enum_type(*choices: str, case_sensitive: bool = False) -> OptionType[str]:
    """An option whose value is one of ``choices``, returned as declared. Compared case-insensitively
    as Flink compares an enum option's value, or exactly for options Flink declares as strings and
    compares itself (``case_sensitive``); never trimmed, as in Flink."""

    def parse(text: str) -> str:
        for choice in choices:
            if text == choice or (not case_sensitive and text.lower() == choice.lower()):
                return choice
        raise ValueError(f"one of {', '.join(repr(c) for c in choices)}{did_you_mean(text, choices, '.')}")

    return OptionType("Enum", parse, form=f"one of {', '.join(choices)}")


def enum_list_type(*choices: str) -> OptionType[list[str]]:
    """A comma-separated list whose every item is one of ``choices``."""
    item = enum_type(*choices)
    return OptionType(
        "List<Enum>",
        lambda text: [item.parse(part) for part in _parse_list(text)],
        ",".join,
        f"a comma-separated list of {', '.join(choices)}",
    )


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One option: key, type, default (None: no default) and description.

    ``prefix=True`` declares a family (e.g. ``fields.#.kind`` or ``parquet.``) whose keys start with
    the key; ``check`` adds a constraint beyond the type (a range, a time zone id); ``fallback_keys`` are
    other names of the option (Flink's ``withFallbackKeys``: read when the key itself is not set).
    """

    key: str
    type: OptionType[T]
    default: T | None = None
    description: str = ""
    prefix: bool = False
    check: Callable[[T], str | None] | None = field(default=None, compare=False)
    fallback_keys: tuple[str, ...] = ()

    def parse(self, raw: str, key: str | None = None) -> T:
        """Parse a raw value, raising :class:`OptionError` naming option, value and accepted form."""
        name = key or self.key
        try:
            value = self.type.parse(raw)
        except ValueError as exc:
            raise OptionError(
                f"Invalid value for option '{name}': '{raw}'. {expected(exc)}", option=name, value=raw
            ) from None
        problem = self.check(value) if self.check else None
        if problem:
            raise OptionError(f"Invalid value for option '{name}': '{raw}'. {problem}", option=name, value=raw)
        return value

    def matches(self, key: str) -> bool:
        """Whether ``key`` is this option, by its key or a fallback key (or one of its family, for a prefix
        option)."""
        return key.startswith(self.key) if self.prefix else key == self.key or key in self.fallback_keys

    def key_in(self, raw: Mapping[str, str]) -> str | None:
        """The key under which ``raw`` sets this option: its own key first, then its fallback keys in order."""
        return next((key for key in (self.key, *self.fallback_keys) if key in raw), None)

    @property
    def default_text(self) -> str:
        """The default as written in DDL, or ``(none)``."""
        return "(none)" if self.default is None else self.type.render(self.default)


def expected(form: object) -> str:
    """``Expected <form>.``: the sentence naming what a value must be (``form`` from a parse error), with one
    full stop however the form ends (an enum's ends in its "Did you mean 'x'?")."""
    text = str(form).rstrip()
    return f"Expected {text}" if text.endswith((".", "?", "!")) else f"Expected {text}."


def positive(value: Any) -> str | None:
    """Constraint: a number, or a duration, greater than zero."""
    amount = value.total_seconds() if isinstance(value, timedelta) else value
    return None if amount > 0 else "It must be greater than 0."


def parallelism(value: int) -> str | None:
    """Constraint of a parallelism: at least 1, or -1 for the default (Flink's PARALLELISM_DEFAULT)."""
    return None if value >= 1 or value == -1 else "It must be at least 1, or -1 for the default."


def non_negative(value: Any) -> str | None:
    """Constraint: a number, or a duration, zero or greater."""
    amount = value.total_seconds() if isinstance(value, timedelta) else value
    return None if amount >= 0 else "It must not be negative."


class Options:
    """Raw ``WITH`` options of a table, read through their declarations."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = dict(raw)

    def get(self, option: ConfigOption[T]) -> T:
        """The parsed value of a declared option (set by its key or a fallback key), or its default (which may
        be None)."""
        key = option.key_in(self.raw)
        if key is not None:
            return option.parse(self.raw[key], key)
        return option.default  # type: ignore[return-value]

    def require(self, option: ConfigOption[T]) -> T:
        """The parsed value of an option that must be set (or have a default)."""
        value = self.get(option)
        if value is None:
            raise OptionError(f"Missing required option '{option.key}'.", option=option.key)
        return value

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """The raw options whose keys start with ``prefix``, prefix stripped."""
        return {key[len(prefix) :]: value for key, value in self.raw.items() if key.startswith(prefix)}


def validate(
    identifier: str,
    raw: Mapping[str, str],
    required: Sequence[ConfigOption[Any]],
    optional: Sequence[ConfigOption[Any]],
    ignored_keys: Iterable[str] = ("connector",),
) -> None:
    """Check raw options against declarations, in Flink's order and with Flink's wording.

    1. required options that are missing ("One or more required options are missing. ...");
    2. values that do not parse or break a constraint ("Invalid value for option 'k': 'v'. Expected ...");
    3. keys no declaration knows ("Unsupported options found for 'x'. ... Supported options: ..."), each
       with the closest supported key when one is close, named first (before the lists).

    Keys of prefix declarations (``csv.``, ``fields.``) are not parsed here: their connector checks them.
    """
    declared = [*required, *optional]
    missing = sorted(option.key for option in required if option.key_in(raw) is None)
    if missing:
        raise OptionError(
            "One or more required options are missing.\n\nMissing required options are:\n\n" + "\n".join(missing),
            option=missing[0],
        )
    for key, value in raw.items():
        for option in declared:
            if not option.prefix and option.matches(key):
                option.parse(value, key)
    ignored = set(ignored_keys)
    unknown = sorted(key for key in raw if key not in ignored and not any(o.matches(key) for o in declared))
    if unknown:
        raise OptionError(
            _unsupported_message(identifier, unknown, declared, ignored), option=unknown[0], value=raw[unknown[0]]
        )


def _unsupported_message(
    identifier: str, unknown: Sequence[str], declared: Sequence[ConfigOption[Any]], ignored: Iterable[str]
) -> str:
    supported = sorted({*ignored, *(option.key + ("*" if option.prefix else "") for option in declared)})
    keys = [option.key for option in declared if not option.prefix]
    # The closest key first, before Flink's full lists: a typo's fix is what a reader needs.
    hints = [f"'{key}':{hint}" for key in unknown if (hint := did_you_mean(key, keys))]
    return (
        f"Unsupported options found for '{identifier}'."
        + ("".join(f"\n{hint}" for hint in hints))
        + "\n\nUnsupported options:\n\n"
        + "\n".join(unknown)
        + "\n\nSupported options:\n\n"
        + "\n".join(supported)
    )
