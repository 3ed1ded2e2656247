-- The demo pipeline: six hours of events, in event-time order, stream into a table partitioned by day
-- and hour; each hourly partition is committed (HMS partition + _SUCCESS) once, in the batch whose
-- watermark passes its end + 1 h; the hours the watermark never passes are committed at the end of the
-- bounded input. The very last event is late on purpose: its hour was committed long before, so that
-- partition is committed again (late data, as in Flink: the partition is altered, not lost).
-- Run with: sqlext run sql/demo.sql   (make demo does that on the embedded Hive Metastore)

CREATE DATABASE IF NOT EXISTS demo;

-- 21,600 events, one per second of event time from 2026-01-01 00:00:00, 1,800 per micro-batch (half an
-- hour of event time each); the watermark trails the newest event by 5 seconds.
CREATE TABLE IF NOT EXISTS demo.events_source (
  seq BIGINT,
  user_id BIGINT,
  amount DOUBLE,
  ts AS CASE WHEN seq = 21599 THEN TIMESTAMP '2026-01-01 01:30:00'
        ELSE TIMESTAMPADD(SECOND, CAST(seq AS INT), TIMESTAMP '2026-01-01 00:00:00') END,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '21600',
  'rows-per-second' = '1800',
  'fields.seq.kind' = 'sequence',
  'fields.seq.start' = '0',
  'fields.seq.end' = '21599',
  'fields.user_id.min' = '1',
  'fields.user_id.max' = '1000',
  'fields.amount.min' = '1',
  'fields.amount.max' = '500'
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
