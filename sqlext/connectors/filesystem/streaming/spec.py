"""What the streaming source's Python processes need to know about the table (:class:`SourceSpec`, passed
to the Spark data source as one JSON option), and the data source's format name."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlext.connectors.filesystem.streaming.settings import StreamingSourceSettings
from sqlext.table import TableDefinition

FORMAT_NAME = "sqlext-committed-partitions"


@dataclass(frozen=True)
class SourceSpec:
    """What the source's Python processes need to know about the table (passed as one JSON option)."""

    database: str
    table: str
    metastore_uris: str
    partition_keys: tuple[str, ...]
    data_columns: tuple[tuple[str, str], ...]
    options: Mapping[str, str]
    hadoop: Mapping[str, str]
    #: The session's metastore Kerberos and TLS settings (:mod:`sqlext.catalog.metastore.security`).
    metastore_security: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of_table(
        cls,
        table: TableDefinition,
        metastore_uris: str,
        hadoop: Mapping[str, str],
        metastore_security: Mapping[str, str] | None = None,
    ) -> SourceSpec:
        """The spec of reading ``table`` through the metastore at ``metastore_uris``."""
        return cls(
            database=table.identifier.database,
            table=table.identifier.name,
            metastore_uris=metastore_uris,
            partition_keys=tuple(table.partition_keys),
            data_columns=tuple((c.name, c.type) for c in table.data_columns),
            options=dict(table.options),
            hadoop=hadoop,
            metastore_security=dict(metastore_security or {}),
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "database": self.database,
                "table": self.table,
                "metastore_uris": self.metastore_uris,
                "partition_keys": list(self.partition_keys),
                "data_columns": [list(c) for c in self.data_columns],
                "options": dict(self.options),
                "hadoop": dict(self.hadoop),
                "metastore_security": dict(self.metastore_security),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SourceSpec:
        data = json.loads(text)
        return cls(
            database=data["database"],
            table=data["table"],
            metastore_uris=data["metastore_uris"],
            partition_keys=tuple(data["partition_keys"]),
            data_columns=tuple((name, kind) for name, kind in data["data_columns"]),
            options=data["options"],
            hadoop=data["hadoop"],
            metastore_security=data.get("metastore_security", {}),
        )

    def settings(self) -> StreamingSourceSettings:
        return StreamingSourceSettings.from_table(self.definition())

    def definition(self) -> TableDefinition:
        """A table definition enough for option reading and partition-time extraction."""
        from sqlext.table import Column, TableIdentifier

        columns = [Column(name, kind) for name, kind in self.data_columns]
        columns += [Column(key, "STRING") for key in self.partition_keys]
        return TableDefinition(
            TableIdentifier(self.database, self.table), tuple(columns), dict(self.options), self.partition_keys
        )

    def schema_ddl(self) -> str:
        """The source's Spark schema: data columns, then partition keys as strings."""
        from sqlext.sql.types import spark_type

        data = [f"`{name}` {spark_type(kind)}" for name, kind in self.data_columns]
        return ", ".join([*data, *(f"`{key}` string" for key in self.partition_keys)])
