"""Named fault points in the commit path, for crash tests.

``SQLEXT_FAULT=<point>[@<batch>]`` makes the driver die (``os._exit``, no cleanup, like a killed
process) the first time it reaches ``<point>`` (in batch ``<batch>``, when given). Unset, a fault point
costs one dictionary lookup. Points, in commit order:

``after-stage``        Spark wrote the batch's staging files; nothing recorded yet
``after-plan``         the batch's plan is recorded as ``requested``
``mid-move``           the first file of the batch has been moved to its partition (an overwrite: the
                       first partition swapped)
``after-move``         every file moved, the log still says ``inflight``
``after-log``          the log says ``completed``; partition commit not started
``between-policies``   the first commit policy ran on the ready partitions, the next has not
``after-policies``     every policy ran; the trigger state is not saved yet
``after-report``       the ``http-report`` policy reported the batch's ready partitions; the trigger state
                       is not saved yet
``after-merge``        compaction: merged files written in the hidden work dir, recorded ``inflight``
``after-switch``       compaction: HMS readers read the work dir; the partition dir not yet changed
``mid-swap``           compaction: merged-away files moved out of the partition, merged files not yet in
``after-expiry-drop``  expiration: the expired partitions are dropped from the HMS, their files not yet deleted
"""

from __future__ import annotations

import os
import sys

COMMIT_POINTS = (
    "after-stage",
    "after-plan",
    "mid-move",
    "after-move",
    "after-log",
    "between-policies",
    "after-policies",
)
COMPACTION_POINTS = ("after-merge", "after-switch", "mid-swap")
#: Reached only by tables with that policy or option.
REPORT_POINTS = ("after-report",)
EXPIRATION_POINTS = ("after-expiry-drop",)
POINTS = COMMIT_POINTS + COMPACTION_POINTS + REPORT_POINTS + EXPIRATION_POINTS
EXIT_CODE = 86


def fault_point(name: str, batch: int | None = None) -> None:
    """Die here if ``SQLEXT_FAULT`` names this point (and this batch)."""
    wanted = os.environ.get("SQLEXT_FAULT")
    if not wanted:
        return
    point, _, at_batch = wanted.partition("@")
    if point == name and (not at_batch or batch is None or int(at_batch) == batch):
        print(f"sqlext: fault point '{name}' reached (batch {batch}); exiting", file=sys.stderr, flush=True)
        os._exit(EXIT_CODE)
