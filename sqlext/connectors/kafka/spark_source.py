"""Spark's own Kafka source (``format("kafka")``, jar ``spark-sql-kafka-0-10``) for kafka tables: whether it
is on the class path, Flink's options mapped onto Spark's, and a probe on the driver that names broker and
topics when they cannot be read (Spark's own message for a dead broker is "Timed out waiting for a node
assignment. Call: listNodes").

Mapping (Flink -> Spark): ``properties.*`` -> ``kafka.*``; ``topic`` -> ``subscribe``, ``topic-pattern`` ->
``subscribePattern`` (Spark matches new topics and partitions at every micro-batch, so
``scan.topic-partition-discovery.interval`` only says whether: ``'0 ms'`` is refused, see :func:`refusal`);
``scan.startup.mode`` ``earliest-offset`` / ``latest-offset`` -> ``startingOffsets``, ``timestamp`` ->
``startingTimestamp`` (a partition without a record at or after the time starts at its end, as in Flink),
``specific-offsets`` and ``group-offsets`` -> ``startingOffsets`` as JSON, resolved on the driver from the
group's committed offsets (Kafka's admin client, the one the jar brings). ``scan.bounded.mode``
``latest-offset`` is the insert's ``availableNow`` trigger; other bounded modes are not Spark's (streaming
Spark has no ``endingOffsets``).

Exactly once: Spark writes each micro-batch's offset ranges into the query's checkpoint before it runs; a
restart replays the unfinished batch with the same ranges. No group offsets are committed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlext.connectors.kafka import jaas
from sqlext.connectors.kafka import options as ko
from sqlext.connectors.kafka.client import KafkaSourceError, ReadSettings, deleted_topics_message, reset_offset

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
#: pyspark 4.3.0's own version is not on Maven Central; 4.2.0 is the newest served and runs on Spark 4.3.0
#: (tests/connectors/kafka). ``spark.jars.packages`` takes this coordinate as it is.
ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
_LATEST, _EARLIEST = -1, -2  # Spark's startingOffsets JSON


def jar_paths() -> list[Path]:
    """The jars Spark's Kafka source needs beyond pyspark's own (spark-sql-kafka, its token provider,
    kafka-clients, commons-pool2), fetched from Maven Central the first time (``sqlext.runtime.jars``, ~10 MB kept):
    for ``spark.jars`` or ``ADD JAR``."""
    import pyspark

    from sqlext.runtime import jars

    shipped = {_artifact_name(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    fetched = jars.fetch("spark-sql-kafka", [ARTIFACT])
    return [jar for jar in sorted(fetched.glob("*.jar")) if _artifact_name(jar) not in shipped]


def _artifact_name(jar: Path) -> str:
    return jar.name.rsplit("-", 1)[0]


def on_classpath(spark: Any) -> bool:
    """True when Spark's Kafka source can be loaded by this session (``spark.jars``, ``--packages``, ``ADD JAR``)."""
    try:
        jvm = spark._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(PROVIDER_CLASS, False, loader)
    except Exception:  # no JVM (Spark Connect) or no such class: both mean "not on the class path"
        return False
    return True


def refusal(spark: Any, settings: ReadSettings) -> str | None:
    """Why Spark's Kafka source cannot read this table, or None when it can."""
    if settings.bounded_mode not in (ko.UNBOUNDED, ko.LATEST):
        return f"Spark's streaming Kafka source has no end offsets ('scan.bounded.mode' = '{settings.bounded_mode}')"
    if settings.discovery_interval_s == 0:
        return "Spark's Kafka source always discovers partitions ('scan.topic-partition-discovery.interval' = '0 ms')"
    if not on_classpath(spark):
        return "spark-sql-kafka-0-10 is not on the class path"
    return None


