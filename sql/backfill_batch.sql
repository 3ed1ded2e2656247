-- A batch backfill: read every file of an archive once, write daily partitions, commit them all at
-- the end (Flink's end-of-input rule), replacing what those days held before.

CREATE DATABASE IF NOT EXISTS backfill;

CREATE TABLE IF NOT EXISTS backfill.clicks_archive (
  user_id BIGINT,
  url STRING,
  clicked_at TIMESTAMP(3),
  day STRING
) PARTITIONED BY (day) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/archive/clicks',
  'format' = 'orc'
);

CREATE TABLE IF NOT EXISTS backfill.clicks_daily (
  user_id BIGINT,
  url STRING,
  clicked_at TIMESTAMP(3),
  day STRING
) PARTITIONED BY (day) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/warehouse/clicks_daily',
  'format' = 'parquet',
  'partition.time-extractor.timestamp-formatter' = 'yyyyMMdd',
  'sink.partition-commit.policy.kind' = 'metastore,success-file'
);

SET 'execution.runtime-mode' = 'batch';

INSERT OVERWRITE backfill.clicks_daily
SELECT user_id, url, clicked_at, day FROM backfill.clicks_archive;
