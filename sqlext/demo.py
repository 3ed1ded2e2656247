"""The demo the README's first command runs: the embedded metastore, a database and a partitioned
table created through the HMS, listed back."""

from __future__ import annotations

import argparse
from pathlib import Path

from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.metastore import launcher
from sqlext.metastore.client import MetastoreClient
from sqlext.metastore.launcher import MetastoreSettings
from sqlext.paths import default_home

DEMO_DATABASE = "sqlext_demo"
DEMO_TABLE = "events"


def run_demo(args: argparse.Namespace) -> int:
    """Start the embedded HMS, create ``sqlext_demo.events`` partitioned by dt/hr, and list it back."""
    home = Path(args.home).resolve() if args.home else default_home() / "demo"
    settings = MetastoreSettings(port=args.port, home=home / "metastore")
    started = launcher.start(settings)
    print(f"metastore: {started.uri} ({'already running' if started.already_running else 'started'})")
    table_dir = home / "data" / DEMO_TABLE
    with MetastoreClient(started.uri) as client:
        client.create_database(DEMO_DATABASE, location=(home / "warehouse" / f"{DEMO_DATABASE}.db").as_uri())
        if client.get_table(DEMO_DATABASE, DEMO_TABLE) is None:
            client.create_table(_demo_table(table_dir.as_uri()))
        table = client.get_table(DEMO_DATABASE, DEMO_TABLE)
        assert table is not None
        print(f"databases: {', '.join(client.get_all_databases())}")
        print(f"tables in {DEMO_DATABASE}: {', '.join(client.get_all_tables(DEMO_DATABASE))}")
        columns = ", ".join(f"{c.name} {c.type}" for c in table.sd.cols)
        keys = ", ".join(f"{c.name} {c.type}" for c in table.partitionKeys)
        print(f"{DEMO_DATABASE}.{DEMO_TABLE}: ({columns}) partitioned by ({keys}) at {table.sd.location}")
    print(f"stop the metastore with: sqlext metastore stop --home {settings.home} --port {settings.port}")
    return 0


def _demo_table(location: str) -> ttypes.Table:
    serde = ttypes.SerDeInfo(
        serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", parameters={}
    )
    storage = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("user_id", "string", None), ttypes.FieldSchema("amount", "double", None)],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=serde,
        parameters={},
    )
    return ttypes.Table(
        tableName=DEMO_TABLE,
        dbName=DEMO_DATABASE,
        sd=storage,
        partitionKeys=[ttypes.FieldSchema("dt", "string", None), ttypes.FieldSchema("hr", "string", None)],
        parameters={"EXTERNAL": "TRUE"},
        tableType="EXTERNAL_TABLE",
    )
