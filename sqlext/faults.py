"""Named fault points in the commit path, for crash tests.

``SQLEXT_FAULT=<point>[@<batch>]`` makes the driver die (``os._exit``, no cleanup, like a killed
process) the first time it reaches ``<point>`` (in batch ``<batch>``, when given). Unset, a fault point
costs one dictionary lookup. With the overlapped commit (``sink.partition-commit.async``), a fault armed at one
of the batch's background steps (:data:`BACKGROUND_POINTS`) is reached only once Spark has recorded that batch
as done: the crash is then the one the overlap adds, of a batch Spark will not replay. Points, in commit order:

``after-stage``        Spark wrote the batch's staging files (on s3a://: its pending uploads); nothing recorded yet
``after-plan``         the batch's plan is recorded as ``requested``
``after-handoff``      overlapped commit (``sink.partition-commit.async``): the batch's moves and partition
                       commit are handed to the background committer and Spark has recorded the batch as
                       done (it will not replay it); nothing moved yet
``mid-replace``        an overwrite, recorded ``inflight`` with what it replaces: the first replaced file
                       deleted (a partitioned table's staged files: the first partition dir renamed aside),
                       the others not yet, no new file in place
``mid-move``           the first file of the batch has been moved to its partition (an overwrite: the
                       first partition swapped; on s3a://: the first upload completed)
``after-move``         every file moved (or published), the log still says ``inflight``
``after-log``          the log says ``completed``; partition commit not started
``between-policies``   the first commit policy ran on the ready partitions (the first chunk of them, when more
                       than ``COMMIT_CHUNK`` are ready), the next has not
``between-chunks``     more than ``COMMIT_CHUNK`` partitions ready: every policy committed the first chunk of
                       them, the next chunk not yet (its files may be being read)
``after-policies``     every policy ran; the trigger state is not saved yet
``after-report``       the ``http-report`` policy reported the batch's ready partitions; the trigger state
                       is not saved yet
``after-merge``        compaction: merged files written in the hidden work dir, recorded ``inflight``
``after-switch``       compaction: HMS readers read the work dir; the partition dir not yet changed
``mid-delete``         compaction: the first merged-away file deleted from the partition, the others not yet
``mid-swap``           compaction: merged-away files deleted from the partition, merged files not yet in
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
#: Reached only by an INSERT OVERWRITE that replaces files (between ``after-plan`` and ``mid-move``).
OVERWRITE_POINTS = ("mid-replace",)
COMPACTION_POINTS = ("after-merge", "after-switch", "mid-delete", "mid-swap")
#: Reached only by a batch whose move and partition commit run on the insert's background committer.
HANDOFF_POINTS = ("after-handoff",)
#: The points of a batch's move and partition commit: with the overlapped commit, its background steps.
BACKGROUND_POINTS = (
    *HANDOFF_POINTS,
    "mid-move",
    "after-move",
    "after-log",
    "between-policies",
    "after-policies",
    "after-report",
)
#: Every point an overlapped commit's batch reaches, in the order it reaches them.
OVERLAPPED_POINTS = (*COMMIT_POINTS[:2], *HANDOFF_POINTS, *COMMIT_POINTS[2:])
#: Reached only by a commit of more partitions than a chunk (``partition_commit.COMMIT_CHUNK``): a backfill.
CHUNK_POINTS = ("between-chunks",)
#: Reached only by tables with that policy or option.
REPORT_POINTS = ("after-report",)
EXPIRATION_POINTS = ("after-expiry-drop",)
POINTS = (
    COMMIT_POINTS
    + OVERWRITE_POINTS
    + HANDOFF_POINTS
    + CHUNK_POINTS
    + COMPACTION_POINTS
    + REPORT_POINTS
    + EXPIRATION_POINTS
)
EXIT_CODE = 86


def armed(names: tuple[str, ...], batch: int | None = None) -> bool:
    """Whether ``SQLEXT_FAULT`` names one of these points (and this batch)."""
    wanted = os.environ.get("SQLEXT_FAULT")
    if not wanted:
        return False
    point, _, at_batch = wanted.partition("@")
    return point in names and (not at_batch or batch is None or int(at_batch) == batch)


def fault_point(name: str, batch: int | None = None) -> None:
    """Die here if ``SQLEXT_FAULT`` names this point (and this batch)."""
    if armed((name,), batch):
        print(f"sqlext: fault point '{name}' reached (batch {batch}); exiting", file=sys.stderr, flush=True)
        os._exit(EXIT_CODE)
