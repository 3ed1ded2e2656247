"""Kafka -> committed table throughput: the same JSON events through

(a) Spark's file source (the events as JSON files) into Spark's own file sink (parquet, ``dt``/``hr``),
(k) Spark's own Kafka source (``from_json``) into Spark's own file sink, no commit: the bar for (b),
(b) a sqlext streaming insert from a ``kafka`` table (json, read by Spark's Kafka source, bounded at the latest
    offset) into an hourly table with ``partition-time`` commit, ``metastore,success-file``, and
(p) the same insert read by sqlext's own source (confluent-kafka).

    python -m bench.kafka_throughput [--rows 150000] [--hours 6] [--repeats 2] [--warmup-rows 3000] [--profile]

The broker is the test broker (Apache Kafka, KRaft, one node; its jars fetched once, see tests/support/kafka.py).
Variants run interleaved in a rotating order, in one Spark session, after a warm-up of each (``--warmup-rows``,
default 3,000: it loads the classes but leaves the JIT cold, so the first full-size run of the Kafka path
takes 20-45% more task CPU than the next; a warm-up of ``--rows`` rows takes that out of the medians);
medians are reported, and per run each query's Spark stages with their task metrics (executor CPU and run
time, GC: far steadier than wall time on a loaded machine; ``stages`` and ``task_cpu_ms`` in the results).
``--profile`` adds a cProfile of the driver during one sqlext run and a profile of the executors' per-record
work (the offset-range read alone, no Spark). Writes bench/results/kafka_throughput.json.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import median, metastore, print_table, scratch_dir, spark_session, timed, write_result
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.connectors.kafka import spark_source
from sqlext.spark.session import extend

START = datetime(2026, 11, 22)
PARTITIONS = 3


def event(n: int, rows: int, hours: int) -> bytes:
    ts = START + timedelta(seconds=hours * 3600 * n / rows)
    body = {"id": n, "user_id": f"user-{n % 1000}", "amount": n * 0.01, "ts": ts.strftime("%Y-%m-%d %H:%M:%S")}
    return json.dumps(body).encode()


def produce(broker: Any, topic: str, rows: int, hours: int) -> None:
    """``rows`` events, round-robin over the partitions."""
    from confluent_kafka import Producer

    broker.create_topic(topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for n in range(rows):
        stamp = int((START + timedelta(seconds=hours * 3600 * n / rows)).replace(tzinfo=UTC).timestamp() * 1000)
        while True:
            try:
                producer.produce(topic, value=event(n, rows, hours), partition=n % PARTITIONS, timestamp=stamp)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(120) == 0, "records left unsent"


def write_json_files(directory: Path, rows: int, hours: int, files: int) -> None:
    """The same events as JSON lines files, for Spark's file source."""
    directory.mkdir(parents=True)
    per_file = -(-rows // files)
    for index in range(files):
        lines = (event(n, rows, hours) for n in range(index * per_file, min(rows, (index + 1) * per_file)))
        (directory / f"part-{index:05d}.json").write_bytes(b"\n".join(lines) + b"\n")


def spark_json_to_file_sink(spark: Any, input_dir: Path, work: Path) -> dict[str, Any]:
    """(a): Spark's file source and file sink, availableNow."""
    query = (
        spark.readStream.schema("id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP")
        .option("timestampFormat", "yyyy-MM-dd HH:mm:ss")
        .json(input_dir.as_uri())
        .withWatermark("ts", "1 second")
        .selectExpr("*", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr")
        .writeStream.format("parquet")
        .partitionBy("dt", "hr")
        .option("checkpointLocation", (work / "checkpoint").as_uri())
        .trigger(availableNow=True)
        .start((work / "table").as_uri())
    )
    query.awaitTermination()
    return query_record(spark, query)


def spark_kafka_to_file_sink(spark: Any, bootstrap: str, topic: str, work: Path) -> dict[str, Any]:
    """(k): Spark's Kafka source and file sink, availableNow; the value decoded with ``from_json``."""
    from pyspark.sql import functions as F

    schema = "id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP"
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.decode("value", "UTF-8"), schema, {"timestampFormat": "yyyy-MM-dd HH:mm:ss"}).alias("e"))
        .select("e.*")
        .withWatermark("ts", "1 second")
        .selectExpr("*", "date_format(ts, 'yyyy-MM-dd') AS dt", "date_format(ts, 'HH') AS hr")
        .writeStream.format("parquet")
        .partitionBy("dt", "hr")
        .option("checkpointLocation", (work / "checkpoint").as_uri())
        .trigger(availableNow=True)
        .start((work / "table").as_uri())
    )
    query.awaitTermination()
    return query_record(spark, query)


