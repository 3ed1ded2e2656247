"""``sqlext expire db.table [--dry-run]``: expire a table's partitions on demand (``partition.expiration-*``)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlext.errors import SqlextError

if TYPE_CHECKING:
    from sqlext.catalog.metastore.client import MetastoreClient

HELP = "drop a table's partitions older than its partition.expiration-time from the HMS, then delete their files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's own arguments (the ``--conf`` flags are added with every command's)."""
    parser.add_argument("table", help="db.table, with 'partition.expiration-time' among its options")
    parser.add_argument("--dry-run", action="store_true", help="print what would expire, change nothing")
    parser.add_argument(
        "--reader-grace",
        help="how long queries that listed the files may go on reading them, e.g. '30 s' (default 10 s)",
    )


def run_expire(args: argparse.Namespace, conf: dict[str, str], metastore: MetastoreClient) -> int:
    """Run ``sqlext expire`` on the metastore of the client ``metastore`` (closed at the end); print what expired
    (or would)."""
    # here, not at the top: every command's parser imports this module (sqlext run's start-up among them)
    from sqlext.catalog.hms import Catalog
    from sqlext.cli.conf import reach_storage
    from sqlext.connectors.filesystem.expiration import DEFAULT_READER_GRACE, PartitionExpirer
    from sqlext.options import DURATION_FORM, parse_duration
    from sqlext.table import TableIdentifier

    try:
        grace = parse_duration(args.reader_grace) if args.reader_grace else DEFAULT_READER_GRACE
    except ValueError as exc:
        raise SqlextError(f"--reader-grace '{args.reader_grace}' is not {DURATION_FORM}.") from exc
    with metastore as client:
        table = Catalog(client).get_table(TableIdentifier.parse(args.table))
        reach_storage(table.options.get("path", ""), conf)
        expirer = PartitionExpirer(table, client, grace)
        if args.dry_run:
            expired = expirer.expired()
            for partition in expired:
                since = datetime.fromtimestamp(partition.since_ms / 1000, UTC).isoformat(timespec="seconds")
                print(f"would expire {partition.path} ({expirer.strategy} {since})")
            print(f"{table.identifier}: {len(expired)} partition(s) would expire (dry run: nothing changed)")
            return 0
        entry = expirer.expire(wait=True)
    names = entry.committed_partitions if entry is not None else []
    for name in names:
        print(f"expired {name}")
    print(f"{table.identifier}: {len(names)} partition(s) expired")
    return 0
