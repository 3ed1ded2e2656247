"""The Kafka client side of the connector's own source, on ``confluent-kafka`` (librdkafka): what a read
needs to know (:class:`ReadSettings`, plain data that travels to the executors), the topic partitions a
table reads, and where a read starts or ends in each of them.

Offsets here are Kafka's: the offset of the next record to read; an end offset is exclusive.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlext.connectors.kafka import jaas
from sqlext.connectors.kafka import options as ko
from sqlext.errors import SqlextError

LOG = logging.getLogger("sqlext.kafka")
#: librdkafka's log lines go to this logger instead of stderr.
CLIENT_LOG = logging.getLogger("sqlext.kafka.client")
#: How long to wait before asking again for the offsets of a partition without a leader.
LEADER_RETRY_S = 0.2

#: (topic, partition) -> offset.
Offsets = dict[tuple[str, int], int]


class KafkaSourceError(SqlextError):
    """A Kafka topic or broker cannot be read (missing topic, unreachable broker, no start offset)."""


@dataclass(frozen=True)
class ReadSettings:
    """What a read of one table needs, from its options; JSON-able (the data source gets it as an option)."""

    table: str
    client: dict[str, str]
    topics: list[str] | None = None
    pattern: str | None = None
    group_id: str | None = None
    startup_mode: str = ko.GROUP_OFFSETS
    startup_timestamp: int | None = None
    startup_offsets: dict[int, int] = field(default_factory=dict)
    bounded_mode: str = ko.UNBOUNDED
    bounded_timestamp: int | None = None
    bounded_offsets: dict[int, int] = field(default_factory=dict)
    discovery_interval_s: float = 300.0
    timeout_s: float = 60.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ReadSettings:
        data = json.loads(text)
        for key in ("startup_offsets", "bounded_offsets"):
            data[key] = {int(k): v for k, v in data[key].items()}
        return cls(**data)

    @property
    def brokers(self) -> str:
        return self.client.get("bootstrap.servers", "")

    @property
    def subscription(self) -> str:
        """The topics as a message names them."""
        return f"topic(s) {', '.join(self.topics)}" if self.topics else f"topics matching '{self.pattern}'"


#: Client properties the connector sets itself (Flink overrides the same ones).
_OWN_PROPERTIES = ("key.deserializer", "value.deserializer", "enable.auto.commit", "group.id")


def client_properties(raw: Mapping[str, str]) -> dict[str, str]:
    """The ``properties.*`` options, prefix removed, without the ones the connector sets itself."""
    prefix = ko.PROPERTIES.key
    return {
        k[len(prefix) :]: v for k, v in raw.items() if k.startswith(prefix) and k[len(prefix) :] not in _OWN_PROPERTIES
    }


def timeout_of(properties: Mapping[str, str]) -> float:
    """Seconds a metadata or offset request may take: the client's ``socket.timeout.ms`` (default 60 s)."""
    try:
        return max(int(properties.get("socket.timeout.ms", "60000")) / 1000.0, 1.0)
    except ValueError:
        return 60.0


def consumer(settings: ReadSettings) -> Any:
    """A consumer that never commits by itself and is only ever assigned partitions."""
    from confluent_kafka import Consumer, KafkaException

    try:
        properties = jaas.librdkafka_properties(settings.client)
    except ValueError as exc:
        raise KafkaSourceError(
            f"properties.{jaas.KEY} of table {settings.table}: {exc}.", option=f"properties.{jaas.KEY}"
        ) from None
    config: dict[str, Any] = {
        **properties,
        "group.id": settings.group_id or f"sqlext-{settings.table}",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
    }
    try:
        return Consumer(config, logger=CLIENT_LOG)
    except (KafkaException, ValueError, TypeError) as exc:
        if "No provider for SASL mechanism GSSAPI" in str(exc):
            raise KafkaSourceError(
                f"Table {settings.table} logs in to Kafka with SASL GSSAPI (Kerberos), which sqlext's own Kafka "
                "source cannot: its client, confluent-kafka's librdkafka, was built without GSSAPI (the PyPI "
                "wheels are). Read it with Spark's Kafka source (spark.sqlext.kafka.source=spark, its jar on the "
                "class path: docs/kafka.md), or install confluent-kafka built against a librdkafka with "
                f"libsasl2. The client said: {exc.args[0] if exc.args else exc}",
                option="properties.sasl.mechanism",
                value="GSSAPI",
            ) from None
        raise KafkaSourceError(
            f"Kafka client properties of table {settings.table} are not accepted: {exc}", option="properties."
        ) from None