def spark_options(settings: ReadSettings, starting: str | None = None, headers: bool = True) -> dict[str, str]:
    """Spark's options for a read; ``starting`` is the ``startingOffsets`` JSON of the modes that need the
    broker to resolve (see :func:`starting_offsets`); ``headers``: whether the read needs the records' headers."""
    mapped = {f"kafka.{key}": value for key, value in settings.client.items() if key != "auto.offset.reset"}
    if settings.topics:
        mapped["subscribe"] = ",".join(settings.topics)
    else:
        mapped["subscribePattern"] = settings.pattern or ""
    if settings.startup_mode == ko.TIMESTAMP:
        mapped["startingTimestamp"] = str(settings.startup_timestamp)
        mapped["startingOffsetsByTimestampStrategy"] = "latest"
    elif starting is not None:
        mapped["startingOffsets"] = starting
    else:
        mapped["startingOffsets"] = "earliest" if settings.startup_mode == ko.EARLIEST else "latest"
    if headers:
        mapped["includeHeaders"] = "true"
    return mapped


def read(spark: Any, settings: ReadSettings, streaming: bool, headers: bool = True) -> DataFrame:
    """The raw records (the own source's :data:`~sqlext.connectors.kafka.source.RAW_SCHEMA`) from Spark's source,
    after the probe (:class:`KafkaSourceError` naming broker and topics when they cannot be read).

    ``headers``: whether the table reads the ``headers`` metadata; without it the column is NULL and Spark's
    source does not build each record's header array (``includeHeaders``), which the projection would drop
    again unread."""
    from pyspark.sql import functions as F

    with _Admin(spark, settings) as admin:
        found = admin.topic_partitions()
        starting = starting_offsets(settings, found, admin.committed(found))
    reader = spark.readStream if streaming else spark.read
    frame = reader.format("kafka").options(**spark_options(settings, starting, headers)).load()
    header_map = _headers_map(F.col("headers")) if headers else F.lit(None).cast("map<string,binary>")
    return frame.select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        F.unix_millis(F.col("timestamp")).alias("timestamp"),
        F.col("timestampType").alias("timestamp_type"),
        header_map.alias("headers"),
        F.lit(None).cast("int").alias("leader_epoch"),
    )


def _headers_map(headers: Any) -> Any:
    """Spark's header array as Flink's map: a key sent twice keeps its last value (Flink fills a HashMap;
    ``map_from_entries`` alone fails the query on a duplicate key)."""
    from pyspark.sql import functions as F

    def last(header: Any, index: Any) -> Any:
        later = F.slice(headers, index + 2, F.greatest(F.size(headers), F.lit(1)))
        return ~F.exists(later, lambda other: other["key"] == header["key"])

    return F.map_from_entries(F.filter(headers, last))


def starting_offsets(
    settings: ReadSettings, found: dict[str, list[int]], committed: dict[tuple[str, int], int]
) -> str | None:
    """``startingOffsets`` JSON for ``specific-offsets`` and ``group-offsets`` (Spark wants every partition);
    None for the modes Spark resolves itself. A partition without its own offset starts at the group's
    committed one, else: ``specific-offsets`` at the earliest, ``group-offsets`` by
    ``properties.auto.offset.reset`` (default ``none``: an error, as in Flink)."""
    if settings.startup_mode not in (ko.SPECIFIC_OFFSETS, ko.GROUP_OFFSETS):
        return None
    offsets: dict[str, dict[str, int]] = {}
    for topic, partitions in sorted(found.items()):
        for partition in partitions:
            if settings.startup_mode == ko.SPECIFIC_OFFSETS and partition in settings.startup_offsets:
                offset = settings.startup_offsets[partition]
            elif (topic, partition) in committed:
                offset = committed[(topic, partition)]
            elif settings.startup_mode == ko.SPECIFIC_OFFSETS:
                offset = _EARLIEST
            else:
                offset = reset_offset(settings, topic, partition, _EARLIEST, _LATEST)
            offsets.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(offsets)


