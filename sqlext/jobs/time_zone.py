"""Flink's session time zone, ``SET 'table.local-time-zone' = '<zone>'``, for sqlext's inserts.

In Flink the option decides how ``TIMESTAMP_LTZ`` values are shown and cast (``DATE_FORMAT`` on one, a
partition value computed from one) and which instant ``TO_TIMESTAMP_LTZ`` / ``CAST`` read local times as.
Spark's equivalent is ``spark.sql.session.timeZone``: an insert runs with it set to the option's zone,
from planning its query to starting its streaming query (which keeps a copy of the session's conf for
its whole life) or to the end of a batch insert; the session's own zone is restored afterwards. Unset or
``default`` (Flink's default, the machine's zone): Spark's session zone, as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlext.errors import OptionError
from sqlext.options import ZONE_FORM, parse_zone_id

LOCAL_TIME_ZONE = "table.local-time-zone"
SPARK_TIME_ZONE = "spark.sql.session.timeZone"


def local_time_zone(options: Mapping[str, str]) -> str | None:
    """The zone ``table.local-time-zone`` names among the session ``options`` (None: unset or ``default``);
    refused unless Flink takes it (a TZDB id, ``GMT+8``-style offsets, ``UTC``)."""
    zone = options.get(LOCAL_TIME_ZONE)
    if zone is None or zone == "default":
        return None
    try:
        parse_zone_id(zone)
    except ValueError:
        raise OptionError(
            f"Invalid value for option '{LOCAL_TIME_ZONE}': '{zone}'. Expected {ZONE_FORM}, or 'default'.",
            option=LOCAL_TIME_ZONE,
            value=zone,
        ) from None
    return zone


@contextmanager
def session_time_zone(spark: Any, options: Mapping[str, str]) -> Iterator[None]:
    """Run the block with Spark's session zone set to ``table.local-time-zone`` (when set)."""
    zone = local_time_zone(options)
    if zone is None:
        yield
        return
    before = spark.conf.get(SPARK_TIME_ZONE)
    spark.conf.set(SPARK_TIME_ZONE, zone)
    try:
        yield
    finally:
        spark.conf.set(SPARK_TIME_ZONE, before)
