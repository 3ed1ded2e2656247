-- A file landing zone (CSV files dropped into a directory, watched every 10 s) into an hourly
-- partitioned parquet table registered in the HMS, committed when the event time has passed the hour.

CREATE DATABASE IF NOT EXISTS landing;

CREATE TABLE IF NOT EXISTS landing.orders_raw (
  order_id BIGINT,
  customer STRING,
  amount DECIMAL(12, 2),
  created_at TIMESTAMP(3),
  source_file STRING METADATA FROM 'file.path' VIRTUAL,
  WATERMARK FOR created_at AS created_at - INTERVAL '1' MINUTE
) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/landing/orders',
  'format' = 'csv',
  'csv.field-delimiter' = ',',
  'csv.ignore-parse-errors' = 'true',
  'source.monitor-interval' = '10 s',
  'source.max-files-per-trigger' = '50'
);

CREATE TABLE IF NOT EXISTS landing.orders (
  order_id BIGINT,
  customer STRING,
  amount DECIMAL(12, 2),
  created_at TIMESTAMP(3),
  dt STRING,
  hr STRING
) PARTITIONED BY (dt, hr) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-examples/warehouse/orders',
  'format' = 'parquet',
  'sink.rolling-policy.file-size' = '256MB',
  'sink.shuffle-by-partition.enable' = 'true',
  'sink.partition-commit.trigger' = 'partition-time',
  'sink.partition-commit.delay' = '1 h',
  'sink.partition-commit.idle-timeout' = '15 min',
  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
  'sink.partition-commit.policy.kind' = 'metastore,success-file'
);

SET 'pipeline.name' = 'landing_orders';
SET 'execution.checkpointing.interval' = '30 s';

INSERT INTO landing.orders
SELECT order_id, customer, amount, created_at,
       DATE_FORMAT(created_at, 'yyyy-MM-dd'), DATE_FORMAT(created_at, 'HH')
FROM landing.orders_raw
WHERE amount > 0;