def topic_partitions(client: Any, settings: ReadSettings) -> dict[str, list[int]]:
    """Topic -> its partitions, for the table's topics or pattern. A missing topic or a broker that does not
    answer within the client's timeout is a :class:`KafkaSourceError` naming brokers and topics."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        metadata = client.list_topics(timeout=settings.timeout_s)
    except KafkaException as exc:
        raise KafkaSourceError(
            f"Kafka broker(s) {settings.brokers} did not answer for {settings.subscription} of table "
            f"{settings.table} within {settings.timeout_s:g} s (properties.socket.timeout.ms): {exc.args[0]}",
            option=ko.BOOTSTRAP_SERVERS.key,
            value=settings.brokers,
        ) from None
    found: dict[str, list[int]] = {}
    for name, topic in metadata.topics.items():
        wanted = name in settings.topics if settings.topics else re.fullmatch(settings.pattern or "", name)
        if not wanted or name.startswith("__"):
            continue
        if topic.error is not None and topic.error.code() != KafkaError.NO_ERROR:
            continue
        found[name] = sorted(topic.partitions)
    missing = [topic for topic in settings.topics or [] if topic not in found]
    if missing:
        raise KafkaSourceError(
            f"Topic(s) {', '.join(missing)} of table {settings.table} do not exist on Kafka broker(s) "
            f"{settings.brokers} (topics there: {', '.join(sorted(metadata.topics)) or 'none'}).",
            option=ko.TOPIC.key,
            value=";".join(missing),
        )
    return found


def _partitions(found: Mapping[str, list[int]]) -> list[tuple[str, int]]:
    return [(topic, partition) for topic, partitions in sorted(found.items()) for partition in partitions]


def deleted_topics_message(settings: ReadSettings, topics: Sequence[str]) -> str:
    """The error of a query whose topics were deleted while it read them (either source)."""
    return (
        f"Topic(s) {', '.join(topics)} of table {settings.table} no longer exist on Kafka broker(s) "
        f"{settings.brokers}: deleted while the query read them. Nothing of the failed batch was committed; the "
        "checkpoint keeps the offsets read up to the deletion."
    )


def watermarks(client: Any, settings: ReadSettings, topic: str, partition: int) -> tuple[int, int]:
    """(earliest, latest) offsets of one partition, asked of the broker. A partition without a leader yet (a
    topic just created, or a leader moving) is asked again until ``settings.timeout_s``, as Kafka's own
    consumer retries such errors: the broker answers them at once, so a single ask would fail a query that
    found a new topic a moment before its leader was elected."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    deadline = time.monotonic() + settings.timeout_s
    while True:
        try:
            left = max(0.1, deadline - time.monotonic())
            low, high = client.get_watermark_offsets(TopicPartition(topic, partition), timeout=left)
            return int(low), int(high)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:  # listed when the query started: deleted since
                raise KafkaSourceError(
                    deleted_topics_message(settings, [topic]), option=ko.TOPIC.key, value=topic
                ) from None
            leaderless = (KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION)
            if error.code() in leaderless and time.monotonic() < deadline:
                LOG.info("partition %d of topic '%s' has no leader yet (%s); asking again", partition, topic, error)
                time.sleep(LEADER_RETRY_S)
                continue
            raise KafkaSourceError(
                f"Kafka broker(s) {settings.brokers} gave no offsets for partition {partition} of topic '{topic}' "
                f"(table {settings.table}) within {settings.timeout_s:g} s: {error}",
                option=ko.TOPIC.key,
                value=topic,
            ) from None


