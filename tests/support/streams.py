"""Input for sink tests: event files written with pyarrow, read back as a replayable Spark stream."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

EVENT_SCHEMA = pa.schema(
    [("id", pa.int64()), ("user_id", pa.string()), ("amount", pa.float64()), ("ts", pa.timestamp("us"))]
)
EVENT_DDL = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP"


def write_hourly_events(
    directory: Path, start: datetime, hours: int, rows_per_hour: int, first_id: int = 0, age: timedelta | None = None
) -> int:
    """One parquet file per hour (file names sort by hour), ``rows_per_hour`` events spread over the hour.

    Each file appears whole, with its modification time already set: a running stream never lists it half
    written or with the time of writing. ``age`` sets the times that much further in the past.
    Returns the next free id. Ids are unique across calls when ``first_id`` continues from the last.
    """
    directory.mkdir(parents=True, exist_ok=True)
    next_id = first_id
    for hour in range(hours):
        base = start + timedelta(hours=hour)
        step = timedelta(seconds=3600 / rows_per_hour)
        ids = list(range(next_id, next_id + rows_per_hour))
        table = pa.table(
            {
                "id": ids,
                "user_id": [f"u{i % 7}" for i in ids],
                "amount": [float(i) / 10 for i in ids],
                "ts": [base + step * n for n in range(rows_per_hour)],
            },
            schema=EVENT_SCHEMA,
        )
        target = directory / f"events-{base:%Y%m%d%H}-{next_id:08d}.parquet"
        hidden = directory / f".{target.name}.writing"  # file sources skip names starting with a dot
        pq.write_table(table, hidden)
        # Spark's file source takes files oldest first: make that the hour order, one second apart.
        stamp = 1_700_000_000 + next_id - (age.total_seconds() if age else 0)
        os.utime(hidden, (stamp, stamp))
        hidden.rename(target)
        next_id += rows_per_hour
    return next_id


def hourly_event_stream(spark: Any, input_dir: Path, lateness: str | None = "0 seconds") -> Any:
    """The event files of ``input_dir`` as a replayable stream, one file per micro-batch, with ``dt``
    and ``hr`` columns derived from ``ts`` (and a watermark on ``ts`` unless ``lateness`` is None)."""
    rows = spark.readStream.schema(EVENT_DDL).option("maxFilesPerTrigger", 1).parquet(input_dir.as_uri())
    if lateness is not None:
        rows = rows.withWatermark("ts", lateness)
    return rows.selectExpr(
        "id", "user_id", "amount", "ts", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr"
    )


def event_rows(spark: Any, ids: range, hours: int) -> Any:
    """Rows for an ``events_table`` (``tests.support.tables``) with ids ``ids``: all on 2026-11-22, id ``i`` in
    hour ``i % hours`` (as a batch DataFrame, for batch inserts)."""
    return spark.range(ids.start, ids.stop).selectExpr(
        "id",
        "concat('u', id % 7) AS user_id",
        "id / 10 AS amount",
        "timestamp_seconds(1795300000 + id) AS ts",
        "'2026-11-22' AS dt",
        f"format_string('%02d', CAST(id % {hours} AS INT)) AS hr",
    )
