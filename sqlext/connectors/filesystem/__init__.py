"""The ``filesystem`` connector, in one home (as Flink's ``flink-connector-files``).

- :mod:`.factory`: the connector factory and its option checks; :mod:`.options`: every option it declares;
- :mod:`.source`: the read path;
- :mod:`.sink`: the streaming/batch sink, writing through :mod:`.committer` (the commit protocol, recorded in
  :mod:`.commitlog`: :mod:`.batch_plan` stages and plans a batch, :mod:`.batch_moves` moves its files,
  :mod:`.partition_commit` commits its partitions when :mod:`.trigger` says so (partition times from
  :mod:`.extractor`) by running :mod:`.policies`); :mod:`.settings` reads a table's sink options,
  :mod:`.files` and :mod:`.escaping` know data files and partition paths;
- :mod:`.compaction`: merging small files (auto-compaction, the merging policy), planned by
  :mod:`.compaction_plan` and rewritten by :mod:`.compaction_merge`; ``sqlext compact`` in :mod:`.compact_command`.

The classes users extend are importable from here: :class:`PartitionCommitPolicy` (with its
:class:`PartitionCommitContext`), :class:`PartitionTimeExtractor`, and the :class:`MergingCommitPolicy`.
"""

from sqlext.connectors.filesystem.compaction import MergingCommitPolicy
from sqlext.connectors.filesystem.extractor import PartitionTimeExtractor
from sqlext.connectors.filesystem.factory import FileSystemTableFactory
from sqlext.connectors.filesystem.policies import PartitionCommitContext, PartitionCommitPolicy

__all__ = [
    "FileSystemTableFactory",
    "MergingCommitPolicy",
    "PartitionCommitContext",
    "PartitionCommitPolicy",
    "PartitionTimeExtractor",
]
