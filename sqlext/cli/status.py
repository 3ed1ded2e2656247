"""``sqlext status [db.t]``: each insert's state, last commit, watermark and pending partitions, read from its
checkpoint and the sink's commit log (:mod:`sqlext.jobs.status`), whether it runs here, elsewhere or not at all."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from sqlext.config import CHECKPOINT_ROOT, SqlextConfig
from sqlext.errors import SqlextError


def add_parser(commands: argparse._SubParsersAction, add_conf_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add the ``status`` command to the ``sqlext`` parser."""
    status = commands.add_parser("status", help="show how each insert stands: last commit, lag, pending partitions")
    status.add_argument(
        "table",
        nargs="?",
        help="db.table (looked up in the metastore) or the table's path URI; none: every insert whose checkpoint "
        "is under the checkpoint root",
    )
    status.add_argument("--query", help="only this insert (its pipeline.name)")
    status.add_argument("--json", action="store_true", help="one JSON object per insert")
    add_conf_flags(status)
    status.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sqlext.cli.conf import command_conf, metastore_client, metastore_uri, reach_storage
    from sqlext.jobs.audit import resolve_table_path
    from sqlext.jobs.status import checkpoint_sinks, insert_statuses, render_status

    conf = command_conf(args)
    if args.table:
        targets = [(args.table, args.query)]
    else:
        root = _checkpoint_root(conf, lambda: metastore_uri(conf))
        reach_storage(root, conf)
        targets = [(sink, query) for sink, query in checkpoint_sinks(root) if args.query in (None, query)]
        if not targets:
            print(f"no inserts with a checkpoint under {root}")
            return 0
    statuses = []
    for table, query in targets:
        path = resolve_table_path(table, lambda: metastore_client(conf))
        reach_storage(path, conf)
        statuses.extend(insert_statuses(path, table, query))
    print(render_status(statuses, as_json=args.json))
    return 0


def _checkpoint_root(conf: dict[str, str], metastore_uri: Callable[[], str]) -> str:
    """``spark.sqlext.checkpoint.root``, else the default root of the metastore (as an insert finds it,
    without Spark's own ``spark.sql.streaming.checkpointLocation``, which a CLI has no session for)."""
    from sqlext.io.fs import join, normalize
    from sqlext.jobs.checkpoint import legacy_default_root, metastore_dir_name

    configured = SqlextConfig.load(conf).get(CHECKPOINT_ROOT)
    if configured:
        return normalize(configured)
    try:
        return join(legacy_default_root(), metastore_dir_name(metastore_uri()))
    except SqlextError:
        return legacy_default_root()
