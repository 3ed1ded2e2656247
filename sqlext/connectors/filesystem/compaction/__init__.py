"""Compaction: merging a partition's small files without any reader of the HMS seeing a row twice or missing one.
:mod:`.compactor` holds the protocol and the merging commit policy, :mod:`.plan` groups files, :mod:`.merge`
rewrites them, :mod:`.command` is ``sqlext compact``. May import the commit log and the connector's modules.

``sqlext.connectors.filesystem.compaction.MergingCommitPolicy``, the class path tables name in
``sink.partition-commit.policy.class``, stays valid: the class is importable from here."""

from sqlext.connectors.filesystem.compaction.compactor import MergingCommitPolicy

__all__ = ["MergingCommitPolicy"]
