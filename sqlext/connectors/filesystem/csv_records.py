"""csv records from the lines of csv files, in bounded memory, for the filesystem source's csv read.

With a quote character a csv record may hold line breaks (in a quoted field, or escaped), so a line is not
always a record. The files are read as lines by Spark's text source, which streams them and splits a large file
into byte ranges for several tasks. Each line's row stays on the JVM; :class:`LineJoiner` (a scalar iterator
Arrow UDF on the executors) gets the lines' text and says, for each line, which records end on it:

- null for a line that is its own record (most lines; a batch without a quote, escape or ``\\r`` character in
  any line is not looked at further); a line that ends with the ``\\r`` of a ``\\r\\n`` is its own record
  without it;
- otherwise the records that end on the line (none for a line that a quoted or escaped line break continues),
  cut by :meth:`CsvTextForm.python_record_pattern`, the same records that :meth:`CsvTextForm.record_pattern`
  finds in a whole file; the lines of a record that more lines may still change (a quoted field not yet
  closed, an escaped line break) wait for them, and are all that is kept between batches;
- a range owns the records that start in it. A range after the first starts, as Spark's line reader does, after
  the first line break in it; when the file's bytes before that point hold no quote character and no escaped
  line break, a record starts there. Otherwise the file's start is parsed (in Python, once per such range) up
  to the first record that starts in the range, and the lines before it give no record: they end a record of
  the range before, which reads on in the file past its end to finish it.

:func:`records` then explodes each line's records (the line itself where null). What crosses to Python is each
line's text and a range key, and the file's path and range only with the lines Python may need them for (a
line with a quote, escape or ``\\r``; every line of a range after a file's start); half of what a
``mapInArrow`` of the rows moved, which sent every column both ways. Memory is one batch of lines and the
longest record (a quote never closed makes the rest of the file one record, as Flink's reader sees it too).
"""

from __future__ import annotations

import operator
import re
import warnings
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from itertools import pairwise
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from sqlext.catalog.csv_text import CsvTextForm

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

VALUE = "value"
RECORDS = "__sqlext_records"
_CHUNK = 1 << 20


