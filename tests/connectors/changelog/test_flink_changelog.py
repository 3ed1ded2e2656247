"""Change-event formats against Flink 2.3 itself on the same files with the same DDL: the rows and row kinds
each format reads, the files of a debezium-json, canal-json and maxwell-json sink (NULL fields too), and the
INSERTs Flink refuses (an insert-only sink fed by a changelog, filtered or not; a changelog source in batch
mode), each refused by sqlext with Flink's reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.changelog_formats import ROW_KIND
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.errors import SqlextError
from tests.connectors.changelog import events
from tests.support.extension import extended_session
from tests.support.flink import Flink

pytestmark = [pytest.mark.flink, pytest.mark.spark, pytest.mark.hms, pytest.mark.slow]

DB = "flink_changelog"


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("flink_changelog")
    with extended_session(spark, root, DB):
        yield root


def _sqlext_rows(spark: Any, name: str) -> list[tuple[Any, ...]]:
    return [(r[ROW_KIND], *r[:-1]) for r in spark.sql(f"SELECT * FROM {DB}.{name}").collect()]


@pytest.mark.parametrize("fmt", sorted(events.MESSAGES))
def test_rows_and_row_kinds_are_flinks(flink: Flink, spark: Any, session: Path, fmt: str) -> None:
    path = events.write(session / fmt, events.MESSAGES[fmt])
    name = fmt.replace("-", "_")
    flink_rows = flink.query([events.ddl(name, fmt, path), f"SELECT * FROM {name}"], mode="streaming", row_kinds=True)
    spark.sql(events.ddl(f"{DB}.{name}", fmt, path))
    assert _sqlext_rows(spark, name) == [tuple(row) for row in flink_rows]
    assert [tuple(row) for row in flink_rows] == events.FLINK_READ[fmt]


def _lines(directory: Path) -> list[str]:
    files = [p for p in sorted(directory.rglob("*")) if p.is_file() and not p.name.startswith((".", "_"))]
    return [line for p in files if "_sqlext" not in p.parts for line in p.read_text().splitlines()]


def _insert(
    flink: Flink, spark: Any, source: Path, sink_format: str, out: Path, options: str = ""
) -> tuple[list[str], list[str]]:
    """``INSERT INTO`` a ``sink_format`` table of the debezium file ``source``, in Flink and in sqlext: the lines
    each wrote, Flink's and sqlext's (``out/flink``, ``out/sqlext``)."""
    flink_out, sqlext_out = out / "flink", out / "sqlext"
    flink.run(
        [
            events.ddl("src", "debezium-json", source),
            events.ddl("snk", sink_format, flink_out, options=options),
            "INSERT INTO snk SELECT * FROM src",
        ]
    )
    for table in ("src", "snk"):
        spark.sql(f"DROP TABLE IF EXISTS {DB}.{table}")
    spark.sql(events.ddl(f"{DB}.src", "debezium-json", source))
    spark.sql(events.ddl(f"{DB}.snk", sink_format, sqlext_out, options=options))
    [row] = spark.sql(f"INSERT INTO {DB}.snk SELECT * FROM {DB}.src").collect()
    running = running_insert(row.job_id)
    assert running is not None and running.finished.wait(180) and running.error is None
    return _lines(flink_out), _lines(sqlext_out)


@pytest.mark.parametrize("sink_format", sorted(events.FLINK_SINK))
def test_a_change_event_sink_writes_flinks_files(flink: Flink, spark: Any, session: Path, sink_format: str) -> None:
    # Flink's canal-json and maxwell-json serializers write only data and type (no ts, es, id, xid: nothing
    # that differs run to run), so the lines are compared whole, as text.
    source = events.write(session / "src", events.DEBEZIUM)
    flink_lines, sqlext_lines = _insert(flink, spark, source, sink_format, session / f"out_{sink_format}")
    assert sqlext_lines == flink_lines == events.FLINK_SINK[sink_format]


@pytest.mark.parametrize("ignore_nulls", ["false", "true"])
@pytest.mark.parametrize("sink_format", sorted(events.FLINK_SINK))
def test_a_null_field_is_written_as_flink_writes_it(
    flink: Flink, spark: Any, session: Path, sink_format: str, ignore_nulls: str
) -> None:
    source = events.write(session / "null_src", ['{"before":null,"after":{"id":1,"name":null,"price":1.5},"op":"c"}'])
    options = f", '{sink_format}.encode.ignore-null-fields' = '{ignore_nulls}'"
    out = session / f"null_{sink_format}_{ignore_nulls}"
    flink_lines, sqlext_lines = _insert(flink, spark, source, sink_format, out, options)
    assert sqlext_lines == flink_lines and len(flink_lines) == 1
    assert ('"name":null' in flink_lines[0]) == (ignore_nulls == "false")


@pytest.mark.parametrize("sink_format", sorted(events.FLINK_SINK))
def test_a_non_finite_double_is_written_as_flinks_string(
    flink: Flink, spark: Any, session: Path, sink_format: str
) -> None:
    """Flink 2.3's change-event serializers write NaN and the infinities as the strings ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"`` (no option for them), and so does sqlext: no
    ``<format>.encode.non-finite-number.mode`` (docs/connectors.md)."""
    prices = ("NaN", "Infinity", "-Infinity")
    lines = [f'{{"before":null,"after":{{"id":{i},"name":"n","price":"{p}"}},"op":"c"}}' for i, p in enumerate(prices)]
    source = events.write(session / f"non_finite_src_{sink_format}", lines)
    flink_lines, sqlext_lines = _insert(flink, spark, source, sink_format, session / f"non_finite_{sink_format}")
    assert sorted(sqlext_lines) == sorted(flink_lines) and len(flink_lines) == 3
    assert all(f'"price":"{p}"' in "".join(flink_lines) for p in prices)


@pytest.mark.parametrize(
    ("sink_format", "query", "mode"),
    [
        ("json", "SELECT * FROM {src}", "streaming"),
        ("csv", "SELECT * FROM {src} WHERE id > 0", "streaming"),
        ("debezium-json", "SELECT * FROM {src}", "batch"),
    ],
    ids=["json", "csv-filtered", "batch"],
)
def test_what_flink_refuses_sqlext_refuses_with_flinks_reason(
    flink: Flink, spark: Any, session: Path, sink_format: str, query: str, mode: str
) -> None:
    source = events.write(session / "refused_src", events.DEBEZIUM)
    target = session / f"refused_{sink_format}_{mode}"
    ddl = [events.ddl("r_src", "debezium-json", source), events.ddl("r_out", sink_format, target)]
    flink_reason = _flink_refusal(flink, ddl, "INSERT INTO r_out " + query.format(src="r_src"), mode)
    spark.sql(f"DROP TABLE IF EXISTS {DB}.r_src")
    spark.sql(f"DROP TABLE IF EXISTS {DB}.r_out")
    spark.sql(events.ddl(f"{DB}.r_src", "debezium-json", source))
    spark.sql(events.ddl(f"{DB}.r_out", sink_format, target))
    spark.sql(f"SET 'execution.runtime-mode' = '{mode}'")
    try:
        with pytest.raises(SqlextError) as refused:
            spark.sql(f"INSERT INTO {DB}.r_out " + query.format(src=f"{DB}.r_src"))
    finally:
        spark.sql("RESET 'execution.runtime-mode'")
    # Flink's sentence (Flink's catalog path and plan node differ from sqlext's names).
    sentence = next(p for p in _REASONS if p in flink_reason)
    assert sentence in str(refused.value.message)
    assert not _lines(target)


_REASONS = (
    "doesn't support consuming update and delete changes which is produced by",
    "Querying a table in batch mode is currently only possible for INSERT-only table sources. But the source for "
    "table '",
)


def _flink_refusal(flink: Flink, ddl: list[str], insert: str, mode: str) -> str:
    from tests.support.flink import FlinkError

    with pytest.raises(FlinkError) as refused:
        flink.run([*ddl, insert], mode=mode)
    return str(refused.value)
