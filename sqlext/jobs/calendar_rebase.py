"""Spark's write rebase modes pinned to ``CORRECTED`` for sqlext's inserts.

A date or timestamp before 1582-10-15 is a different day in the proleptic Gregorian calendar (Spark 3+,
Trino, pyarrow, Flink's java.time) than in the hybrid Julian/Gregorian one (``java.sql.Date``, Hive 2's
SerDes). Spark's parquet and Avro writers store such a value either as it is (``CORRECTED``) or rebased
to the hybrid calendar (``LEGACY``, with a marker in the file that only Spark reads). No mode serves
every reader; ``CORRECTED`` serves the most: Spark's own readers, Trino, pyarrow and sqlext's source read
every value as written, Hive 2.3's parquet and Avro SerDes (also Spark's read of an avro table through
the HMS) read it shifted. ``LEGACY`` serves Hive 2.3's SerDes and Spark, and shifts every value for Trino
and pyarrow. What each reader reads: docs/readers.md, backed by
``test_each_reader_of_the_date_and_timestamp_edge_cases``.

The modes are session conf only (Spark's writers read them from the session, never from a writer's
options), so an insert runs with them set, as :mod:`sqlext.jobs.time_zone` sets the session zone: from
planning its query to starting its streaming query (which keeps a copy of the session's conf for its
whole life) or to the end of a batch insert; they are unset again afterwards. Spark 4's defaults are
``CORRECTED`` already: the pin keeps sqlext's files independent of that default. A key set in the
session (``SET``, the session builder, ``spark-defaults.conf``) is the user's choice and is kept: e.g.
``LEGACY`` for a table read only through Hive 2.3. ORC has no such mode (Spark's ORC writer writes
hybrid days; ORC's own ``orc.proleptic.gregorian`` is not set: docs/readers.md says why);
``format("sqlext")`` and ``sqlext compact`` write with pyarrow, which keeps the values (and markers) it is
given.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Spark's write rebase modes (parquet DATE and TIMESTAMP_MICROS/MILLIS; parquet INT96; Avro).
WRITE_REBASE_KEYS = (
    "spark.sql.parquet.datetimeRebaseModeInWrite",
    "spark.sql.parquet.int96RebaseModeInWrite",
    "spark.sql.avro.datetimeRebaseModeInWrite",
)
CORRECTED = "CORRECTED"


def unset_rebase_keys(spark: Any) -> list[str]:
    """The keys of :data:`WRITE_REBASE_KEYS` the session has no value set for (its defaults apply)."""
    explicit = spark.conf.getAll
    return [key for key in WRITE_REBASE_KEYS if key not in explicit]


@contextmanager
def corrected_rebase(spark: Any) -> Iterator[None]:
    """Run the block with each write rebase mode the session leaves unset set to ``CORRECTED``."""
    pinned = unset_rebase_keys(spark)
    for key in pinned:
        spark.conf.set(key, CORRECTED)
    try:
        yield
    finally:
        for key in pinned:
            spark.conf.unset(key)
