"""Connector factories by identifier (Flink's ``FactoryUtil`` + SPI discovery).

Built-ins: ``filesystem``, ``datagen``, ``kafka`` (source), ``print``, ``blackhole``. Third-party connectors register a
:class:`ConnectorFactory` subclass under the Python entry point group ``sqlext.connectors``
(``my-store = my_package.connector:MyStoreFactory``). Discovery is lazy twice over: entry points are read
the first time an identifier is looked up or listed, and a factory's module is imported only when that
factory is needed. Two factories claiming one identifier is an error naming both, raised when that
identifier is looked up (or when every factory is loaded, as the options reference does).
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

    from sqlext.sink import TableSink

ENTRY_POINT_GROUP = "sqlext.connectors"
#: Flink's name for what a connector factory is; kept in messages so Flink users recognise them.
FACTORY_KIND = "DynamicTableFactory"

BUILT_INS = {
    "filesystem": "sqlext.connectors.filesystem.factory:FileSystemTableFactory",
    "datagen": "sqlext.connectors.datagen:DataGenTableFactory",
    "kafka": "sqlext.connectors.kafka.factory:KafkaTableFactory",
    "print": "sqlext.connectors.print:PrintTableFactory",
    "blackhole": "sqlext.connectors.print:BlackHoleTableFactory",
}


@dataclass(frozen=True)
class SourceContext:
    """What a factory gets to build a source: a streaming DataFrame when ``streaming``, else a bounded one."""

    spark: SparkSession
    table: TableDefinition
    streaming: bool
    #: A directory the source may keep state of its own under: the session's checkpoint root when an
    #: insert or lookup join builds the source; None where nothing may be kept.
    state_root: str | None = None


@dataclass(frozen=True)
class SinkContext:
    """What a factory gets to build a sink; ``catalog`` and ``config`` are the session's (may be None)."""

    spark: SparkSession
    table: TableDefinition
    catalog: Any
    config: Any


class ConnectorFactory(ABC):
    """Builds sources and sinks for tables whose ``connector`` option is :attr:`identifier`.

    Subclasses declare their options (:meth:`required_options`, :meth:`optional_options`); the default
    :meth:`validate` checks a table's options against them with Flink's wording, and subclasses add
    checks that span options. A factory that is only a source (or only a sink) leaves the other
    ``create_*`` method alone: it refuses with a :class:`ValidationError`.
    """

    identifier: ClassVar[str]
    #: One line for ``sqlext connectors`` and the options reference.
    description: ClassVar[str] = ""

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        """Options every table of this connector must set."""
        return ()

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        """Options a table of this connector may set."""
        return ()

    def validate(self, table: TableDefinition) -> None:
        """Check the table's options (Flink's wording for missing, unparsable and unknown options)."""
        validate(self.identifier, table.options, self.required_options(), self.optional_options())

    def effective_defaults(self, table: TableDefinition) -> list[tuple[str, str]]:
        """Options the table leaves unset whose default matters and differs from what a Flink user may
        assume (``DESCRIBE`` lists them under "Defaults in effect")."""
        return []

    def is_bounded(self, table: TableDefinition) -> bool:
        """Whether the source ends by itself. A streaming insert reading only bounded sources runs with
        Spark's ``availableNow`` trigger: it reads everything, commits every partition and ends."""
        return False

    def partitions_in_metastore(self, table: TableDefinition) -> bool:
        """Whether the table's partitions are registered in the metastore as they are written. When not,
        Spark is told to find them by listing the table's directories (see :mod:`sqlext.catalog.hms`)."""
        return True

    def create_source(self, context: SourceContext) -> DataFrame:
        """The table's rows: a streaming DataFrame when ``context.streaming``, else a bounded one."""
        raise ValidationError(
            f"connector '{self.identifier}' cannot be used as a source (table {context.table.identifier}).",
            option="connector",
            value=self.identifier,
        )

    def create_sink(self, context: SinkContext) -> TableSink:
        """A sink writing rows into the table."""
        raise ValidationError(
            f"connector '{self.identifier}' cannot be used as a sink (table {context.table.identifier}).",
            option="connector",
            value=self.identifier,
        )

    def explain_failure(self, failure: str) -> str | None:
        """What to tell the user about a streaming query that failed with ``failure`` (its error's text),
        when the sources or sinks this factory made in this process can say more than the error does."""
        return None


