"""Real services for tests: a Hive Metastore from the launcher, Spark pointed at it, PostgreSQL, and a
metastore per backend (Derby, PostgreSQL) for the suites that must hold on both."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import Backend, MetastoreSettings
from sqlext.catalog.metastore.versions import HiveVersion
from tests.support.local_spark import local_session
from tests.support.waiting import free_port, wait_for


@pytest.fixture(scope="session")
def metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetastoreSettings]:
    """A real Derby-backed Hive Metastore on a free port, for the whole test session."""
    home = tmp_path_factory.mktemp("metastore")
    settings = MetastoreSettings(port=free_port(), home=home)
    launcher.start(settings)
    yield settings
    launcher.stop(settings)


@pytest.fixture
def hms(metastore: MetastoreSettings) -> Iterator[MetastoreClient]:
    """A client of the session's metastore."""
    with MetastoreClient(metastore.uri) as client:
        yield client


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(metastore: MetastoreSettings, warehouse: Path) -> Iterator[object]:
    """A local Spark session with Hive support on the session's metastore."""
    session = local_session(
        {
            "spark.app.name": "sqlext-tests",
            "spark.hadoop.hive.metastore.uris": metastore.uri,
            "spark.sql.warehouse.dir": warehouse.as_uri(),
            "spark.sqlext.metastore.uris": metastore.uri,
        },
        shuffle_partitions=4,
    )
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _fresh_sqlext_options(request: pytest.FixtureRequest) -> Iterator[None]:
    """Undo a test's ``SET``s and ``USE`` on the shared Spark session, so no later test inherits them."""
    yield
    session = getattr(request.node.funcargs.get("spark"), "_sqlext_session", None)
    if session is not None:
        session.reset_options()
        session.current_database = "default"


def spark_own_sql(spark: Any) -> Any:
    """Spark's own ``sql`` even on a session sqlext extended (for Spark's view of a table)."""
    session = getattr(spark, "_sqlext_session", None)
    return session.spark_sql if session is not None else spark.sql


@dataclass(frozen=True)
class PostgresServer:
    port: int
    database: str
    user: str
    password: str

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}"

    def new_database(self) -> str:
        """Create an empty database of its own (one per metastore) and return its JDBC URL."""
        bin_dir = _postgres_bin()
        assert bin_dir is not None
        name = f"hms_{uuid.uuid4().hex[:12]}"
        subprocess.run(
            [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name],
            check=True,
            capture_output=True,
            env={**os.environ, "PGPASSWORD": self.password},
        )
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{name}"


def _postgres_bin() -> Path | None:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return candidates[-1].parent if candidates else None


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster on a free port (run as the 'postgres' user when we are root)."""
    bin_dir = _postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (Debian package postgresql) are not installed")
    if not launcher.DEFAULT_POSTGRES_JAR.is_file():
        pytest.skip("PostgreSQL JDBC driver (Debian package libpostgresql-jdbc-java) is not installed")
    # pytest's temp dirs are private to root; PostgreSQL refuses to run as root, so its cluster
    # lives in a directory of its own that the 'postgres' user owns.
    base = Path(tempfile.mkdtemp(prefix="sqlext-pg-"))
    data = base / "data"
    data.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        base.chmod(0o755)
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    password = "hive"
    pwfile = base / "pgpass"
    pwfile.write_text(password)
    pwfile.chmod(0o644)
    subprocess.run(
        [*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "hive", f"--pwfile={pwfile}", "-A", "md5"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *as_user,
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(data / "server.log"),
            "-w",
            "-o",
            f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PGPASSWORD": password}
    subprocess.run(
        [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "hive", "metastore"],
        check=True,
        capture_output=True,
        env=env,
    )
    yield PostgresServer(port, "metastore", "hive", password)
    subprocess.run(
        [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
        check=False,
        capture_output=True,
    )
    wait_for(lambda: not (data / "postmaster.pid").exists(), 30, what="PostgreSQL to stop")
    shutil.rmtree(base, ignore_errors=True)


#: The metastore backends the fault-tolerance suites run against (PostgreSQL ones carry the marker).
BACKENDS = [
    pytest.param(Backend.DERBY, id="derby"),
    pytest.param(Backend.POSTGRES, id="postgres", marks=pytest.mark.postgres),
]


def own_metastore_settings(backend: Backend, home: Path, request: pytest.FixtureRequest) -> MetastoreSettings:
    """Settings of a metastore of its own on a free port: Derby under ``home``, or PostgreSQL in a new
    database of the session's PostgreSQL cluster."""
    if backend is Backend.DERBY:
        return MetastoreSettings(port=free_port(), home=home)
    postgres: PostgresServer = request.getfixturevalue("postgres")
    return MetastoreSettings(
        port=free_port(),
        home=home,
        backend=Backend.POSTGRES,
        jdbc_url=postgres.new_database(),
        user=postgres.user,
        password=postgres.password,
    )


