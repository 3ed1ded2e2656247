"""The demo the README's first command runs: ``sql/demo.sql`` on the embedded Hive Metastore.

Six hours of generated events, in event-time order, stream into a table partitioned by day and hour;
each partition is committed (HMS partition with statistics, ``_SUCCESS``) once, in the batch whose
watermark passes its end + 1 h, the rest at the end of the bounded input; one deliberately late event
commits its partition a second time. The demo then lists the committed partitions with their row counts,
the batch that committed each and the watermark then (from the commit log), and says where to look.
"""

from __future__ import annotations

import argparse
import shutil
from datetime import UTC, datetime
from pathlib import Path

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.jobs.audit import commit_log_entries
from sqlext.jobs.timeline import PartitionCommit, partition_commits
from sqlext.runtime.paths import default_home, packaged_sql_dir

DEMO_FILE = "demo.sql"
DEMO_TABLE_PATH = "file:///tmp/sqlext-demo/events_by_hour"
#: The demo insert's ``pipeline.name`` (set in the demo file): its commit log says what committed when.
DEMO_QUERY = "demo_events_by_hour"


def run_demo(args: argparse.Namespace) -> int:
    """Start the embedded HMS, run the demo SQL file, and report what was committed where."""
    from sqlext.spark.runner import run_script

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
        "spark.ui.showConsoleProgress": "false",  # the log says what each batch did
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
    commits = partition_commits(commit_log_entries(table_dir.as_uri(), DEMO_QUERY))
    total = 0
    print(f"\ncommitted partitions of demo.events_by_hour ({len(partitions)}; watermarks in UTC):")
    for partition in sorted(partitions, key=lambda p: p.values):
        rows = int(partition.parameters.get("numRows", 0))
        total += rows
        name = f"dt={partition.values[0]}/hr={partition.values[1]}"
        success = (
            "_SUCCESS" if Path(partition.sd.location.replace("file:", "", 1), "_SUCCESS").exists() else "no _SUCCESS"
        )
        print(
            f"  {name}: {rows:>5} rows, {partition.parameters.get('numFiles')} files, {success}; "
            f"committed {describe_commits(commits[name])}"
        )
    print(f"  total: {total} rows\n")
    print("where to look:")
    print("  commit log:   sqlext commits demo.events_by_hour --metastore-uri " + uri)
    print("  its picture:  sqlext commits demo.events_by_hour --html timeline.html --metastore-uri " + uri)
    print(f"  files:        {table_dir}")
    print(f"  metastore:    {uri} (table demo.events_by_hour)")
    print(f"  query it:     sqlext thriftserver start --conf spark.sqlext.metastore.uris={uri}")
    print(
        "                then e.g. beeline -u jdbc:hive2://127.0.0.1:10000/default "
        "-e 'SELECT dt, hr, count(*) FROM demo.events_by_hour GROUP BY dt, hr'"
    )
    print(f"  stop:         sqlext metastore stop --home {settings.home} --port {settings.port}")


def describe_commits(commits: list[PartitionCommit]) -> str:
    """``committed in batch 5 (watermark ...)``, later commits named as late data."""
    first, *late = commits
    text = _describe(first)
    for again in late:
        text += f"; late data, committed again {_describe(again)}"
    return text


def _describe(commit: PartitionCommit) -> str:
    if commit.batch is None:
        return "at the end of input (no watermark passed it)"
    return f"in batch {commit.batch} (watermark {_utc(commit.watermark_ms)})"


def _utc(millis: int | None) -> str:
    if millis is None:
        return "none"
    return datetime.fromtimestamp(millis / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
