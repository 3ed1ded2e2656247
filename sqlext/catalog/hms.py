"""The HMS-backed catalog: sqlext table definitions stored as HMS tables, and rebuilt from them.

A table is an ``EXTERNAL_TABLE`` at its ``path``, with the SerDe and input/output formats of its
``format``, its physical non-partition columns as columns and its partition keys as partition keys
(Hive types), so Spark SQL, Spark's Thrift server and every HMS client read it natively. What only
Flink DDL has — the full column list with Flink types, computed and metadata columns, the watermark,
the primary key, the WITH options — is kept in the table parameters (``sqlext.*``; each option as
``sqlext.option.<key>``), enough to rebuild the exact definition in a later session. ``sqlext.table-id``
tells a table from an earlier one of the same name (see :mod:`sqlext.jobs.checkpoint`).

Temporary tables live in the catalog object only, shadow HMS tables and never reach the HMS.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.evolution import (
    FILE_FIELDS,
    RETIRED_COLUMNS,
    check_files_follow,
    file_fields,
    file_fields_after,
    retired_columns,
)
from sqlext.catalog.hive_storage import LAZY_SIMPLE_SERDE, TEXT_INPUT, TEXT_OUTPUT, HiveStorage, hive_storage
from sqlext.catalog.locations import mark_made_dir, missing_path
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.spark_reads import (
    SPARK_PROVIDER_FORMATS,
    SPARK_PROVIDER_KEYS,
    lists_partitions,
    spark_datasource_parameters,
    unread_by_spark,
)
from sqlext.errors import FileSystemError, MetastoreError, TableExistsError, TableNotFoundError, ValidationError
from sqlext.io.reach import unreachable_cause
from sqlext.io.records import newer_error
from sqlext.table import Column, TableDefinition, TableIdentifier, Watermark

if TYPE_CHECKING:
    from sqlext.sql.schema_change import SchemaChange

log = logging.getLogger("sqlext.catalog")

PARAM_PREFIX = "sqlext."
#: The table's id, set at CREATE and kept by ALTER: a table dropped and created again gets a new one.
TABLE_ID = f"{PARAM_PREFIX}table-id"
OPTION_PREFIX = "sqlext.option."
#: The format version of a table definition in the HMS parameters (``sqlext.version``): a newer one is refused.
FORMAT_VERSION = "1"

#: Tables of connectors without files (datagen, print, blackhole) get a plain text descriptor.
GENERIC_STORAGE = HiveStorage(
    LAZY_SIMPLE_SERDE, TEXT_INPUT, TEXT_OUTPUT, {"field.delim": ",", "serialization.format": ","}
)
#: The formats of filesystem tables whose files the HMS descriptor describes.
FILE_FORMATS = ("parquet", "orc", "csv", "json", "avro", "raw")


class Catalog:
    """sqlext tables in a Hive Metastore (plus this session's temporary tables)."""

    def __init__(self, client: MetastoreClient) -> None:
        self.client = client
        self.temporary: dict[TableIdentifier, TableDefinition] = {}

    @property
    def metastore_uri(self) -> str:
        return self.client.uri

    # -- databases -------------------------------------------------------------------------------

    def create_database(
        self,
        name: str,
        if_not_exists: bool = False,
        location: str | None = None,
        comment: str | None = None,
        properties: Mapping[str, str] | None = None,
        owner: str | None = None,
    ) -> bool:
        """Create a database (``properties``: its HMS parameters, Flink's ``WITH``; ``owner``: a user who owns it);
        False when it existed."""
        database = ttypes.Database(
            name=name, description=comment or "", locationUri=location, parameters=dict(properties or {})
        )
        if owner is not None:
            database.ownerName, database.ownerType = owner, ttypes.PrincipalType.USER
        try:
            self.client.call("create_database", database)
        except ttypes.AlreadyExistsException:
            if if_not_exists:
                return False
            raise ValidationError(
                f"Database '{name}' already exists (use CREATE DATABASE IF NOT EXISTS).", value=name
            ) from None
        return True

    def list_databases(self) -> list[str]:
        return sorted(self.client.get_all_databases())

    def database_exists(self, name: str) -> bool:
        return self.client.get_database(name) is not None

    # -- tables ----------------------------------------------------------------------------------

    def list_tables(self, database: str) -> list[str]:
        names = set(self.client.get_all_tables(database))
        names |= {ident.name for ident in self.temporary if ident.database == database}
        return sorted(names)

    def table_exists(self, ident: TableIdentifier) -> bool:
        """True for a sqlext table (temporary or in the HMS); False for none or a plain Hive table."""
        if ident in self.temporary:
            return True
        table = self.client.get_table(ident.database, ident.name)
        return table is not None and is_sqlext_table(table)

    def get_table(self, ident: TableIdentifier) -> TableDefinition:
        if ident in self.temporary:
            return self.temporary[ident]
        table = self.client.get_table(ident.database, ident.name)
        if table is None:
            raise TableNotFoundError(f"Table {ident} does not exist.")
        if not is_sqlext_table(table):
            raise TableNotFoundError(
                f"Table {ident} exists in the metastore but was not created by sqlext (no connector options); "
                "query it with Spark SQL."
            )
        return from_hms(table)

    def hms_table(self, ident: TableIdentifier) -> ttypes.Table:
        table = self.client.get_table(ident.database, ident.name)
        if table is None:
            raise TableNotFoundError(f"Table {ident} does not exist in the metastore.")
        return table

    def create_table(self, table: TableDefinition, if_not_exists: bool = False) -> bool:
        """Create the table; return False when it existed and ``if_not_exists`` was given.

        Options are validated through the table's connector first, so a bad CREATE writes nothing.
        """
        from sqlext.registry import validate_table

        typed_path = not table.extra.get("path-from-database")
        table = self._with_default_path(table)
        validate_table(table)
        ident = table.identifier
        exists = ident in self.temporary or self.client.get_table(ident.database, ident.name) is not None
        if table.temporary:
            if ident in self.temporary:
                if if_not_exists:
                    return False
                raise TableExistsError(f"Temporary table {ident} already exists.")
            self.temporary[ident] = table
            return True
        if exists:
            if if_not_exists:
                return False
            raise TableExistsError(f"Table {ident} already exists (use CREATE TABLE IF NOT EXISTS).")
        if not self.database_exists(ident.database):
            raise ValidationError(
                f"Database '{ident.database}' does not exist; CREATE DATABASE {ident.database} first."
            )
        hms_table = to_hms(table)
        hms_table.parameters[TABLE_ID] = uuid.uuid4().hex  # a recreated table is a new table
        missing = typed_path and missing_path(table)
        try:
            self.client.create_table(hms_table)
        except ttypes.MetaException as exc:
            unreachable = self._unreachable_location(table, str(exc.message))
            if unreachable is None:
                raise
            raise unreachable from None
        if missing:
            mark_made_dir(table)
        if unread_by_spark(table):
            log.warning(
                "Table %s has no 'metastore' commit policy, so its partitions never reach the metastore, and Spark "
                "(Hive, Trino) reads a partitioned csv table's partitions from there: a SELECT of it returns no "
                "rows. sqlext's own source reads its files (INSERT ... SELECT, streaming reads). Add 'metastore' "
                "to 'sink.partition-commit.policy.kind', or use parquet, orc or json, which Spark reads by listing "
                "the table's directories, as Flink does (docs/connectors.md).",
                ident,
            )
        return True

    def _unreachable_location(self, table: TableDefinition, error: str) -> FileSystemError | None:
        """The metastore creates a table's location: when it could not reach it (a bucket that does not
        exist, no credentials, no jars for the scheme), an error naming the path and what to check."""
        path = table.options.get("path")
        cause = unreachable_cause(path, error, metastore=True) if path else None
        if cause is None:
            return None
        return FileSystemError(
            f"Cannot create {table.identifier} at {path}: the metastore at {self.metastore_uri} cannot reach it: "
            f"{cause}; an external metastore takes these keys from its core-site.xml. Nothing was created. "
            f"(The metastore's error: {error})",
            value=path,
        )

    def table_id(self, ident: TableIdentifier) -> str:
        """What tells this table from an earlier one of the same name (an insert's checkpoint records it):
        the ``sqlext.table-id`` stored at CREATE; for a table created before sqlext stored one, its HMS
        create time; for a temporary table, a hash of its definition (it is declared again each run)."""
        if ident in self.temporary:
            table = self.temporary[ident]
            text = json.dumps([[asdict(c) for c in table.columns], sorted(table.options.items())])
            return "temporary-" + hashlib.sha256(text.encode()).hexdigest()[:16]
        hms_table = self.hms_table(ident)
        return (hms_table.parameters or {}).get(TABLE_ID) or f"created-{hms_table.createTime}"

    def _with_default_path(self, table: TableDefinition) -> TableDefinition:
        """Hive-dialect DDL without LOCATION: the table lives under its database's location."""
        if not table.extra.get("path-from-database"):
            return table
        database = self.client.get_database(table.identifier.database)
        if database is None or not database.locationUri:
            return table  # validation names the missing option
        path = f"{database.locationUri.rstrip('/')}/{table.identifier.name}"
        return replace(table, options={**table.options, "path": path}, extra={})

    def drop_table(self, ident: TableIdentifier, if_exists: bool = False, *, temporary: bool = False) -> bool:
        """Drop a table (a temporary one first, as it shadows the HMS one); an external table's files stay.

        ``temporary`` (``DROP TEMPORARY TABLE``) drops only a temporary table, as in Flink.
        """
        if self.temporary.pop(ident, None) is not None:
            return True
        if temporary or self.client.get_table(ident.database, ident.name) is None:
            if if_exists:
                return False
            kind = "Temporary table" if temporary else "Table"
            raise TableNotFoundError(f"{kind} {ident} does not exist.", value=str(ident))
        return self.client.drop_table(ident.database, ident.name, delete_data=False)

    def alter_table_options(
        self, ident: TableIdentifier, set_options: Mapping[str, str], reset_keys: Sequence[str] = ()
    ) -> TableDefinition:
        """Set and reset WITH options (validated through the connector before anything is stored)."""
        from sqlext.registry import validate_table

        current = self.get_table(ident)
        options = {**current.options, **set_options}
        for key in reset_keys:
            if key == "connector":
                raise ValidationError("Option 'connector' cannot be reset.", option=key)
            options.pop(key, None)
        updated = replace(current, options=options)
        validate_table(updated)
        if ident in self.temporary:
            self.temporary[ident] = updated
        else:
            self.client.alter_table(ident.database, ident.name, to_hms(updated, self.hms_table(ident)))
        return updated

    def alter_table_schema(
        self, ident: TableIdentifier, change: SchemaChange, cascade: bool | None = None
    ) -> TableDefinition:
        """Apply an ``ALTER TABLE`` column change (:mod:`sqlext.sql.schema_change`): checked against Flink's
        rules, the connector's options and what the files already written can follow
        (:mod:`sqlext.catalog.evolution`) before anything is stored; then the table and every partition's
        columns change in one metastore transaction, as Hive's ``ALTER TABLE ... CASCADE``. ``cascade``
        False (Hive's ``RESTRICT``: partitions left as they were) is refused."""
        from sqlext.registry import validate_table
        from sqlext.sql.schema_change import apply_change

        if cascade is False:
            raise ValidationError(
                f"ALTER TABLE {ident} ... RESTRICT is not supported: sqlext changes a table's columns together with "
                "every partition's (CASCADE), so that every reader reads the old partitions by the new columns. "
                "Leave RESTRICT out.",
                value="RESTRICT",
            )
        current = self.get_table(ident)
        updated = apply_change(current, change)
        validate_table(updated)
        if ident in self.temporary:
            self.temporary[ident] = updated
            return updated
        existing = self.hms_table(ident)
        retired = check_files_follow(current, updated, change, retired_columns(existing.parameters))
        table = to_hms(updated, existing)
        ours = definition_parameters(updated)
        # Spark saves a Hive table's schema as it infers it (spark.sql.hive.caseSensitiveInferenceMode): stale now.
        table.parameters = {
            k: v for k, v in table.parameters.items() if not k.startswith(SPARK_SCHEMA_PREFIX) or k in ours
        }
        if retired:
            table.parameters[RETIRED_COLUMNS] = json.dumps(retired)
        fields = file_fields_after(current, updated, file_fields(existing.parameters))
        if fields is not None:
            table.parameters[FILE_FIELDS] = ",".join(map(str, fields))
        else:
            table.parameters.pop(FILE_FIELDS, None)
        try:
            self.client.alter_table_cascade(ident.database, ident.name, table)
        except (ttypes.InvalidOperationException, ttypes.MetaException) as exc:
            raise MetastoreError(
                f"The metastore at {self.metastore_uri} refused ALTER TABLE {ident} {change.describe()}: "
                f"{exc.message}. Nothing changed (the table and its partitions change in one metastore "
                f"transaction).{_INCOMPATIBLE_HINT if 'incompatible' in str(exc.message) else ''}",
                value=str(ident),
            ) from None
        return updated


#: When a metastore refuses columns whose types differ from the old ones at the same position.
_INCOMPATIBLE_HINT = (
    " The metastore compares each column with the one at the same position before the change "
    "(hive.metastore.disallow.incompatible.col.type.changes, metastore.disallow.incompatible.col.type.changes from "
    "Hive 3): dropping or moving a column shifts the others. Set it to false in the metastore's configuration "
    "(sqlext's embedded metastore does) to drop or move columns."
)
#: Spark's parameters holding a table's schema.
SPARK_SCHEMA_PREFIX = "spark.sql.sources.schema"


def is_sqlext_table(table: ttypes.Table) -> bool:
    return f"{OPTION_PREFIX}connector" in (table.parameters or {})


def _storage(table: TableDefinition) -> HiveStorage:
    """The descriptor of the table's format (see :mod:`sqlext.catalog.formats`); a plain text one without files."""
    fmt = table.options.get("format", "")
    if table.connector == "filesystem" and fmt in FILE_FORMATS:
        prefix = f"{fmt}."
        options = {k[len(prefix) :]: v for k, v in table.options.items() if k.startswith(prefix)}
        return hive_storage(fmt, options, [(c.name, c.type, c.nullable) for c in table.data_columns])
    return GENERIC_STORAGE


def to_hms(table: TableDefinition, existing: ttypes.Table | None = None) -> ttypes.Table:
    """The HMS table for a definition (``existing``: keep its create time, owner and other params)."""
    from sqlext.sql.types import hive_type

    storage_format = _storage(table)
    columns = [
        ttypes.FieldSchema(c.name, storage_format.column_types.get(c.name) or hive_type(c.type), c.comment)
        for c in table.data_columns
    ]
    keys = [
        ttypes.FieldSchema(k, hive_type(table.column(k).type), table.column(k).comment) for k in table.partition_keys
    ]
    location = table.options.get("path") if table.connector == "filesystem" else None
    if location is None and existing is not None and existing.sd is not None:
        location = existing.sd.location  # the HMS gave a table without a path one; an alter needs it again
    storage = ttypes.StorageDescriptor(
        cols=columns,
        location=location,
        inputFormat=storage_format.input_format,
        outputFormat=storage_format.output_format,
        compressed=False,
        numBuckets=-1,
        serdeInfo=ttypes.SerDeInfo(
            name=None,
            serializationLib=storage_format.serde,
            parameters={**storage_format.parameters, **_path_param(table)},
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )
    # Spark's provider parameters are the definition's (an ALTER of the policies may add or drop them).
    previous = (existing.parameters or {}) if existing else {}
    kept = {k: v for k, v in previous.items() if not k.startswith((PARAM_PREFIX, *SPARK_PROVIDER_KEYS))}
    parameters = {**kept, **definition_parameters(table)}
    # What the table records of its past, which its definition does not.
    for key in (TABLE_ID, RETIRED_COLUMNS, FILE_FIELDS):
        if existing and key in (existing.parameters or {}):
            parameters[key] = existing.parameters[key]
    return ttypes.Table(
        tableName=table.identifier.name,
        dbName=table.identifier.database,
        owner=existing.owner if existing else None,
        createTime=existing.createTime if existing else None,
        sd=storage,
        partitionKeys=keys,
        parameters=parameters,
        tableType="EXTERNAL_TABLE",
    )


def _path_param(table: TableDefinition) -> dict[str, str]:
    if _spark_provider(table):
        return {"path": table.options["path"]}  # where Spark's data source tables keep their location
    return {}


def _spark_provider(table: TableDefinition) -> bool:
    if table.connector != "filesystem":
        return False
    return table.options.get("format") in SPARK_PROVIDER_FORMATS or lists_partitions(table)


def definition_parameters(table: TableDefinition) -> dict[str, str]:
    """The table parameters that hold what only the Flink definition has."""
    params = {
        "EXTERNAL": "TRUE",
        f"{PARAM_PREFIX}version": FORMAT_VERSION,
        f"{PARAM_PREFIX}schema": json.dumps([asdict(c) for c in table.columns]),
        f"{PARAM_PREFIX}partition-keys": json.dumps(list(table.partition_keys)),
        f"{PARAM_PREFIX}primary-key": json.dumps(list(table.primary_key)),
    }
    if table.comment:
        params["comment"] = table.comment
    if table.watermark is not None:
        delay = table.watermark.delay
        params[f"{PARAM_PREFIX}watermark"] = json.dumps(
            {
                "column": table.watermark.column,
                "expression": table.watermark.expression,
                "delay_ms": None if delay is None else int(delay.total_seconds() * 1000),
            }
        )
    if table.connector != "filesystem":
        params["is_generic"] = "true"  # as Flink's HiveCatalog marks tables Hive itself cannot read
    elif _spark_provider(table):
        params.update(spark_datasource_parameters(table, listed=lists_partitions(table)))
    for key, value in table.options.items():
        params[f"{OPTION_PREFIX}{key}"] = value
    return params


def from_hms(table: ttypes.Table) -> TableDefinition:
    """Rebuild the definition stored by :func:`to_hms`."""
    params: dict[str, Any] = table.parameters or {}
    found = params.get(f"{PARAM_PREFIX}version", FORMAT_VERSION)
    if found.isdigit() and int(found) > int(FORMAT_VERSION):
        where = f"metastore table {table.dbName}.{table.tableName} (parameter {PARAM_PREFIX}version)"
        raise newer_error(where, "table definition", int(found), int(FORMAT_VERSION))
    columns = tuple(Column(**c) for c in json.loads(params[f"{PARAM_PREFIX}schema"]))
    watermark = None
    if f"{PARAM_PREFIX}watermark" in params:
        data = json.loads(params[f"{PARAM_PREFIX}watermark"])
        delay = None if data["delay_ms"] is None else timedelta(milliseconds=data["delay_ms"])
        watermark = Watermark(data["column"], data["expression"], delay)
    options = {k[len(OPTION_PREFIX) :]: v for k, v in params.items() if k.startswith(OPTION_PREFIX)}
    return TableDefinition(
        identifier=TableIdentifier(table.dbName.lower(), table.tableName.lower()),
        columns=columns,
        options=options,
        partition_keys=tuple(json.loads(params.get(f"{PARAM_PREFIX}partition-keys", "[]"))),
        watermark=watermark,
        primary_key=tuple(json.loads(params.get(f"{PARAM_PREFIX}primary-key", "[]"))),
        comment=params.get("comment"),
        extra={FILE_FIELDS: params[FILE_FIELDS]} if FILE_FIELDS in params else {},
    )
