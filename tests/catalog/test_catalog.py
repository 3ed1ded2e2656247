"""The HMS-backed catalog against a real metastore, and Spark SQL reading what it stored."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.catalog.hms import OPTION_PREFIX, TABLE_ID, Catalog
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.errors import OptionError, SqlextError, TableExistsError, TableNotFoundError, ValidationError
from sqlext.table import Column, TableDefinition, TableIdentifier, Watermark
from tests.support.services import spark_own_sql

pytestmark = [pytest.mark.hms]

DB = "catalog_db"
PARQUET = "org.apache.hadoop.hive.ql.io.parquet"
ORC = "org.apache.hadoop.hive.ql.io.orc"


@pytest.fixture
def catalog(hms: MetastoreClient) -> Catalog:
    catalog = Catalog(hms)
    catalog.create_database(DB, if_not_exists=True)
    return catalog


def _hms_path(path: Path) -> str:
    """How the HMS hands back a ``file://`` location."""
    return "file:" + str(path)


def _uri(path: Path) -> str:
    """A ``file://`` URI that keeps ``=`` as it is (``Path.as_uri`` writes ``%3D``)."""
    return f"file://{path}"


def _events(name: str, path: Path, fmt: str = "parquet", **options: str) -> TableDefinition:
    """Every kind of column, a watermark, a primary key and comments, partitioned by dt, hr."""
    columns = (
        Column("id", "BIGINT", comment="the id", nullable=False),
        Column("user_id", "STRING"),
        Column("amount", "DECIMAL(12, 2)"),
        Column("tags", "ARRAY<STRING>"),
        Column("ts", "TIMESTAMP(3)"),
        Column("id2", "", expression="id * 2"),
        Column("file_path", "STRING", metadata_key="file.path", virtual=True),
        Column("dt", "STRING", comment="day"),
        Column("hr", "STRING"),
    )
    return TableDefinition(
        TableIdentifier(DB, name),
        columns,
        {"connector": "filesystem", "path": path.as_uri(), "format": fmt, **options},
        partition_keys=("dt", "hr"),
        watermark=Watermark("ts", "ts - INTERVAL '5' SECOND", timedelta(seconds=5)),
        primary_key=("id",),
        comment="events by hour",
    )


def _state(catalog: Catalog) -> dict[str, list[str]]:
    return {db: catalog.client.get_all_tables(db) for db in catalog.list_databases()}


def test_a_table_is_an_external_hms_table_that_a_new_catalog_rebuilds_equal(
    catalog: Catalog, hms: MetastoreClient, tmp_path: Path
) -> None:
    table = _events("stored", tmp_path / "stored", **{"sink.partition-commit.delay": "1 h"})
    assert catalog.create_table(table) is True

    raw = catalog.hms_table(table.identifier)
    assert raw.tableType == "EXTERNAL_TABLE" and raw.parameters["EXTERNAL"] == "TRUE"
    assert raw.sd.location == _hms_path(tmp_path / "stored")
    assert raw.sd.serdeInfo.serializationLib == f"{PARQUET}.serde.ParquetHiveSerDe"
    assert (raw.sd.inputFormat, raw.sd.outputFormat) == (
        f"{PARQUET}.MapredParquetInputFormat",
        f"{PARQUET}.MapredParquetOutputFormat",
    )
    assert [(c.name, c.type, c.comment) for c in raw.sd.cols] == [
        ("id", "bigint", "the id"),
        ("user_id", "string", None),
        ("amount", "decimal(12,2)", None),
        ("tags", "array<string>", None),
        ("ts", "timestamp", None),
    ]
    assert [(k.name, k.type) for k in raw.partitionKeys] == [("dt", "string"), ("hr", "string")]
    assert raw.parameters[f"{OPTION_PREFIX}sink.partition-commit.delay"] == "1 h"
    assert raw.parameters["comment"] == "events by hour"
    assert [c["name"] for c in json.loads(raw.parameters["sqlext.schema"])][5:7] == ["id2", "file_path"]

    with MetastoreClient(hms.uri) as other:
        assert Catalog(other).get_table(table.identifier) == table
    assert catalog.table_exists(table.identifier)
    assert "stored" in catalog.list_tables(DB)


