"""WebHDFS with SPNEGO on the kerberized mini HDFS (a real MIT KDC on loopback): a Python process without a JVM or
libhdfs (as Spark's Python workers of format('sqlext') and SDP sinks) lists, writes, renames and reads files
through :mod:`sqlext.io.arrowfs` logged in from a keytab; without a ticket, with a keytab of another principal,
or without Kerberos in its settings, it is told what to set. And a ``format("sqlext")`` stream whose table is on
the kerberized HDFS: its Python workers write and commit there through WebHDFS with the session's keytab."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from sqlext.catalog.metastore import kerberos
from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.kerberos import MetastoreAuth
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.io import arrowfs
from sqlext.io.fs import BACKEND_ENV
from tests.support.kdc import Kdc
from tests.support.kerberized_hdfs import METASTORE_PRINCIPAL, WAREHOUSE, KerberizedHdfs
from tests.support.streams import write_hourly_events
from tests.support.tables import create_in_hms, events_table

pytestmark = [pytest.mark.hdfs, pytest.mark.kerberos, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

#: Run in a process of its own: arrowfs with the conf given as JSON on stdin, then file operations under a base URI.
_SCRIPT = """
import json, sys
from sqlext.errors import SqlextError
from sqlext.io import arrowfs

given = json.load(sys.stdin)
arrowfs.configure(given["conf"])
base = given["base"]
fs = arrowfs.ArrowBackend()
try:
    fs.write_new(base + "/dt=1/part-0.txt.inprogress", b"hello over spnego")
    fs.rename(base + "/dt=1/part-0.txt.inprogress", base + "/dt=1/part-0.txt")
    fs.write_new(base + "/dt=2/part-0.txt", b"second")
    listed = sorted(name for name, _, _ in fs.list_files(base, recursive=True))
    print(json.dumps({"listed": listed, "read": fs.read_bytes(base + "/dt=1/part-0.txt").decode(),
                      "dirs": sorted(fs.list_dirs(base)), "kind": fs.kind(base + "/dt=2/part-0.txt")}))
except SqlextError as exc:
    print(json.dumps({"error": str(exc), "option": exc.option}))
"""


def _python_only(tmp_path: Path, kdc: Kdc, conf: dict[str, str], base: str) -> dict[str, object]:
    """The script in a fresh Python process with no JVM, no libhdfs and an empty ticket cache."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KRB5_CONFIG": str(kdc.krb5_conf),
        "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}",
        "JAVA_HOME": str(tmp_path / "no-jdk"),
        "ARROW_LIBHDFS_DIR": str(tmp_path / "no-libhdfs"),
        "CLASSPATH": "",
    }
    env.pop("KRB5_CLIENT_KTNAME", None)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        input=json.dumps({"conf": conf, "base": base}),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "libjvm" not in done.stdout
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_python_only_process_with_a_keytab_writes_lists_and_reads_a_kerberized_hdfs_through_webhdfs(
    kerberized_hdfs: KerberizedHdfs, kdc: Kdc, tmp_path: Path
) -> None:
    principal, keytab = kdc.principal("webhdfs-etl")
    conf = {
        **kerberized_hdfs.client_conf(),
        "spark.kerberos.principal": principal,
        "spark.kerberos.keytab": str(keytab),
    }
    base = f"{kerberized_hdfs.uri}{WAREHOUSE}/webhdfs/events"

    result = _python_only(tmp_path, kdc, conf, base)

    assert result == {
        "listed": ["dt=1/part-0.txt", "dt=2/part-0.txt"],
        "read": "hello over spnego",
        "dirs": ["dt=1", "dt=2"],
        "kind": "file",
    }
    # As HDFS itself lists them (Hadoop's FsShell): the files are there, owned by the keytab's user.
    owners = kerberized_hdfs.owners(principal, keytab, f"{WAREHOUSE}/webhdfs/events")
    assert owners == {
        f"{WAREHOUSE}/webhdfs/events/dt=1/part-0.txt": "webhdfs-etl",
        f"{WAREHOUSE}/webhdfs/events/dt=2/part-0.txt": "webhdfs-etl",
    }


def test_a_python_only_process_without_a_ticket_is_told_to_kinit_or_set_a_keytab(
    kerberized_hdfs: KerberizedHdfs, kdc: Kdc, tmp_path: Path
) -> None:
    result = _python_only(tmp_path, kdc, kerberized_hdfs.client_conf(), f"{kerberized_hdfs.uri}{WAREHOUSE}/none")

    message = str(result["error"])
    assert message.startswith("Kerberos: there is no Kerberos ticket for WebHDFS"), message
    assert f"FILE:{tmp_path / 'no-ticket'}" in message
    assert "kinit" in message and "spark.kerberos.principal and spark.kerberos.keytab" in message
    assert result["option"] == "spark.kerberos.keytab"


def test_a_keytab_without_the_principal_s_key_is_named(
    kerberized_hdfs: KerberizedHdfs, kdc: Kdc, tmp_path: Path
) -> None:
    _, keytab = kdc.principal("webhdfs-etl")
    conf = {
        **kerberized_hdfs.client_conf(),
        "spark.kerberos.principal": f"someone-else@{kdc.realm}",
        "spark.kerberos.keytab": str(keytab),
    }

    result = _python_only(tmp_path, kdc, conf, f"{kerberized_hdfs.uri}{WAREHOUSE}/other")

    message = str(result["error"])
    assert message.startswith(f"Kerberos: the WebHDFS login as someone-else@{kdc.realm} from the keytab {keytab}")
    assert f"klist -kt {keytab}" in message and "spark.kerberos.principal" in message


