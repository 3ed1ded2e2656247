"""The horizon of the oldest partitions an expirer follows between listings: its bound, additions past its
size, and what it says is due."""

from __future__ import annotations

from sqlext.connectors.filesystem.expiration_horizon import Horizon


def _filled(size: int, times: list[int]) -> Horizon:
    horizon = Horizon(size)
    horizon.fill((at, f"p{at}") for at in times)
    return horizon


def test_a_listing_keeps_the_oldest_and_is_bounded_by_the_first_left_out() -> None:
    horizon = _filled(3, [50, 10, 40, 20, 30])

    assert len(horizon) == 3 and horizon.bound == 40
    assert horizon.older_than(40) == ["p10", "p20", "p30"]
    assert horizon.covers(40) and not horizon.covers(41), "a partition at 40 may be outside: not due before 40"


def test_a_listing_smaller_than_the_size_covers_every_cutoff() -> None:
    horizon = _filled(3, [20, 10])

    assert horizon.bound is None and horizon.covers(10**15)
    assert horizon.older_than(20) == ["p10"] and horizon.older_than(21) == ["p10", "p20"]


def test_added_partitions_are_kept_below_the_bound_and_an_overflow_lowers_it() -> None:
    horizon = _filled(3, [10, 20, 30, 40])
    horizon.add("p40b", 40)  # at the bound: the bound covers it already
    horizon.add("p5", 5)  # older than the bound: kept; the newest kept (30) leaves and bounds the rest

    assert horizon.older_than(10**15) == ["p5", "p10", "p20"]
    assert horizon.bound == 30 and "p40b" not in horizon and "p30" not in horizon


def test_a_horizon_covering_everything_keeps_each_addition_until_it_overflows() -> None:
    horizon = _filled(2, [10])
    horizon.add("p99", 99)
    assert horizon.bound is None and horizon.older_than(100) == ["p10", "p99"]

    horizon.add("p50", 50)
    assert horizon.bound == 99 and horizon.older_than(100) == ["p10", "p50"]


def test_discarded_partitions_leave_and_same_times_are_told_apart_by_name() -> None:
    horizon = Horizon(4)
    horizon.fill([(10, "a"), (10, "b"), (20, "c")])
    horizon.discard(["b", "missing"])

    assert horizon.older_than(21) == ["a", "c"] and "b" not in horizon
    horizon.add("b", 10)
    assert horizon.older_than(11) == ["a", "b"]
