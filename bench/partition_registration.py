"""Partition registration (a backfill of existing directories): sqlext's partition commit vs Spark's
``MSCK REPAIR TABLE`` vs one HMS ``add_partition`` call per partition vs the metastore's own limit (batched
``add_partitions_req`` of partitions built in memory, nothing read from the files, over the client's parallel
connections and over one), on the same directory tree.

    python -m bench.partition_registration [--partitions 2000] [--repeats 3] [--variants sqlext,add_partitions_req]
        [--result partition_registration]

Prints a table and writes bench/results/<result>.json. ``--variants`` runs some of the variants only (sqlext and
the raw calls need no Spark: a quick comparison of the two).
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hmsclient.genthrift.hive_metastore import ttypes

from bench.common import median, metastore, print_table, scratch_dir, spark_session, timed, write_result
from sqlext.catalog.hms import Catalog
from sqlext.catalog.metastore.client import PARTITION_BATCH, MetastoreClient
from sqlext.connectors.filesystem.commit.committer import BatchCommitter
from sqlext.connectors.filesystem.settings import SinkSettings
from sqlext.table import Column, TableDefinition, TableIdentifier


def partition_values(count: int) -> list[tuple[str, str]]:
    first = date(2020, 1, 1)
    return [((first + timedelta(days=i // 24)).isoformat(), f"{i % 24:02d}") for i in range(count)]


def build_tree(root: Path, values: list[tuple[str, str]]) -> None:
    sample = pa.table({"id": list(range(100)), "user_id": ["u"] * 100})
    for dt, hr in values:
        directory = root / f"dt={dt}" / f"hr={hr}"
        directory.mkdir(parents=True)
        pq.write_table(sample, directory / "part-00000.parquet")


def table_definition(name: str, root: Path) -> TableDefinition:
    columns = (Column("id", "BIGINT"), Column("user_id", "STRING"), Column("dt", "STRING"), Column("hr", "STRING"))
    options = {
        "connector": "filesystem",
        "path": root.as_uri(),
        "format": "parquet",
        "sink.partition-commit.policy.kind": "metastore",
    }
    return TableDefinition(TableIdentifier("bench", name), columns, options, partition_keys=("dt", "hr"))


def register_with_sqlext(
    table: TableDefinition, metastore_uri: str, state: Path, values: list[tuple[str, str]]
) -> None:
    committer = BatchCommitter(SinkSettings.from_table(table), "backfill", state.as_uri(), metastore_uri)
    committer.trigger.add(((f"dt={dt}/hr={hr}", [dt, hr]) for dt, hr in values), now_ms=0)
    committer.end_of_input()
    committer.close()


def hms_partitions(
    client: MetastoreClient, table: TableDefinition, values: list[tuple[str, str]]
) -> list[ttypes.Partition]:
    """The partitions as the HMS stores them, statistics made up (no file is read)."""
    hms_table = client.get_table("bench", table.identifier.name)
    assert hms_table is not None
    partitions = []
    for dt, hr in values:
        storage = copy.deepcopy(hms_table.sd)
        storage.location = f"{table.options['path']}/dt={dt}/hr={hr}"
        partitions.append(
            ttypes.Partition(
                values=[dt, hr],
                dbName="bench",
                tableName=table.identifier.name,
                sd=storage,
                parameters={"numFiles": "1", "totalSize": "1", "numRows": "100"},
            )
        )
    return partitions


def register_one_call_each(client: MetastoreClient, table: TableDefinition, values: list[tuple[str, str]]) -> None:
    for partition in hms_partitions(client, table, values):
        client.add_partitions("bench", table.identifier.name, [partition])  # one HMS call each


def register_raw_batches(client: MetastoreClient, table: TableDefinition, values: list[tuple[str, str]]) -> None:
    """The metastore's own limit: batched ``add_partitions_req`` of ready partitions, nothing read or listed,
    over the client's ``PARALLEL_CALLS`` connections as sqlext sends them."""
    client.add_partitions("bench", table.identifier.name, hms_partitions(client, table, values))


def register_raw_one_connection(client: MetastoreClient, table: TableDefinition, values: list[tuple[str, str]]) -> None:
    """Batched ``add_partitions_req`` of ready partitions, one call after another on one connection."""
    partitions = hms_partitions(client, table, values)
    for start in range(0, len(partitions), PARTITION_BATCH):
        request = ttypes.AddPartitionsRequest(
            dbName="bench",
            tblName=table.identifier.name,
            parts=partitions[start : start + PARTITION_BATCH],
            ifNotExists=True,
            needResult=False,
        )
        client.call("add_partitions_req", request)


VARIANTS = ("sqlext", "add_partitions_req", "add_partitions_req_one_connection", "msck_repair", "one_call_each")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of " + ", ".join(VARIANTS))
    parser.add_argument("--result", default="partition_registration", help="the results file's name")
    args = parser.parse_args()
    kinds = [kind for kind in VARIANTS if kind in args.variants.split(",")]
    values = partition_values(args.partitions)
    home = scratch_dir()
    root = home / "tree"
    build_tree(root, values)
    seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
    loads: list[float] = []
    with metastore(home) as hms:
        spark = spark_session(hms.uri, home / "warehouse") if "msck_repair" in kinds else None
        client = MetastoreClient(hms.uri)
        catalog = Catalog(client)
        client.create_database("bench")
        if spark is not None:
            spark.sql("SELECT 1").collect()
        for repeat in range(args.repeats):
            tables = {kind: table_definition(f"{kind}_{repeat}", root) for kind in seconds}
            for table in tables.values():
                catalog.create_table(table, if_not_exists=False)
            actions: dict[str, Any] = {
                "sqlext": partial(
                    register_with_sqlext, metastore_uri=hms.uri, state=home / f"state-{repeat}", values=values
                ),
                "add_partitions_req": lambda table: register_raw_batches(client, table, values),
                "add_partitions_req_one_connection": lambda table: register_raw_one_connection(client, table, values),
                "msck_repair": lambda table: spark.sql(f"MSCK REPAIR TABLE bench.{table.identifier.name}"),
                "one_call_each": lambda table: register_one_call_each(client, table, values),
            }
            for kind in kinds:
                seconds[kind].append(timed(partial(actions[kind], tables[kind])))
                loads.append(os.getloadavg()[0])
                registered = len(client.get_partition_names("bench", tables[kind].identifier.name))
                assert registered == args.partitions, f"{kind} registered {registered}"
                print(f"  {kind} run {repeat + 1}: {seconds[kind][-1]:.2f} s (load {loads[-1]:.1f})", flush=True)
        if spark is not None:
            spark.stop()
        client.close()
    shutil.rmtree(home, ignore_errors=True)
    rates = {kind: args.partitions / median(s) for kind, s in seconds.items()}
    print_table(
        ["variant", "median s", "partitions/s"], [[k, f"{median(seconds[k]):.2f}", f"{rates[k]:.0f}"] for k in seconds]
    )
    ratios = {f"sqlext_vs_{k}": rates["sqlext"] / rates[k] for k in seconds if k != "sqlext" and "sqlext" in rates}
    print("  ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))
    result = {
        "params": vars(args),
        "seconds": seconds,
        "partitions_per_s": rates,
        "ratios": ratios,
        "load_average_after_each_run": loads,
    }
    print(f"written {write_result(args.result, result)}")


if __name__ == "__main__":
    main()
