"""The filesystem interface takes a URI's path literally, as Hadoop does: Hive-escaped partition dirs
(``p=%252e%252e``), spaces and non-ASCII names are the directories they spell, never URI-decoded. Both
backends (Spark's Hadoop FileSystem through py4j, and the pyarrow fallback) behave the same, on ``file:``
and on a ``viewfs://`` mount table."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlext.errors import ConfigError, FileSystemError
from sqlext.io import arrowfs, webhdfs, webhdfs_kerberos
from sqlext.io.fs import BACKEND_ENV, FileSystem, backend_name, join
from tests.support.waiting import free_port

NAMES = ["p=%252e%252e", "p=a%2Fb", "with space", "ünïcode", "x%20y"]
MOUNT = "sqlext-test-fs"


@pytest.fixture(params=["pyarrow", pytest.param("hadoop", marks=pytest.mark.spark)])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "hadoop":
        request.getfixturevalue("spark")
    monkeypatch.setenv(BACKEND_ENV, request.param)
    assert backend_name("file:///x") == request.param
    yield request.param


@pytest.fixture
def viewfs_root(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """``viewfs://<MOUNT>/data`` mounted on ``tmp_path/target`` for both backends."""
    target = tmp_path / "target"
    target.mkdir()
    key, value = f"fs.viewfs.mounttable.{MOUNT}.link./data", target.as_uri()
    if backend == "hadoop":
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        assert context is not None
        context._jsc.hadoopConfiguration().set(key, value)
    monkeypatch.setattr(arrowfs, "_settings", {key: value})
    return f"viewfs://{MOUNT}/data"


@pytest.mark.parametrize("name", NAMES)
def test_a_root_with_escapes_spaces_or_unicode_is_the_directory_it_spells(
    tmp_path: Path, name: str, backend: str
) -> None:
    root = f"file://{tmp_path}/{name}"
    fs = FileSystem(root)
    fs.write_text(join(root, "a.txt"), "rows")
    fs.move(join(root, "a.txt"), join(root, "b.txt"))

    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert [p.name for p in (tmp_path / name).iterdir()] == ["b.txt"]
    assert [f.relative for f in fs.list_files(root)] == ["b.txt"]
    assert fs.read_text(join(root, "b.txt")) == "rows"


def test_a_hive_style_location_without_slashes_resolves_the_same(tmp_path: Path, backend: str) -> None:
    (tmp_path / "p=%252e").mkdir()
    (tmp_path / "p=%252e" / "f").write_text("x")
    location = f"file:{tmp_path}/p=%252e"  # as the HMS stores a partition location

    assert [f.relative for f in FileSystem(location).list_files(location)] == ["f"]


def _exercise(root: str) -> None:
    """Every operation of the commit path, checked through the interface itself."""
    fs = FileSystem(root)
    fs.write_json(join(root, "_log", "q", "1.completed"), {"batch": 1})
    fs.write_json(join(root, "_log", "q", "1.completed"), {"batch": 2})  # replaces, atomically
    assert fs.read_json(join(root, "_log", "q", "1.completed")) == {"batch": 2}
    with fs.open_output(join(root, "staging", "k=a b", "part-0.parquet")) as out:
        pq.write_table(pa.table({"x": list(range(100))}), out)
    fs.write_bytes(join(root, "staging", "k=a b", "part-1.parquet"), b"")
    assert [f.relative for f in fs.list_files(join(root, "staging"))] == [
        "k=a b/part-0.parquet",
        "k=a b/part-1.parquet",
    ]
    assert fs.list_dirs(root) == ["_log", "staging"]
    fs.move(join(root, "staging", "k=a b", "part-0.parquet"), join(root, "k=a b", "part-0.parquet"))
    fs.move(join(root, "staging", "k=a b", "part-1.parquet"), join(root, "k=a b", "part-0.parquet"))  # file onto file
    fs.write_bytes(join(root, "staging", "k=a b", "part-1.parquet"), b"later")
    fs.copy(join(root, "staging", "k=a b", "part-1.parquet"), join(root, "copies", "c"))
    assert fs.read_bytes(join(root, "copies", "c")) == b"later"
    assert fs.exists(join(root, "k=a b", "part-0.parquet"))
    assert fs.is_dir(join(root, "k=a b")) and not fs.is_dir(join(root, "k=a b", "part-0.parquet"))
    assert not fs.exists(join(root, "nothing"))
    assert fs.list_files(join(root, "nothing")) == [] and fs.list_dirs(join(root, "nothing")) == []
    with pytest.raises(FileNotFoundError):
        fs.read_text(join(root, "nothing"))
    fs.delete_dir(join(root, "staging"))
    fs.delete_file(join(root, "copies", "c"))
    fs.delete_file(join(root, "copies", "absent"))
    listed = fs.list_files(root)
    assert [f.relative for f in listed] == ["_log/q/1.completed", "k=a b/part-0.parquet"]
    assert all(f.uri == join(root, f.relative) for f in listed)


