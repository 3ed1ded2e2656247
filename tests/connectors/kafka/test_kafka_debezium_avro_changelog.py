"""``debezium-avro-confluent`` Kafka values as a changelog source, as the json change-event formats are: a
streaming INSERT into a debezium-json filesystem sink writes what Flink 2.3's writes for the same changes
(:data:`tests.connectors.changelog.events.FLINK_DEBEZIUM_SINK`, measured from the debezium-json file holding
them), ``SELECT *`` shows the row kind last, and an insert-only sink or batch mode is refused with Flink's
reason before anything runs. Records produced by confluent-kafka's ``AvroSerializer`` against the tests'
schema registry, as a Debezium connector with Confluent's Avro converter writes them. Flink 2.3 (its Kafka
connector and ``flink-sql-avro-confluent-registry`` fetched from Maven Central) reads the same topic with the
same DDL into the same lines, and refuses the same INSERTs."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sqlext.catalog.changelog_formats import ROW_KIND
from sqlext.connectors.filesystem.sink import running_insert
from sqlext.errors import SqlextError, ValidationError
from tests.connectors.changelog import events
from tests.support.extension import extended_session
from tests.support.flink import Flink, FlinkError
from tests.support.interop import add_spark_avro
from tests.support.kafka import KafkaBroker, Record, add_spark_kafka
from tests.support.schema_registry import SchemaRegistry

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.kafka, pytest.mark.jars, pytest.mark.slow]

DB = "kafka_dbz_avro"
_names = itertools.count()
_ROW = {
    "type": "record",
    "name": "Value",
    "namespace": "inv.products",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "price", "type": ["null", "double"], "default": None},
    ],
}
#: Debezium's envelope as its Avro converter registers it (``source`` and ``ts_ms`` too, which the format ignores).
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "inv.products",
    "fields": [
        {"name": "before", "type": ["null", _ROW], "default": None},
        {"name": "after", "type": ["null", "inv.products.Value"], "default": None},
        {
            "name": "source",
            "type": {
                "type": "record",
                "name": "Source",
                "fields": [{"name": "db", "type": "string"}, {"name": "table", "type": "string"}],
            },
        },
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
}


def _changes() -> list[dict[str, Any]]:
    """The changes of :data:`events.DEBEZIUM` (c, r, u, d), as Avro envelopes."""
    changes = []
    for line in events.DEBEZIUM:
        event = json.loads(line)
        source = {"db": event["source"]["db"], "table": event["source"]["table"]}
        changes.append({**{k: event[k] for k in ("before", "after", "op", "ts_ms")}, "source": source})
    return changes


@pytest.fixture(scope="module")
def session(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    add_spark_avro(spark)
    add_spark_kafka(spark)
    root = tmp_path_factory.mktemp("dbz_avro")
    with extended_session(spark, root, DB):
        yield root


def _source(spark: Any, broker: KafkaBroker, registry: SchemaRegistry) -> str:
    """A kafka table over a new topic holding the changes (and a tombstone); its name."""
    name = f"cdc{next(_names)}"
    broker.create_topic(name, 1)
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(ENVELOPE))
    context = SerializationContext(name, MessageField.VALUE)
    broker.produce(name, [*(Record(serializer(c, context)) for c in _changes()), Record(None)])
    spark.sql(f"""
        CREATE TABLE {DB}.{name} (id INT, name STRING, price DOUBLE) WITH (
          'connector' = 'kafka', 'topic' = '{name}', 'properties.bootstrap.servers' = '{broker.bootstrap}',
          'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
          'value.format' = 'debezium-avro-confluent', 'value.debezium-avro-confluent.url' = '{registry.url}'
        )""")
    return name


def _sink(spark: Any, name: str, path: Path, fmt: str) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {DB}.{name}")
    spark.sql(
        f"CREATE TABLE {DB}.{name} (id INT, name STRING, price DOUBLE) WITH ('connector' = 'filesystem', "
        f"'path' = '{path.as_uri()}', 'format' = '{fmt}')"
    )


def _written(path: Path) -> list[str]:
    return [line for f in sorted(path.glob("part-*")) for line in f.read_text().splitlines()]


def _no_data_files(path: Path) -> bool:
    return not path.exists() or not any(p for p in path.rglob("*") if p.is_file() and "_sqlext" not in p.parts)


def test_a_streaming_insert_into_a_debezium_json_sink_writes_what_flinks_writes(
    spark: Any, session: Path, kafka_broker: KafkaBroker, schema_registry: SchemaRegistry
) -> None:
    source = _source(spark, kafka_broker, schema_registry)
    target = session / f"{source}_out"
    _sink(spark, f"{source}_out", target, "debezium-json")
    [job] = spark.sql(f"INSERT INTO {DB}.{source}_out SELECT * FROM {DB}.{source}").collect()
    running = running_insert(job.job_id)
    assert running is not None and running.finished.wait(300), "the insert did not end"
    assert running.error is None, running.error
    assert running.query.exception() is None, running.query.exception()
    assert _written(target) == events.FLINK_DEBEZIUM_SINK

    rows = spark.sql(f"SELECT * FROM {DB}.{source}").collect()
    assert list(rows[0].asDict()) == ["id", "name", "price", ROW_KIND]
    assert [(r[ROW_KIND], r.id, r.name, r.price) for r in rows] == events.FLINK_READ["debezium-json"]


@pytest.mark.parametrize("sink_format", ["parquet", "json"])
def test_an_insert_only_sink_refuses_it_with_flinks_reason(
    spark: Any, session: Path, kafka_broker: KafkaBroker, schema_registry: SchemaRegistry, sink_format: str
) -> None:
    source = _source(spark, kafka_broker, schema_registry)
    target = session / f"{source}_{sink_format}"
    _sink(spark, f"{source}_{sink_format}", target, sink_format)
    reason = (
        f"Table sink '{DB}.{source}_{sink_format}' doesn't support consuming update and delete changes which is "
        f"produced by the source '{DB}.{source}' (format 'debezium-avro-confluent')."
    )
    with pytest.raises(ValidationError, match=re.escape(reason)):
        spark.sql(f"INSERT INTO {DB}.{source}_{sink_format} SELECT * FROM {DB}.{source} WHERE id > 0")
    assert _no_data_files(target)


def test_batch_mode_refuses_it_with_flinks_reason(
    spark: Any, session: Path, kafka_broker: KafkaBroker, schema_registry: SchemaRegistry
) -> None:
    source = _source(spark, kafka_broker, schema_registry)
    target = session / f"{source}_batch"
    _sink(spark, f"{source}_batch", target, "debezium-json")
    spark.sql("SET 'execution.runtime-mode' = 'batch'")
    try:
        with pytest.raises(
            SqlextError,
            match=re.escape(
                "Querying a table in batch mode is currently only possible for INSERT-only table sources. But the "
                f"source for table '{DB}.{source}' produces other changelog messages than just INSERT. (Its format "
                "'debezium-avro-confluent' reads updates and deletes"
            ),
        ):
            spark.sql(f"INSERT INTO {DB}.{source}_batch SELECT * FROM {DB}.{source}")
    finally:
        spark.sql("RESET 'execution.runtime-mode'")
    assert _no_data_files(target)


#: Flink's Kafka connector and Avro-with-registry format for SQL (not in the apache-flink wheel).
_FLINK_JARS = (
    "org.apache.flink:flink-sql-connector-kafka:4.0.1-2.0",
    "org.apache.flink:flink-sql-avro-confluent-registry:2.3.0",
)
#: Flink's sentences of the two refusals (its catalog path and plan node differ from sqlext's names).
_FLINK_REASONS = (
    "doesn't support consuming update and delete changes which is produced by",
    "Querying a table in batch mode is currently only possible for INSERT-only table sources. But the source for "
    "table '",
)


def _flink_lines(directory: Path) -> list[str]:
    files = [p for p in sorted(directory.rglob("*")) if p.is_file() and not p.name.startswith((".", "_"))]
    return [line for p in files for line in p.read_text().splitlines()]


@pytest.mark.flink
def test_flink_writes_and_refuses_the_same_for_the_same_topic(
    flink: Flink, spark: Any, session: Path, kafka_broker: KafkaBroker, schema_registry: SchemaRegistry
) -> None:
    from sqlext.runtime import jars

    [kafka, registry] = [
        next(jars.fetch(f"flink-{c.split(':')[1]}", [c], transitive=False).glob("*.jar")) for c in _FLINK_JARS
    ]
    config = {"pipeline.jars": f"{kafka.as_uri()};{registry.as_uri()}", "parallelism.default": "1"}
    source = _source(spark, kafka_broker, schema_registry)  # sqlext's table; Flink's below is the same DDL
    flink_source = (
        f"CREATE TABLE src (id INT, name STRING, price DOUBLE) WITH ('connector' = 'kafka', 'topic' = '{source}', "
        f"'properties.bootstrap.servers' = '{kafka_broker.bootstrap}', 'scan.startup.mode' = 'earliest-offset', "
        "'scan.bounded.mode' = 'latest-offset', 'value.format' = 'debezium-avro-confluent', "
        f"'value.debezium-avro-confluent.url' = '{schema_registry.url}')"
    )
    flink_out = session / f"{source}_flink"

    def sink(name: str, path: Path, fmt: str) -> str:
        return (
            f"CREATE TABLE {name} (id INT, name STRING, price DOUBLE) WITH ('connector' = 'filesystem', "
            f"'path' = '{path.as_uri()}', 'format' = '{fmt}')"
        )

    flink.run([flink_source, sink("snk", flink_out, "debezium-json"), "INSERT INTO snk SELECT * FROM src"], **config)
    assert _flink_lines(flink_out) == events.FLINK_DEBEZIUM_SINK
    for (fmt, mode), reason in zip((("json", "streaming"), ("debezium-json", "batch")), _FLINK_REASONS, strict=True):
        ddl_out = sink("r_out", session / f"{source}_flink_{fmt}_{mode}", fmt)
        with pytest.raises(FlinkError) as refused:
            flink.run([flink_source, ddl_out, "INSERT INTO r_out SELECT * FROM src"], mode=mode, **config)
        assert reason in str(refused.value)  # the sentence the tests above expect of sqlext
