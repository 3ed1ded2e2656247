"""One Kerberos login for a Spark job's every metastore connection: sqlext's own client and Spark's Hive client.

From the Spark conf (:class:`sqlext.catalog.metastore.kerberos.MetastoreAuth`: ``spark.sqlext.metastore.sasl.enabled``,
``spark.sqlext.metastore.kerberos.principal``, ``spark.kerberos.principal`` / ``spark.kerberos.keytab`` or the
ticket cache), :func:`secure` configures this process's metastore clients, and gives Spark's Hive client the same
settings under Hive's and Hadoop's names (``spark.hadoop.hive.metastore.sasl.enabled``,
``spark.hadoop.hive.metastore.kerberos.principal``, ``spark.hadoop.hadoop.security.authentication=kerberos``;
keys the user set are kept). In a JVM it started (:func:`sqlext.spark.session.spark_session`), before the
SparkContext exists, it turns Hadoop's login (``UserGroupInformation``) to Kerberos and logs in from the keytab,
as ``spark-submit --principal --keytab`` does on YARN; without a keytab Hadoop reads the ticket cache itself.
Java reads no ``KRB5_CONFIG``: when it is set, the JVM's ``java.security.krb5.conf`` is pointed at it unless set.

TLS to the metastore (``spark.sqlext.metastore.use.SSL`` and its truststore, :mod:`sqlext.catalog.metastore.tls`)
is configured the same way: this process's clients, and Spark's Hive client under Hive's names
(``spark.hadoop.hive.metastore.use.SSL``, ``spark.hadoop.hive.metastore.truststore.path`` / ``.password``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from sqlext.catalog.metastore import kerberos, tls
from sqlext.catalog.metastore.kerberos import MetastoreAuth

HADOOP_PREFIX = "spark.hadoop."
HADOOP_AUTHENTICATION = "spark.hadoop.hadoop.security.authentication"


def configure(conf: Mapping[str, str]) -> MetastoreAuth:
    """Make the conf's metastore authentication this process's (sqlext's own client)."""
    auth = MetastoreAuth.from_values(conf)
    kerberos.configure(auth)
    tls.configure(tls.MetastoreTls.from_values(conf))
    return auth


def hive_settings(auth: MetastoreAuth) -> dict[str, str]:
    """Spark conf giving Spark's Hive client the metastore's SASL settings."""
    if not auth.sasl:
        return {}
    return {
        "spark.hadoop.hive.metastore.sasl.enabled": "true",
        "spark.hadoop.hive.metastore.kerberos.principal": auth.server_principal,
        "spark.hadoop.hadoop.security.authentication": "kerberos",
    }


def hadoop_kerberos(conf: Mapping[str, str]) -> bool:
    """Whether the conf turns Hadoop's own login to Kerberos (a kerberized HDFS:
    ``spark.hadoop.hadoop.security.authentication=kerberos``)."""
    return conf.get(HADOOP_AUTHENTICATION, "").strip().lower() == "kerberos"


def secure(conf: Mapping[str, str], jvm: Any) -> dict[str, str]:
    """Configure this process's clients and the JVM's Hadoop login; return the Spark conf to add (for Spark's
    Hive client). Call before the SparkContext is created."""
    auth = configure(conf)
    tls_settings = {key: value for key, value in tls.current().hive_settings().items() if key not in conf}
    if not auth.sasl and not hadoop_kerberos(conf):
        return tls_settings
    krb5_conf = os.environ.get("KRB5_CONFIG")
    system = jvm.java.lang.System
    if krb5_conf and not system.getProperty("java.security.krb5.conf"):
        system.setProperty("java.security.krb5.conf", krb5_conf)
    hadoop = jvm.org.apache.hadoop.conf.Configuration()
    for key, value in conf.items():
        if key.startswith(HADOOP_PREFIX):  # e.g. hadoop.kerberos.min.seconds.before.relogin
            hadoop.set(key[len(HADOOP_PREFIX) :], value)
    hadoop.set("hadoop.security.authentication", "kerberos")
    login = jvm.org.apache.hadoop.security.UserGroupInformation
    login.setConfiguration(hadoop)
    if auth.client_keytab is not None:
        try:
            login.loginUserFromKeytab(auth.client_principal, auth.client_keytab)
        except Exception as exc:  # py4j's Java exception: its text is Hadoop's "Login failure for ..."
            raise kerberos.KerberosError(
                f"Kerberos: Spark's Hadoop login as {auth.client_principal} from the keytab {auth.client_keytab} "
                f"failed: {_first_line(exc)}. Check spark.kerberos.principal and spark.kerberos.keytab (kinit -kt "
                "KEYTAB PRINCIPAL says the same in the shell).",
                option=kerberos.CLIENT_KEYTAB,
            ) from None
    elif not bool(login.getLoginUser().hasKerberosCredentials()):
        raise kerberos.KerberosError(
            f"Kerberos: there is no Kerberos ticket for Hadoop's login ({HADOOP_AUTHENTICATION}=kerberos, or a "
            "kerberized metastore): kinit as the user (the ticket cache KRB5CCNAME), or set "
            "spark.kerberos.principal and spark.kerberos.keytab.",
            option=kerberos.CLIENT_KEYTAB,
        )
    return {key: value for key, value in hive_settings(auth).items() if key not in conf} | tls_settings


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return next((line.strip() for line in text if "Exception" in line or "failure" in line), text[0] if text else "")
