"""TLS to Hive 4's metastore (``metastore.use.SSL``): ``sqlext metastore start`` serving TLS from a keystore,
sqlext's own client trusting it through a PEM or PKCS12 truststore, Spark's Hive client through Hive's names;
an untrusted certificate and a plain client named with what to set."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from sqlext.catalog.metastore import launcher, tls
from sqlext.catalog.metastore.client import MetastoreClient, RetryPolicy
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.catalog.metastore.tls import MetastoreTls, ServerTls
from sqlext.catalog.metastore.versions import HiveVersion
from sqlext.errors import ConfigError, MetastoreError, MetastoreUnavailableError
from tests.support.streams import write_hourly_events
from tests.support.tls import TRUSTSTORE_PASSWORD, SelfSigned, self_signed
from tests.support.waiting import free_port

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class TlsMetastore:
    settings: MetastoreSettings
    certificate: SelfSigned

    @property
    def uri(self) -> str:
        return self.settings.uri


@pytest.fixture(scope="module")
def tls_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsMetastore]:
    """Hive 4's metastore serving TLS only, its certificate self-signed for 127.0.0.1."""
    certificate = self_signed(tmp_path_factory.mktemp("metastore-tls"))
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path_factory.mktemp("tls-hms"),
        version=HiveVersion.V4,
        tls=ServerTls(certificate.keystore(), TRUSTSTORE_PASSWORD),
    )
    launcher.start(settings)
    yield TlsMetastore(settings, certificate)
    launcher.stop(settings)


@pytest.mark.hms
@pytest.mark.jars
@pytest.mark.parametrize("kind", ["pem", "pkcs12"])
def test_the_client_talks_tls_with_a_truststore_holding_the_certificate(tls_metastore: TlsMetastore, kind: str) -> None:
    cert = tls_metastore.certificate
    store = str(cert.cert) if kind == "pem" else str(cert.pkcs12_truststore())
    settings = MetastoreTls.from_values(
        {tls.USE_SSL: "true", tls.TRUSTSTORE_PATH: store, tls.TRUSTSTORE_PASSWORD: TRUSTSTORE_PASSWORD}
    )
    with MetastoreClient(tls_metastore.uri, tls_settings=settings) as client:
        client.create_database(f"tls_{kind}", tls_metastore.settings.warehouse_uri + f"/tls_{kind}.db")
        assert f"tls_{kind}" in client.get_all_databases()


@pytest.mark.hms
@pytest.mark.jars
def test_an_untrusted_certificate_is_named_with_the_truststore_to_set(tls_metastore: TlsMetastore) -> None:
    began = time.monotonic()
    with (
        pytest.raises(MetastoreError) as raised,
        MetastoreClient(
            tls_metastore.uri, RetryPolicy(deadline_s=30), tls_settings=MetastoreTls(enabled=True)
        ) as client,
    ):
        client.get_all_databases()
    message = str(raised.value)
    assert "presented a certificate this client does not trust" in message
    assert tls.TRUSTSTORE_PATH in message and "TLS said: self-signed certificate" in message
    assert time.monotonic() - began < 20, "an untrusted certificate is not retried"


@pytest.mark.hms
@pytest.mark.jars
def test_a_plain_client_is_told_the_metastore_may_take_tls_clients_only(tls_metastore: TlsMetastore) -> None:
    with (
        pytest.raises(MetastoreUnavailableError) as raised,
        MetastoreClient(tls_metastore.uri, RetryPolicy(deadline_s=3), tls_settings=MetastoreTls()) as client,
    ):
        client.get_all_databases()
    assert f"TLS clients only (metastore.use.SSL): set {tls.USE_SSL}=true" in str(raised.value)