def resolve(
    client: Any,
    settings: ReadSettings,
    found: Mapping[str, list[int]],
    mode: str,
    timestamp: int | None,
    specific: Mapping[int, int],
) -> Offsets:
    """The offset of each partition for a start or bound ``mode`` (see :mod:`.options`)."""
    partitions = _partitions(found)
    if mode in (ko.GROUP_OFFSETS, ko.SPECIFIC_OFFSETS):
        committed = _committed(client, settings, partitions)
    resolved: Offsets = {}
    for topic, partition in partitions:
        low, high = watermarks(client, settings, topic, partition)
        if mode == ko.EARLIEST:
            resolved[(topic, partition)] = low
        elif mode == ko.LATEST:
            resolved[(topic, partition)] = high
        elif mode == ko.TIMESTAMP:
            assert timestamp is not None
            resolved[(topic, partition)] = first_at_or_after(client, settings, topic, partition, timestamp, high)
        elif mode == ko.SPECIFIC_OFFSETS and partition in specific:
            resolved[(topic, partition)] = min(max(specific[partition], low), high)
        elif (topic, partition) in committed:
            resolved[(topic, partition)] = committed[(topic, partition)]
        elif mode == ko.SPECIFIC_OFFSETS:
            resolved[(topic, partition)] = low
        else:
            resolved[(topic, partition)] = reset_offset(settings, topic, partition, low, high)
    return resolved


def _committed(client: Any, settings: ReadSettings, partitions: list[tuple[str, int]]) -> Offsets:
    from confluent_kafka import KafkaException, TopicPartition

    if not settings.group_id or not partitions:
        return {}
    try:
        answers = client.committed([TopicPartition(t, p) for t, p in partitions], timeout=settings.timeout_s)
    except KafkaException as exc:
        raise KafkaSourceError(
            f"Kafka broker(s) {settings.brokers} gave no committed offsets of group '{settings.group_id}' "
            f"(table {settings.table}): {exc.args[0]}",
            option=ko.GROUP_ID.key,
            value=settings.group_id,
        ) from None
    return {(a.topic, a.partition): int(a.offset) for a in answers if a.offset >= 0}


def reset_offset(settings: ReadSettings, topic: str, partition: int, low: int, high: int) -> int:
    """A partition without a committed offset: ``auto.offset.reset`` decides, default ``none`` (Flink's)."""
    reset = settings.client.get("auto.offset.reset", "none").lower()
    if reset in ("earliest", "smallest", "beginning"):
        return low
    if reset in ("latest", "largest", "end"):
        return high
    group = f"group '{settings.group_id}'" if settings.group_id else "no group ('properties.group.id' is not set)"
    raise KafkaSourceError(
        f"Table {settings.table} starts from 'group-offsets', but {group} has no committed offset for partition "
        f"{partition} of topic '{topic}', and 'properties.auto.offset.reset' is '{reset}'. Set it to 'earliest' or "
        "'latest', or choose another 'scan.startup.mode'.",
        option=ko.STARTUP_MODE.key,
        value=ko.GROUP_OFFSETS,
    )


def first_at_or_after(client: Any, settings: ReadSettings, topic: str, partition: int, timestamp: int, end: int) -> int:
    """The offset of the first record whose timestamp is at or after ``timestamp`` (``end`` if none).

    The broker's ``offsetsForTimes`` answer is where the search starts; records from there are read until
    the first one at or after the time, so a broker that answers with an earlier offset (one that indexes
    record batches only) still gives Kafka's answer.
    """
    from confluent_kafka import TopicPartition

    answer = client.offsets_for_times([TopicPartition(topic, partition, timestamp)], timeout=settings.timeout_s)[0]
    offset = int(answer.offset)
    if offset < 0 or offset >= end:
        return end
    client.assign([TopicPartition(topic, partition, offset)])
    try:
        while offset < end:
            records = client.consume(min(500, end - offset), timeout=settings.timeout_s)  # returns at that many
            if not records:
                raise KafkaSourceError(
                    f"No records from partition {partition} of topic '{topic}' at offset {offset} within "
                    f"{settings.timeout_s:g} s (Kafka broker(s) {settings.brokers}, table {settings.table}).",
                    option=ko.TOPIC.key,
                    value=topic,
                )
            for record in records:
                if record.error() is not None:
                    continue
                if record.offset() >= end or record.timestamp()[1] >= timestamp:
                    return min(int(record.offset()), end)
                offset = int(record.offset()) + 1
        return end
    finally:
        client.unassign()


def commit_courtesy(client: Any, settings: ReadSettings, offsets: Offsets) -> None:
    """Commit ``offsets`` to the consumer group, for monitoring only: failures are logged, never raised."""
    from confluent_kafka import KafkaException, TopicPartition

    if not settings.group_id or not offsets:
        return
    try:
        client.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    except KafkaException as exc:
        LOG.warning("Could not commit offsets of table %s to group '%s': %s", settings.table, settings.group_id, exc)
