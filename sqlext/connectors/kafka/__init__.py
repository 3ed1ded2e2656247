"""The ``kafka`` connector (Flink's Kafka SQL connector, source side), in one home.

- :mod:`.options`: every option it declares (Flink's keys and defaults);
- :mod:`.factory`: the factory, its option checks, and the choice between Spark's Kafka source and sqlext's own;
- :mod:`.spark_source`: Spark's Kafka source (its jar, options mapped onto Spark's, the broker probe);
- :mod:`.source`: sqlext's own source, a Python data source reading offset ranges per topic partition;
- :mod:`.client`: the Kafka client side of it (topics, start and end offsets, courtesy commits);
- :mod:`.decoding`: key and value formats and metadata columns, from raw records to the table's columns.
"""

from sqlext.connectors.kafka.factory import KafkaTableFactory

__all__ = ["KafkaTableFactory"]
