"""A real Apache Kafka broker for tests: KRaft, one node (broker and controller), on loopback, its jars
fetched once from Maven Central (:data:`BROKER_ARTIFACTS`, ``sqlext.runtime.jars``); started once per test session
by :func:`kafka_broker`, and helpers to create topics and produce records."""

from __future__ import annotations

import base64
import json
import logging
import shutil
import subprocess
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.runtime import jars
from tests.support.daemons import start_daemon, stop_daemon
from tests.support.waiting import free_port, wait_for

#: librdkafka's own log lines go here instead of stderr.
CLIENT_LOG = logging.getLogger("tests.kafka.client")
#: Kafka 4.x: KRaft only, runs on Java 17.
BROKER_ARTIFACTS = ["org.apache.kafka:kafka_2.13:4.1.1"]
_JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]


def broker_classpath() -> str:
    """The broker's class path (the jars are fetched the first time, ~44 MB)."""
    return jars.classpath(jars.fetch("kafka-broker", BROKER_ARTIFACTS))


def _server_properties(home: Path, port: int, controller_port: int, extra: dict[str, str] | None = None) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(home / "data"),
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "log.flush.interval.messages": "10000",
        # No time-based retention: records carry event times of fixed past days (2023-11-14 in some tests), and
        # the broker's first retention check, 30 s after its start, deleted a whole topic older than the default
        # 7 days under a test that had just produced it (seen as a read of no rows).
        "log.retention.ms": "-1",
    }
    settings.update(extra or {})
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _cluster_id() -> str:
    """A random KRaft cluster id that does not start with '-' (Kafka's own ids never do: its command line would
    take one that does for an option; one random id in 64 starts with it)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass
class KafkaBroker:
    """One Apache Kafka broker: its home (config, data, log) and ports; :meth:`start` and :meth:`stop` may be
    called again (a restart keeps its topics and records)."""

    home: Path
    port: int
    controller_port: int
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    #: JVM options beyond the defaults (a kerberized broker's ``java.security.krb5.conf``).
    java_options: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.home / "broker.log"

    @classmethod
    def create(
        cls,
        home: Path,
        port: int | None = None,
        settings: dict[str, str] | None = None,
        java_options: list[str] | None = None,
        controller_port: int | None = None,
    ) -> KafkaBroker:
        """A broker on ``port`` (default: a free one) of loopback, its storage formatted under ``home``; not
        started. ``settings`` are added to (or replace) its ``server.properties`` (more listeners)."""
        home.mkdir(parents=True, exist_ok=True)
        port = port or free_port()
        controller_port = controller_port or next(p for p in iter(free_port, None) if p != port)
        broker = cls(home, port, controller_port, java_options=list(java_options or []))
        (home / "server.properties").write_text(_server_properties(home, port, controller_port, settings))
        cluster_id = _cluster_id()
        config = str(home / "server.properties")
        formatted = subprocess.run(
            [*broker._java("kafka.tools.StorageTool"), "format", "-t", cluster_id, "-c", config],
            capture_output=True,
            text=True,
            check=False,
        )
        assert formatted.returncode == 0, f"kafka-storage format failed: {formatted.stdout}{formatted.stderr}"
        return broker

    def _java(self, main_class: str) -> list[str]:
        java = shutil.which("java") or "java"
        return [java, *_JVM_OPTIONS, *self.java_options, "-cp", broker_classpath(), main_class]

    def start(self, timeout_s: float = 120) -> None:
        """Start the broker and wait until it answers metadata requests."""
        command = [*self._java("kafka.Kafka"), str(self.home / "server.properties")]
        self.process = start_daemon(command, self.log, self.is_up, "the Kafka broker", timeout_s)

    def stop(self) -> None:
        """Stop the broker (SIGTERM, a controlled shutdown; SIGKILL if it takes more than 30 s)."""
        stop_daemon(self.process)

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap}, logger=CLIENT_LOG)

    def is_up(self) -> bool:
        from confluent_kafka import KafkaException

        try:
            metadata = self.admin().list_topics(timeout=1)
        except KafkaException:
            return False
        return bool(metadata.brokers)

    def create_topic(self, name: str, partitions: int = 3) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # kept alive until the futures resolve
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result()
        wait_for(lambda: self._has_leaders(name, partitions), 30, what=f"topic {name}")

    def _has_leaders(self, name: str, partitions: int) -> bool:
        topic = self.admin().list_topics(timeout=5).topics.get(name)
        return (
            topic is not None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values())
        )

    def add_partitions(self, name: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions

        admin = self.admin()
        for future in admin.create_partitions([NewPartitions(name, total)]).values():
            future.result()
        wait_for(lambda: self._has_leaders(name, total), 30, what=f"{total} partitions of topic {name}")

    def delete_topic(self, name: str) -> None:
        admin = self.admin()
        for future in admin.delete_topics([name]).values():
            future.result()

    def produce(self, topic: str, records: Iterable[Record]) -> int:
        """Send records and wait until the broker has them all; returns how many."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5}, logger=CLIENT_LOG)
        count = 0
        for record in records:
            producer.produce(
                topic,
                value=record.value,
                key=record.key,
                partition=record.partition,
                timestamp=record.timestamp_ms,
                headers=record.headers,
            )
            producer.poll(0)
            count += 1
        assert producer.flush(30) == 0, "records left unsent"
        return count