def test_a_process_whose_settings_are_not_kerberos_is_told_the_namenode_wants_it(
    kerberized_hdfs: KerberizedHdfs, kdc: Kdc, tmp_path: Path
) -> None:
    conf = {"spark.hadoop.dfs.namenode.http-address": kerberized_hdfs.http_address}

    result = _python_only(tmp_path, kdc, conf, f"{kerberized_hdfs.uri}{WAREHOUSE}/simple")

    message = str(result["error"])
    assert message.startswith(
        f"The NameNode's WebHDFS at {kerberized_hdfs.http_address} takes Kerberos (SPNEGO) logins only"
    ), message
    assert "spark.hadoop.hadoop.security.authentication=kerberos" in message and "HTTP 401" in message


def test_a_namenode_reached_by_a_name_its_http_principal_lacks_refuses_the_login_and_says_why(
    kerberized_hdfs: KerberizedHdfs, kdc: Kdc, tmp_path: Path
) -> None:
    """The NameNode's HTTP principal is HTTP/127.0.0.1: addressed as localhost, the client asks the KDC for
    HTTP/localhost, which it does not know, and the NameNode answers HTTP 401."""
    principal, keytab = kdc.principal("webhdfs-etl")
    port = kerberized_hdfs.http_address.rpartition(":")[2]
    conf = {
        **kerberized_hdfs.client_conf(),
        "spark.hadoop.dfs.namenode.http-address": f"localhost:{port}",
        "spark.kerberos.principal": principal,
        "spark.kerberos.keytab": str(keytab),
    }

    result = _python_only(tmp_path, kdc, conf, f"{kerberized_hdfs.uri}{WAREHOUSE}/refused")

    message = str(result["error"])
    assert message.startswith(
        f"Kerberos: the NameNode's WebHDFS at localhost:{port} refused the SPNEGO login of {principal} (HTTP 401"
    ), message
    assert f"HTTP/localhost@{kdc.realm} not found in Kerberos database" in message
    assert "dfs.web.authentication.kerberos.principal" in message and "dfs.namenode.http-address" in message
    assert result["option"] == "hadoop.security.authentication"


@pytest.mark.spark
def test_format_sqlext_writes_and_commits_a_table_on_a_kerberized_hdfs_through_webhdfs(
    kerberized_hdfs: KerberizedHdfs,
    kerberized_hdfs_metastore: MetastoreSettings,
    kdc: Kdc,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The writers and the driver-side commit run in Spark's Python workers (no libhdfs here: WebHDFS), logged
    in from the session's spark.kerberos.keytab, which sqlext.register hands them with the Hadoop keys."""
    principal, keytab = kdc.principal("webhdfs-etl")
    auth = MetastoreAuth(True, METASTORE_PRINCIPAL, principal, str(keytab))
    conf = {
        **kerberized_hdfs.client_conf(),
        kerberos.SASL_ENABLED: "true",
        kerberos.SERVER_PRINCIPAL: METASTORE_PRINCIPAL,
        kerberos.CLIENT_PRINCIPAL: principal,
        kerberos.CLIENT_KEYTAB: str(keytab),
    }
    uri = f"{kerberized_hdfs.uri}{WAREHOUSE}/dskrb/events"
    local = events_table("dskrb", "events", tmp_path / "unused")
    table = dataclasses.replace(local, options={**local.options, "path": uri})
    # CREATE TABLE looks at the path (through WebHDFS in this process, with the keytab; the login's
    # KRB5CCNAME / KRB5_CLIENT_KTNAME are put back after the test).
    monkeypatch.setenv(BACKEND_ENV, "pyarrow")
    monkeypatch.setenv("ARROW_LIBHDFS_DIR", str(tmp_path / "no-libhdfs"))
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-ticket'}")
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", "")
    monkeypatch.setattr(arrowfs, "_settings", arrowfs.hadoop_settings(conf))
    with MetastoreClient(kerberized_hdfs_metastore.uri, auth=auth) as client:
        create_in_hms(client, table)
    write_hourly_events(tmp_path / "input", datetime(2026, 11, 22), hours=2, rows_per_hour=5)
    command = [sys.executable, "-m", "tests.support.datasource_job", kerberized_hdfs_metastore.uri, "dskrb.events"]
    command += [str(tmp_path / "input"), str(tmp_path / "checkpoint"), *(f"{k}={v}" for k, v in conf.items())]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KRB5_CONFIG": str(kdc.krb5_conf),
        "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}",
    }
    env.pop("KRB5_CLIENT_KTNAME", None)
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)

    assert done.returncode == 0, done.stderr[-4000:]
    expected = ["dt=2026-11-22/hr=00", "dt=2026-11-22/hr=01"]
    with MetastoreClient(kerberized_hdfs_metastore.uri, auth=auth) as client:
        assert sorted(client.get_partition_names("dskrb", "events")) == expected
    # On HDFS, as HDFS lists them: data files and _SUCCESS in each partition, owned by the keytab's user.
    owners = kerberized_hdfs.owners(principal, keytab, f"{WAREHOUSE}/dskrb/events")
    for partition in expected:
        names = {path.rsplit("/", 1)[1] for path in owners if f"/{partition}/" in path}
        assert "_SUCCESS" in names and any(name.startswith("part-") for name in names), (partition, owners)
    assert set(owners.values()) == {"webhdfs-etl"}
    copied = tmp_path / "events"
    kerberized_hdfs.shell(principal, keytab, "-copyToLocal", f"{WAREHOUSE}/dskrb/events", str(copied))
    rows = ds.dataset(copied, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    assert sorted(rows.column("id").to_pylist()) == list(range(10))
