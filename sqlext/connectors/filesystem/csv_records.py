"""csv records from the lines of csv files, in bounded memory, for the filesystem source's csv read.

With a quote character a csv record may hold line breaks (in a quoted field, or escaped), so a line is not
always a record. The files are read as lines by Spark's text source, which streams them and splits a large file
into byte ranges for several tasks; :class:`RecordJoiner` (run by ``mapInArrow`` on the executors) turns the
lines of each range into records:

- a batch of lines with no quote character, no line break inside a line and no escape at a line's end is one
  record a line (the trailing ``\\r`` of a ``\\r\\n`` dropped), and passes through as it came (most batches);
- other lines are joined and cut into records by :meth:`CsvTextForm.python_record_pattern`, the same records
  that :meth:`CsvTextForm.record_pattern` finds in a whole file; a record that more lines may still change (a
  quoted field not yet closed, an escaped line break) waits for them, and is all that is kept between batches;
- a range owns the records that start in it. A range after the first starts, as Spark's line reader does, after
  the first line break in it; when the file's bytes before that point hold no quote character and no escaped
  line break, a record starts there. Otherwise the file's start is parsed (in Python, once per such range) up
  to the first record that starts in the range, and the lines before it are skipped: they end a record of the
  range before, which reads on in the file past its end to finish it.

Memory is one batch of lines and the longest record (a quote never closed makes the rest of the file one
record, as Flink's reader sees it too).

``CsvRecordJoiner.java`` (:mod:`sqlext.connectors.filesystem.csv_records_jvm`) joins by these rules on the
executors' JVMs, and :func:`records` runs it wherever it can; :func:`record_fields` has it split each record
into its fields there too (``CsvFields.java``). :class:`RecordJoiner` is the path of a session without a JVM of
its own (Spark Connect) or of an installation without sqlext's jars.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from sqlext.catalog.csv_text import CsvTextForm

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

VALUE = "value"
FILE = "__sqlext_file"
BLOCK_START = "__sqlext_block_start"
BLOCK_END = "__sqlext_block_end"
_CHUNK = 1 << 20


def records(
    files: DataFrame, columns: Sequence[Column], form: CsvTextForm, hadoop: Mapping[str, str], on_jvm: bool = True
) -> DataFrame:
    """The lines of ``files`` (a text read with ``lineSep='\\n'``) as one row per csv record: ``value`` is the
    record, followed by ``columns`` (of the record's file; ``_metadata`` too when a caller needs it, as a plain
    column). The records are joined on the JVM (:mod:`sqlext.connectors.filesystem.csv_records_jvm`) unless
    ``on_jvm`` is false or it cannot run there; else in Python, where each column costs its bytes twice for every
    line."""
    carried, framed = _framed(files, columns)
    from sqlext.connectors.filesystem.csv_records_jvm import jvm_records

    joined = jvm_records(framed, len(carried.columns), form, hadoop) if on_jvm else None
    if joined is not None:
        return joined
    with warnings.catch_warnings():
        # mapInArrow checks for pandas, and warns about pandas 3, though no pandas runs here.
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        return framed.mapInArrow(RecordJoiner(form, dict(hadoop)), carried.schema)


def record_fields(
    files: DataFrame,
    columns: Sequence[Column],
    form: CsvTextForm,
    hadoop: Mapping[str, str],
    types: Sequence[tuple[str, str]],
    accepted: tuple[int, int] | None = None,
) -> DataFrame | None:
    """:func:`records` split into fields on the JVM: one text column per ``types`` entry (named by
    ``csv_records_jvm.field_column``; see ``csv_records_jvm.field_settings``), then ``columns``; None where the
    JVM cannot join records (then :func:`records` joins them in Python)."""
    carried, framed = _framed(files, columns)
    from sqlext.connectors.filesystem.csv_records_jvm import field_settings, jvm_records

    return jvm_records(framed, len(carried.columns), form, hadoop, field_settings(form, types, accepted))


def _framed(files: DataFrame, columns: Sequence[Column]) -> tuple[DataFrame, DataFrame]:
    """(the line and ``columns``; those and the file and range columns the joiner reads) of ``files``."""
    from pyspark.sql import functions as F

    carried = files.select(VALUE, *columns)
    framed = files.select(
        VALUE,
        *columns,
        F.col("_metadata.file_path").alias(FILE),
        F.col("_metadata.file_block_start").alias(BLOCK_START),
        (F.col("_metadata.file_block_start") + F.col("_metadata.file_block_length")).alias(BLOCK_END),
    )
    return carried, framed


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

    file: str
    start: int
    end: int
    records: Records
    #: Bytes of lines still to skip at the range's start (they belong to a record of the range before).
    skip: int = 0
    template: Any = None
    #: Byte offset of the line after the range's last one (its next range's first line), when known.
    next_start: int | None = field(default=None)


class RecordJoiner:
    """``mapInArrow`` function: batches of lines (``value``, the file and range columns) to batches of records
    (see the module docstring). Picklable: it holds the form and the Hadoop settings only."""

    def __init__(self, form: CsvTextForm, hadoop: Mapping[str, str]) -> None:
        assert form.quote is not None
        self.form = form
        self.hadoop = dict(hadoop)
        e, q = (f"\\x{{{ord(c):x}}}" for c in (form.escape, form.quote))
        #: Lines that may not be one record each (RE2, pyarrow's regex engine).
        self._unusual = f"{q}|\\r(?s:.)|{e}\\r?$"
        self._quote = form.quote.encode("utf-8")
        self._escape = form.escape.encode("utf-8")

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        for batch in self._records(batches):
            yield batch.drop_columns([FILE, BLOCK_START, BLOCK_END])

    def _records(self, batches: Iterator[Any]) -> Iterator[Any]:
        current: _Range | None = None
        for batch in batches:
            for run in _runs(batch):
                file, start = run.column(FILE)[0].as_py(), run.column(BLOCK_START)[0].as_py()
                if current is None or (current.file, current.start) != (file, start):
                    if current is not None:
                        yield from self._end(current)
                    current = self._begin(file, start, run.column(BLOCK_END)[0].as_py())
                current.template = run.slice(0, 1)
                yield from self._lines(current, run)
        if current is not None:
            yield from self._end(current)

    # -- a range's start and end ---------------------------------------------------------------------------

    def _begin(self, file: str, start: int, end: int) -> _Range:
        current = _Range(file, start, end, Records(self.form))
        if start == 0:
            return current
        with self._open(file) as handle:
            first = _line_start_after(handle, start)
            if self._plain_prefix(handle, first):
                return current
            owned = self._first_record_at(handle, first)
        current.skip = owned - first
        return current

    def _end(self, current: _Range) -> Iterator[Any]:
        """What is pending at the range's end: read on in the file until it is whole (or the file ends)."""
        if not current.records.pending:
            return
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
        owned = [text for text, offset in found if offset < boundary]
        if owned:
            yield self._batch(current.template, owned)

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

    def _lines(self, current: _Range, run: Any) -> Iterator[Any]:
        import pyarrow.compute as pc

        if current.skip > 0:
            run, rest = self._skip(current, run)
            if rest:
                found = current.records.feed(rest)
                if found:
                    yield self._batch(run.slice(0, 1) if run.num_rows else current.template, found)
            if not run.num_rows:
                return
        values = run.column(VALUE)
        if not current.records.pending:
            unusual = pc.match_substring_regex(values, self._unusual)
            first = pc.index(unusual, True).as_py()
            if first == -1:
                yield _without_cr(run)
                return
            if first > 0:
                yield _without_cr(run.slice(0, first))
                run, values = run.slice(first), values.slice(first)
        found = current.records.feed("\n".join(values.to_pylist()) + "\n")
        if found:
            yield self._batch(run.slice(0, 1), found)

    def _skip(self, current: _Range, run: Any) -> tuple[Any, str]:
        """``run`` without the lines (or the part of a line) that belong to a record of the range before;
        a line's rest after such a record is returned as text to parse."""
        for index, line in enumerate(run.column(VALUE).to_pylist()):
            size = _bytes(line) + 1
            if size <= current.skip:
                current.skip -= size
                continue
            rest = (line + "\n").encode("utf-8", "surrogateescape")[current.skip :].decode("utf-8", "surrogateescape")
            current.skip = 0
            return run.slice(index + 1), rest
        return run.slice(run.num_rows), ""

    def _batch(self, template: Any, found: list[str]) -> Any:
        """Rows of ``found`` records, the other columns those of ``template``'s row (the same file's)."""
        import pyarrow as pa

        rows = template.take(pa.array([0] * len(found), pa.int32()))
        index = rows.schema.get_field_index(VALUE)
        columns = list(rows.columns)
        columns[index] = pa.array(found, type=rows.schema.field(index).type)
        return pa.RecordBatch.from_arrays(columns, schema=rows.schema)


def _runs(batch: Any) -> Iterator[Any]:
    """Slices of ``batch`` whose rows come from the same byte range of the same file (a task reads its ranges
    one after another)."""
    if not batch.num_rows:
        return
    files, starts = batch.column(FILE), batch.column(BLOCK_START)
    if files[0] == files[-1] and starts[0] == starts[-1]:
        yield batch
        return
    keys = list(zip(files.to_pylist(), starts.to_pylist(), strict=True))
    begin = 0
    for index in range(1, len(keys) + 1):
        if index == len(keys) or keys[index] != keys[begin]:
            yield batch.slice(begin, index - begin)
            begin = index


def _without_cr(run: Any) -> Any:
    """Lines of one record each, without the ``\\r`` of a ``\\r\\n`` line break."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = run.column(VALUE)
    if not pc.any(pc.ends_with(values, "\r")).as_py():
        return run
    index = run.schema.get_field_index(VALUE)
    columns = list(run.columns)
    columns[index] = pc.replace_substring_regex(values, "\\r$", "")
    return pa.RecordBatch.from_arrays(columns, schema=run.schema)


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