def records(files: DataFrame, columns: Sequence[Column], form: CsvTextForm, hadoop: Mapping[str, str]) -> DataFrame:
    """The lines of ``files`` (a text read with ``lineSep='\\n'``) as one row per csv record: ``value`` is the
    record, followed by ``columns`` (of the record's file; ``_metadata`` too when a caller needs it, as a plain
    column). The rows stay on the JVM: only the lines' text and what :class:`LineJoiner` needs cross to Python."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    from pyspark.sql.types import ArrayType, StringType

    assert form.quote is not None
    value = F.col(VALUE)
    special = reduce(operator.or_, (value.contains(F.lit(char)) for char in (form.quote, form.escape, "\r")))
    path, start = F.col("_metadata.file_path"), F.col("_metadata.file_block_start")
    needed = special | (start > 0)
    with warnings.catch_warnings():
        # The type is given, not read from type hints (a LineJoiner is an object: it pickles by value).
        warnings.filterwarnings("ignore", message="It is preferred to specify type hints", category=UserWarning)
        joiner = arrow_udf(LineJoiner(form, dict(hadoop)), ArrayType(StringType()), ArrowUDFType.SCALAR_ITER)
    found = joiner.asNondeterministic()(
        value,
        F.xxhash64(path, start),
        F.when(needed, path),
        F.when(needed, start),
        F.when(needed, start + F.col("_metadata.file_block_length")),
    )
    carried = files.select(value, *columns, found.alias(RECORDS))
    kept = [F.col("`" + name.replace("`", "``") + "`") for name in carried.columns[1:-1]]
    return carried.select(F.explode(F.coalesce(F.col(RECORDS), F.array(value))).alias(VALUE), *kept)


class Records:
    """The records of a text given in pieces that each end with a line break."""

    def __init__(self, form: CsvTextForm) -> None:
        self._more = re.compile(form.python_record_pattern(more_text=True))
        self._last = re.compile(form.python_record_pattern(more_text=False))
        #: The text of a record that more text may change (it reaches the end of what was fed).
        self.pending = ""
        #: Byte offset of ``pending`` (or of the next piece) in the file, when counted (``feed(..., at=...)``).
        self.offset = 0

    def feed(self, piece: str) -> list[str]:
        """The records that ``piece`` completes (after what is pending)."""
        text = self.pending + piece if self.pending else piece
        found = []
        self.pending = ""
        for match in self._more.finditer(text):
            if match.end(1) == len(text):
                self.pending = text[match.start() :]
                break
            found.append(match.group(1))
        return found

    def feed_ends(self, piece: str) -> tuple[list[tuple[str, int]], str]:
        """:meth:`feed`, with where in the text parsed (what was pending, then ``piece``) each record ends;
        also that text."""
        text = self.pending + piece if self.pending else piece
        found = []
        self.pending = ""
        for match in self._more.finditer(text):
            if match.end(1) == len(text):
                self.pending = text[match.start() :]
                break
            found.append((match.group(1), match.end(1)))
        return found, text

    def feed_spans(self, piece: str) -> list[tuple[str, int]]:
        """:meth:`feed`, with each record's byte offset (counted from :attr:`offset`)."""
        text = self.pending + piece if self.pending else piece
        found = []
        self.pending = ""
        position, offset = 0, self.offset
        for match in self._more.finditer(text):
            offset += _bytes(text[position : match.start()])
            position = match.start()
            if match.end(1) == len(text):
                self.pending = text[position:]
                break
            found.append((match.group(1), offset))
        self.offset = offset + _bytes(text[position:])
        if self.pending:
            self.offset = offset
        return found

    def finish(self) -> list[tuple[str, int]]:
        """The records of what is pending at the end of the file (an unclosed quote reads as unquoted)."""
        text, self.pending = self.pending, ""
        found, position, offset = [], 0, self.offset
        for match in self._last.finditer(text):
            offset += _bytes(text[position : match.start()])
            position = match.start()
            found.append((match.group(1), offset))
        self.offset = offset + _bytes(text[position:])
        return found


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _pieces(handle: Any, start: int) -> Iterator[str]:
    """The file's text from byte ``start`` in pieces of whole lines (each ending with ``\\n``; one is added
    after a last line without it)."""
    import codecs

    handle.seek(start)
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    rest = ""
    while chunk := handle.read(_CHUNK):
        text = rest + decoder.decode(bytes(chunk))
        cut = text.rfind("\n") + 1
        rest = text[cut:]
        if cut:
            yield text[:cut]
    rest += decoder.decode(b"", final=True)
    if rest:
        yield rest + "\n"


@dataclass
class _Range:
    """The reading of one byte range of one file."""

    key: int
    #: The file (a URI) and the range's end, once a line gave them (a line Python may need them for).
    file: str | None
    start: int
    end: int | None
    records: Records
    #: Bytes of lines still to skip at the range's start (they belong to a record of the range before).
    skip: int = 0
    #: The records ending on each line of the pending record (``records.pending``) so far.
    held: list[list[str]] = field(default_factory=list)