class _Admin:
    """Kafka's Java admin client (from kafka-clients, which Spark's Kafka source brings), through py4j."""

    def __init__(self, spark: Any, settings: ReadSettings) -> None:
        self.settings = settings
        self.jvm = spark._jvm
        properties = self.jvm.java.util.Properties()
        timeout_ms = str(int(settings.timeout_s * 1000))
        for key, value in {"request.timeout.ms": timeout_ms, "default.api.timeout.ms": timeout_ms}.items():
            properties.setProperty(key, value)
        for key, value in settings.client.items():
            if key != "auto.offset.reset":
                properties.setProperty(key, value)
        try:
            self.client = self.jvm.org.apache.kafka.clients.admin.Admin.create(properties)
        except Exception as exc:  # py4j's Java exception: the client's login (JAAS) failed
            raise KafkaSourceError(login_failure(settings, _causes(exc)), option=f"properties.{jaas.KEY}") from None

    def __enter__(self) -> _Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close(self.jvm.java.time.Duration.ofSeconds(5))

    def _get(self, future: Any) -> Any:
        return future.get(int(self.settings.timeout_s * 1000), self.jvm.java.util.concurrent.TimeUnit.MILLISECONDS)

    def topic_names(self) -> list[str]:
        """Every topic on the broker(s), sorted."""
        return sorted(str(name) for name in self._get(self.client.listTopics().names()))

    def topic_partitions(self) -> dict[str, list[int]]:
        """Topic -> partitions the table reads; :class:`KafkaSourceError` for a dead broker or missing topic."""
        import re

        s = self.settings
        try:
            names = self.topic_names()
        except Exception as exc:
            causes = _causes(exc)
            if any("SaslAuthenticationException" in cause for cause in causes):
                raise KafkaSourceError(authentication_failure(s, causes), option=f"properties.{jaas.KEY}") from None
            unsecured = "" if "security.protocol" in s.client else _UNSECURED_HINT
            raise KafkaSourceError(
                f"Kafka broker(s) {s.brokers} did not answer for {s.subscription} of table {s.table} within "
                f"{s.timeout_s:g} s (properties.socket.timeout.ms): {_cause(exc)}{unsecured}",
                option=ko.BOOTSTRAP_SERVERS.key,
                value=s.brokers,
            ) from None
        missing = [topic for topic in s.topics or [] if topic not in names]
        if missing:
            raise KafkaSourceError(
                f"Topic(s) {', '.join(missing)} of table {s.table} do not exist on Kafka broker(s) {s.brokers} "
                f"(topics there: {', '.join(names) or 'none'}).",
                option=ko.TOPIC.key,
                value=";".join(missing),
            )
        wanted = s.topics or [n for n in names if re.fullmatch(s.pattern or "", n) and not n.startswith("__")]
        if not wanted:
            return {}
        described = self._get(self.client.describeTopics(self._list(wanted)).allTopicNames())
        return {topic: sorted(int(p.partition()) for p in described.get(topic).partitions()) for topic in wanted}

    def committed(self, found: dict[str, list[int]]) -> dict[tuple[str, int], int]:
        """The group's committed offsets (empty without ``properties.group.id`` or outside the modes using them)."""
        s = self.settings
        if not s.group_id or s.startup_mode not in (ko.SPECIFIC_OFFSETS, ko.GROUP_OFFSETS):
            return {}
        answer = self._get(self.client.listConsumerGroupOffsets(s.group_id).partitionsToOffsetAndMetadata())
        committed: dict[tuple[str, int], int] = {}
        for entry in answer.entrySet():
            tp, meta = entry.getKey(), entry.getValue()
            if meta is not None and str(tp.topic()) in found:
                committed[(str(tp.topic()), int(tp.partition()))] = int(meta.offset())
        return committed

    def _list(self, items: list[str]) -> Any:
        java_list = self.jvm.java.util.ArrayList()
        for item in items:
            java_list.add(item)
        return java_list


