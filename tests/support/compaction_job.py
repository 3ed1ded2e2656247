"""A process that compacts one partition of a table no metastore knows, as auto-compaction does before a first
commit (finish an interrupted compaction, then compact): what the compaction crash tests kill at a fault point
(``SQLEXT_FAULT``) and run again. No Spark, no HMS.

Usage: python -m tests.support.compaction_job TABLE_PATH PARTITION (``k=v/...``, values in key order)
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

from sqlext.connectors.filesystem.compaction.compactor import Compactor
from tests.support.tables import events_table


def main(argv: list[str]) -> int:
    table_path, partition = argv[:2]
    table = events_table("compaction_job", "events", Path(table_path))
    compactor = Compactor(table, None, 1 << 20, timedelta(0))
    compactor.recover()
    values = [part.split("=", 1)[1] for part in partition.split("/")]
    compactor.compact([(partition, values)], registered=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