class LineJoiner:
    """Scalar iterator Arrow UDF: batches of (line, range key, file, range start, range end) to each line's
    records, null where the line is its own record (see the module docstring). Picklable: it holds the form
    and the Hadoop settings only."""

    def __init__(self, form: CsvTextForm, hadoop: Mapping[str, str]) -> None:
        assert form.quote is not None
        self.form = form
        self.hadoop = dict(hadoop)
        e, q = (f"\\x{{{ord(c):x}}}" for c in (form.escape, form.quote))
        #: Lines that may not be one record each (RE2, pyarrow's regex engine).
        self._unusual = f"{q}|\\r(?s:.)|{e}\\r?$"
        self._quote = form.quote.encode("utf-8")
        self._escape = form.escape.encode("utf-8")

    def __call__(self, batches: Iterator[tuple[Any, ...]]) -> Iterator[Any]:
        ready: list[Any] = []
        current: _Range | None = None
        for values, keys, files, starts, ends in batches:
            for begin, stop in _runs(keys):
                key = keys[begin].as_py()
                if current is None or current.key != key:
                    if current is not None:
                        ready.extend(self._end(current))
                    current = self._begin(key, files[begin].as_py(), starts[begin].as_py(), ends[begin].as_py())
                run_files = files.slice(begin, stop - begin)
                if current.file is None and run_files.null_count < len(run_files):
                    _learn_file(current, run_files, ends.slice(begin, stop - begin))
                ready.extend(self._lines(current, values.slice(begin, stop - begin), run_files))
            if ready:
                yield _concat(ready)
                ready = []
        if current is not None:
            ready.extend(self._end(current))
        if ready:
            yield _concat(ready)

    # -- a range's start and end ---------------------------------------------------------------------------

    def _begin(self, key: int, file: str | None, start: int | None, end: int | None) -> _Range:
        current = _Range(key, file, start or 0, end, Records(self.form))
        if not start:
            return current
        assert file is not None  # sent with every line of a range after a file's start
        with self._open(file) as handle:
            first = _line_start_after(handle, start)
            if self._plain_prefix(handle, first):
                return current
            owned = self._first_record_at(handle, first)
        current.skip = owned - first
        return current

    def _end(self, current: _Range) -> Iterator[Any]:
        """What is pending at the range's end: read on in the file until it is whole (or the file ends); its
        records end on the range's last line."""
        if not current.records.pending:
            return
        assert current.file is not None and current.end is not None  # sent with the line that began it
        pending = current.records
        found: list[tuple[str, int]] = []
        with self._open(current.file) as handle:
            boundary = _line_start_after(handle, current.end)
            pending.offset = boundary - _bytes(pending.pending)
            for piece in _pieces(handle, boundary):
                found.extend(pending.feed_spans(piece))
                if not pending.pending or pending.offset >= boundary:
                    break
            else:
                found.extend(pending.finish())
        pending.pending = ""
        held, current.held = current.held, []
        held[-1].extend(text for text, offset in found if offset < boundary)
        yield _lists(held)

    def _plain_prefix(self, handle: Any, stop: int) -> bool:
        """Whether the file's bytes before ``stop`` hold no quote character and no escaped line break (so a
        record starts at ``stop``, a line's start)."""
        handle.seek(0)
        left, tail = stop, b""
        marks = (self._quote, self._escape + b"\n", self._escape + b"\r")
        keep = max(len(mark) for mark in marks) - 1  # a mark may span two chunks
        while left > 0 and (chunk := handle.read(min(_CHUNK, left))):
            left -= len(chunk)
            data = tail + bytes(chunk)
            if any(mark in data for mark in marks):
                return False
            tail = data[-keep:]
        return True

    def _first_record_at(self, handle: Any, stop: int) -> int:
        """The byte offset of the first record that starts at or after ``stop`` (the file parsed from its start)."""
        parsed = Records(self.form)
        for piece in _pieces(handle, 0):
            for _, offset in parsed.feed_spans(piece):
                if offset >= stop:
                    return offset
            if parsed.offset >= stop and not parsed.pending:
                return parsed.offset
        for _, offset in parsed.finish():
            if offset >= stop:
                return offset
        return max(parsed.offset, stop)

    def _open(self, uri: str) -> Any:
        from sqlext.io import arrowfs

        arrowfs.configure(self.hadoop)
        parsed = urlparse(uri)
        return arrowfs.ArrowBackend().open_input(parsed._replace(path=unquote(parsed.path)).geturl())

    # -- lines ---------------------------------------------------------------------------------------------

    def _lines(self, current: _Range, values: Any, files: Any) -> Iterator[Any]:
        """The records of the lines that are decided (arrays of lists, a list or null per line); the others
        wait in ``current.held``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if current.skip > 0:
            skipped, rest = self._skip(current, values)
            if skipped:
                yield pa.array([[]] * skipped, pa.list_(pa.string()))
            if rest is not None:
                yield from self._feed(current, [rest], partial=True)
            used = skipped + (rest is not None)
            values, files = values.slice(used), files.slice(used)
            if not len(values):
                return
        if not current.records.pending:
            if files.null_count == len(files):  # no quote, escape or \r in any line (such lines send the file)
                yield pa.nulls(len(values), pa.list_(pa.string()))
                return
            first = pc.index(pc.match_substring_regex(values, self._unusual), True).as_py()
            if first == -1:
                yield _own(values)
                return
            if first > 0:
                yield _own(values.slice(0, first))
                values = values.slice(first)
        yield from self._feed(current, values.to_pylist())

    def _feed(self, current: _Range, lines: list[str], partial: bool = False) -> Iterator[Any]:
        """The records of ``lines`` (after the held ones), each on the line it ends on. ``partial``: one line's
        rest after skipped bytes (with its line break)."""
        text = lines[0] if partial else "\n".join(lines) + "\n"
        found, whole = current.records.feed_ends(text)
        # The held lines' text starts what is pending, so the line breaks of ``whole`` are those of the held
        # lines and then of ``lines``.
        breaks = [match.start() for match in re.finditer("\n", whole)]
        outputs: list[list[str]] = [*current.held, *([] for _ in lines)]
        for record, end in found:
            outputs[bisect_left(breaks, end)].append(record)
        decided = len(outputs)
        if current.records.pending:
            decided = bisect_left(breaks, len(whole) - len(current.records.pending))
        current.held = outputs[decided:]
        if decided:
            yield _lists(outputs[:decided])

    def _skip(self, current: _Range, values: Any) -> tuple[int, str | None]:
        """How many lines of ``values`` end a record of the range before, and the rest of the line where such
        a record ends within it (text to parse, with its line break; None when none does)."""
        for index, line in enumerate(values.to_pylist()):
            size = _bytes(line) + 1
            if size <= current.skip:
                current.skip -= size
                continue
            rest = (line + "\n").encode("utf-8", "surrogateescape")[current.skip :].decode("utf-8", "surrogateescape")
            current.skip = 0
            return index, rest
        return len(values), None


def _learn_file(current: _Range, files: Any, ends: Any) -> None:
    """The range's file and end, from the first line of ``files`` that sent them."""
    import pyarrow.compute as pc

    first = pc.index(files.is_valid(), True).as_py()
    current.file, current.end = files[first].as_py(), ends[first].as_py()


