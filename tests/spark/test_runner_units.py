"""``sqlext run``'s naming of a failing statement (no Spark needed)."""

from __future__ import annotations

from sqlext.spark.runner import brief


def test_a_failing_statement_is_named_whole_on_one_line_not_by_a_first_line_ending_in_with() -> None:
    statement = "-- the sink\nCREATE TABLE t (a INT)\nWITH (\n  'connector' = 'filesystem',\n  'k' = 'x'\n)"
    assert brief(statement) == "CREATE TABLE t (a INT) WITH ( 'connector' = 'filesystem', 'k' = 'x' )"
    long = "CREATE TABLE t (\n" + ",\n".join(f"  column_{n} STRING" for n in range(10)) + "\n) WITH ('connector' = 'x')"
    assert brief(long) == "CREATE TABLE t ( " + ", ".join(f"column_{n} STRING" for n in range(10))[:80] + "..."
    assert len(brief(long)) == 100
    assert brief("CREATE DATABASE IF NOT EXISTS d") == "CREATE DATABASE IF NOT EXISTS d"
