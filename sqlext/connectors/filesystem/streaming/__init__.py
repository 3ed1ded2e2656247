"""The streaming read of committed partitions (Flink's Hive streaming source, ``streaming-source.*``):
:mod:`.source` is the entry point, :mod:`.partition_stream` the Spark data source, :mod:`.settings` its options,
:mod:`.spec`, :mod:`.partitions` and :mod:`.offsets` what it knows between micro-batches. May import the commit
log, compaction's file states and the connector's modules; nothing in the connector imports it but the factory."""