def test_every_operation_on_a_local_root(tmp_path: Path, backend: str) -> None:
    _exercise(tmp_path.as_uri())
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name.endswith(".crc")) == []


def test_every_operation_on_a_viewfs_mount(tmp_path: Path, viewfs_root: str) -> None:
    _exercise(viewfs_root)
    assert (tmp_path / "target" / "k=a b" / "part-0.parquet").is_file()


def test_parquet_footers_read_through_the_interface(tmp_path: Path, viewfs_root: str) -> None:
    fs = FileSystem(viewfs_root)
    uri = join(viewfs_root, "f.parquet")
    with fs.open_output(uri) as out:
        pq.write_table(pa.table({"x": list(range(1000))}), out)
    with fs.open_input(uri) as handle:
        assert pq.ParquetFile(handle).metadata.num_rows == 1000


def test_a_viewfs_path_outside_every_link_is_refused(viewfs_root: str, backend: str) -> None:
    outside = f"viewfs://{MOUNT}/elsewhere/x"
    # Hadoop: the mount table's internal dirs are read-only; the fallback names the mount table.
    with pytest.raises(
        (FileSystemError, OSError), match="mount table" if backend == "pyarrow" else "readonly|read-only|Internal"
    ):
        FileSystem(outside).write_text(outside, "x")


def test_the_fallback_maps_s3a_keys_per_bucket_first() -> None:
    conf = arrowfs.hadoop_settings(
        {
            "spark.hadoop.fs.s3a.access.key": "AK",
            "spark.hadoop.fs.s3a.secret.key": "SK",
            "spark.hadoop.fs.s3a.endpoint": "http://minio:9000",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.bucket.other.endpoint.region": "eu-west-1",
            "spark.sql.shuffle.partitions": "4",
        }
    )
    options: dict[str, Any] = arrowfs.s3_options(conf, "other")
    assert options == {
        "access_key": "AK",
        "secret_key": "SK",
        "endpoint_override": "minio:9000",
        "scheme": "http",
        "region": "eu-west-1",
    }


def test_the_fallback_names_what_serves_an_unknown_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BACKEND_ENV, "pyarrow")
    with pytest.raises(FileSystemError, match="Without a JVM"):
        FileSystem("wasb://c@a.blob.core.windows.net/t").exists("wasb://c@a.blob.core.windows.net/t/x")