def query_record(spark: Any, query: Any) -> dict[str, Any]:
    """What a finished query did: per micro-batch its rows and Spark's own phase durations (ms), and its Spark
    stages' task metrics (:func:`stage_metrics`)."""
    batches = [{"rows": p["numInputRows"], **p["durationMs"]} for p in query.recentProgress]
    return {"batches": batches, "stages": stage_metrics(spark, str(query.runId))}


def stage_metrics(spark: Any, run_id: str) -> list[dict[str, Any]]:
    """Task metrics summed per stage of the Spark jobs a streaming query ran (job group = its run id, which
    ``foreachBatch``'s own writes inherit), from Spark's status store (kept with the UI off). CPU and run
    times vary far less with the machine's load than wall times do. JVM threads only: the Python workers
    of sqlext's own source are not in them."""
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    stages = []
    for index in range(jobs.size()):
        job = jobs.apply(index)
        if not job.jobGroup().isDefined() or job.jobGroup().get() != run_id:
            continue
        ids = job.stageIds()
        for position in range(ids.size()):
            stage = store.lastStageAttempt(ids.apply(position))
            stages.append(
                {
                    "job": job.jobId(),
                    "stage": stage.stageId(),
                    "tasks": stage.numTasks(),
                    "run_ms": stage.executorRunTime(),
                    "cpu_ms": round(stage.executorCpuTime() / 1e6),
                    "gc_ms": stage.jvmGcTime(),
                    "records_read": stage.inputRecords(),
                    "bytes_written": stage.outputBytes(),
                }
            )
    return sorted(stages, key=lambda stage: stage["stage"])


def sqlext_kafka_insert(spark: Any, bootstrap: str, topic: str, work: Path, name: str, reader: str) -> dict[str, Any]:
    """(b), (p): a bounded kafka table read by a sqlext streaming insert into an hourly partition-time table,
    ``reader`` (``spark.sqlext.kafka.source``) reading it."""
    spark.conf.set("spark.sqlext.kafka.source", reader)
    spark.sql(f"""
        CREATE TABLE bench.src_{name} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3),
          WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
        ) WITH (
          'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
          'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json'
        )""")
    spark.sql(f"""
        CREATE TABLE bench.{name} (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3), dt STRING, hr STRING)
        PARTITIONED BY (dt, hr) WITH (
          'connector' = 'filesystem', 'path' = '{(work / "table").as_uri()}', 'format' = 'parquet',
          'sink.partition-commit.trigger' = 'partition-time',
          'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
          'sink.partition-commit.policy.kind' = 'metastore,success-file'
        )""")
    spark.sql(f"SET 'pipeline.name' = '{name}'")
    [job] = spark.sql(
        f"INSERT INTO bench.{name} SELECT id, user_id, amount, ts, DATE_FORMAT(ts, 'yyyy-MM-dd'), "
        f"DATE_FORMAT(ts, 'HH') FROM bench.src_{name}"
    ).collect()
    running = running_insert(job.job_id)
    assert running is not None
    running.wait()
    failure = running.query.exception()
    assert failure is None, f"{name} failed: {failure}"
    return query_record(spark, running.query)


