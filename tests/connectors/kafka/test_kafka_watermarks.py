"""Offsets of a partition whose leader is not elected yet (a topic found a moment after it was created): asked
again until the source's timeout, as Kafka's consumer does, instead of failing the query at the first answer."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from sqlext.connectors.kafka import client as kafka_client
from sqlext.connectors.kafka.client import KafkaSourceError, ReadSettings, watermarks


class Broker:
    """Answers ``get_watermark_offsets`` with ``errors`` first, then (3, 7); records the asks."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.asks = 0

    def get_watermark_offsets(self, partition: Any, timeout: float) -> tuple[int, int]:
        self.asks += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return 3, 7


@pytest.fixture
def settings() -> ReadSettings:
    return ReadSettings(table="db.src", client={"bootstrap.servers": "127.0.0.1:9"}, topics=["new_topic"], timeout_s=5)


def test_a_partition_without_a_leader_yet_is_asked_again_until_it_has_one(
    settings: ReadSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_client, "LEADER_RETRY_S", 0.0)
    broker = Broker(KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION)
    assert watermarks(broker, settings, "new_topic", 0) == (3, 7)
    assert broker.asks == 3


def test_a_partition_still_without_a_leader_at_the_timeout_fails_naming_it(
    settings: ReadSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_client, "LEADER_RETRY_S", 0.0)
    settings = dataclasses.replace(settings, timeout_s=0.05)
    broker = Broker(*[KafkaError.NOT_LEADER_FOR_PARTITION] * 100_000)
    with pytest.raises(KafkaSourceError, match=r"partition 0 of topic 'new_topic' \(table db.src\) within 0.05 s"):
        watermarks(broker, settings, "new_topic", 0)
    assert broker.asks > 1


def test_other_errors_fail_at_once(settings: ReadSettings) -> None:
    broker = Broker(KafkaError._TIMED_OUT)
    with pytest.raises(KafkaSourceError, match="gave no offsets"):
        watermarks(broker, settings, "t", 0)
    assert broker.asks == 1
