"""avro files in Flink's form, written and read by Spark's Avro data source (``spark-avro``): the writer
gets the table's schema (:mod:`sqlext.catalog.avro_schema`) as ``avroSchema``, and the columns whose Spark
value is not what the schema holds are converted on the way in and out:

- ``TIME``: sqlext keeps it as text (``HH:mm:ss[.fff]``); Avro's ``time-millis`` holds milliseconds of the
  day. A text that is no time of day fails the write, naming column and value;
- ``TIMESTAMP`` with the legacy mapping (``timestamp-millis``): Flink writes the wall-clock value as if it
  were UTC, Spark a timestamp as its instant in the session time zone: the value is shifted by the session
  zone's offset on write and back on read (nothing changes in a UTC session). Without the legacy mapping
  (``local-timestamp-*``) it is written and read as Spark's ``timestamp_ntz``;
- ``TINYINT``, ``SMALLINT`` (Avro ``int``): cast back on read.

Only columns of the table's own level are converted (a TIME inside an ARRAY, MAP or ROW is refused at
CREATE TABLE, see :func:`sqlext.catalog.avro_schema.check_columns`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlext.catalog import avro_schema
from sqlext.sql.types import flink_type, spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn

#: Flink's ``avro.codec`` -> Spark's Avro ``compression``.
SPARK_CODECS = {"null": "uncompressed", "deflate": "deflate", "snappy": "snappy", "bzip2": "bzip2", "xz": "xz"}
SPARK_CODECS["zstandard"] = "zstandard"
#: Flink's default ``avro.codec``.
DEFAULT_CODEC = "snappy"
_TIME = r"^([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(\.[0-9]{1,9})?$"


@dataclass(frozen=True)
class AvroForm:
    """How a table's columns are written to and read from its avro files."""

    #: The data columns (name, Flink type, nullable), in order.
    columns: tuple[tuple[str, str, bool], ...]
    legacy_timestamps: bool = True
    codec: str = DEFAULT_CODEC

    @classmethod
    def from_options(cls, format_options: Mapping[str, str], columns: Sequence[tuple[str, str, bool]]) -> AvroForm:
        """The form of a table with ``format_options`` (its ``avro.*`` options, prefix stripped)."""
        legacy = format_options.get(avro_schema.LEGACY_KEY, "true").strip().lower() != "false"
        return cls(tuple(columns), legacy, format_options.get("codec", DEFAULT_CODEC))

    @property
    def schema_literal(self) -> str:
        return avro_schema.schema_literal(self.columns, self.legacy_timestamps)

    def write_options(self) -> dict[str, str]:
        """Spark's Avro writer options: the schema, the codec, dates and times written as they are (the
        proleptic Gregorian calendar, as Flink's java.time writes them)."""
        return {"avroSchema": self.schema_literal, "compression": SPARK_CODECS[self.codec]}

    def read_schema(self) -> dict[str, str]:
        """Column -> the Spark type Spark's Avro reader reads the column's Avro type as."""
        schema = avro_schema.avro_schema(self.columns, self.legacy_timestamps)
        return {f["name"]: avro_schema.spark_type(f["type"]) for f in schema["fields"]}

    def written(self, column: SparkColumn, name: str, flink: str, zone: str) -> SparkColumn:
        """The value Spark's Avro writer gets for the column ``name`` of type ``flink``."""
        from pyspark.sql import functions as F

        root = flink_type(flink).root
        if root == "TIME":
            return _time_millis(column, name)
        if root == "TIMESTAMP":
            return F.from_utc_timestamp(column, zone) if self.legacy_timestamps else column.cast("timestamp_ntz")
        return column

    def read(self, column: SparkColumn, flink: str, zone: str) -> SparkColumn:
        """The table's value of a column of type ``flink`` from what Spark's Avro reader read."""
        from pyspark.sql import functions as F

        tree = flink_type(flink)
        if tree.root == "TIME":
            return _time_text(column, tree.precision)
        if tree.root == "TIMESTAMP":
            return F.to_utc_timestamp(column, zone) if self.legacy_timestamps else column.cast("timestamp")
        return column.cast(spark_type(flink))


def _time_millis(column: SparkColumn, name: str) -> SparkColumn:
    from pyspark.sql import functions as F

    def part(index: int) -> SparkColumn:
        return F.regexp_extract(column, _TIME, index).cast("int")

    fraction = F.rpad(F.substring(F.regexp_extract(column, _TIME, 4), 2, 3), 3, "0").cast("int")
    millis = part(1) * 3_600_000 + part(2) * 60_000 + part(3) * 1000 + fraction
    invalid = F.raise_error(
        F.concat(
            F.lit(f"Column '{name}' (TIME) holds '"),
            column,
            F.lit("', which is no time of day HH:mm:ss[.fff]: Avro's time-millis cannot hold it."),
        )
    )
    return F.when(column.isNull(), F.lit(None)).when(column.rlike(_TIME), millis).otherwise(invalid).cast("int")


def _time_text(column: SparkColumn, precision: int) -> SparkColumn:
    from pyspark.sql import functions as F

    seconds = F.format_string(
        "%02d:%02d:%02d",
        F.floor(column / 3_600_000),
        F.floor(column / 60_000) % 60,
        F.floor(column / 1000) % 60,
    )
    if precision > 0:
        digits = F.substring(F.lpad((column % 1000).cast("string"), 3, "0"), 1, min(precision, 3))
        seconds = F.concat(seconds, F.lit("."), digits)
    return F.when(column.isNotNull(), seconds)