@dataclass(frozen=True)
class Record:
    """One record to produce."""

    value: bytes | None
    partition: int = 0
    key: bytes | None = None
    timestamp_ms: int = 0
    headers: list[tuple[str, bytes]] | None = None


def event_records(
    first_id: int, count: int, start: datetime, step_s: int, partitions: int = 3, value_format: str = "json"
) -> Iterator[Record]:
    """``count`` events ``id, user_id, amount, ts``, ids from ``first_id``, event times from ``start`` every
    ``step_s`` seconds (``ts`` as Flink's json and csv formats write a TIMESTAMP), spread round-robin over
    the partitions; the record timestamp is the event time. ``value_format``: ``json`` (an object) or
    ``csv`` (one line, Flink's csv form)."""
    for n in range(count):
        event_id = first_id + n
        ts = datetime.fromtimestamp(start.replace(tzinfo=UTC).timestamp() + n * step_s, UTC)
        body = {"id": event_id, "user_id": f"u{event_id % 7}", "amount": event_id * 0.5}
        body["ts"] = ts.strftime("%Y-%m-%d %H:%M:%S")
        value = json.dumps(body) if value_format == "json" else ",".join(str(v) for v in body.values())
        yield Record(
            value.encode(),
            partition=event_id % partitions,
            key=str(event_id).encode(),
            timestamp_ms=int(ts.timestamp() * 1000),
            headers=[("source", b"test")],
        )


def start_broker(home: Path) -> KafkaBroker:
    """A new broker under ``home`` on free loopback ports, started."""
    broker = KafkaBroker.create(home)
    broker.start()
    return broker


#: The two readers of a kafka table: Spark's Kafka source and sqlext's own (``spark.sqlext.kafka.source``).
READERS = [pytest.param("spark", id="spark-source"), pytest.param("sqlext", id="own-source")]


def spark_kafka_conf() -> dict[str, str]:
    """``--conf`` settings of a driver that must read kafka tables with Spark's Kafka source."""
    from sqlext.connectors.kafka.spark_source import jar_paths

    return {"spark.jars": ",".join(str(jar) for jar in jar_paths()), "spark.sqlext.kafka.source": "spark"}


def add_spark_kafka(spark: Any) -> None:
    """Put Spark's Kafka source on a running session's class path (``ADD JAR``; once, it stays)."""
    from sqlext.connectors.kafka.spark_source import jar_paths, on_classpath

    if not on_classpath(spark):
        for jar in jar_paths():
            spark.sql(f"ADD JAR '{jar}'")
        assert on_classpath(spark), "ADD JAR did not put Spark's Kafka source on the class path"


@pytest.fixture(params=READERS)
def kafka_reader(request: pytest.FixtureRequest, spark: Any) -> Iterator[str]:
    """Each reader in turn on the shared Spark session: 'spark' (Spark's Kafka source, its jars added to the
    session) or 'sqlext' (the own source); the session's ``spark.sqlext.kafka.source`` says which."""
    from sqlext.connectors.kafka.factory import SOURCE_CONF

    if request.param == "spark":
        add_spark_kafka(spark)
    spark.conf.set(SOURCE_CONF, request.param)
    yield request.param
    spark.conf.unset(SOURCE_CONF)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """One Apache Kafka broker for the whole test session, shared by every kafka test, stopped at the end."""
    broker = start_broker(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.stop()


#: sql/kafka_demo.sql's input: 2,160 events, one every 10 s from 2026-01-01 00:00 (UTC), six hours.
DEMO_EVENTS, DEMO_START, DEMO_STEP_S = 2160, datetime(2026, 1, 1), 10


def produce_demo_events(broker: KafkaBroker, topic: str = "events") -> int:
    """Create ``topic`` (3 partitions) with sql/kafka_demo.sql's six hours of JSON events; how many were sent."""
    broker.create_topic(topic, 3)
    return broker.produce(topic, event_records(0, DEMO_EVENTS, DEMO_START, DEMO_STEP_S))


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.kafka --port 9092 [--demo-events]``: run the test broker in the foreground
    (for sql/kafka_demo.sql), with six hours of demo events in topic 'events' when asked."""
    import argparse
    import signal
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m tests.support.kafka")
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--demo-events", action="store_true", help="create topic 'events' with 2,160 JSON events")
    args = parser.parse_args(argv)
    broker = KafkaBroker.create(Path(tempfile.mkdtemp(prefix="sqlext-kafka-")), args.port)
    broker.start()
    if args.demo_events:
        sent = produce_demo_events(broker)
        print(f"topic 'events': {sent} events, 2026-01-01 00:00 to 06:00 (UTC)")
    print(f"Apache Kafka broker on {broker.bootstrap} (home {broker.home}); Ctrl-C stops it")
    signal.signal(signal.SIGTERM, lambda *_: broker.stop())
    try:
        assert broker.process is not None
        broker.process.wait()
    except KeyboardInterrupt:
        broker.stop()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
