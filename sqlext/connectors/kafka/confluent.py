"""Kafka keys and values in Flink's ``avro-confluent`` and ``debezium-avro-confluent`` formats: Avro framed by a
Confluent schema registry (magic byte 0, the writer schema's 4-byte id, Avro binary), decoded on the JVM.

- ``ConfluentAvroFrames.java`` (``sqlext-kafka.jar``, a Spark Java UDF registered per table's settings) fetches
  the writer schema of each id from the registry (``GET <url>/schemas/ids/<id>``, once per id and JVM, with the
  format's credentials and TLS stores) and reads the record with Avro's schema resolution into the reader schema:
  the table's columns as Flink's ``AvroSchemaConverter`` maps them (or the format's ``schema`` option). Records of
  every compatible writer version (a field added with a default, one dropped, a type promoted) so decode into the
  same columns, mid-stream too.
- Spark's ``from_avro`` (``spark-avro``, the jar the ``avro`` file format uses) decodes that into the columns.
- ``debezium-avro-confluent``: the reader schema is Flink's envelope ``{before, after, op}`` (the table's row,
  nullable, twice); each record becomes the row kinds Flink makes of it (``c``/``r`` +I of ``after``, ``u`` -U of
  ``before`` and +U of ``after``, ``d`` -D of ``before``) in the column every changelog's rows carry their kind
  in (:data:`sqlext.catalog.changelog_formats.ROW_KIND`).

A record the registry has no schema for, an unreachable registry, refused credentials, a record without the frame
or one that does not read as the table's schema fail the query naming the table, the record's topic-partition-offset
and what was wrong (Flink's formats have no ``ignore-parse-errors`` here). A NULL value (a tombstone) is skipped,
as Flink skips it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from sqlext.catalog import avro_schema
from sqlext.catalog.changelog_formats import ROW_KIND
from sqlext.connectors.kafka import confluent_options as co
from sqlext.errors import OptionError, ValidationError
from sqlext.table import Column

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn

CLASS = "io.sqlext.kafka.ConfluentAvroFrames"
JAR = "sqlext-kafka.jar"
#: How long one request to the registry may take (connect and answer).
TIMEOUT_MS = 30_000
_OP_KINDS = {"c": ["+I"], "r": ["+I"], "u": ["-U", "+U"], "d": ["-D"]}

_lock = threading.Lock()
_classes: dict[tuple[int, str], Any] = {}


@dataclass(frozen=True)
class RegistrySettings:
    """What the JVM side needs to read one format's records: the registry and the reader schema (its JSON is the
    settings of ``ConfluentAvroFrames``)."""

    table: str
    format: str
    urls: list[str]
    reader_schema: str
    headers: dict[str, str] = field(default_factory=dict)
    keystore: dict[str, str] | None = None
    truststore: dict[str, str] | None = None
    timeout_ms: int = TIMEOUT_MS

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def check(fmt: str, options: Mapping[str, str], columns: Sequence[Column], scope: str) -> None:
    """Refuse what Flink's format factory refuses (``options``: the format's options, its prefix stripped;
    ``scope``: ``key.``, ``value.`` or ``""``, the prefix the table's keys carry before the format's)."""
    prefix = f"{scope}{fmt}."
    known = {o.key for o in co.OPTIONS if not o.prefix}
    for key in options:
        if key not in known and not key.startswith(co.PROPERTIES.key):
            raise OptionError(
                f"Unsupported option '{prefix}{key}' of format '{fmt}'. Supported: "
                f"{', '.join(prefix + o.key + ('*' if o.prefix else '') for o in co.OPTIONS)}.",
                option=prefix + key,
            )
    if not options.get(co.URL_OPTION.key):
        raise OptionError(
            f"One or more required options are missing.\n\nMissing required options are:\n\n{prefix}url",
            option=prefix + "url",
        )
    _headers(options, prefix)
    reader_schema(fmt, options, columns, prefix)


def settings(table: str, fmt: str, options: Mapping[str, str], columns: Sequence[Column]) -> RegistrySettings:
    """The settings of a (checked) format; ``columns``: the columns the key or value holds, named as in the
    format (a key's without ``key.fields-prefix``)."""
    merged = _merged(options)
    urls = [url.strip() for url in merged[co.URL_OPTION.key].split(",") if url.strip()]
    return RegistrySettings(
        table=table,
        format=fmt,
        urls=[_without_user_info(url) for url in urls],
        reader_schema=reader_schema(fmt, options, columns, f"{fmt}."),
        headers=_headers(options, f"{fmt}."),
        keystore=_store(merged, "keystore"),
        truststore=_store(merged, "truststore"),
    )


def reader_schema(fmt: str, options: Mapping[str, str], columns: Sequence[Column], prefix: str) -> str:
    """The reader schema (JSON): the ``schema`` option, else Flink's conversion of ``columns`` (for
    debezium-avro-confluent wrapped in Flink's envelope ``{before, after, op}``)."""
    given = options.get(co.SCHEMA.key)
    if given:
        try:
            json.loads(given)
        except ValueError as exc:
            raise OptionError(
                f"Option '{prefix}schema' is not an Avro schema (JSON): {exc}.", option=prefix + "schema"
            ) from None
        return given
    data = [(c.name, c.type, c.nullable) for c in columns]
    try:
        if fmt == co.AVRO_CONFLUENT:
            return json.dumps(avro_schema.avro_schema(data), separators=(",", ":"))
        fields = [
            {
                "name": side,
                "type": ["null", avro_schema.avro_schema(data, name=f"{avro_schema.RECORD_NAME}_{side}")],
                "default": None,
            }
            for side in ("before", "after")
        ]
        fields.append({"name": "op", "type": ["null", "string"], "default": None})
        namespace, _, name = avro_schema.RECORD_NAME.rpartition(".")
        return json.dumps({"type": "record", "name": name, "namespace": namespace, "fields": fields})
    except avro_schema.AvroTypeError as exc:
        raise ValidationError(f"Format '{fmt}' cannot hold the table's columns (Flink: {exc}).") from None


def _merged(options: Mapping[str, str]) -> dict[str, str]:
    """The format's options over its ``properties.*`` in Confluent's client names (Flink's precedence)."""
    props = {k[len(co.PROPERTIES.key) :]: v for k, v in options.items() if k.startswith(co.PROPERTIES.key)}
    merged = {
        co.BASIC_AUTH_SOURCE.key: props.get("basic.auth.credentials.source"),
        co.BASIC_AUTH_USER_INFO.key: props.get("basic.auth.user.info"),
        co.BEARER_AUTH_SOURCE.key: props.get("bearer.auth.credentials.source"),
        co.BEARER_AUTH_TOKEN.key: props.get("bearer.auth.token"),
        **{f"ssl.{k}": props.get(f"schema.registry.ssl.{k}") for k in ("keystore.location", "keystore.password")},
        **{f"ssl.{k}": props.get(f"schema.registry.ssl.{k}") for k in ("truststore.location", "truststore.password")},
        co.URL_OPTION.key: props.get("schema.registry.url"),
    }
    merged.update({k: v for k, v in options.items() if not k.startswith(co.PROPERTIES.key)})
    return {k: v for k, v in merged.items() if v is not None}


def _headers(options: Mapping[str, str], prefix: str) -> dict[str, str]:
    merged = _merged(options)
    source = merged.get(co.BASIC_AUTH_SOURCE.key)
    headers: dict[str, str] = {}
    if source is not None:
        if source.upper() == co.USER_INFO:
            user_info = merged.get(co.BASIC_AUTH_USER_INFO.key)
            if not user_info:
                raise OptionError(
                    f"'{prefix}basic-auth.credentials-source' is USER_INFO but '{prefix}basic-auth.user-info' is not "
                    "set ('user:password').",
                    option=prefix + co.BASIC_AUTH_USER_INFO.key,
                )
        elif source.upper() == co.URL:
            user_info = unquote(urlsplit(merged.get(co.URL_OPTION.key, "").split(",")[0].strip()).netloc)
            user_info = user_info.rpartition("@")[0]
            if not user_info:
                raise OptionError(
                    f"'{prefix}basic-auth.credentials-source' is URL but '{prefix}url' has no user info "
                    "(http://user:password@host:port).",
                    option=prefix + co.URL_OPTION.key,
                )
        else:
            raise OptionError(
                f"Invalid value for option '{prefix}basic-auth.credentials-source': '{source}'. sqlext's registry "
                "client takes USER_INFO or URL.",
                option=prefix + co.BASIC_AUTH_SOURCE.key,
                value=source,
            )
        headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode()
    bearer = merged.get(co.BEARER_AUTH_SOURCE.key)
    if bearer is not None:
        token = merged.get(co.BEARER_AUTH_TOKEN.key)
        if bearer.upper() != co.STATIC_TOKEN or not token:
            raise OptionError(
                f"'{prefix}bearer-auth.credentials-source' = '{bearer}': sqlext's registry client takes STATIC_TOKEN "
                f"with '{prefix}bearer-auth.token' set.",
                option=prefix + co.BEARER_AUTH_SOURCE.key,
                value=bearer,
            )
        if headers:
            raise OptionError(
                f"'{prefix}basic-auth.credentials-source' and '{prefix}bearer-auth.credentials-source' cannot both "
                "be set (a request carries one Authorization).",
                option=prefix + co.BEARER_AUTH_SOURCE.key,
            )
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _without_user_info(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _store(merged: Mapping[str, str], kind: str) -> dict[str, str] | None:
    location = merged.get(f"ssl.{kind}.location")
    if not location:
        return None
    return {"location": location, "password": merged.get(f"ssl.{kind}.password", "")}


# -- decoding on Spark -------------------------------------------------------------------------------


def decoded(spark: Any, registry: RegistrySettings, data: SparkColumn) -> SparkColumn:
    """The record ``data`` (Confluent-framed, of the raw record's topic, partition and offset) as a struct of
    the reader schema: Spark's ``from_avro`` over the JVM's re-framing (see the module docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from sqlext.connectors.filesystem.spark_avro import ARTIFACT, require

    if getattr(spark, "_jvm", None) is None:
        raise ValidationError(
            f"Table {registry.table} has format '{registry.format}', which sqlext decodes on the driver's JVM; a "
            "Spark Connect session has none here."
        )
    try:
        require(spark, registry.table, "read")
    except ValidationError:
        raise ValidationError(
            f"Table {registry.table} has format '{registry.format}', which sqlext decodes with Spark's from_avro, "
            f"and Spark's Avro data source is not on this session's class path: it is the jar {ARTIFACT} (not part "
            f"of pyspark). Start the session with --conf spark.jars.packages={ARTIFACT}, or with --conf "
            "spark.jars=<the jars of sqlext.connectors.filesystem.spark_avro.jar_paths()>, or run ADD JAR.",
            value=registry.format,
        ) from None
    name = _udf(spark, registry)
    framed = F.call_function(name, data, F.col("topic"), F.col("partition"), F.col("offset"))
    return from_avro(framed, registry.reader_schema, {"mode": "FAILFAST"})


def _udf(spark: Any, registry: RegistrySettings) -> str:
    """The name of the session's UDF for these settings (registered at first use)."""
    from sqlext import javac
    from sqlext.runtime import jvm_classes

    text = registry.to_json()
    name = "sqlext_confluent_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    context = spark.sparkContext
    with _lock:
        key = jvm_classes.context_key(context)
        if key not in _classes:
            try:
                jar = javac.packaged_jar(JAR)
            except javac.MissingJarError as exc:
                raise ValidationError(f"Format '{registry.format}' of table {registry.table}: {exc}") from None
            jvm = context._jvm
            loader = jvm_classes.added_jar(context, jar, jvm.java.lang.Thread.currentThread().getContextClassLoader())
            _classes[key] = jvm.java.lang.Class.forName(CLASS, True, loader)
        frames_class = _classes[key]
    gateway = context._gateway
    types = gateway.new_array(gateway.jvm.java.lang.Class, 1)
    types[0] = gateway.jvm.java.lang.String._java_lang_class
    values = gateway.new_array(gateway.jvm.java.lang.Object, 1)
    values[0] = text
    udf = frames_class.getDeclaredConstructor(types).newInstance(values)
    binary = gateway.jvm.org.apache.spark.sql.types.DataTypes.BinaryType
    spark._jsparkSession.udf().register(name, udf, binary)
    return name


def columns_of(record: SparkColumn, columns: Sequence[tuple[str, Column]], zone: str) -> dict[str, SparkColumn]:
    """Output column name -> its value, from a decoded record (``columns``: (field name, column))."""
    from sqlext.catalog.avro_form import AvroForm

    form = AvroForm(tuple((f, c.type, c.nullable) for f, c in columns))
    return {column.name: form.read(record.getField(f), column.type, zone) for f, column in columns}


def change_rows(record: SparkColumn, columns: Sequence[tuple[str, Column]], zone: str, table: str) -> SparkColumn:
    """A debezium envelope as the array of rows Flink makes of it: structs of the columns and :data:`ROW_KIND`
    (an unknown ``op``, or a missing ``before`` of an update or delete, fails naming the table and the record)."""
    from pyspark.sql import functions as F

    def row(side: str, kind: str) -> SparkColumn:
        values = columns_of(record.getField(side), columns, zone)
        return F.struct(*(v.alias(n) for n, v in values.items()), F.lit(kind).alias(ROW_KIND))

    op = record.getField("op")
    where = F.concat(
        F.lit(f"table {table}, topic-partition-offset "),
        F.concat_ws("-", F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")),
    )

    def missing(side: str, what: str) -> SparkColumn:
        return F.raise_error(
            F.concat(
                where,
                F.lit(
                    f': the "{side}" field of a {what} message is null (Flink: if you are using Debezium Postgres '
                    "Connector, please check the Postgres table has been set REPLICA IDENTITY to FULL level)."
                ),
            )
        )

    before_missing = record.getField("before").isNull()
    unknown = F.raise_error(
        F.concat(where, F.lit(': Unknown "op" value "'), F.coalesce(op, F.lit("null")), F.lit('".'))
    )
    return (
        F.when(op.isin("c", "r"), F.array(row("after", "+I")))
        .when((op == "u") & before_missing, F.array(missing("before", "UPDATE")))
        .when(op == "u", F.array(row("before", "-U"), row("after", "+U")))
        .when((op == "d") & before_missing, F.array(missing("before", "DELETE")))
        .when(op == "d", F.array(row("before", "-D")))
        .otherwise(F.array(unknown))
    )