_references: dict[str, list[str]] | None = None
_loaded: dict[str, ConnectorFactory] = {}


def _discover() -> dict[str, list[str]]:
    """Identifier -> ``module:Class`` references (built-ins first), read once; imports nothing."""
    global _references
    if _references is None:
        found: dict[str, list[str]] = {identifier: [reference] for identifier, reference in BUILT_INS.items()}
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            references = found.setdefault(entry.name, [])
            if entry.value not in references:  # one distribution seen twice on sys.path is not a conflict
                references.append(entry.value)
        _references = found
    return _references


def _load(identifier: str, reference: str) -> ConnectorFactory:
    module_name, _, class_name = reference.partition(":")
    try:
        factory_class = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise FactoryError(
            f"Could not load the factory '{reference}' registered for identifier '{identifier}': {exc}",
            value=identifier,
        ) from exc
    if not (isinstance(factory_class, type) and issubclass(factory_class, ConnectorFactory)):
        raise FactoryError(f"'{reference}' (identifier '{identifier}') is not a sqlext ConnectorFactory.")
    declared = getattr(factory_class, "identifier", None)
    if declared != identifier:
        raise FactoryError(f"Factory '{reference}' is registered as '{identifier}' but its identifier is '{declared}'.")
    return factory_class()


def _single_reference(identifier: str, references: list[str]) -> str:
    if len(references) > 1:
        raise FactoryError(
            f"Multiple factories for identifier '{identifier}' that implement '{FACTORY_KIND}' found in the "
            "classpath.\n\nAmbiguous factory classes are:\n\n" + "\n".join(sorted(references)),
            option="connector",
            value=identifier,
        )
    return references[0]


def available_identifiers() -> list[str]:
    """Every known identifier, sorted (reads entry points; imports no connector module)."""
    return sorted(_discover())


def find_factory(identifier: str) -> ConnectorFactory:
    """The factory for ``identifier``, imported on first use.

    Raises :class:`FactoryError` with Flink's wording when no factory, or more than one, answers.
    """
    if identifier in _loaded:
        return _loaded[identifier]
    references = _discover().get(identifier)
    if not references:
        available = available_identifiers()
        hint = did_you_mean(identifier, available).strip()
        raise FactoryError(
            f"Could not find any factory for identifier '{identifier}' that implements '{FACTORY_KIND}' in the "
            "classpath.\n\nAvailable factory identifiers are:\n\n"
            + "\n".join(available)
            + (f"\n\n{hint}" if hint else ""),
            option="connector",
            value=identifier,
        )
    factory = _load(identifier, _single_reference(identifier, references))
    _loaded[identifier] = factory
    return factory


def explain_query_failure(failure: str) -> str | None:
    """The first explanation of a failed query's error that a factory used in this process gives."""
    for factory in list(_loaded.values()):
        explained = factory.explain_failure(failure)
        if explained:
            return explained
    return None


def factories() -> dict[str, ConnectorFactory]:
    """Every known factory by identifier (imports them all; for listings and the options reference)."""
    return {identifier: find_factory(identifier) for identifier in available_identifiers()}


def factory_for(table: TableDefinition) -> ConnectorFactory:
    """The factory named by the table's ``connector`` option."""
    identifier = table.connector
    if not identifier:
        raise ValidationError(
            f"Table options of {table.identifier} do not contain an option key 'connector' for discovering a "
            "connector.\n\nAvailable factory identifiers are:\n\n" + "\n".join(available_identifiers()),
            option="connector",
        )
    return find_factory(identifier)


def validate_table(table: TableDefinition) -> None:
    """Validate a table's options through its connector (at CREATE, ALTER and INSERT)."""
    factory_for(table).validate(table)


def reset_discovery() -> None:
    """Forget discovered entry points and loaded factories (after installing a connector at run time)."""
    global _references
    _references = None
    _loaded.clear()