@pytest.mark.parametrize(
    ("fmt", "serde", "input_format"),
    [
        ("orc", f"{ORC}.OrcSerde", f"{ORC}.OrcInputFormat"),
        ("csv", "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", "org.apache.hadoop.mapred.TextInputFormat"),
        ("json", "org.apache.hive.hcatalog.data.JsonSerDe", "org.apache.hadoop.mapred.TextInputFormat"),
    ],
)
def test_storage_follows_the_format(catalog: Catalog, tmp_path: Path, fmt: str, serde: str, input_format: str) -> None:
    table = _events(f"fmt_{fmt}", tmp_path / fmt, fmt)
    if fmt == "csv":  # csv holds no ARRAY (refused at CREATE, as in Flink)
        table = replace(table, columns=tuple(c for c in table.columns if c.name != "tags"))
    catalog.create_table(table)
    raw = catalog.hms_table(table.identifier)
    assert (raw.sd.serdeInfo.serializationLib, raw.sd.inputFormat) == (serde, input_format)
    if fmt == "csv":  # LazySimpleSerDe reads what sqlext writes: escapes, line breaks, NULL (sqlext.catalog.formats)
        assert raw.sd.serdeInfo.parameters == {
            "field.delim": ",",
            "serialization.format": ",",
            "escape.delim": "\\",
            "serialization.escape.crlf": "true",
            "serialization.null.format": "\\N",
            "timestamp.formats": "yyyy-MM-dd HH:mm:ss.SSSSSSSSSZ,yyyy-MM-dd HH:mm:ssZ",
        }
    if fmt == "json":  # the JSON SerDes of Hive 3/4 and Trino read a TIMESTAMP_LTZ's Z through these
        assert raw.sd.serdeInfo.parameters["timestamp.formats"] == "yyyy-MM-dd HH:mm:ss.SSSSSSSSSZ,yyyy-MM-dd HH:mm:ssZ"


def test_tables_without_files_are_marked_generic(catalog: Catalog) -> None:
    table = TableDefinition(
        TableIdentifier(DB, "gen"), (Column("a", "INT"),), {"connector": "datagen", "number-of-rows": "5"}
    )
    catalog.create_table(table)
    raw = catalog.hms_table(table.identifier)
    assert raw.parameters["is_generic"] == "true"
    assert raw.tableType == "EXTERNAL_TABLE"
    assert Catalog(catalog.client).get_table(table.identifier) == table


def _register(catalog: Catalog, table: TableDefinition, values: list[str], path: Path) -> None:
    """Register a partition as the sink's metastore policy does: the table's descriptor at the partition dir."""
    raw = catalog.hms_table(table.identifier)
    storage = copy.deepcopy(raw.sd)
    storage.location = _uri(path)
    partition = ttypes.Partition(values=values, dbName=DB, tableName=raw.tableName, sd=storage, parameters={})
    catalog.client.add_partitions(DB, raw.tableName, [partition])


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_spark_sql_reads_registered_partitions_of_columnar_tables(
    catalog: Catalog, spark, tmp_path: Path, fmt: str
) -> None:
    table = _events(f"read_{fmt}", tmp_path / fmt, fmt)
    catalog.create_table(table)
    partition_dir = tmp_path / fmt / "dt=2026-11-22" / "hr=07"
    rows = spark.sql(
        "SELECT id, concat('u', id) AS user_id, CAST(id AS DECIMAL(12, 2)) AS amount, array('t') AS tags, "
        "TIMESTAMP '2026-11-22 07:00:00' AS ts FROM range(5)"
    )
    rows.write.format(fmt).save(_uri(partition_dir))
    _register(catalog, table, ["2026-11-22", "07"], partition_dir)

    name = f"{DB}.read_{fmt}"
    spark.catalog.refreshTable(name)
    spark_sql = spark_own_sql(spark)  # Spark's view, also when an earlier test extended the shared session
    read = spark_sql(f"SELECT id, user_id, amount, dt, hr FROM {name} ORDER BY id").collect()
    assert [(r.id, r.user_id, float(r.amount), r.dt, r.hr) for r in read] == [
        (i, f"u{i}", float(i), "2026-11-22", "07") for i in range(5)
    ]
    described = [r.col_name for r in spark_sql(f"DESCRIBE {name}").collect()]
    assert described[:7] == ["id", "user_id", "amount", "tags", "ts", "dt", "hr"]
    assert described[described.index("# Partition Information") + 2 :] == ["dt", "hr"]


