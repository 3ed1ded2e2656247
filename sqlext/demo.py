"""The demo the README's first command runs: ``sql/demo.sql`` on the embedded Hive Metastore.

Generated events with an event-time watermark stream into a table partitioned by day and hour; each
partition is committed (HMS partition with statistics, ``_SUCCESS``) when the watermark passes its end
+ 1 h, the rest at the end of the bounded input. The demo then lists the committed partitions with their
row counts and says where to look.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from sqlext.metastore import launcher
from sqlext.metastore.client import MetastoreClient
from sqlext.metastore.launcher import MetastoreSettings
from sqlext.paths import default_home, packaged_sql_dir

DEMO_FILE = "demo.sql"
DEMO_TABLE_PATH = "file:///tmp/sqlext-demo/events_by_hour"


def run_demo(args: argparse.Namespace) -> int:
    """Start the embedded HMS, run the demo SQL file, and report what was committed where."""
    from sqlext.runner import run_script

    home = Path(args.home).resolve() if args.home else default_home() / "demo"
    settings = MetastoreSettings(port=args.port, home=home / "metastore")
    started = launcher.start(settings)
    print(f"metastore: {started.uri} ({'already running' if started.already_running else 'started'})")
    data_dir = home / "data"
    for stale in (data_dir, home / "checkpoints"):
        shutil.rmtree(stale, ignore_errors=True)  # every demo run starts from an empty table
    table_path = (data_dir / "events_by_hour").as_uri()
    script = (packaged_sql_dir() / DEMO_FILE).read_text().replace(DEMO_TABLE_PATH, table_path)
    script = "DROP TABLE IF EXISTS demo.events_by_hour;\nDROP TABLE IF EXISTS demo.events_source;\n" + script
    conf = {
        "spark.sqlext.metastore.uris": started.uri,
        "spark.sqlext.checkpoint.root": (home / "checkpoints").as_uri(),
        "spark.sql.warehouse.dir": (home / "warehouse").as_uri(),
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
    }
    code = run_script(script, conf, source=f"sql/{DEMO_FILE}")
    if code != 0:
        return code
    _report(started.uri, data_dir / "events_by_hour", settings)
    return 0


def _report(uri: str, table_dir: Path, settings: MetastoreSettings) -> None:
    with MetastoreClient(uri) as client:
        names = sorted(client.get_partition_names("demo", "events_by_hour"))
        partitions = client.get_partitions_by_names("demo", "events_by_hour", names)
    total = 0
    print(f"\ncommitted partitions of demo.events_by_hour ({len(partitions)}):")
    for partition in sorted(partitions, key=lambda p: p.values):
        rows = int(partition.parameters.get("numRows", 0))
        total += rows
        success = (
            "_SUCCESS" if Path(partition.sd.location.replace("file:", "", 1)).joinpath("_SUCCESS").exists() else ""
        )
        print(
            f"  dt={partition.values[0]}/hr={partition.values[1]}: {rows} rows, "
            f"{partition.parameters.get('numFiles')} files {success}"
        )
    print(f"  total: {total} rows\n")
    print("where to look:")
    print("  commit log:   sqlext commits demo.events_by_hour --metastore-uri " + uri)
    print(f"  files:        {table_dir}")
    print(f"  metastore:    {uri} (table demo.events_by_hour)")
    print(f"  query it:     sqlext thriftserver start --conf spark.sqlext.metastore.uris={uri}")
    print(
        "                then e.g. beeline -u jdbc:hive2://127.0.0.1:10000/default "
        "-e 'SELECT dt, hr, count(*) FROM demo.events_by_hour GROUP BY dt, hr'"
    )
    print(f"  stop:         sqlext metastore stop --home {settings.home} --port {settings.port}")
