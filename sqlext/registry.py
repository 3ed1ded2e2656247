"""Connector factories by identifier (Flink's ``FactoryUtil`` + SPI discovery).

Built-ins: ``filesystem``, ``datagen``, ``print``, ``blackhole``. Third-party connectors register a
:class:`ConnectorFactory` subclass under the Python entry point group ``sqlext.connectors``; they are
loaded lazily, the first time an identifier is looked up or listed. Two factories claiming one
identifier is an error naming both.
"""

from __future__ import annotations

import importlib
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

from sqlext.errors import FactoryError, ValidationError, did_you_mean
from sqlext.options import ConfigOption, validate
from sqlext.table import TableDefinition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sqlext.sink.api import TableSink

ENTRY_POINT_GROUP = "sqlext.connectors"

BUILT_INS = {
    "filesystem": "sqlext.connectors.filesystem:FileSystemTableFactory",
    "datagen": "sqlext.connectors.datagen:DataGenTableFactory",
    "print": "sqlext.connectors.print:PrintTableFactory",
    "blackhole": "sqlext.connectors.print:BlackHoleTableFactory",
}


@dataclass(frozen=True)
class SourceContext:
    spark: SparkSession
    table: TableDefinition
    streaming: bool


@dataclass(frozen=True)
class SinkContext:
    spark: SparkSession
    table: TableDefinition
    catalog: Any
    config: Any


class ConnectorFactory(ABC):
    """Builds sources and sinks for tables whose ``connector`` option is :attr:`identifier`."""

    identifier: ClassVar[str]
    description: ClassVar[str] = ""

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return ()

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return ()

    def validate(self, table: TableDefinition) -> None:
        """Check the table's options (Flink's wording for unknown, missing and bad values)."""
        validate(self.identifier, table.options, self.required_options(), self.optional_options())

    def is_bounded(self, table: TableDefinition) -> bool:
        """Whether the source ends by itself (a streaming insert from it ends and commits everything)."""
        return False

    def create_source(self, context: SourceContext) -> DataFrame:
        raise ValidationError(f"Connector '{self.identifier}' cannot be used as a source ({context.table.identifier}).")

    def create_sink(self, context: SinkContext) -> TableSink:
        raise ValidationError(f"Connector '{self.identifier}' cannot be used as a sink ({context.table.identifier}).")


_factories: dict[str, ConnectorFactory] | None = None


def _load(reference: str) -> ConnectorFactory:
    module_name, _, class_name = reference.partition(":")
    factory_class = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(factory_class, type) and issubclass(factory_class, ConnectorFactory)):
        raise FactoryError(f"'{reference}' is not a sqlext ConnectorFactory.")
    return factory_class()


def _discover() -> dict[str, ConnectorFactory]:
    sources: dict[str, list[str]] = {}
    for identifier, reference in BUILT_INS.items():
        sources.setdefault(identifier, []).append(reference)
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        sources.setdefault(entry.name, []).append(entry.value)
    duplicated = {identifier: refs for identifier, refs in sources.items() if len(set(refs)) > 1}
    if duplicated:
        identifier, refs = next(iter(duplicated.items()))
        raise FactoryError(
            f"Multiple factories for identifier '{identifier}' that implement 'ConnectorFactory' found:\n\n"
            + "\n".join(sorted(set(refs)))
        )
    factories = {}
    for identifier, refs in sources.items():
        factory = _load(refs[0])
        if getattr(factory, "identifier", identifier) != identifier:
            raise FactoryError(f"Factory '{refs[0]}' is registered as '{identifier}' but says '{factory.identifier}'.")
        factories[identifier] = factory
    return factories


def factories() -> dict[str, ConnectorFactory]:
    """Every known factory by identifier (discovered once, on first use)."""
    global _factories
    if _factories is None:
        _factories = _discover()
    return _factories


def reset_discovery() -> None:
    """Forget discovered factories (after installing a connector at run time, and in tests)."""
    global _factories
    _factories = None


def available_identifiers() -> list[str]:
    return sorted(factories())


def find_factory(identifier: str) -> ConnectorFactory:
    found = factories().get(identifier)
    if found is None:
        available = available_identifiers()
        raise FactoryError(
            f"Could not find any factory for identifier '{identifier}' that implements 'ConnectorFactory'."
            f"{did_you_mean(identifier, available)}\n\nAvailable factory identifiers are:\n\n" + "\n".join(available),
            option="connector",
            value=identifier,
        )
    return found


def factory_for(table: TableDefinition) -> ConnectorFactory:
    identifier = table.connector
    if not identifier:
        raise ValidationError(
            f"Table options of {table.identifier} do not contain an option key 'connector' for discovering a "
            f"connector. Available identifiers: {', '.join(available_identifiers())}.",
            option="connector",
        )
    return find_factory(identifier)


def validate_table(table: TableDefinition) -> None:
    """Validate a table's options through its connector (at CREATE, ALTER and INSERT)."""
    factory_for(table).validate(table)