def _runs(keys: Any) -> list[tuple[int, int]]:
    """(begin, stop) of the runs of ``keys`` whose rows come from the same byte range of the same file (a task
    reads its ranges one after another)."""
    import pyarrow.compute as pc

    count = len(keys)
    if not count:
        return []
    if keys[0] == keys[count - 1]:
        return [(0, count)]
    changes = pc.indices_nonzero(pc.not_equal(keys.slice(1), keys.slice(0, count - 1))).to_pylist()
    bounds = [0, *(index + 1 for index in changes), count]
    return list(pairwise(bounds))


def _own(values: Any) -> Any:
    """Lines that are one record each: null, or the line without the ``\\r`` of a ``\\r\\n`` line break."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lists = pa.list_(pa.string())
    with_cr = pc.ends_with(values, "\r")
    if not pc.any(with_cr).as_py():
        return pa.nulls(len(values), lists)
    stripped = pc.replace_substring_regex(values, "\\r$", "")
    offsets = pa.array(range(len(values) + 1), pa.int32())
    return pa.ListArray.from_arrays(offsets, stripped, type=lists, mask=pc.invert(with_cr))


def _lists(outputs: list[list[str]]) -> Any:
    import pyarrow as pa

    return pa.array(outputs, pa.list_(pa.string()))


def _concat(arrays: list[Any]) -> Any:
    import pyarrow as pa

    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def _line_start_after(handle: Any, start: int) -> int:
    """Where the first line after byte ``start`` begins, as Hadoop's line reader starts a range there: after
    the first ``\\n`` at or after ``start`` (the file's size when there is none)."""
    handle.seek(start)
    position = start
    while chunk := handle.read(_CHUNK):
        found = bytes(chunk).find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(chunk)
    return position
