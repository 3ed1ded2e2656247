-- The CREATE TABLE examples of Flink's FileSystem SQL connector documentation, as sqlext runs them.
-- Rewritten only where the docs use placeholders ('path' = 'file:///path/to/whatever', '...' formats)
-- and for Kafka, which sqlext has no connector for: the full example's kafka_table reads from datagen.

CREATE DATABASE IF NOT EXISTS flink_docs;

-- "Create a FileSystem table"
CREATE TABLE flink_docs.MyUserTable (
  column_name1 INT,
  column_name2 STRING,
  part_name1 INT,
  part_name2 STRING
) PARTITIONED BY (part_name1, part_name2) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/my_user_table',
  'format' = 'parquet',
  'partition.default-name' = '__HIVE_DEFAULT_PARTITION__',
  'sink.shuffle-by-partition.enable' = 'false'
);

-- "Available Metadata"
CREATE TABLE flink_docs.MyUserTableWithFilepath (
  column_name1 INT,
  column_name2 STRING,
  `file.path` STRING NOT NULL METADATA
) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/my_user_table_with_filepath',
  'format' = 'json'
);

-- "Full Example": the source (Kafka in the docs; datagen here)
CREATE TABLE flink_docs.kafka_table (
  user_id STRING,
  order_amount DOUBLE,
  log_ts TIMESTAMP(3),
  WATERMARK FOR log_ts AS log_ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'datagen',
  'fields.user_id.length' = '8'
);

-- "Full Example": the partitioned sink committed by partition time
CREATE TABLE flink_docs.fs_table (
  user_id STRING,
  order_amount DOUBLE,
  dt STRING,
  `hour` STRING
) PARTITIONED BY (dt, `hour`) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/fs_table',
  'format' = 'parquet',
  'sink.partition-commit.delay' = '1 h',
  'sink.partition-commit.policy.kind' = 'success-file'
);

-- "Full Example" with a watermark on a TIMESTAMP_LTZ column: the source (Kafka in the docs; datagen here)
CREATE TABLE flink_docs.kafka_table_ltz (
  user_id STRING,
  order_amount DOUBLE,
  ts BIGINT, -- time in epoch milliseconds
  ts_ltz AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR ts_ltz AS ts_ltz - INTERVAL '5' SECOND -- Define watermark on TIMESTAMP_LTZ column
) WITH (
  'connector' = 'datagen'
);

-- "Full Example" with the partition-time trigger and a TIMESTAMP_LTZ watermark in Asia/Shanghai
CREATE TABLE flink_docs.fs_table_ltz (
  user_id STRING,
  order_amount DOUBLE,
  dt STRING,
  `hour` STRING
) PARTITIONED BY (dt, `hour`) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/fs_table_ltz',
  'format' = 'parquet',
  'partition.time-extractor.timestamp-pattern' = '$dt $hour:00:00',
  'sink.partition-commit.delay' = '1 h',
  'sink.partition-commit.trigger' = 'partition-time',
  'sink.partition-commit.watermark-time-zone' = 'Asia/Shanghai',
  'sink.partition-commit.policy.kind' = 'success-file'
);
