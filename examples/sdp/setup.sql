-- The sqlext table the pipeline writes into (run once: sqlext run examples/sdp/setup.sql).
CREATE DATABASE IF NOT EXISTS sdp_demo;

CREATE TABLE IF NOT EXISTS sdp_demo.events (
  id BIGINT,
  user_id STRING,
  amount DOUBLE,
  ts TIMESTAMP(3),
  dt STRING,
  hr STRING
) PARTITIONED BY (dt, hr) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/sqlext-sdp/events',
  'format' = 'parquet',
  'sink.partition-commit.policy.kind' = 'metastore,success-file'
);
