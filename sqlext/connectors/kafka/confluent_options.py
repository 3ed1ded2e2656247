"""The options of Flink's ``avro-confluent`` and ``debezium-avro-confluent`` formats (Flink's
``AvroConfluentFormatOptions``: same keys, without the format's prefix, which the table's options carry as
``avro-confluent.url``, ``key.avro-confluent.url``, ``value.debezium-avro-confluent.url``...)."""

from __future__ import annotations

from typing import Any

from sqlext.catalog import changelog_formats
from sqlext.options import STRING, ConfigOption

AVRO_CONFLUENT, DEBEZIUM_AVRO_CONFLUENT = "avro-confluent", changelog_formats.DEBEZIUM_AVRO_CONFLUENT
FORMATS = (AVRO_CONFLUENT, DEBEZIUM_AVRO_CONFLUENT)
USER_INFO, URL, STATIC_TOKEN = "USER_INFO", "URL", "STATIC_TOKEN"

URL_OPTION = ConfigOption(
    "url",
    STRING,
    None,
    "The URL of the Confluent Schema Registry to fetch schemas from (required; several separated by ',', tried in "
    "turn).",
)
SUBJECT = ConfigOption(
    "subject",
    STRING,
    None,
    "The subject to register the schema under when writing; sqlext has no Kafka sink, so a read accepts and ignores "
    "it (a record names its writer schema by id).",
)
SCHEMA = ConfigOption(
    "schema",
    STRING,
    None,
    "The Avro schema the records are read as (the reader schema; it must match the table's columns). Default: "
    "Flink's conversion of the table's columns (as the avro format's).",
)
BASIC_AUTH_SOURCE = ConfigOption(
    "basic-auth.credentials-source",
    STRING,
    None,
    "Where the basic-auth credentials come from: USER_INFO (basic-auth.user-info) or URL (the user info of the URL).",
)
BASIC_AUTH_USER_INFO = ConfigOption("basic-auth.user-info", STRING, None, "Basic-auth credentials, 'user:password'.")
BEARER_AUTH_SOURCE = ConfigOption(
    "bearer-auth.credentials-source",
    STRING,
    None,
    "Where the bearer token comes from: STATIC_TOKEN (bearer-auth.token).",
)
BEARER_AUTH_TOKEN = ConfigOption("bearer-auth.token", STRING, None, "The bearer token sent to the registry.")
SSL_KEYSTORE_LOCATION = ConfigOption(
    "ssl.keystore.location", STRING, None, "A key store (JKS or PKCS12) with the client's key, for TLS to the registry."
)
SSL_KEYSTORE_PASSWORD = ConfigOption("ssl.keystore.password", STRING, None, "The key store's password.")
SSL_TRUSTSTORE_LOCATION = ConfigOption(
    "ssl.truststore.location",
    STRING,
    None,
    "A trust store (JKS or PKCS12) with the certificates the registry's is checked against (default: the JVM's).",
)
SSL_TRUSTSTORE_PASSWORD = ConfigOption("ssl.truststore.password", STRING, None, "The trust store's password.")
PROPERTIES = ConfigOption(
    "properties.",
    STRING,
    None,
    "Schema registry client properties (Confluent's names): sqlext's client honours basic.auth.credentials.source, "
    "basic.auth.user.info, bearer.auth.credentials.source, bearer.auth.token and schema.registry.ssl.* (the "
    "format's own options take precedence, as in Flink); others have no effect.",
    prefix=True,
)

OPTIONS: tuple[ConfigOption[Any], ...] = (
    URL_OPTION,
    SUBJECT,
    SCHEMA,
    BASIC_AUTH_SOURCE,
    BASIC_AUTH_USER_INFO,
    BEARER_AUTH_SOURCE,
    BEARER_AUTH_TOKEN,
    SSL_KEYSTORE_LOCATION,
    SSL_KEYSTORE_PASSWORD,
    SSL_TRUSTSTORE_LOCATION,
    SSL_TRUSTSTORE_PASSWORD,
    PROPERTIES,
)
