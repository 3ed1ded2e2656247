"""sqlext's commands as the tests run them: the argument lists of a ``sqlext run`` in a process of its own."""

from __future__ import annotations

import sys
from pathlib import Path


def sqlext_run_command(job: Path, metastore_uri: str, checkpoint_root: Path) -> list[str]:
    """``sqlext run job`` on the metastore at ``metastore_uri``, its checkpoints under ``checkpoint_root``."""
    return [
        sys.executable,
        "-m",
        "sqlext.cli",
        "run",
        str(job),
        "--conf",
        f"spark.sqlext.metastore.uris={metastore_uri}",
        "--conf",
        f"spark.sqlext.checkpoint.root={checkpoint_root.as_uri()}",
    ]
