"""A kerberized HDFS mini cluster for the tests (markers ``hdfs`` and ``kerberos``): the mini cluster of
:mod:`tests.support.stores` with ``hadoop.security.authentication=kerberos``, its NameNode and DataNode logged in
from keytabs of the session's MIT KDC (:mod:`tests.support.kdc`), block access tokens and SASL data transfer
(``dfs.data.transfer.protection=authentication`` on unprivileged ports: ``ignore.secure.ports.for.testing``), and
HDFS permissions on. The metastore's principal (``hive``) and the gateway's (``sqlext``) are Hadoop proxy users
(``hadoop.proxyuser.<user>.hosts/groups``): the metastore and the gateway act on HDFS as the user who called them.

The session fixture ``kerberized_hdfs`` starts one the first time a test asks for it (only those tests pay for
it); ``/warehouse`` is made world-writable (sticky, as ``/tmp``) by the HDFS superuser for the tests' users.
:meth:`KerberizedHdfs.shell` runs Hadoop's ``FsShell`` (``hdfs dfs``) as a principal, for what a test checks on
HDFS itself (owners, permissions).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.runtime.paths import pyspark_jars_dir
from tests.support.daemons import start_daemon, stop_daemon
from tests.support.kdc import Kdc
from tests.support.stores import AUDIT_LOGGING, _default_fs, hdfs_jars, minicluster_command
from tests.support.waiting import free_port, wait_for

#: The NameNode's and DataNodes' principal (one for both: HDFS checks each against its own key), and the HTTP
#: server's (SPNEGO for WebHDFS). No ``_HOST``: a client replaces ``_HOST`` by the canonical name of the address
#: it connects to, which for 127.0.0.1 is whatever /etc/hosts says.
HDFS_SERVICE = "hdfs/127.0.0.1"
HTTP_SERVICE = "HTTP/127.0.0.1"
#: The kerberized metastore's principal (as tests/catalog/test_metastore_kerberos.py's), and the name clients give.
METASTORE_SERVICE = "hive/127.0.0.1"
METASTORE_PRINCIPAL = "hive/_HOST@SQLEXT.TEST"
#: Users whose calls the NameNode lets act for others: the kerberized metastore's principal (hive/127.0.0.1,
#: whose short name is ``hive``: a SASL metastore does HDFS calls as its caller) and the gateway's.
PROXY_USERS = ("hive", "sqlext")
WAREHOUSE = "/warehouse"


@dataclass
class KerberizedHdfs:
    """A running kerberized mini cluster: its URI, principals, and the Hadoop keys a client needs."""

    uri: str
    http_address: str
    process: subprocess.Popen[bytes]
    kdc: Kdc
    home: Path
    namenode_principal: str
    superuser_keytab: Path

    def client_conf(self, prefix: str = "spark.hadoop.") -> dict[str, str]:
        """What a client of this cluster sets (as Spark conf with the default prefix, plain Hadoop keys with
        ``prefix=""``): Kerberos, the NameNode's principal and the data transfer's SASL protection."""
        keys = {
            "hadoop.security.authentication": "kerberos",
            "dfs.namenode.kerberos.principal": self.namenode_principal,
            "dfs.datanode.kerberos.principal": self.namenode_principal,
            "dfs.data.transfer.protection": "authentication",
            "dfs.namenode.http-address": self.http_address,
        }
        return {f"{prefix}{key}": value for key, value in keys.items()}

    def shell(self, principal: str, keytab: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``hdfs dfs ARGS`` (Hadoop's FsShell, on the mini cluster's jars) logged in as ``principal``."""
        ccache = self.home / f"{principal.split('@')[0].replace('/', '_')}.ccache"
        self.kdc.kinit(principal, keytab, ccache)
        conf = self.home / "client-conf"
        conf.mkdir(exist_ok=True)
        (conf / "core-site.xml").write_text(_site({"fs.defaultFS": self.uri, **self.client_conf(prefix="")}))
        command = [
            shutil.which("java") or "java",
            "-Xmx128m",
            *self.kdc.java_options(),
            "-cp",
            os.pathsep.join([str(conf), f"{hdfs_jars()}/*", f"{pyspark_jars_dir()}/*"]),
            "org.apache.hadoop.fs.FsShell",
            *args,
        ]
        env = {**self.kdc.env, "KRB5CCNAME": f"FILE:{ccache}"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
        if check and done.returncode != 0:
            pytest.fail(f"hdfs dfs {' '.join(args)} as {principal} failed ({done.returncode}): {done.stderr[-3000:]}")
        return done

    def owners(self, principal: str, keytab: Path, directory: str) -> dict[str, str]:
        """``{path: owner}`` of the files (not directories) under ``directory``, listed as ``principal``."""
        done = self.shell(principal, keytab, "-ls", "-R", directory)
        found = {}
        for line in done.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 8 and fields[0].startswith("-"):
                found[fields[-1]] = fields[2]
        return found


def _site(properties: dict[str, str]) -> str:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>\n" for k, v in properties.items())
    return f"<?xml version='1.0'?>\n<configuration>\n{body}</configuration>\n"


def start_kerberized_hdfs(kdc: Kdc, home: Path) -> KerberizedHdfs:
    """Start the mini cluster with Kerberos on, once its principals are in the KDC; return once it serves."""
    principal, keytab = kdc.principal(HDFS_SERVICE)
    http_principal, http_keytab = kdc.principal(HTTP_SERVICE)
    port, http_port = free_port(), free_port()
    conf = home / "cluster-conf.xml"
    logging = home / "log4j2.properties"
    logging.write_text(AUDIT_LOGGING.format(audit_log=home / "audit.log"))
    properties = {
        "hadoop.security.authentication": "kerberos",
        "hadoop.security.authorization": "true",
        "dfs.permissions.enabled": "true",
        "dfs.namenode.kerberos.principal": principal,
        "dfs.namenode.keytab.file": str(keytab),
        "dfs.datanode.kerberos.principal": principal,
        "dfs.datanode.keytab.file": str(keytab),
        # WebHDFS with SPNEGO (a kerberized NameNode's HTTP server takes Hadoop's hadoop.http.authentication.*
        # settings: with its default type, simple, it lets requests through unauthenticated and WebHDFS then
        # refuses them with 403 "Security enabled but user not authenticated by filter").
        "dfs.webhdfs.enabled": "true",
        "dfs.web.authentication.kerberos.principal": http_principal,
        "dfs.web.authentication.kerberos.keytab": str(http_keytab),
        "hadoop.http.authentication.type": "kerberos",
        "hadoop.http.authentication.kerberos.principal": http_principal,
        "hadoop.http.authentication.kerberos.keytab": str(http_keytab),
        "hadoop.http.authentication.simple.anonymous.allowed": "false",
        "dfs.block.access.token.enable": "true",
        "dfs.data.transfer.protection": "authentication",
        "ignore.secure.ports.for.testing": "true",
        **{f"hadoop.proxyuser.{user}.{what}": "*" for user in PROXY_USERS for what in ("hosts", "groups")},
    }
    command = minicluster_command(home, port, http_port, conf, logging, kdc.java_options(), properties)
    process = start_daemon(command, home / "minicluster.log", conf.is_file, "the kerberized HDFS mini cluster", 180)
    wait_for(lambda: _default_fs(conf), 10, what="the kerberized mini cluster's configuration")
    cluster = KerberizedHdfs(
        f"hdfs://127.0.0.1:{port}", f"127.0.0.1:{http_port}", process, kdc, home, principal, keytab
    )
    try:
        cluster.shell(principal, keytab, "-mkdir", "-p", WAREHOUSE)
        cluster.shell(principal, keytab, "-chmod", "1777", WAREHOUSE)
    except BaseException:
        stop_daemon(process)
        raise
    return cluster


@pytest.fixture(scope="session")
def kerberized_hdfs(kdc: Kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KerberizedHdfs]:
    """The session's kerberized HDFS mini cluster (started the first time a test needs it)."""
    cluster = start_kerberized_hdfs(kdc, tmp_path_factory.mktemp("kerberized-hdfs"))
    yield cluster
    stop_daemon(cluster.process)


@pytest.fixture(scope="session")
def kerberized_hdfs_metastore(
    kdc: Kdc, kerberized_hdfs: KerberizedHdfs, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MetastoreSettings]:
    """A kerberized metastore (Kerberos logins only, as hive/127.0.0.1) reaching the kerberized HDFS with its
    own login: it creates a table's and a partition's directories there as the user who called it."""
    principal, keytab = kdc.principal(METASTORE_SERVICE)
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path_factory.mktemp("kerberized-hdfs-hms"),
        hadoop=tuple(sorted(kerberized_hdfs.client_conf(prefix="").items())),
        kerberos_principal=principal,
        kerberos_keytab=keytab,
    )
    launcher.start(settings)
    yield settings
    launcher.stop(settings)