def explain_deleted_topics(failure: str, reads: list[tuple[Any, ReadSettings]]) -> str | None:
    """For a query that failed with Kafka's ``UnknownTopicOrPartitionException`` (which names neither topic nor
    broker): which topics of the tables read through Spark's source (``(spark, settings)`` each) are gone."""
    if "UnknownTopicOrPartitionException" not in failure:
        return None
    explained = []
    for spark, settings in reads:
        try:
            with _Admin(spark, settings) as admin:
                names = admin.topic_names()
        except Exception:  # the broker cannot say: Spark's own error stands
            continue
        gone = [topic for topic in settings.topics or [] if topic not in names]
        if gone:
            explained.append(deleted_topics_message(settings, gone))
    return "\n".join(explained) or None


_UNSECURED_HINT = (
    ". A broker taking only SASL or TLS clients drops one without 'properties.security.protocol' "
    "(SASL_PLAINTEXT, SASL_SSL, SSL)"
)


def _login(settings: ReadSettings) -> str:
    """Who the table logs in as, from its JAAS config: "as P (keytab K)", or "" when it names none."""
    try:
        modules = jaas.parse(settings.client.get(jaas.KEY, ""))
    except ValueError:
        return ""
    options = modules[0].options
    keytab = f" (keytab {options['keyTab']})" if options.get("keyTab") else ""
    return f" as {options['principal']}{keytab}" if options.get("principal") else keytab


def login_failure(settings: ReadSettings, causes: list[str]) -> str:
    """The message of a Kafka client that could not log in (its JAAS login, before any broker was asked)."""
    innermost = causes[-1] if causes else "the Kafka client could not be created"
    text = " ".join(causes)
    if "KafkaClient' entry" in text or "java.security.auth.login.config" in text:
        hint = (
            f"set 'properties.{jaas.KEY}' (for Kerberos: {jaas.KRB5_LOGIN_MODULE} required useKeyTab=true "
            'keyTab="..." principal="...";)'
        )
    elif "Unable to obtain password" in text or "LoginException" in text:
        hint = (
            "the keytab holds no key for that principal, or cannot be read: check keyTab and principal in "
            f"'properties.{jaas.KEY}' (klist -kt KEYTAB lists the principals a keytab holds)"
        )
    else:
        hint = f"check 'properties.{jaas.KEY}' and 'properties.sasl.mechanism'"
    return (
        f"Kafka: the client of table {settings.table} could not log in{_login(settings)} for broker(s) "
        f"{settings.brokers}: {hint}. The client said: {innermost}"
    )


def authentication_failure(settings: ReadSettings, causes: list[str]) -> str:
    """The message of a login the broker (or the KDC, for the broker's service ticket) refused."""
    text = " ".join(causes)
    service = settings.client.get("sasl.kerberos.service.name", "")
    innermost = next((c for c in reversed(causes) if "Kerberos database" in c), causes[-1] if causes else "")
    if "Server not found in Kerberos database" in text:
        hint = (
            f"the KDC knows no principal {service or '?'}/HOST for the broker: 'properties.sasl.kerberos.service.name' "
            f"('{service}') must be the first part of the broker's principal (SERVICE/HOST@REALM), and "
            "'properties.bootstrap.servers' name the brokers by the host names in their principals"
        )
    else:
        hint = f"check the principal and keytab in 'properties.{jaas.KEY}' and 'properties.sasl.kerberos.service.name'"
    return (
        f"Kafka broker(s) {settings.brokers} refused the SASL login of table {settings.table}{_login(settings)}: "
        f"{hint}. The client said: {innermost}"
    )


def _causes(exc: Exception) -> list[str]:
    """The first line of each Java exception in a py4j error's cause chain, outermost first."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return [str(exc).strip().splitlines()[0]] if str(exc).strip() else [type(exc).__name__]
    found: list[str] = []
    while java is not None and len(found) < 20:
        text = str(java.toString()).strip()
        found.append(text.splitlines()[0] if text else "")
        java = java.getCause()
    return found


def _cause(exc: Exception) -> str:
    """The innermost Java message of a py4j error (its first line)."""
    java = getattr(exc, "java_exception", None)
    while java is not None and java.getCause() is not None:
        java = java.getCause()
    text = str(java.toString()) if java is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
