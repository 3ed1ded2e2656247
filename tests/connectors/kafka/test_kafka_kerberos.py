"""Kafka with Kerberos: a table's Flink ``properties.*`` (``security.protocol`` SASL_PLAINTEXT or SASL_SSL,
``sasl.mechanism`` GSSAPI, ``sasl.kerberos.service.name``, ``sasl.jaas.config`` naming Krb5LoginModule with a
keytab) read by Spark's Kafka source from a kerberized broker (real KDC on loopback, :mod:`tests.support.kdc`;
broker :mod:`tests.support.kafka_kerberos`); the errors of a wrong principal, a wrong service name and a client
without SASL; and what sqlext's own source (librdkafka) does with the same table."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sqlext.connectors.kafka.client import KafkaSourceError
from sqlext.connectors.kafka.factory import SOURCE_CONF
from sqlext.registry import SourceContext, find_factory, validate_table
from sqlext.sql.parser import parse_statement
from sqlext.table import TableDefinition
from tests.support.kafka import add_spark_kafka, event_records
from tests.support.kafka_kerberos import KerberizedKafka, jaas_config, point_jvm_at
from tests.support.kdc import Kdc
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.jars, pytest.mark.kerberos, pytest.mark.slow]

_names = itertools.count()
DAY = datetime(2026, 11, 22)


@pytest.fixture
def kafka(kerberized_kafka: KerberizedKafka, kdc: Kdc, spark: Any) -> Iterator[KerberizedKafka]:
    """The kerberized broker, with the shared session reading through Spark's Kafka source, its JVM on the KDC."""
    add_spark_kafka(spark)
    point_jvm_at(kdc, spark)
    spark.conf.set(SOURCE_CONF, "spark")
    yield kerberized_kafka
    spark.conf.unset(SOURCE_CONF)


def _topic(kafka: KerberizedKafka, events: int) -> str:
    name = f"krb_{next(_names)}"
    kafka.broker.create_topic(name, 2)
    kafka.broker.produce(name, event_records(0, events, DAY, 60, partitions=2))
    return name


def _table(topic: str, properties: dict[str, str], bounded: bool = True) -> TableDefinition:
    options = {"connector": "kafka", "topic": topic, "scan.startup.mode": "earliest-offset", "format": "json"}
    if bounded:
        options["scan.bounded.mode"] = "latest-offset"
    options.update(properties)
    with_clause = ", ".join(f"'{key}' = '{value}'" for key, value in options.items())
    sql = f"CREATE TABLE krb_db.{topic} (id BIGINT, user_id STRING, ts TIMESTAMP(3)) WITH ({with_clause})"
    table: TableDefinition = parse_statement(sql).table  # type: ignore[attr-defined]
    validate_table(table)
    return table


def _read(spark: Any, table: TableDefinition) -> list[int]:
    frame = find_factory("kafka").create_source(SourceContext(spark, table, streaming=False))
    return sorted(row.id for row in frame.collect())


def test_spark_source_reads_a_topic_over_sasl_plaintext_with_a_keytab(
    kafka: KerberizedKafka, kdc: Kdc, spark: Any
) -> None:
    principal, keytab = kdc.principal("kafka_reader")
    topic = _topic(kafka, 20)
    assert _read(spark, _table(topic, kafka.properties(principal, keytab))) == list(range(20))


def test_spark_source_streams_a_topic_over_sasl_ssl(
    kafka: KerberizedKafka, kdc: Kdc, spark: Any, tmp_path: Path
) -> None:
    principal, keytab = kdc.principal("kafka_reader")
    topic = _topic(kafka, 10)
    table = _table(topic, kafka.properties(principal, keytab, tls=True), bounded=False)
    frame = find_factory("kafka").create_source(SourceContext(spark, table, streaming=True))
    query = (
        frame.writeStream.format("memory")
        .queryName("krb_stream")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:

        def ids() -> list[int]:
            return sorted(row.id for row in spark.sql("SELECT id FROM krb_stream").collect())

        wait_for(lambda: ids() == list(range(10)) or query.exception(), 180, what="10 records over SASL_SSL")
        assert query.exception() is None
        kafka.broker.produce(topic, event_records(10, 4, DAY, 60, partitions=2))
        wait_for(lambda: ids() == list(range(14)) or query.exception(), 180, what="4 more records")
        assert ids() == list(range(14))
    finally:
        query.stop()


def test_a_principal_the_keytab_has_no_key_for_is_named(kafka: KerberizedKafka, kdc: Kdc, spark: Any) -> None:
    _, keytab = kdc.principal("kafka_reader")
    properties = kafka.properties("nobody@" + kdc.realm, keytab)
    with pytest.raises(KafkaSourceError) as raised:
        _read(spark, _table(_topic(kafka, 1), properties))
    message = str(raised.value)
    assert f"could not log in as nobody@{kdc.realm} (keytab {keytab})" in message
    assert "holds no key for that principal" in message and "klist -kt" in message
    assert "Py4JJavaError" not in message


def test_a_service_name_the_kdc_does_not_know_is_named(kafka: KerberizedKafka, kdc: Kdc, spark: Any) -> None:
    principal, keytab = kdc.principal("kafka_reader")
    properties = {**kafka.properties(principal, keytab), "properties.sasl.kerberos.service.name": "kafkax"}
    with pytest.raises(KafkaSourceError) as raised:
        _read(spark, _table(_topic(kafka, 1), properties))
    message = str(raised.value)
    assert "refused the SASL login of table krb_db.krb_" in message and f"as {principal}" in message
    assert "the KDC knows no principal kafkax/HOST" in message and "Server not found in Kerberos database" in message


def test_a_client_without_sasl_is_told_to_set_the_security_protocol(kafka: KerberizedKafka, spark: Any) -> None:
    properties = {"properties.bootstrap.servers": kafka.sasl_bootstrap, "properties.socket.timeout.ms": "5000"}
    with pytest.raises(KafkaSourceError, match=re.escape("drops one without 'properties.security.protocol'")):
        _read(spark, _table(_topic(kafka, 1), properties))


def _librdkafka_has_gssapi() -> bool:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": "127.0.0.1:1", "builtin.features": "sasl_gssapi"})
    except KafkaException:
        return False
    return True


def test_the_own_source_reads_with_librdkafkas_kerberos_or_says_it_cannot(
    kafka: KerberizedKafka, kdc: Kdc, spark: Any
) -> None:
    """The same table on sqlext's own source: its JAAS login becomes librdkafka's sasl.kerberos.* keys. The PyPI
    wheels of confluent-kafka have no GSSAPI (no libsasl2): then the error says so and names Spark's source."""
    principal, keytab = kdc.principal("kafka_reader")
    spark.conf.set(SOURCE_CONF, "sqlext")
    table = _table(_topic(kafka, 5), kafka.properties(principal, keytab))
    if _librdkafka_has_gssapi():
        assert _read(spark, table) == list(range(5))
        return
    with pytest.raises(KafkaSourceError) as raised:
        _read(spark, table)
    message = str(raised.value)
    assert "SASL GSSAPI (Kerberos), which sqlext's own Kafka source cannot" in message
    assert "spark.sqlext.kafka.source=spark" in message


def test_jaas_config_is_checked_when_the_table_is_created(kafka: KerberizedKafka) -> None:
    from sqlext.errors import OptionError

    with pytest.raises(OptionError, match=r"properties\.sasl\.jaas\.config.*does not end with ';'"):
        _table(
            "t",
            {
                "properties.bootstrap.servers": kafka.sasl_bootstrap,
                "properties.sasl.jaas.config": jaas_config("a", Path("/k"))[:-1],
            },
        )
