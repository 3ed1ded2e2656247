"""The driver-side commit protocol of the filesystem sink (Flink's ``StreamingFileCommitter``): :mod:`.committer`
drives it, :mod:`.plan` stages and plans a batch, :mod:`.moves` moves its files (each step recorded in
:mod:`..commit_log`), :mod:`.partition_commit` commits partitions when :mod:`.trigger` says so; :mod:`.progress`
keeps the insert's totals.
May import the connector's modules beside it and :mod:`..compaction` (auto-compaction runs before a first commit)."""
