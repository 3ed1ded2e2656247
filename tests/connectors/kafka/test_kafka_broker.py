"""The test broker itself: Apache Kafka (KRaft, one node) keeps what is produced, per partition."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.support.kafka import CLIENT_LOG, KafkaBroker, event_records

pytestmark = [pytest.mark.kafka, pytest.mark.jars]


def test_the_broker_keeps_what_was_produced_per_partition(kafka_broker: KafkaBroker) -> None:
    from confluent_kafka import Consumer, TopicPartition

    kafka_broker.create_topic("broker_check", 3)
    sent = kafka_broker.produce("broker_check", event_records(0, 30, datetime(2026, 11, 22), 60))
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "check"}, logger=CLIENT_LOG)
    try:
        ends = [consumer.get_watermark_offsets(TopicPartition("broker_check", p), timeout=10) for p in range(3)]
        consumer.assign([TopicPartition("broker_check", p, 0) for p in range(3)])
        values: list[bytes] = []
        while len(values) < sent:
            values += [m.value() for m in consumer.consume(100, timeout=5) if m.error() is None]
    finally:
        consumer.close()
    assert ends == [(0, 10), (0, 10), (0, 10)]
    assert len(values) == 30 and len(set(values)) == 30
