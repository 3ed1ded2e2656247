-- The streaming writing example of Flink's "Hive Read & Write" documentation, as sqlext runs it: Flink's SQL
-- client forms (SET key=value), the Hive-dialect DDL, the streaming insert and the batch query that reads its
-- rows back. The Hive-dialect table becomes a sqlext filesystem table in the database's location; the Kafka
-- source of the docs reads from datagen here (sqlext's kafka connector needs a broker). The docs give both
-- variants the names hive_table and kafka_table; the second is hive_table_ltz and kafka_table_ltz here, so
-- that the file runs whole.

SET table.sql-dialect=hive;
CREATE TABLE hive_table (
  user_id STRING,
  order_amount DOUBLE
) PARTITIONED BY (dt STRING, hr STRING) STORED AS parquet TBLPROPERTIES (
  'partition.time-extractor.timestamp-pattern'='$dt $hr:00:00',
  'sink.partition-commit.trigger'='partition-time',
  'sink.partition-commit.delay'='1 h',
  'sink.partition-commit.policy.kind'='metastore,success-file'
);

SET table.sql-dialect=default;
CREATE TABLE kafka_table (
  user_id STRING,
  order_amount DOUBLE,
  log_ts TIMESTAMP(3),
  WATERMARK FOR log_ts AS log_ts - INTERVAL '5' SECOND -- Define watermark on TIMESTAMP column
) WITH ('connector' = 'datagen');

-- streaming sql, insert into hive table
INSERT INTO TABLE hive_table
SELECT user_id, order_amount, DATE_FORMAT(log_ts, 'yyyy-MM-dd'), DATE_FORMAT(log_ts, 'HH')
FROM kafka_table;

-- batch sql, select with partition pruning
SELECT * FROM hive_table WHERE dt='2020-05-20' and hr='12';

-- The TIMESTAMP_LTZ variant: partitions committed by a watermark read in Asia/Shanghai, the session time zone
-- the docs assume.
SET table.local-time-zone=Asia/Shanghai;
SET table.sql-dialect=hive;
CREATE TABLE hive_table_ltz (
  user_id STRING,
  order_amount DOUBLE
) PARTITIONED BY (dt STRING, hr STRING) STORED AS parquet TBLPROPERTIES (
  'partition.time-extractor.timestamp-pattern'='$dt $hr:00:00',
  'sink.partition-commit.trigger'='partition-time',
  'sink.partition-commit.delay'='1 h',
  'sink.partition-commit.watermark-time-zone'='Asia/Shanghai', -- Assume user configured time zone is 'Asia/Shanghai'
  'sink.partition-commit.policy.kind'='metastore,success-file'
);

SET table.sql-dialect=default;
CREATE TABLE kafka_table_ltz (
  user_id STRING,
  order_amount DOUBLE,
  ts BIGINT, -- time in epoch milliseconds
  ts_ltz AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR ts_ltz AS ts_ltz - INTERVAL '5' SECOND -- Define watermark on TIMESTAMP_LTZ column
) WITH ('connector' = 'datagen');

-- streaming sql, insert into hive table
INSERT INTO TABLE hive_table_ltz
SELECT user_id, order_amount, DATE_FORMAT(ts_ltz, 'yyyy-MM-dd'), DATE_FORMAT(ts_ltz, 'HH')
FROM kafka_table_ltz;

-- batch sql, select with partition pruning
SELECT * FROM hive_table_ltz WHERE dt='2020-05-20' and hr='12';
