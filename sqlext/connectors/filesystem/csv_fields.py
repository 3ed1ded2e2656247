"""The fields of plain csv records, split in the csv source's Python pass (:mod:`.csv_records`).

Every line of a csv file with a quote character crosses into Python to be joined into records. A batch of
records that are all plain (no escape, quote or line break character; with ``allow-comments`` none starting
with ``#``) and all of the table's field count is split there too: pyarrow's ``split_pattern`` at the
delimiter gives the fields of Java's ``String.split(delimiter, -1)``, which :meth:`CsvTextForm.split` uses for
such a line in Spark SQL. The batch comes back as one column a field and the record's text NULL, and Spark only
casts the fields (:meth:`FieldSplit.columns`). Any other batch comes back as records, and Spark parses them as
before (:meth:`CsvTextForm.split` and :meth:`CsvTextForm.typed`): field counts, their errors, ``accepted``
ranges of a table whose columns changed, and escapes and quotes are that parse's.

Some fields come back typed, where pyarrow's conversion takes only text that Spark's cast reads as the same
value: integers (an optional ``-`` and digits, in range), doubles written with digits, a point, a sign and an
exponent only (both round correctly to the nearest double), dates ``yyyy-MM-dd`` and, in a session whose time
zone is UTC, timestamps ``yyyy-MM-dd HH:mm:ss[.ffffff]``. A field that is empty or a null form is NULL, as
Spark reads it; a column that pyarrow refuses anywhere in a batch comes back as strings for Spark's cast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlext.catalog.csv_text import CsvTextForm

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField

#: The column that is true on a row whose fields were split in Python (NULL on a row of a record to parse).
SPLIT = "__sqlext_split"
#: The time zones in which a timestamp's text is the same instant in pyarrow and Spark whatever their time
#: zone databases say.
_UTC = ("UTC", "Etc/UTC", "Z", "+00:00", "GMT")
#: Text that pyarrow converts to the value Spark's cast gives (Spark reads more forms, which stay strings).
_FORMS = {
    "double": "^[-+]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?$",
    "date": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
    "timestamp": "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,6})?$",
}
_INTEGERS = ("tinyint", "smallint", "int", "bigint")


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    integers = {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64()}
    others = {"double": pa.float64(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC")}
    return {**integers, **others}[kind]


@dataclass(frozen=True)
class FieldSplit:
    """How the Python pass splits the fields of plain batches: ``types``, (name, Spark type) of each field in
    order; ``time_zone``, the Spark session's (a timestamp's text is read in it). Picklable."""

    form: CsvTextForm
    types: tuple[tuple[str, str], ...]
    time_zone: str

    def typed_kinds(self) -> dict[int, str]:
        """The fields that come back typed when pyarrow takes them, by index."""
        kinds = (*_INTEGERS, "double", "date", *(("timestamp",) if self.time_zone in _UTC else ()))
        return {index: kind for index, (_, kind) in enumerate(self.types) if kind in kinds}

    @staticmethod
    def text_name(index: int) -> str:
        return f"__sqlext_field_{index}"

    @staticmethod
    def typed_name(index: int) -> str:
        return f"__sqlext_typed_{index}"

    def spark_fields(self) -> list[StructField]:
        """The columns the Python pass adds after a record's own: per field its value where pyarrow took it
        (typed fields only) and its text otherwise, then :data:`SPLIT`."""
        from pyspark.sql import types as T

        spark_types = {
            "tinyint": T.ByteType(),
            "smallint": T.ShortType(),
            "int": T.IntegerType(),
            "bigint": T.LongType(),
            "double": T.DoubleType(),
            "date": T.DateType(),
            "timestamp": T.TimestampType(),
        }
        found = []
        typed = self.typed_kinds()
        for index in range(len(self.types)):
            if index in typed:
                found.append(T.StructField(self.typed_name(index), spark_types[typed[index]]))
            found.append(T.StructField(self.text_name(index), T.StringType()))
        return [*found, T.StructField(SPLIT, T.BooleanType())]

    # -- in Python (the executors) ----------------------------------------------------------------------------

    def special_pattern(self) -> str:
        """An RE2 pattern found in a record that is not plain."""
        form = self.form
        chars = (form.escape, "\r", "\n", *((form.quote,) if form.quote else ()))
        found = "|".join(f"\\x{{{ord(char):x}}}" for char in chars)
        return f"{found}|^#" if form.allow_comments else found

    def split(self, batch: Any, plain: bool | None = None) -> Any:
        """``batch`` (``value`` first, then the carried columns) with the columns of :meth:`spark_fields`: the
        fields of each record that is plain and of the table's field count (its ``value`` then NULL), NULLs on
        other rows. ``plain``: True when the caller knows every record in the batch plain."""
        import pyarrow as pa
        import pyarrow.compute as pc

        values, rows, count = batch.column(0), batch.num_rows, len(self.types)
        split = pc.equal(pc.count_substring(values, self.form.delimiter), count - 1)
        if not plain:
            split = pc.and_(split, pc.invert(pc.match_substring_regex(values, self.special_pattern())))
        columns, names = list(batch.columns), list(batch.schema.names)
        if rows and pc.all(split).as_py():
            parts = pc.split_pattern(values, self.form.delimiter)
            columns[0] = pa.nulls(rows, values.type)
        elif pc.any(split).as_py():
            # Other rows get as many empty fields, which Spark does not look at.
            filler = pa.scalar(self.form.delimiter * (count - 1))
            parts = pc.split_pattern(pc.if_else(split, values, filler), self.form.delimiter)
            columns[0] = pc.if_else(split, pa.scalar(None, values.type), values)
            split = pc.if_else(split, True, pa.scalar(None, pa.bool_()))
        else:
            parts, split = None, pa.nulls(rows, pa.bool_())
        typed = self.typed_kinds()
        for index in range(count):
            text = pc.list_element(parts, index) if parts is not None else pa.nulls(rows, pa.string())
            if index in typed:
                value = self._typed(text, typed[index]) if parts is not None else None
                if value is None:
                    value = pa.nulls(rows, _arrow_type(typed[index]))
                else:
                    text = pa.nulls(rows, pa.string())
                columns.append(value)
                names.append(self.typed_name(index))
            columns.append(text)
            names.append(self.text_name(index))
        columns.append(split)
        names.append(SPLIT)
        return pa.RecordBatch.from_arrays(columns, names=names)

    def _typed(self, text: Any, kind: str) -> Any:
        """``text`` (a field's strings) as ``kind``, NULL where empty or a null form; None where pyarrow may
        not read a value as Spark's cast does."""
        import pyarrow as pa
        import pyarrow.compute as pc

        nulls = pc.is_in(text, pa.array(["", *self.form.null_forms]))
        if pc.any(nulls).as_py():
            text = pc.if_else(nulls, pa.scalar(None, pa.string()), text)
        form = _FORMS.get(kind)
        if form is not None and pc.any(pc.invert(pc.match_substring_regex(text, form))).as_py():
            return None
        try:
            if kind == "timestamp":
                return pc.cast(pc.cast(text, pa.timestamp("us")), _arrow_type(kind))
            return pc.cast(text, _arrow_type(kind))
        except pa.ArrowInvalid:
            return None

    # -- in Spark SQL ------------------------------------------------------------------------------------------

    def names(self) -> list[str]:
        """The names of :meth:`spark_fields`."""
        return [field.name for field in self.spark_fields()]

    def or_parsed(
        self, parsed: Sequence[SparkColumn], parsed_ok: SparkColumn | None
    ) -> tuple[list[SparkColumn], SparkColumn | None]:
        """The typed columns of a row: :meth:`columns` where :data:`SPLIT`, else ``parsed`` (:meth:`CsvTextForm.typed`
        of its record); and whether the row is to be kept (with ``ignore_parse_errors``, else None) likewise."""
        from pyspark.sql import functions as F

        split = F.col(SPLIT)
        columns, ok = self.columns()
        found = [
            F.when(split, new).otherwise(old).alias(name)
            for new, old, (name, _) in zip(columns, parsed, self.types, strict=True)
        ]
        if parsed_ok is None or ok is None:
            return found, None
        return found, F.when(split, ok).otherwise(parsed_ok)

    def columns(self) -> tuple[list[SparkColumn], SparkColumn | None]:
        """The typed columns of a split row, named as :attr:`types`, and, with ``ignore_parse_errors``,
        whether its values are all of their types (else None)."""
        from pyspark.sql import functions as F

        typed = self.typed_kinds()
        found, parsed = [], F.lit(True)
        for index, (name, kind) in enumerate(self.types):
            # A plain record's field: CsvTextForm.typed's values, NULLs and errors for it.
            is_null, value = self.form._typed_plain(F.col(self.text_name(index)), kind)
            column = F.when(is_null, F.lit(None).cast(kind)).otherwise(value)
            if index in typed:
                column = F.coalesce(F.col(self.typed_name(index)), column)
            found.append(column.alias(name))
            parsed = parsed & (is_null | value.isNotNull())
        return found, parsed if self.form.ignore_parse_errors else None


def typed_records(
    records: DataFrame,
    form: CsvTextForm,
    types: Sequence[tuple[str, str]],
    accepted: tuple[int, int] | None,
    carried: Sequence[SparkColumn],
    fields: FieldSplit | None = None,
) -> DataFrame:
    """Rows of typed columns (named as ``types``: (name, Spark type)) and ``carried`` from csv ``records``
    (``value``, and the columns of ``fields`` when the Python pass split them, see the module docstring): the
    rows split in Python are cast, the others parsed by :meth:`CsvTextForm.split` and :meth:`CsvTextForm.typed`
    (``accepted``: see there). A comment line (``allow_comments``) is dropped, and with ``ignore_parse_errors``
    a line that does not parse."""
    from pyspark.sql import functions as F

    if form.allow_comments:
        comment = F.startswith(F.col("value"), F.lit("#"))
        # A row split in Python has no text (and none of its lines started with #).
        records = records.where(~comment if fields is None else F.col(SPLIT) | ~comment)
    plain, parts = form.split(F.col("value"), len(types), accepted)
    if fields is not None:  # a row split in Python is not parsed again
        split = F.col(SPLIT)
        plain, parts = F.when(split, F.lit(None)).otherwise(plain), F.when(split, F.lit(None)).otherwise(parts)
    ours = [F.col(name) for name in fields.names()] if fields is not None else []
    records = records.select(plain.alias("__sqlext_plain"), parts.alias("__sqlext_fields"), *ours, *carried)
    typed, parsed = form.typed(F.col("__sqlext_plain"), F.col("__sqlext_fields"), types, accepted)
    if fields is not None:
        typed, parsed = fields.or_parsed(typed, parsed)
    names = [F.col(f"`{field.name}`") for field in records.schema.fields[2 + len(ours) :]]
    if parsed is None:
        return records.select(*typed, *names)
    kept = records.select(*typed, *names, parsed.alias("__sqlext_parsed")).where("__sqlext_parsed")
    return kept.drop("__sqlext_parsed")