def committed_rows(spark: Any, name: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM bench.{name}").collect()[0][0])


def profile_text(profile: cProfile.Profile, limit: int = 25) -> str:
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(limit)
    return out.getvalue()


def read_alone(bootstrap: str, topic: str, rows: int) -> dict[str, Any]:
    """What an executor's Python worker does per offset range, without Spark: read + Arrow batches."""
    from sqlext.connectors.kafka.client import ReadSettings
    from sqlext.connectors.kafka.source import OffsetRange, read_range

    settings = ReadSettings("bench.read_alone", {"bootstrap.servers": bootstrap}, topics=[topic])
    for _ in read_range(settings, OffsetRange("warmup", 0, 0, 1_000)):  # imports (pyarrow, pandas) not timed
        pass
    per_partition = [len(range(p, rows, PARTITIONS)) for p in range(PARTITIONS)]
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    count = sum(
        batch.num_rows
        for p in range(PARTITIONS)
        for batch in read_range(settings, OffsetRange(topic, p, 0, per_partition[p]))
    )
    profile.disable()
    seconds = time.perf_counter() - started
    assert count == rows, f"read {count} of {rows}"
    return {"seconds": seconds, "rows_per_s": rows / seconds, "profile": profile_text(profile, 15)}


def main() -> None:
    from tests.support.kafka import start_broker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=150_000)
    parser.add_argument("--hours", type=int, default=6)
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--warmup-rows", type=int, default=3_000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    # Python data sources start their Python processes with PYSPARK_PYTHON (not spark.pyspark.python).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    home = scratch_dir()
    broker = start_broker(home / "kafka")
    result: dict[str, Any] = {"params": vars(args)}
    try:
        print(f"producing {args.rows:,} events ...", flush=True)
        result["produce_s"] = timed(lambda: produce(broker, "events", args.rows, args.hours))
        produce(broker, "warmup", args.warmup_rows, args.hours)
        write_json_files(home / "input", args.rows, args.hours, args.files)
        write_json_files(home / "warmup-input", args.warmup_rows, args.hours, 1)
        if args.profile:
            result["executor_read_alone"] = read_alone(broker.bootstrap, "events", args.rows)
            print(f"  read alone: {result['executor_read_alone']['rows_per_s']:,.0f} rows/s", flush=True)
        with metastore(home) as hms:
            # sqlext's catalog must use this metastore (without the conf it would use or start the default one),
            # and on a loaded machine the source's Python process may connect back later than Spark's 15 s.
            os.environ["PYSPARK_SUBMIT_ARGS"] = (
                f"--conf spark.sqlext.metastore.uris={hms.uri} "
                f"--conf spark.jars={','.join(str(jar) for jar in spark_source.jar_paths())} "
                "--conf spark.python.authenticate.socketTimeout=180s pyspark-shell"
            )
            spark = spark_session(hms.uri, home / "warehouse")
            assert extend(spark).metastore_uri == hms.uri, "sqlext would use another metastore"
            spark.conf.set("spark.sqlext.checkpoint.root", (home / "checkpoints").as_uri())
            spark.sql("CREATE DATABASE IF NOT EXISTS bench")

            def variants(topic: str, input_dir: Path, tag: str) -> dict[str, Any]:
                return {
                    "spark_json_files_to_file_sink": lambda: spark_json_to_file_sink(
                        spark, input_dir, home / f"a-{tag}"
                    ),
                    "spark_kafka_to_file_sink": lambda: spark_kafka_to_file_sink(
                        spark, broker.bootstrap, topic, home / f"k-{tag}"
                    ),
                    "sqlext_kafka_to_committed_table": lambda: sqlext_kafka_insert(
                        spark, broker.bootstrap, topic, home / f"b-{tag}", f"b_{tag}", "spark"
                    ),
                    "sqlext_own_source_to_committed_table": lambda: sqlext_kafka_insert(
                        spark, broker.bootstrap, topic, home / f"p-{tag}", f"p_{tag}", "sqlext"
                    ),
                }

            for action in variants("warmup", home / "warmup-input", "warmup").values():
                action()
            seconds: dict[str, list[float]] = {name: [] for name in variants("", home, "")}
            records: dict[str, list[Any]] = {name: [] for name in seconds}
            for repeat in range(args.repeats):
                ordered = list(variants("events", home / "input", f"r{repeat}").items())
                ordered = ordered[repeat % len(ordered) :] + ordered[: repeat % len(ordered)]
                for name, action in ordered:
                    started = time.perf_counter()
                    records[name].append(action())
                    seconds[name].append(time.perf_counter() - started)
                    print(f"  {name} run {repeat + 1}: {seconds[name][-1]:.1f} s", flush=True)
            counts = [committed_rows(spark, f"{v}_r{r}") for r in range(args.repeats) for v in "bp"]
            assert counts == [args.rows] * 2 * args.repeats, f"committed rows {counts}, expected {args.rows} each"
            if args.profile:
                profile = cProfile.Profile()
                profile.enable()
                sqlext_kafka_insert(spark, broker.bootstrap, "events", home / "b-profile", "b_profile", "spark")
                profile.disable()
                result["driver_profile"] = profile_text(profile)
            spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(home, ignore_errors=True)

    rates = {name: args.rows / median(values) for name, values in seconds.items()}
    print_table(
        ["variant", "median s", "rows/s"], [[n, f"{median(seconds[n]):.2f}", f"{rates[n]:,.0f}"] for n in seconds]
    )
    ratios = {
        "sqlext_kafka_vs_spark_kafka_file_sink": rates["sqlext_kafka_to_committed_table"]
        / rates["spark_kafka_to_file_sink"],
        "sqlext_own_source_vs_spark_kafka_file_sink": rates["sqlext_own_source_to_committed_table"]
        / rates["spark_kafka_to_file_sink"],
        "sqlext_kafka_vs_spark_files": rates["sqlext_kafka_to_committed_table"]
        / rates["spark_json_files_to_file_sink"],
    }
    for name, ratio in ratios.items():
        print(f"{name} = {ratio:.2f}")
    cpu = {name: [sum(stage["cpu_ms"] for stage in run["stages"]) for run in runs] for name, runs in records.items()}
    print_table(["variant", "task CPU ms per run", "median"], [[n, cpu[n], f"{median(cpu[n]):.0f}"] for n in cpu])
    result.update(
        {
            "seconds": seconds,
            "rows_per_s": rates,
            "ratios": ratios,
            "batches": {name: [run["batches"] for run in runs] for name, runs in records.items()},
            "stages": {name: [run["stages"] for run in runs] for name, runs in records.items()},
            "task_cpu_ms": cpu,
        }
    )
    print(f"written {write_result('kafka_throughput', result)}")


if __name__ == "__main__":
    main()
