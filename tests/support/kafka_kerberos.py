"""A kerberized Apache Kafka broker for the tests: the broker of :mod:`tests.support.kafka` with two more
listeners taking SASL GSSAPI logins only, ``SASL_PLAINTEXT`` and ``SASL_SSL`` (a self-signed certificate of
:mod:`tests.support.tls`), its service principal ``kafka/localhost`` in the session's KDC
(:mod:`tests.support.kdc`). Its ``PLAINTEXT`` listener stays for the tests' own admin client and producer
(confluent-kafka's wheel has no GSSAPI). Started once per session, only by the tests that ask for it.

The SASL listeners are advertised as ``localhost``: Kafka's Java client names the broker's service principal
after the host it connected to (``kafka/localhost``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka import KafkaBroker
from tests.support.kdc import Kdc
from tests.support.tls import TRUSTSTORE_PASSWORD, SelfSigned, self_signed
from tests.support.waiting import free_port

SERVICE_NAME = "kafka"
KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"


def jaas_config(principal: str, keytab: Path) -> str:
    """A client's ``sasl.jaas.config``: Krb5LoginModule with a keytab, as Kafka's docs write it."""
    return f'{KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true keyTab="{keytab}" principal="{principal}";'


@dataclass
class KerberizedKafka:
    """The broker, its SASL ports and the certificate its SASL_SSL listener presents."""

    broker: KafkaBroker
    sasl_port: int
    sasl_ssl_port: int
    certificate: SelfSigned

    @property
    def sasl_bootstrap(self) -> str:
        return f"localhost:{self.sasl_port}"

    @property
    def sasl_ssl_bootstrap(self) -> str:
        return f"localhost:{self.sasl_ssl_port}"

    def properties(self, principal: str, keytab: Path, tls: bool = False) -> dict[str, str]:
        """A kafka table's ``properties.*`` options for a GSSAPI login as ``principal`` (Flink's keys)."""
        options = {
            "properties.bootstrap.servers": self.sasl_ssl_bootstrap if tls else self.sasl_bootstrap,
            "properties.security.protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
            "properties.sasl.mechanism": "GSSAPI",
            "properties.sasl.kerberos.service.name": SERVICE_NAME,
            "properties.sasl.jaas.config": jaas_config(principal, keytab),
        }
        if tls:
            options["properties.ssl.truststore.type"] = "PEM"
            options["properties.ssl.truststore.location"] = str(self.certificate.cert)
        return options


def start_kerberized_broker(home: Path, kdc: Kdc) -> KerberizedKafka:
    """A broker under ``home`` with SASL_PLAINTEXT and SASL_SSL listeners (GSSAPI), started."""
    principal, keytab = kdc.principal(f"{SERVICE_NAME}/localhost")
    certificate = self_signed(home / "tls")
    keystore = certificate.keystore()
    ports: set[int] = set()
    while len(ports) < 4:
        ports.add(free_port())
    plain, controller, sasl, sasl_ssl = sorted(ports)
    server_jaas = jaas_config(principal, keytab)
    settings = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
        f"SASL_SSL://127.0.0.1:{sasl_ssl},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://localhost:{sasl},"
        f"SASL_SSL://localhost:{sasl_ssl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": SERVICE_NAME,
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": server_jaas,
        "listener.name.sasl_ssl.gssapi.sasl.jaas.config": server_jaas,
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(keystore),
        "ssl.keystore.password": TRUSTSTORE_PASSWORD,
        "ssl.key.password": TRUSTSTORE_PASSWORD,
    }
    broker = KafkaBroker.create(home, plain, settings, kdc.java_options(), controller_port=controller)
    broker.start()
    return KerberizedKafka(broker, sasl, sasl_ssl, certificate)


def point_jvm_at(kdc: Kdc, spark: Any) -> None:
    """Point a running session's JVM at the KDC's krb5.conf (a JVM reads no KRB5_CONFIG, and the tests' shared
    session may have started before the KDC): the system property, then Java's Kerberos config reloaded."""
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    system = jvm.java.lang.System
    if system.getProperty("java.security.krb5.conf") == str(kdc.krb5_conf):
        return
    system.setProperty("java.security.krb5.conf", str(kdc.krb5_conf))
    config = jvm.java.lang.Class.forName("sun.security.krb5.Config")  # opened to reflection by Spark's JVM options
    refresh = config.getMethod("refresh", gateway.new_array(jvm.java.lang.Class, 0))
    refresh.invoke(None, gateway.new_array(jvm.java.lang.Object, 0))


@pytest.fixture(scope="session")
def kerberized_kafka(kdc: Kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KerberizedKafka]:
    """One kerberized broker for the session, started by the first test that asks for it."""
    kafka = start_kerberized_broker(tmp_path_factory.mktemp("kafka-kerberos"), kdc)
    yield kafka
    kafka.broker.stop()