@pytest.mark.hms
@pytest.mark.jars
@pytest.mark.spark
@pytest.mark.slow
def test_spark_and_sqlext_both_reach_the_tls_metastore_in_one_job(tls_metastore: TlsMetastore, tmp_path: Path) -> None:
    """``CREATE DATABASE`` is Spark's Hive client (Hive 2.3, given the truststore as hive.metastore.*), the
    table sqlext's client."""
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=2, rows_per_hour=5)
    job = tmp_path / "job.sql"
    job.write_text(
        f"""
CREATE DATABASE IF NOT EXISTS tls_job;
CREATE TABLE IF NOT EXISTS tls_job.src (id BIGINT, user_id STRING, amount DOUBLE, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "input").as_uri()}', 'format' = 'parquet');
CREATE TABLE IF NOT EXISTS tls_job.events (id BIGINT, dt STRING, hr STRING) PARTITIONED BY (dt, hr)
WITH ('connector' = 'filesystem', 'path' = '{(tmp_path / "events").as_uri()}', 'format' = 'parquet',
      'sink.partition-commit.policy.kind' = 'metastore');
INSERT INTO tls_job.events SELECT id, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH') FROM tls_job.src;
"""
    )
    conf = {
        "spark.sqlext.metastore.uris": tls_metastore.uri,
        tls.USE_SSL: "true",
        tls.TRUSTSTORE_PATH: str(tls_metastore.certificate.pkcs12_truststore()),
        tls.TRUSTSTORE_PASSWORD: TRUSTSTORE_PASSWORD,
    }
    flags = [flag for key, value in conf.items() for flag in ("--conf", f"{key}={value}")]
    env = {**os.environ, "SQLEXT_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "sqlext.cli", "run", str(job), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    trusted = MetastoreTls(True, str(tls_metastore.certificate.cert), truststore_type="PEM")
    with MetastoreClient(tls_metastore.uri, tls_settings=trusted) as client:
        assert "tls_job" in client.get_all_databases()
        assert sorted(client.get_partition_names("tls_job", "events")) == ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]


def test_a_jks_truststore_is_refused_for_sqlexts_client_with_how_to_convert_it(tmp_path: Path) -> None:
    store = tmp_path / "truststore.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed")
    settings = MetastoreTls.from_values({tls.USE_SSL: "true", tls.TRUSTSTORE_PATH: str(store)})
    with pytest.raises(ConfigError, match="keytool -importkeystore"):
        settings.context()


def test_tls_is_refused_for_a_metastore_that_is_not_hive_4(tmp_path: Path) -> None:
    keystore = tmp_path / "keystore.p12"
    keystore.write_bytes(b"x")
    with pytest.raises(MetastoreError, match="Hive 4's metastore only"):
        MetastoreSettings(home=tmp_path, version=HiveVersion.V2_3, tls=ServerTls(keystore, "pw"))


def test_spark_gets_the_tls_settings_under_hives_names(tmp_path: Path) -> None:
    store = tmp_path / "truststore.p12"
    store.write_bytes(b"x")
    settings = MetastoreTls.from_values(
        {tls.USE_SSL: "true", tls.TRUSTSTORE_PATH: str(store), tls.TRUSTSTORE_PASSWORD: "pw"}
    )
    assert settings.hive_settings() == {
        "spark.hadoop.hive.metastore.use.SSL": "true",
        "spark.hadoop.hive.metastore.truststore.path": str(store),
        "spark.hadoop.hive.metastore.truststore.password": "pw",
    }
    with pytest.raises(ConfigError, match="does not exist"):
        MetastoreTls.from_values({tls.USE_SSL: "true", tls.TRUSTSTORE_PATH: str(tmp_path / "none.p12")})


def test_sqlext_metastore_start_takes_the_keystore_from_the_metastore_keys(tmp_path: Path) -> None:
    from sqlext.config import SqlextConfig

    keystore = tmp_path / "keystore.p12"
    keystore.write_bytes(b"x")
    values = {
        "spark.sqlext.metastore.version": "4",
        tls.KEYSTORE_PATH: str(keystore),
        tls.KEYSTORE_PASSWORD: "pw",
    }
    settings = MetastoreSettings.from_config(SqlextConfig.load(values))
    assert settings.tls == ServerTls(keystore, "pw", "PKCS12")
    assert dict(settings.tls.hive_properties())["metastore.use.SSL"] == "true"
