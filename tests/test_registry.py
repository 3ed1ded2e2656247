"""Connector discovery (built-ins and entry points), the generated options reference, and each
built-in connector reading or writing real rows."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from sqlext.cli import main
from sqlext.connectors.reference import render_reference
from sqlext.errors import FactoryError
from sqlext.registry import SinkContext, SourceContext, available_identifiers, find_factory, reset_discovery
from sqlext.sink.api import InsertPlan
from sqlext.table import Column, TableDefinition, TableIdentifier

REPO = Path(__file__).resolve().parent.parent


def test_the_options_reference_in_the_repo_matches_the_declarations() -> None:
    documented = (REPO / "docs" / "connectors.md").read_text()
    assert documented == render_reference(), (
        "docs/connectors.md is out of date: run `python -m sqlext.connectors.reference > docs/connectors.md`"
    )


def test_connectors_command_lists_and_describes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["connectors"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["blackhole", "datagen", "filesystem", "print"]
    assert main(["connectors", "filesystem"]) == 0
    described = capsys.readouterr().out
    assert "| `sink.partition-commit.delay` | no | Duration | `0 ms` |" in described
    assert "| `path` | yes | String |" in described


def _install_distribution(root: Path, name: str, entry: str) -> None:
    """A throwaway installed distribution: a module and a dist-info with an entry point, on sys.path."""
    (root / f"{name}.py").write_text(
        "from sqlext.registry import ConnectorFactory\n\n"
        "class Factory(ConnectorFactory):\n"
        f"    identifier = {entry!r}\n"
        "    description = 'a test connector'\n"
    )
    dist_info = root / f"{name}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(f"[sqlext.connectors]\n{entry} = {name}:Factory\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    reset_discovery()
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("sqlext_test_connector")]:
        del sys.modules[name]
    reset_discovery()


def test_a_connector_installed_with_an_entry_point_is_found_by_identifier(site: Path) -> None:
    _install_distribution(site, "sqlext_test_connector_a", "my-store")
    factory = find_factory("my-store")
    assert type(factory).__module__ == "sqlext_test_connector_a"
    assert "my-store" in available_identifiers()


def test_two_factories_with_one_identifier_is_an_error_naming_both(site: Path) -> None:
    _install_distribution(site, "sqlext_test_connector_b", "datagen")
    with pytest.raises(FactoryError) as failure:
        find_factory("filesystem")
    assert "Multiple factories for identifier 'datagen'" in failure.value.message
    assert "sqlext.connectors.datagen:DataGenTableFactory" in failure.value.message
    assert "sqlext_test_connector_b:Factory" in failure.value.message


def _table(name: str, columns: list[tuple[str, str]], **options: str) -> TableDefinition:
    return TableDefinition(TableIdentifier("conn_db", name), tuple(Column(n, t) for n, t in columns), options)


@pytest.mark.spark
def test_filesystem_source_reads_partitions_metadata_and_filters_by_path(spark, tmp_path: Path) -> None:
    rows = spark.createDataFrame([(1, "a", "x"), (2, "b", "x"), (3, "c", "y")], "id INT, name STRING, p STRING")
    rows.write.partitionBy("p").csv((tmp_path / "data").as_uri(), sep=";")
    table = _table(
        "csv_src",
        [("id", "INT"), ("name", "STRING"), ("p", "STRING")],
        connector="filesystem",
        path=(tmp_path / "data").as_uri(),
        format="csv",
        **{"csv.field-delimiter": ";"},
    )
    table = TableDefinition(
        table.identifier,
        (*table.columns, Column("fname", "STRING", metadata_key="file.name")),
        table.options,
        partition_keys=("p",),
    )
    factory = find_factory("filesystem")
    frame = factory.create_source(SourceContext(spark, table, streaming=False))
    got = sorted((r.id, r.name, r.p, r.fname.startswith("part-")) for r in frame.collect())
    assert got == [(1, "a", "x", True), (2, "b", "x", True), (3, "c", "y", True)]

    only_y = TableDefinition(
        table.identifier,
        table.columns,
        {**table.options, "source.path.regex-pattern": ".*/p=y/.*"},
        partition_keys=("p",),
    )
    assert [r.id for r in factory.create_source(SourceContext(spark, only_y, streaming=False)).collect()] == [3]
    assert factory.is_bounded(table)
    assert not factory.is_bounded(
        TableDefinition(table.identifier, table.columns, {**table.options, "source.monitor-interval": "1 s"})
    )


@pytest.mark.spark
def test_datagen_generates_bounded_rows_within_their_ranges(spark) -> None:
    table = _table(
        "gen",
        [("id", "BIGINT"), ("score", "INT"), ("name", "STRING"), ("ts", "TIMESTAMP(3)")],
        connector="datagen",
        **{
            "number-of-rows": "500",
            "fields.id.kind": "sequence",
            "fields.id.start": "10",
            "fields.id.end": "10000",
            "fields.score.min": "5",
            "fields.score.max": "7",
            "fields.name.length": "12",
            "fields.ts.max-past": "1 h",
        },
    )
    factory = find_factory("datagen")
    factory.validate(table)
    rows = factory.create_source(SourceContext(spark, table, streaming=False)).collect()
    assert [r.id for r in sorted(rows, key=lambda r: r.id)] == list(range(10, 510))
    assert {r.score for r in rows} <= {5, 6, 7}
    assert {len(r.name) for r in rows} == {12}
    now = datetime.now()
    assert all(now - timedelta(hours=1, minutes=5) <= r.ts <= now + timedelta(minutes=5) for r in rows)


@pytest.mark.spark
def test_print_and_blackhole_sinks_take_rows(spark, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    printing = _table("out", [("a", "INT"), ("b", "STRING")], connector="print", **{"print-identifier": "sink"})
    rows = spark.createDataFrame([(1, "x"), (2, None)], "a INT, b STRING").coalesce(1)
    plan = InsertPlan("print_test", (tmp_path / "cp").as_uri())
    find_factory("print").create_sink(SinkContext(spark, printing, None, None)).write_batch(rows, plan)
    assert capsys.readouterr().out.splitlines() == ["sink> +I[1, x]", "sink> +I[2, null]"]
    hole = _table("void", [("a", "INT")], connector="blackhole")
    find_factory("blackhole").create_sink(SinkContext(spark, hole, None, None)).write_batch(rows, plan)
    assert capsys.readouterr().out == ""