@pytest.mark.spark
def test_spark_sql_reads_csv_with_the_declared_delimiter_and_json(catalog: Catalog, spark, tmp_path: Path) -> None:
    columns = (Column("id", "BIGINT"), Column("name", "STRING"), Column("price", "DOUBLE"), Column("dt", "STRING"))
    for fmt, extra, line in [
        ("csv", {"csv.field-delimiter": ";"}, "1;apple;2.5"),
        ("json", {}, '{"id": 1, "name": "apple", "price": 2.5}'),
    ]:
        table = TableDefinition(
            TableIdentifier(DB, f"text_{fmt}"),
            columns,
            {"connector": "filesystem", "path": (tmp_path / fmt).as_uri(), "format": fmt, **extra},
            partition_keys=("dt",),
        )
        catalog.create_table(table)
        partition_dir = tmp_path / fmt / "dt=d1"
        partition_dir.mkdir(parents=True)
        (partition_dir / "part-0").write_text(line + "\n")
        _register(catalog, table, ["d1"], partition_dir)
        name = f"{DB}.text_{fmt}"
        spark.catalog.refreshTable(name)
        assert [tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect()] == [(1, "apple", 2.5, "d1")], fmt


def test_temporary_tables_stay_in_memory_and_shadow_hms_tables(catalog: Catalog, tmp_path: Path) -> None:
    stored = _events("shadowed", tmp_path / "a")
    catalog.create_table(stored)
    temporary = TableDefinition(
        TableIdentifier(DB, "shadowed"), (Column("a", "INT"),), {"connector": "datagen"}, temporary=True
    )
    before = _state(catalog)
    assert catalog.create_table(temporary) is True
    assert _state(catalog) == before, "a temporary table never reaches the HMS"
    assert catalog.get_table(temporary.identifier) == temporary
    assert catalog.create_table(temporary, if_not_exists=True) is False
    with pytest.raises(TableExistsError, match="Temporary table"):
        catalog.create_table(temporary)

    catalog.drop_table(temporary.identifier)
    assert catalog.get_table(stored.identifier) == stored, "dropping the temporary table uncovers the HMS one"
    assert Catalog(catalog.client).table_exists(stored.identifier)


def test_drop_keeps_files_and_names_missing_tables(catalog: Catalog, tmp_path: Path) -> None:
    table = _events("dropped", tmp_path / "dropped")
    catalog.create_table(table)
    data = tmp_path / "dropped" / "dt=d" / "hr=h" / "part-0.parquet"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"PAR1")
    assert catalog.drop_table(table.identifier) is True
    assert data.is_file()
    assert not catalog.table_exists(table.identifier)
    assert catalog.drop_table(table.identifier, if_exists=True) is False
    with pytest.raises(TableNotFoundError, match=f"{DB}.dropped does not exist"):
        catalog.drop_table(table.identifier)
    with pytest.raises(TableNotFoundError):
        catalog.get_table(table.identifier)


def test_alter_options_set_and_reset_validated_before_storing(catalog: Catalog, tmp_path: Path) -> None:
    table = _events("altered", tmp_path / "altered")
    catalog.create_table(table)
    catalog.alter_table_options(table.identifier, {"sink.partition-commit.delay": "2 h"}, ())
    assert Catalog(catalog.client).get_table(table.identifier).options["sink.partition-commit.delay"] == "2 h"

    raw_before = catalog.hms_table(table.identifier).parameters
    with pytest.raises(OptionError) as failure:
        catalog.alter_table_options(table.identifier, {"sink.partition-commit.dleay": "1 h"}, ())
    assert "sink.partition-commit.dleay" in failure.value.message
    with pytest.raises(ValidationError, match="'connector' cannot be reset"):
        catalog.alter_table_options(table.identifier, {}, ["connector"])
    assert catalog.hms_table(table.identifier).parameters == raw_before

    catalog.alter_table_options(table.identifier, {}, ["sink.partition-commit.delay"])
    rebuilt = Catalog(catalog.client).get_table(table.identifier)
    assert rebuilt == table
    assert catalog.hms_table(table.identifier).sd.location == _hms_path(tmp_path / "altered")


def test_alter_options_of_a_table_without_a_path_keeps_the_location_the_metastore_gave_it(catalog: Catalog) -> None:
    table = TableDefinition(
        TableIdentifier(DB, "gen_altered"), (Column("a", "INT"),), {"connector": "datagen", "number-of-rows": "5"}
    )
    catalog.create_table(table)
    given = catalog.hms_table(table.identifier).sd.location

    catalog.alter_table_options(table.identifier, {"number-of-rows": "7", "rows-per-second": "3"}, ())

    assert Catalog(catalog.client).get_table(table.identifier).options == {
        "connector": "datagen",
        "number-of-rows": "7",
        "rows-per-second": "3",
    }
    assert given and catalog.hms_table(table.identifier).sd.location == given


