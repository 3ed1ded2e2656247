"""The ``filesystem`` connector, in one home (as Flink's ``flink-connector-files``).

- :mod:`.factory`: the connector factory and its option checks; :mod:`.options`: every option it declares;
  :mod:`.settings` reads a table's sink options; :mod:`.files` and :mod:`.escaping` know data files and
  partition paths; :mod:`.extractor` (partition times) and :mod:`.policies` (commit policies) are what users extend;
- :mod:`.source`: the read path of files; :mod:`.sink`: the streaming/batch sink;
- :mod:`.commit`: the commit protocol the sink writes through (stage and plan, move, record, commit partitions
  when the trigger says so); :mod:`.commit_log`: the table's record of every batch and compaction, which
  the commit writes and compaction, the streaming read, ``sqlext commits`` and the jobs read;
- :mod:`.compaction`: merging small files (auto-compaction, the merging policy, ``sqlext compact``);
- :mod:`.streaming`: the streaming read of committed partitions (``streaming-source.*``).

The sub-packages import the modules beside them and one way among themselves: ``commit`` runs
``compaction`` (auto-compaction), ``streaming`` reads what ``compaction`` switched; none imports ``streaming``.

The classes users extend are importable from here: :class:`PartitionCommitPolicy` (with its
:class:`PartitionCommitContext`), :class:`PartitionTimeExtractor`, and the :class:`MergingCommitPolicy`.
"""

from sqlext.connectors.filesystem.compaction.compactor import MergingCommitPolicy
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
