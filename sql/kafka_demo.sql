-- The second demo: Kafka -> an hourly partitioned table, as Flink users write it. Six hours of JSON events
-- in a 3-partition topic stream into a parquet table partitioned by day and hour; each hour is committed
-- (HMS partition + _SUCCESS) once the watermark passes its end; a killed run resumes from its checkpoint
-- and writes every event exactly once.
-- Run it on the test broker (a dev checkout, `make install`):
--   python -m tests.support.kafka --port 9092 --demo-events      (Apache Kafka on 127.0.0.1:9092, topic 'events')
--   sqlext run sql/kafka_demo.sql                                 (in another shell; Ctrl-C to stop)

CREATE DATABASE IF NOT EXISTS kafka_demo;

CREATE TABLE IF NOT EXISTS kafka_demo.events_source (
  id BIGINT,
  user_id STRING,
  amount DOUBLE,
  ts TIMESTAMP(3),
  `partition` INT METADATA VIRTUAL,
  `offset` BIGINT METADATA VIRTUAL,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'events',
  'properties.bootstrap.servers' = '127.0.0.1:9092',
  'properties.group.id' = 'kafka_demo',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);

CREATE TABLE IF NOT EXISTS kafka_demo.events_by_hour (
  id BIGINT,
  user_id STRING,
  amount DOUBLE,
  ts TIMESTAMP(3),
  src_partition INT,
  src_offset BIGINT,
  dt STRING,
  `hr` STRING
) PARTITIONED BY (dt, `hr`) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-demo/kafka_events_by_hour',
  'format' = 'parquet',
  'sink.partition-commit.trigger' = 'partition-time',
  'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
  'sink.partition-commit.policy.kind' = 'metastore,success-file'
);

SET 'pipeline.name' = 'kafka_demo_events_by_hour';

INSERT INTO kafka_demo.events_by_hour
SELECT id, user_id, amount, ts, `partition`, `offset`, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH')
FROM kafka_demo.events_source;
