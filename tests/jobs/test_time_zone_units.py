"""``SET 'table.local-time-zone'``: which zones an insert takes (the insert itself is run against Flink in
tests/connectors/filesystem/test_flink_jobs.py)."""

from __future__ import annotations

import pytest

from sqlext.errors import OptionError
from sqlext.jobs.time_zone import LOCAL_TIME_ZONE, local_time_zone


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "UTC", "GMT+08:00", "GMT-3"])
def test_zones_flink_takes_are_taken(zone: str) -> None:
    assert local_time_zone({LOCAL_TIME_ZONE: zone}) == zone


def test_unset_or_default_leaves_the_session_zone() -> None:
    assert local_time_zone({}) is None
    assert local_time_zone({LOCAL_TIME_ZONE: "default"}) is None


@pytest.mark.parametrize("zone", ["UTC+8", "asia/shanghai", "EST", "", "Mars/Olympus"])
def test_zones_flink_refuses_are_refused_naming_the_option(zone: str) -> None:
    with pytest.raises(OptionError) as refused:
        local_time_zone({LOCAL_TIME_ZONE: zone})
    assert refused.value.option == LOCAL_TIME_ZONE and LOCAL_TIME_ZONE in str(refused.value)