@dataclass(frozen=True)
class BackendMetastore:
    """A running metastore of one backend."""

    backend: Backend
    settings: MetastoreSettings
    #: True when the tests' Spark session reads its Hive tables from this metastore.
    spark_catalog: bool

    @property
    def uri(self) -> str:
        return self.settings.uri


@pytest.fixture(scope="module", params=BACKENDS)
def backend_metastore(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackendMetastore]:
    """Each backend in turn, for a module: Derby is the session's metastore (the one Spark's catalog
    reads); PostgreSQL is a metastore started for the module on a database of its own."""
    if request.param is Backend.DERBY:
        yield BackendMetastore(Backend.DERBY, request.getfixturevalue("metastore"), spark_catalog=True)
        return
    settings = own_metastore_settings(Backend.POSTGRES, tmp_path_factory.mktemp("pg-metastore"), request)
    launcher.start(settings)
    try:
        yield BackendMetastore(Backend.POSTGRES, settings, spark_catalog=False)
    finally:
        launcher.stop(settings)


@pytest.fixture
def backend_hms(backend_metastore: BackendMetastore) -> Iterator[MetastoreClient]:
    """A client of ``backend_metastore``."""
    with MetastoreClient(backend_metastore.uri) as client:
        yield client


#: The metastore versions the version-parametrized tests run against; those fetched from Maven Central
#: carry the marker ``jars``.
VERSIONS = [
    pytest.param(HiveVersion.V2_3, id="hive2.3"),
    pytest.param(HiveVersion.V3_1, id="hive3.1", marks=pytest.mark.jars),
    pytest.param(HiveVersion.V4, id="hive4", marks=pytest.mark.jars),
]
#: The versions fetched from Maven Central, for a test that runs on those only (``indirect=True``).
FETCHED_VERSIONS = VERSIONS[1:]


@pytest.fixture(scope="session", params=VERSIONS)
def version_metastore(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackendMetastore]:
    """Each metastore version in turn, once per test session: 2.3 is the session's metastore (the one Spark's
    catalog reads); 3.1 and 4 are Derby-backed metastores of that version started for the session."""
    version: HiveVersion = request.param
    if version is HiveVersion.V2_3:
        yield BackendMetastore(Backend.DERBY, request.getfixturevalue("metastore"), spark_catalog=True)
        return
    home = tmp_path_factory.mktemp(f"metastore-{version.value}")
    settings = MetastoreSettings(port=free_port(), home=home, version=version)
    launcher.start(settings)
    try:
        yield BackendMetastore(Backend.DERBY, settings, spark_catalog=False)
    finally:
        launcher.stop(settings)


@pytest.fixture
def version_hms(version_metastore: BackendMetastore) -> Iterator[MetastoreClient]:
    """A client of ``version_metastore``."""
    with MetastoreClient(version_metastore.uri) as client:
        yield client