def test_a_table_id_is_set_at_create_kept_by_alter_and_new_for_a_table_created_again(
    catalog: Catalog, tmp_path: Path
) -> None:
    table = _events("identified", tmp_path / "identified")
    catalog.create_table(table)
    first = catalog.table_id(table.identifier)
    assert first == catalog.hms_table(table.identifier).parameters[TABLE_ID] and len(first) == 32
    catalog.alter_table_options(table.identifier, {"sink.partition-commit.delay": "2 h"}, ())
    assert catalog.table_id(table.identifier) == first
    catalog.drop_table(table.identifier)
    catalog.create_table(table)
    assert catalog.table_id(table.identifier) not in ("", first)

    raw = catalog.hms_table(table.identifier)
    del raw.parameters[TABLE_ID]  # a table created before sqlext stored ids
    catalog.client.alter_table(DB, "identified", raw)
    assert catalog.table_id(table.identifier) == f"created-{raw.createTime}"


def test_databases(catalog: Catalog, tmp_path: Path) -> None:
    location = (tmp_path / "other.db").as_uri()
    created = catalog.create_database("catalog_other", location=location, comment="another", properties={"k": "v"})
    assert created is True
    assert catalog.create_database("catalog_other", if_not_exists=True) is False
    with pytest.raises(ValidationError, match="'catalog_other' already exists"):
        catalog.create_database("catalog_other")
    assert {"default", DB, "catalog_other"} <= set(catalog.list_databases())
    stored = catalog.client.get_database("catalog_other")
    assert stored is not None and (stored.description, stored.parameters) == ("another", {"k": "v"})


def test_plain_hive_tables_are_not_sqlext_tables(catalog: Catalog, hms: MetastoreClient) -> None:
    raw = ttypes.Table(
        tableName="plain",
        dbName=DB,
        sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("a", "int", None)], serdeInfo=ttypes.SerDeInfo()),
        partitionKeys=[],
        parameters={},
        tableType="MANAGED_TABLE",
    )
    if hms.get_table(DB, "plain") is None:
        hms.create_table(raw)
    assert not catalog.table_exists(TableIdentifier(DB, "plain"))
    with pytest.raises(TableNotFoundError, match="not created by sqlext"):
        catalog.get_table(TableIdentifier(DB, "plain"))


BAD_TABLES = [
    (
        "unknown connector",
        {"connector": "nope"},
        (Column("a", "INT"),),
        SqlextError,
        "nope",
    ),
    (
        "unknown option",
        {"connector": "filesystem", "path": "file:///tmp/x", "format": "parquet", "sink.rollng-policy.file-size": "1"},
        (Column("a", "INT"),),
        OptionError,
        "sink.rollng-policy.file-size",
    ),
    (
        "missing path",
        {"connector": "filesystem", "format": "parquet"},
        (Column("a", "INT"),),
        OptionError,
        "path",
    ),
    (
        "unsupported type",
        {"connector": "filesystem", "path": "file:///tmp/x", "format": "parquet"},
        (Column("a", "INTERVAL DAY"),),
        ValidationError,
        "Unsupported type 'INTERVAL DAY'",
    ),
]


@pytest.mark.parametrize(("case", "options", "columns", "error", "named"), BAD_TABLES, ids=[b[0] for b in BAD_TABLES])
def test_a_failed_create_writes_nothing(
    catalog: Catalog,
    case: str,
    options: dict[str, str],
    columns: tuple[Column, ...],
    error: type[SqlextError],
    named: str,
) -> None:
    before = _state(catalog)
    with pytest.raises(error) as failure:
        catalog.create_table(TableDefinition(TableIdentifier(DB, "bad"), columns, options))
    assert named in failure.value.message, case
    assert _state(catalog) == before


def test_create_in_a_missing_database_or_twice_writes_nothing(catalog: Catalog, tmp_path: Path) -> None:
    table = _events("twice", tmp_path / "twice")
    catalog.create_table(table)
    before = _state(catalog)
    with pytest.raises(TableExistsError, match=f"{DB}.twice already exists"):
        catalog.create_table(_events("twice", tmp_path / "elsewhere"))
    assert catalog.create_table(_events("twice", tmp_path / "elsewhere"), if_not_exists=True) is False
    missing = TableDefinition(TableIdentifier("no_such_db", "t"), (Column("a", "INT"),), {"connector": "datagen"})
    with pytest.raises(ValidationError, match="Database 'no_such_db' does not exist"):
        catalog.create_table(missing)
    assert _state(catalog) == before
    assert catalog.get_table(table.identifier).options["path"] == (tmp_path / "twice").as_uri()
