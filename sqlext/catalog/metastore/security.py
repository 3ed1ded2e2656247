"""The metastore connection's security (SASL Kerberos, TLS) as plain settings that travel to Spark's Python
workers.

Spark runs a Python data source's methods in Python worker processes it starts itself, even the driver-side ones
(``format("sqlext")``'s writer set-up and batch commits, a streaming source's offsets): no sqlext session
configured those processes, so a metastore client there would connect without the job's Kerberos login or TLS.
The data sources take :func:`settings_of` the session along (an option, a field of their spec) and call
:func:`adopt` in the worker before their first metastore call.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlext.catalog.metastore import kerberos, tls

#: The keys that make a metastore connection secure (Hive's and Spark's names; see docs/secured-cluster.md).
KEYS = (
    kerberos.SASL_ENABLED,
    kerberos.SERVER_PRINCIPAL,
    kerberos.CLIENT_PRINCIPAL,
    kerberos.CLIENT_KEYTAB,
    tls.USE_SSL,
    tls.TRUSTSTORE_PATH,
    tls.TRUSTSTORE_PASSWORD,
    tls.TRUSTSTORE_TYPE,
)


def settings_of(values: Mapping[str, str]) -> dict[str, str]:
    """The security keys among a session's conf (or a sqlext config's values)."""
    return {key: values[key] for key in KEYS if values.get(key)}


def current() -> dict[str, str]:
    """This process's metastore security (as its session configured it), as settings."""
    auth, secured = kerberos.current(), tls.current()
    values: dict[str, str] = {}
    if auth.sasl:
        values[kerberos.SASL_ENABLED] = "true"
        values[kerberos.SERVER_PRINCIPAL] = auth.server_principal
        if auth.client_principal and auth.client_keytab:
            values[kerberos.CLIENT_PRINCIPAL] = auth.client_principal
            values[kerberos.CLIENT_KEYTAB] = auth.client_keytab
    if secured.enabled:
        values[tls.USE_SSL] = "true"
        values[tls.TRUSTSTORE_TYPE] = secured.truststore_type
        if secured.truststore:
            values[tls.TRUSTSTORE_PATH] = secured.truststore
        if secured.truststore_password:
            values[tls.TRUSTSTORE_PASSWORD] = secured.truststore_password
    return values


def adopt(settings: Mapping[str, str]) -> None:
    """Make ``settings`` this process's metastore security (:func:`kerberos.configure`, :func:`tls.configure`),
    in a Python worker; nothing without settings (a worker of a session that has none keeps the plain default)."""
    if not settings:
        return
    kerberos.configure(kerberos.MetastoreAuth.from_values(settings))
    tls.configure(tls.MetastoreTls.from_values(settings))
