"""Real storage for the storage tests (markers ``s3``, ``hdfs``, ``jars``), each started once per test session
and stopped after: an S3 server (:mod:`tests.support.s3_server`), an HDFS mini cluster (NameNode and DataNode
in one JVM on loopback), the jars that reach them (fetched once into ``$SQLEXT_JARS_DIR``), and a metastore
that can create ``s3a://`` and ``hdfs://`` locations (it checks them: it needs the same jars and keys).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.io import s3magic
from sqlext.runtime import jars
from sqlext.runtime.paths import pyspark_jars_dir
from tests.support.daemons import start_daemon, stop_daemon
from tests.support.s3_server import S3Server, start_server, stop_server
from tests.support.waiting import free_port, wait_for

#: S3A for pyspark's Hadoop 3.5.0. hadoop-aws depends on the AWS SDK's ``bundle`` (686 MB, every AWS service
#: shaded in); S3A needs only the S3 and STS clients, so the bundle is replaced by those modules (13 MB in all).
#: What pyspark already ships (Hadoop's client jars, netty, the Apache HTTP client, commons-codec, slf4j) is left
#: out, so one version of each is on the class path.
AWS_SDK_VERSION = "2.35.4"  # the version hadoop-aws 3.5.0 is built with
S3A_ARTIFACTS = (
    "org.apache.hadoop:hadoop-aws:3.5.0",
    *(f"software.amazon.awssdk:{name}:{AWS_SDK_VERSION}" for name in ("s3", "s3-transfer-manager", "sts")),
)
S3A_EXCLUDE = (
    "software.amazon.awssdk:bundle",
    "org.apache.hadoop:hadoop-common",
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "io.netty:*",
    "org.slf4j:*",
    "org.apache.httpcomponents:httpclient",
    "org.apache.httpcomponents:httpcore",
    "commons-codec:commons-codec",
    "commons-logging:commons-logging",
)
#: The mini cluster (MiniDFSCluster, run by MiniHadoopClusterManager, which asserts with JUnit 5's API) on
#: pyspark's own Hadoop client jars.
HDFS_ARTIFACTS = ("org.apache.hadoop:hadoop-client-minicluster:3.5.0", "org.junit.jupiter:junit-jupiter-api:5.11.4")
HDFS_EXCLUDE = (
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "org.xerial.snappy:snappy-java",
)


#: What docs/object-stores.md gives a user for ``s3a://`` with the commit without copies, as Spark's own
#: ``spark.jars.packages``: S3A with the S3 and STS clients, and ``spark-hadoop-cloud`` without the other cloud
#: connectors it depends on; what pyspark ships is left out (43 jars, 14 MB).
S3A_PACKAGES = (*S3A_ARTIFACTS, s3magic.HADOOP_CLOUD_ARTIFACT)
S3A_PACKAGES_EXCLUDE = (
    *S3A_EXCLUDE,
    "org.apache.hadoop:hadoop-cloud-storage",
    "org.apache.hadoop:hadoop-azure",
    "org.apache.hadoop:hadoop-huaweicloud",
    "com.google.cloud.bigdataoss:*",
    "com.fasterxml.jackson.core:*",
    "org.xerial.snappy:snappy-java",
    "joda-time:joda-time",
)


def s3a_packages_conf() -> dict[str, str]:
    """Spark conf that adds S3A as docs/object-stores.md tells a user to, through Spark's Ivy (its cache in the
    tests' jar dir: fetched once)."""
    return {
        "spark.jars.packages": ",".join(S3A_PACKAGES),
        "spark.jars.excludes": ",".join(S3A_PACKAGES_EXCLUDE),
        "spark.jars.ivy": str(jars.cache_dir() / "ivy"),
    }


def prefetch_s3a_packages() -> Path:
    """Resolve :func:`s3a_packages_conf` once with Spark's own Ivy (a ``spark-submit`` of an empty Python file),
    so that the tests that use it find Spark's Ivy cache filled; return that cache."""
    conf = s3a_packages_conf()
    spark_submit = pyspark_jars_dir().parent / "bin" / "spark-submit"
    with tempfile.TemporaryDirectory() as scratch:
        empty = Path(scratch) / "empty.py"
        empty.write_text("")
        flags = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
        done = subprocess.run([str(spark_submit), *flags, str(empty)], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"spark-submit could not resolve {conf['spark.jars.packages']}:\n{done.stderr[-3000:]}")
    return Path(conf["spark.jars.ivy"])


def s3a_jars() -> Path:
    """The directory of S3A's jars (fetched the first time)."""
    return jars.fetch("s3a", S3A_ARTIFACTS, exclude=S3A_EXCLUDE)


def hadoop_cloud_jars() -> Path:
    """The directory of Spark's ``spark-hadoop-cloud`` jar alone (its binding committer; the cloud connectors it
    depends on are left out): with S3A's jars, sqlext writes s3a:// batches as pending uploads."""
    return jars.fetch("spark-hadoop-cloud", [s3magic.HADOOP_CLOUD_ARTIFACT], transitive=False)


def hdfs_jars() -> Path:
    """The directory of the HDFS mini cluster's jars (fetched the first time)."""
    return jars.fetch("hdfs-minicluster", HDFS_ARTIFACTS, exclude=HDFS_EXCLUDE)


