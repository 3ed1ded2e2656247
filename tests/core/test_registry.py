"""Connector discovery (built-ins and entry points of a throwaway installed distribution), Flink's
messages for unknown, ambiguous and missing identifiers, the generated options reference and the
``sqlext connectors`` command."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sqlext.cli import main
from sqlext.connectors.reference import render_reference
from sqlext.errors import FactoryError, OptionError, ValidationError
from sqlext.registry import (
    ConnectorFactory,
    SinkContext,
    SourceContext,
    available_identifiers,
    factories,
    factory_for,
    find_factory,
    reset_discovery,
    validate_table,
)
from sqlext.table import Column, TableDefinition, TableIdentifier

REPO = Path(__file__).resolve().parents[2]
BUILT_INS = ["blackhole", "datagen", "filesystem", "kafka", "print"]


def _table(**options: str) -> TableDefinition:
    return TableDefinition(TableIdentifier("reg_db", "t"), (Column("a", "INT"),), options)


def _install_distribution(root: Path, name: str, entries: dict[str, str], body: str = "") -> None:
    """A throwaway installed distribution: a module and a ``*.dist-info`` with entry points, on sys.path."""
    classes = "".join(
        f"class {cls}(ConnectorFactory):\n    identifier = {ident!r}\n    description = 'test connector {ident}'\n\n"
        for ident, cls in entries.items()
    )
    (root / f"{name}.py").write_text(f"from sqlext.registry import ConnectorFactory\n\n{classes}{body}")
    dist_info = root / f"{name}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{ident} = {name}:{cls}\n" for ident, cls in entries.items())
    (dist_info / "entry_points.txt").write_text(f"[sqlext.connectors]\n{lines}")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path for throwaway distributions; discovery is reset before and after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    reset_discovery()
    yield tmp_path
    for module in [m for m in sys.modules if m.startswith("sqlext_test_connector")]:
        del sys.modules[module]
    reset_discovery()


def test_built_in_identifiers_are_available() -> None:
    assert available_identifiers() == BUILT_INS
    assert sorted(factories()) == BUILT_INS
    assert all(factory.identifier == name for name, factory in factories().items())


def test_a_connector_installed_with_an_entry_point_is_found_by_identifier(site: Path) -> None:
    _install_distribution(site, "sqlext_test_connector_a", {"my-store": "MyStore"})
    factory = find_factory("my-store")
    assert type(factory).__module__ == "sqlext_test_connector_a"
    assert type(factory).__name__ == "MyStore"
    assert available_identifiers() == sorted([*BUILT_INS, "my-store"])
    assert find_factory("my-store") is factory  # loaded once
    assert factory_for(_table(connector="my-store")) is factory


def test_entry_points_are_imported_only_when_their_identifier_is_looked_up(site: Path) -> None:
    _install_distribution(site, "sqlext_test_connector_lazy", {"lazy-one": "Lazy"})
    assert "lazy-one" in available_identifiers()
    assert "sqlext_test_connector_lazy" not in sys.modules
    find_factory("filesystem")
    assert "sqlext_test_connector_lazy" not in sys.modules
    find_factory("lazy-one")
    assert "sqlext_test_connector_lazy" in sys.modules


def test_two_factories_with_one_identifier_is_an_error_naming_both(site: Path) -> None:
    _install_distribution(site, "sqlext_test_connector_b", {"datagen": "OtherDataGen"})
    with pytest.raises(FactoryError) as failure:
        find_factory("datagen")
    assert failure.value.message == (
        "Multiple factories for identifier 'datagen' that implement 'DynamicTableFactory' found in the classpath."
        "\n\nAmbiguous factory classes are:\n\n"
        "sqlext.connectors.datagen:DataGenTableFactory\nsqlext_test_connector_b:OtherDataGen"
    )
    assert failure.value.value == "datagen"
    assert find_factory("filesystem").identifier == "filesystem"  # other identifiers still work
    with pytest.raises(FactoryError, match="Multiple factories for identifier 'datagen'"):
        factories()


def test_two_third_party_factories_with_one_identifier_conflict_too(site: Path) -> None:
    _install_distribution(site, "sqlext_test_connector_c", {"kv": "One"})
    _install_distribution(site, "sqlext_test_connector_d", {"kv": "Two"})
    with pytest.raises(FactoryError, match="sqlext_test_connector_c:One\nsqlext_test_connector_d:Two"):
        find_factory("kv")


def test_an_entry_point_that_is_no_factory_or_does_not_import_is_named(site: Path) -> None:
    _install_distribution(site, "sqlext_test_connector_e", {"real": "Real"}, body="class NotAFactory:\n    pass\n")
    entry_points = site / "sqlext_test_connector_e-1.0.dist-info" / "entry_points.txt"
    entry_points.write_text(
        "[sqlext.connectors]\n"
        "plain = sqlext_test_connector_e:NotAFactory\n"
        "gone = sqlext_test_connector_missing:Gone\n"
        "liar = sqlext_test_connector_e:Real\n"
    )
    with pytest.raises(FactoryError, match=r"NotAFactory' .* is not a sqlext ConnectorFactory"):
        find_factory("plain")
    with pytest.raises(FactoryError, match="Could not load the factory 'sqlext_test_connector_missing:Gone'"):
        find_factory("gone")
    with pytest.raises(FactoryError, match="registered as 'liar' but its identifier is 'real'"):
        find_factory("liar")


def test_an_unknown_identifier_lists_the_available_ones_as_flink_does() -> None:
    with pytest.raises(FactoryError) as failure:
        find_factory("pulsar")
    assert failure.value.message == (
        "Could not find any factory for identifier 'pulsar' that implements 'DynamicTableFactory' in the classpath."
        "\n\nAvailable factory identifiers are:\n\nblackhole\ndatagen\nfilesystem\nkafka\nprint"
    )
    assert (failure.value.option, failure.value.value) == ("connector", "pulsar")


def test_a_misspelt_identifier_gets_the_closest_one() -> None:
    with pytest.raises(FactoryError) as failure:
        factory_for(_table(connector="filesytem"))
    assert failure.value.message.endswith("filesystem\nkafka\nprint\n\nDid you mean 'filesystem'?")


def test_a_table_without_connector_option_lists_the_identifiers() -> None:
    with pytest.raises(ValidationError) as failure:
        factory_for(_table(path="file:///x"))
    assert failure.value.message == (
        "Table options of reg_db.t do not contain an option key 'connector' for discovering a connector."
        "\n\nAvailable factory identifiers are:\n\nblackhole\ndatagen\nfilesystem\nkafka\nprint"
    )
    assert failure.value.option == "connector"


def test_validate_table_goes_through_the_connector() -> None:
    validate_table(_table(connector="blackhole"))
    with pytest.raises(OptionError, match="Unsupported options found for 'blackhole'"):
        validate_table(_table(connector="blackhole", **{"print-identifier": "x"}))


def test_a_source_only_or_sink_only_connector_refuses_the_other_role() -> None:
    table = _table(connector="print")
    with pytest.raises(ValidationError, match=r"connector 'print' cannot be used as a source \(table reg_db.t\)"):
        find_factory("print").create_source(SourceContext(None, table, streaming=False))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="connector 'datagen' cannot be used as a sink"):
        find_factory("datagen").create_sink(SinkContext(None, table, None, None))  # type: ignore[arg-type]


def test_a_factory_declares_no_options_by_default() -> None:
    class Bare(ConnectorFactory):
        identifier = "bare"

    bare = Bare()
    assert (bare.required_options(), bare.optional_options(), bare.is_bounded(_table())) == ((), (), False)
    bare.validate(_table(connector="bare"))
    with pytest.raises(OptionError, match="Unsupported options found for 'bare'"):
        bare.validate(_table(connector="bare", x="1"))


def test_the_options_reference_in_the_repo_matches_the_declarations() -> None:
    documented = (REPO / "docs" / "connectors.md").read_text()
    assert documented == render_reference(), (
        "docs/connectors.md is out of date: regenerate it with "
        "`.venv/bin/python -m sqlext.connectors.reference > docs/connectors.md`"
    )


def test_the_reference_of_one_connector_shows_type_default_and_requirement() -> None:
    text = render_reference("filesystem")
    assert text.startswith("## filesystem\n")
    assert "| `path` | yes | String | `(none)` |" in text
    assert "| `sink.partition-commit.delay` | no | Duration | `0 ms` |" in text
    assert "| `csv.*` | no | String |" in text
    assert "No options besides `connector`." in render_reference("blackhole")


def test_connectors_command_lists_and_describes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["connectors"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == BUILT_INS
    assert lines[2].startswith("filesystem   Files (parquet, orc, csv, json, avro, raw; change events")
    assert main(["connectors", "datagen"]) == 0
    described = capsys.readouterr().out
    assert "| `rows-per-second` | no | Integer | `10000` |" in described
    assert "| `number-of-rows` | no | Integer | `(none)` |" in described
    assert main(["connectors", "kafak"]) == 1
    assert "Could not find any factory for identifier 'kafak'" in capsys.readouterr().err


def test_connectors_command_shows_an_installed_connector(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _install_distribution(site, "sqlext_test_connector_f", {"my-store": "MyStore"})
    assert main(["connectors"]) == 0
    assert "my-store     test connector my-store" in capsys.readouterr().out.splitlines()
