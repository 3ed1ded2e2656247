-- The demo pipeline: generated events with an event-time watermark, written into a table partitioned
-- by day and hour, each partition committed (HMS partition + _SUCCESS) once the watermark passes its end.
-- Run with: sqlext run sql/demo.sql   (make demo does that on the embedded Hive Metastore)

CREATE DATABASE IF NOT EXISTS demo;

-- 20,000 events, 2,000 per micro-batch; event time spread over the last 3 hours.
CREATE TABLE IF NOT EXISTS demo.events_source (
  user_id BIGINT,
  amount DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '20000',
  'rows-per-second' = '2000',
  'fields.user_id.min' = '1',
  'fields.user_id.max' = '1000',
  'fields.amount.min' = '1',
  'fields.amount.max' = '500',
  'fields.ts.max-past' = '3 h'
);

CREATE TABLE IF NOT EXISTS demo.events_by_hour (
  user_id BIGINT,
  amount DOUBLE,
  ts TIMESTAMP(3),
  dt STRING,
  `hr` STRING
) PARTITIONED BY (dt, `hr`) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-demo/events_by_hour',
  'format' = 'parquet',
  'sink.partition-commit.trigger' = 'partition-time',
  'sink.partition-commit.delay' = '1 h',
  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
  'sink.partition-commit.policy.kind' = 'metastore,success-file'
);

SET 'pipeline.name' = 'demo_events_by_hour';

INSERT INTO demo.events_by_hour
SELECT user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH')
FROM demo.events_source;