@dataclass
class HdfsCluster:
    """A running mini cluster: its ``hdfs://`` URI, its NameNode's HTTP (WebHDFS) address and its process."""

    uri: str
    http_address: str
    process: subprocess.Popen[bytes]
    #: The NameNode's audit log: one line per namespace operation (``cmd=create``, ``cmd=rename`` ...).
    audit_log: Path

    def audit(self, since: int = 0) -> list[dict[str, str]]:
        """The audit log's operations (from the ``since``-th on), each as its ``key=value`` fields
        (``cmd``, ``src``, ``dst`` ...)."""
        lines = self.audit_log.read_text().splitlines()[since:] if self.audit_log.is_file() else []
        return [dict(field.split("=", 1) for field in line.split("\t") if "=" in field) for line in lines]

    def audit_mark(self) -> int:
        """A position in the audit log, for :meth:`audit`'s ``since``."""
        return len(self.audit_log.read_text().splitlines()) if self.audit_log.is_file() else 0

    def hadoop_conf(self) -> dict[str, str]:
        """Spark conf that reaches the cluster from processes without a JVM of their own (format("sqlext")'s
        Python workers, streaming reads): the NameNode's WebHDFS address (:mod:`sqlext.io.webhdfs`)."""
        return {"spark.hadoop.dfs.namenode.http-address": self.http_address}


#: The mini cluster's logging (log4j2, from pyspark's jars): errors to its console log as without a
#: configuration, and the NameNode's audit log (every create, rename, delete, with its paths) to a file of its own,
#: which the tests read to see how a commit moved its files.
AUDIT_LOGGING = """\
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %p %c: %m%n
appender.audit.type = File
appender.audit.name = audit
appender.audit.fileName = {audit_log}
appender.audit.immediateFlush = true
appender.audit.layout.type = PatternLayout
appender.audit.layout.pattern = %m%n
logger.audit.name = org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit
logger.audit.level = info
logger.audit.additivity = false
logger.audit.appenderRef.audit.ref = audit
"""


def minicluster_command(
    home: Path,
    port: int,
    http_port: int,
    conf: Path,
    logging: Path,
    java_options: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
) -> list[str]:
    """Hadoop's ``MiniHadoopClusterManager`` (HDFS only: a NameNode and one DataNode) on these ports, writing
    its client configuration to ``conf`` once it serves; ``properties`` are given as ``-D key=value``."""
    return [
        shutil.which("java") or "java",
        "-Xmx384m",
        *java_options,
        f"-Dlog4j2.configurationFile={logging}",
        f"-Dtest.build.data={home / 'data'}",
        "-cp",
        os.pathsep.join([f"{hdfs_jars()}/*", f"{pyspark_jars_dir()}/*"]),
        "org.apache.hadoop.mapreduce.MiniHadoopClusterManager",
        "-nomr",
        "-format",
        "-nnport",
        str(port),
        "-nnhttpport",
        str(http_port),
        "-datanodes",
        "1",
        "-writeConfig",
        str(conf),
        *(item for key, value in (properties or {}).items() for item in ("-D", f"{key}={value}")),
    ]


def start_hdfs(home: Path) -> HdfsCluster:
    """Format and start a NameNode and one DataNode on a free loopback port (the NameNode's HTTP server, which
    serves WebHDFS, on another); return once they serve."""
    port, http_port = free_port(), free_port()
    conf = home / "cluster-conf.xml"  # written by the manager once the cluster is up
    audit_log = home / "audit.log"
    logging = home / "log4j2.properties"
    logging.write_text(AUDIT_LOGGING.format(audit_log=audit_log))
    command = minicluster_command(home, port, http_port, conf, logging)
    process = start_daemon(command, home / "minicluster.log", conf.is_file, "the HDFS mini cluster", 180, home)
    wait_for(lambda: _default_fs(conf), 10, what="the mini cluster's configuration")
    # Clients on this machine reach the NameNode by loopback address: 'localhost' may resolve elsewhere first.
    return HdfsCluster(f"hdfs://127.0.0.1:{port}", f"127.0.0.1:{http_port}", process, audit_log)


def _default_fs(conf: Path) -> str | None:
    try:
        root = ElementTree.parse(conf).getroot()
    except ElementTree.ParseError:  # still being written
        return None
    for prop in root.iter("property"):
        if prop.findtext("name") == "fs.defaultFS":
            return prop.findtext("value")
    return None


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The session's S3 server, with its request log."""
    server = start_server(tmp_path_factory.mktemp("s3") / "requests.jsonl")
    yield server
    stop_server(server)


@pytest.fixture(scope="session")
def hdfs_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    """The session's HDFS mini cluster."""
    cluster = start_hdfs(tmp_path_factory.mktemp("hdfs"))
    yield cluster
    stop_daemon(cluster.process)


@pytest.fixture(scope="session")
def store_metastore(tmp_path_factory: pytest.TempPathFactory, s3_server: S3Server) -> Iterator[MetastoreSettings]:
    """A metastore that reaches the session's S3 server (S3A's jars on its class path, the server's keys in
    its core-site.xml) and any ``hdfs://`` URI (pyspark's Hadoop client has the HDFS client)."""
    hadoop = tuple(sorted(s3_server.hadoop_conf(prefix="").items()))
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path_factory.mktemp("store-metastore"),
        hadoop=hadoop,
        classpath=(f"{s3a_jars()}/*",),
    )
    launcher.start(settings)
    yield settings
    launcher.stop(settings)