def test_the_fallback_names_what_hdfs_needs_without_libhdfs_or_webhdfs(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """Where format('sqlext')'s writers run (no JVM), hdfs:// needs pyarrow's libhdfs or the 'webhdfs' extra: the
    error says what to install and set, in a few lines (pyarrow's own lists every path it tried)."""
    monkeypatch.setenv(BACKEND_ENV, "pyarrow")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("ARROW_LIBHDFS_DIR", str(tmp_path / "no-libhdfs"))
    monkeypatch.setattr(webhdfs, "available", lambda: False)
    with pytest.raises(FileSystemError) as failure:
        FileSystem("hdfs://127.0.0.1:9/t").exists("hdfs://127.0.0.1:9/t/x")
    message = str(failure.value)
    # pyarrow's reason: its first failure to load libhdfs, or, once one happened in this process, that one did.
    assert re.match(
        r"Cannot reach hdfs://127\.0\.0\.1:9/t/x from this Python process \((Unable to load lib|Prior attempt to "
        r"load libhdfs failed)",
        message,
    ), message
    assert "pip install 'sqlext[webhdfs]'" in message and "spark.hadoop.dfs.namenode.http-address" in message
    assert "libhdfs.so" in message and "JAVA_HOME" in message and "CLASSPATH" in message
    assert len(message) < 1200 and "\n" not in message


def test_without_libhdfs_the_fallback_reaches_hdfs_through_webhdfs_and_names_the_key_it_tried(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    pytest.importorskip("fsspec", reason="the 'webhdfs' extra")
    monkeypatch.setenv(BACKEND_ENV, "pyarrow")
    monkeypatch.setenv("ARROW_LIBHDFS_DIR", str(tmp_path / "no-libhdfs"))
    port = free_port()  # nothing listens there
    monkeypatch.setattr(arrowfs, "_settings", {"dfs.namenode.http-address": f"0.0.0.0:{port}"})
    with pytest.raises(FileSystemError) as failure:
        FileSystem("hdfs://127.0.0.1:9/t").exists("hdfs://127.0.0.1:9/t/x")
    message = str(failure.value)
    assert message.startswith(f"Cannot reach hdfs://127.0.0.1:9/t/x through WebHDFS (127.0.0.1:{port}: ")
    assert "spark.hadoop.dfs.namenode.http-address" in message


def test_webhdfs_finds_the_namenode_http_address_from_the_hadoop_keys() -> None:
    assert webhdfs.http_addresses("hdfs://nn1.example:8020/t", {}) == ["nn1.example:9870"]
    plain = {"dfs.namenode.http-address": "0.0.0.0:50070"}
    assert webhdfs.http_addresses("hdfs://nn1.example:8020/t", plain) == ["nn1.example:50070"]
    assert webhdfs.http_addresses("hdfs://h:1/t", {"dfs.namenode.http-address": "web.example:80"}) == ["web.example:80"]
    ha = {
        "dfs.ha.namenodes.prod": "a, b",
        "dfs.namenode.http-address.prod.a": "nn-a.example:9870",
        "dfs.namenode.http-address.prod.b": "nn-b.example:9870",
    }
    assert webhdfs.http_addresses("hdfs://prod/warehouse", ha) == ["nn-a.example:9870", "nn-b.example:9870"]
    assert webhdfs.http_addresses("hdfs:///warehouse", {**ha, "fs.defaultFS": "hdfs://prod"}) == [
        "nn-a.example:9870",
        "nn-b.example:9870",
    ]
    federated = {"dfs.namenode.http-address.ns2": "nn2.example:9871"}
    assert webhdfs.http_addresses("hdfs://ns2/t", federated) == ["nn2.example:9871"]
    with pytest.raises(FileSystemError, match=r"dfs\.namenode\.http-address\.prod\.<namenode>"):
        webhdfs.http_addresses("hdfs://prod/t", {"dfs.ha.namenodes.prod": "a,b"})


@pytest.mark.spark
def test_auto_keeps_local_paths_on_pyarrow_and_sends_the_rest_to_spark(spark, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BACKEND_ENV, "auto")
    assert backend_name("file:///tmp/t") == "pyarrow"
    assert backend_name(f"viewfs://{MOUNT}/data/t") == "hadoop"
    assert backend_name("s3a://bucket/t") == "hadoop"


def test_a_failed_whole_file_write_leaves_no_temporary_file(tmp_path: Path, backend: str) -> None:
    (tmp_path / "k=v").mkdir()
    (tmp_path / "k=v" / "part-0").write_text("x")
    fs = FileSystem(tmp_path.as_uri())
    with pytest.raises(Exception):  # noqa: B017 - the backends raise differently; what is left matters
        fs.write_bytes(join(tmp_path.as_uri(), "k=v"), b"")  # a file where a non-empty directory is
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["k=v", "k=v/part-0"]


def test_the_temp_files_of_killed_writes_of_a_file_are_deleted_and_nothing_else(tmp_path: Path, backend: str) -> None:
    partition = tmp_path / "dt=1"
    partition.mkdir()
    abandoned = [partition / "._SUCCESS.0123abcd.tmp", partition / "._SUCCESS.4567ef01.tmp"]
    kept = [partition / "part-0.parquet", partition / ".part-0.parquet.crc", partition / "._OTHER.89ab.tmp"]
    for path in abandoned + kept:
        path.write_text("x")
    fs = FileSystem(tmp_path.as_uri())
    deleted = fs.delete_abandoned_writes(join(tmp_path.as_uri(), "dt=1/_SUCCESS"))
    assert sorted(uri.rpartition("/")[2] for uri in deleted) == sorted(path.name for path in abandoned)
    assert sorted(path.name for path in partition.iterdir()) == sorted(path.name for path in kept)


def test_a_python_worker_without_s3a_credential_keys_is_told_where_its_credentials_come_from() -> None:
    keys = {"fs.s3a.access.key": "k", "fs.s3a.secret.key": "s", "fs.s3a.endpoint": "http://127.0.0.1:9000"}
    note = arrowfs.default_credentials_note("s3a://bucket/t", {"fs.s3a.endpoint": "http://127.0.0.1:9000"})
    assert note is not None and "AWS_ACCESS_KEY_ID" in note and "spark.executorEnv" in note and "Connect" in note
    assert arrowfs.default_credentials_note("s3a://bucket/t", keys) is None
    per_bucket = {"fs.s3a.bucket.bucket.access.key": "k", "fs.s3a.bucket.bucket.secret.key": "s"}
    assert arrowfs.default_credentials_note("s3a://bucket/t", per_bucket) is None
    assert arrowfs.default_credentials_note("s3a://other/t", per_bucket) is not None
    assert arrowfs.default_credentials_note("hdfs://nn:8020/t", {}) is None


def test_the_kerberos_login_keys_travel_with_the_hadoop_keys_to_processes_without_a_jvm() -> None:
    conf = {
        "spark.hadoop.hadoop.security.authentication": "kerberos",
        "spark.kerberos.principal": "etl@EXAMPLE.COM",
        "spark.kerberos.keytab": "/keytabs/etl.keytab",
        "spark.kerberos.access.hadoopFileSystems": "hdfs://other",
        "spark.master": "local[2]",
    }
    carried = arrowfs.carried(conf)
    assert carried == {key: conf[key] for key in list(conf)[:3]}
    assert arrowfs.hadoop_settings(carried) == {
        "hadoop.security.authentication": "kerberos",
        "spark.kerberos.principal": "etl@EXAMPLE.COM",
        "spark.kerberos.keytab": "/keytabs/etl.keytab",
    }
    assert webhdfs_kerberos.enabled(arrowfs.hadoop_settings(carried))
    assert not webhdfs_kerberos.enabled({"hadoop.security.authentication": "simple"})


def test_a_half_given_or_missing_keytab_login_for_webhdfs_names_the_key(tmp_path: Path) -> None:
    half = re.escape("'spark.kerberos.principal' is set but 'spark.kerberos.keytab' is not")
    with pytest.raises(ConfigError, match=half):
        webhdfs_kerberos.login({"spark.kerberos.principal": "etl@EXAMPLE.COM"})
    pytest.importorskip("gssapi", reason="the kerberos extra")
    pytest.importorskip("requests_kerberos", reason="the kerberos extra")
    missing = tmp_path / "etl.keytab"
    with pytest.raises(ConfigError, match=re.escape(f"The keytab '{missing}' (spark.kerberos.keytab) does not exist")):
        webhdfs_kerberos.login({"spark.kerberos.principal": "etl@EXAMPLE.COM", "spark.kerberos.keytab": str(missing)})
