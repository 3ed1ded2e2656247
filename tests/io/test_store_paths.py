"""sqlext's write and read paths on a real S3 server and a real HDFS mini cluster, beyond the streaming SQL
``INSERT`` of ``test_object_stores.py``: batch ``INSERT INTO``, ``INSERT OVERWRITE`` of a partition, of the
partitions a query writes and of a table without partitions, a streaming insert with ``auto-compaction``,
``format("sqlext")`` and SDP sinks (pyarrow in Spark's Python workers: on HDFS, without libhdfs, through WebHDFS),
a streaming read of committed partitions (``streaming-source.enable``, pyarrow in the executors too),
``sqlext compact`` and ``sqlext commits``.

A Spark start costs 15-30 s, so both stores' paths run in ONE driver process (``tests/support/store_paths_job.py``,
started by a module fixture), followed by one ``sqlext compact`` per store (and in a test, one ``sqlext commits``
on HDFS), and ONE ``spark-pipelines run`` whose two flows write a table on each store; the tests then read each
table back: rows through a reader (pyarrow on S3, Spark on HDFS), the HMS partitions and their statistics against
the files, ``_SUCCESS``, the commit log, on S3 the server's request log and on HDFS the NameNode's audit log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from sqlext.catalog.metastore.client import MetastoreClient
from sqlext.catalog.metastore.launcher import MetastoreSettings
from sqlext.connectors.filesystem.commit_log import CommitLog
from sqlext.io import arrowfs
from sqlext.io.fs import FileSystem
from sqlext.runtime.paths import pyspark_jars_dir
from tests.support.read_job import committed_ids
from tests.support.s3_server import ACCESS_KEY, SECRET_KEY, S3Request, S3Server
from tests.support.store_runs import (
    HOURS,
    REPO,
    ROWS_PER_HOUR,
    assert_nothing_pending,
    assert_partitions_match,
    commit_log,
    run_cli,
    run_job_process,
    s3_dir_files,
    s3_ids,
    s3_log,
    s3a_conf,
)
from tests.support.stores import HdfsCluster
from tests.support.streams import write_hourly_events

pytestmark = [pytest.mark.spark, pytest.mark.hms, pytest.mark.jars, pytest.mark.slow]

DAY = "dt=2026-11-22"
HOUR_IDS = {f"{DAY}/hr={h:02d}": list(range(h * ROWS_PER_HOUR, (h + 1) * ROWS_PER_HOUR)) for h in range(HOURS)}
#: ``events`` once its statements ran: hour 01 overwritten by its even ids, hour 02 by its ids divisible by 3.
EVENTS_IDS = {
    **HOUR_IDS,
    f"{DAY}/hr=01": [i for i in HOUR_IDS[f"{DAY}/hr=01"] if i % 2 == 0],
    f"{DAY}/hr=02": [i for i in HOUR_IDS[f"{DAY}/hr=02"] if i % 3 == 0],
}
ALL_IDS = list(range(HOURS * ROWS_PER_HOUR))
BATCH_QUERY = "insert_{database}_events.batch"
COMPACTED = f"{DAY}/hr=03"  # the partition `sqlext compact` is run on


@dataclass
class StoreRun:
    """What the module's driver run and ``sqlext compact`` did on one store."""

    database: str
    root: str
    conf: dict[str, str]
    steps: dict[str, dict[str, Any]]
    local: Path
    home: Path
    compact: subprocess.CompletedProcess[str]
    #: The S3 server's request log around ``sqlext compact`` (since, until), for :func:`_window`.
    compact_requests: dict[str, int]
    input_dir: Path

    def table(self, name: str) -> str:
        return f"{self.root}/{name}"

    def done(self, step: str) -> dict[str, Any]:
        """The step's outcome; fails the test with the step's error if it failed."""
        outcome = self.steps[step]
        assert outcome["error"] is None, f"{step} failed:\n{outcome['error']}"
        return outcome


BUCKET = "sqlext-paths"


@pytest.fixture(scope="module")
def store_runs(
    s3_server: S3Server,
    hdfs_cluster: HdfsCluster,
    store_metastore: MetastoreSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, StoreRun]:
    """Both stores' paths in one driver process (one Spark start for both), then ``sqlext compact`` of one
    committed partition on each. So the S3 tests start the HDFS mini cluster too, and the HDFS tests the S3 server
    (the metastore of the storage tests needs it anyway)."""
    tmp = tmp_path_factory.mktemp("store-paths")
    write_hourly_events(tmp / "input", datetime(2026, 11, 22), HOURS, ROWS_PER_HOUR)
    s3_server.create_bucket(BUCKET)
    conf = {
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.python.authenticate.socketTimeout": "120s",
        "spark.sqlext.metastore.uris": store_metastore.uri,
        "spark.sqlext.checkpoint.root": (tmp / "checkpoints").as_uri(),
        **s3a_conf(s3_server),
        **hdfs_cluster.hadoop_conf(),
    }
    stores = [
        {
            "database": "s3_paths",
            "root": f"s3a://{BUCKET}/warehouse",
            "local": str(tmp / "s3"),
            "request_log": str(s3_server.log),
            "read": True,
        },
        {
            "database": "hdfs_paths",
            "root": f"{hdfs_cluster.uri}/warehouse",
            "local": str(tmp / "hdfs"),
            "audit_log": str(hdfs_cluster.audit_log),
            "read": True,
        },
    ]
    spec_file, result_file = tmp / "spec.json", tmp / "result.json"
    spec_file.write_text(json.dumps({"conf": conf, "input": str(tmp / "input"), "stores": stores}))
    job = run_job_process("tests.support.store_paths_job", [str(spec_file), str(result_file)], tmp / "home")
    assert job.returncode == 0 and result_file.is_file(), job.stderr[-6000:]
    results = json.loads(result_file.read_text())
    runs = {}
    for store in stores:
        database = store["database"]
        args = ["compact", f"{database}.events", "--partition", "hr=03", "--reader-grace", "1 s", "--quiet"]
        since = s3_server.mark()
        compacted = run_cli(args, conf, tmp / "home")
        window = {"since": since, "until": s3_server.mark()}
        outcomes, local, home = results[database], Path(store["local"]), tmp / "home"
        runs[database] = StoreRun(
            database, store["root"], conf, outcomes, local, home, compacted, window, tmp / "input"
        )
    return runs


SDP_FLOWS = REPO / "tests" / "support" / "sdp_store_flows.py"
SDP_QUERY = "sqlext_{database}_sdp_events"
#: Core Spark keys of the module's conf, which SDP's flows may not set as session conf.
SDP_FLAGS = ("spark.driver.extraClassPath", "spark.ui.enabled", "spark.python.authenticate.socketTimeout")


@dataclass
class SdpRun:
    """The module's ``spark-pipelines run``, with the S3 request log and HDFS audit log positions around it."""

    done: subprocess.CompletedProcess[str]
    s3_since: int
    s3_until: int
    audit_since: int
    audit_until: int

    def assert_completed(self) -> None:
        output = self.done.stdout + self.done.stderr
        assert "Run is COMPLETED" in output, output[-6000:]
        # pyspark 4.3.0's Connect client exits 1 after a completed run that used a Python data source
        # (SPARK-59135, see examples/sdp/README.md); the tests judge the run by what it committed.
        assert self.done.returncode == 0 or "__python_accumulator__" in output, output[-6000:]


@pytest.fixture(scope="module")
def sdp_run(
    store_runs: dict[str, StoreRun],
    s3_server: S3Server,
    hdfs_cluster: HdfsCluster,
    store_metastore: MetastoreSettings,
    tmp_path_factory: pytest.TempPathFactory,
) -> SdpRun:
    """ONE ``spark-pipelines run`` (a Spark Connect server and its client: a Spark start of its own) whose two
    flows stream the hourly input through ``format("sqlext")`` sinks into ``sdp_events`` on S3 and on HDFS (the
    tables the driver run created), with the same Spark conf as the driver run."""
    pytest.importorskip("yaml", reason="the SDP CLI needs the 'pipelines' extra (pip install 'sqlext[pipelines]')")
    tmp = tmp_path_factory.mktemp("sdp")
    project = tmp / "project"
    (project / "transformations").mkdir(parents=True)
    shutil.copy(SDP_FLOWS, project / "transformations" / "flows.py")
    run = store_runs["s3_paths"]
    flags = {key: run.conf[key] for key in SDP_FLAGS}
    configuration = {
        **{key: value for key, value in run.conf.items() if key not in flags and key != "spark.master"},
        "spark.sqlext.test.input": run.input_dir.as_uri(),
        "spark.sqlext.test.tables": ",".join(f"{database}.sdp_events" for database in store_runs),
    }
    # The session's conf goes into the spec's `configuration` (the CLI starts its local Connect server with it,
    # and sets it on each flow), the few core keys a flow may not set into `--conf` flags: spark-submit hands a
    # long list of flags to pyspark's Connect client in several environment variables
    # (PYSPARK_REMOTE_INIT_CONF_<i>), and pyspark 4.3 keeps only the last (`_start_connect_server`: each one
    # replaces the one before), silently dropping the rest.
    (project / "spark-pipeline.yml").write_text(
        json.dumps(
            {
                "name": "store_sinks",
                "storage": (tmp / "storage").as_uri(),
                "libraries": [{"glob": {"include": "transformations/**"}}],
                "configuration": configuration,
            }
        )
    )
    spark_home = pyspark_jars_dir().parent
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home),
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "SQLEXT_HOME": str(tmp / "home"),
        # A Spark Connect server does not let its clients read the fs.s3a credential keys (`spark.conf.get` and
        # `getAll` leave them out), so `sqlext.register` cannot hand them to the sink's workers: on Connect, the
        # workers take S3 credentials from the AWS default chain, here the server's environment.
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    }
    s3_since, audit_since = s3_server.mark(), hdfs_cluster.audit_mark()
    done = subprocess.run(
        [str(spark_home / "bin" / "spark-pipelines"), *(f"--conf={k}={v}" for k, v in flags.items()), "run"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return SdpRun(done, s3_since, s3_server.mark(), audit_since, hdfs_cluster.audit_mark())


def _data(files: dict[str, int]) -> dict[str, int]:
    return {name: size for name, size in files.items() if not name.startswith(("_", "."))}


# -- S3 ---------------------------------------------------------------------------------------------------


@pytest.fixture
def s3_run(store_runs: dict[str, StoreRun]) -> StoreRun:
    return store_runs["s3_paths"]


def _window(server: S3Server, outcome: dict[str, Any]) -> list[S3Request]:
    """The requests the server answered during a step of the driver run."""
    return server.requests(outcome["since"])[: outcome["until"] - outcome["since"]]


def _key(uri: str) -> str:
    return uri.removeprefix("s3a://").split("/", 1)[1]


def _copies_into(requests: list[S3Request], prefix: str) -> list[str]:
    """Keys of data files (Spark's ``part-*``, compaction's ``compacted-*``)
    under ``prefix`` that the server wrote by copying (``CopyObject``, ``UploadPartCopy``), sqlext's hidden dirs
    (``_sqlext/``: staging, trash, compaction) included."""
    return [
        r.key
        for r in requests
        if r.operation in ("CopyObject", "UploadPartCopy")
        and r.key.startswith(prefix + "/")
        and r.key.rsplit("/", 1)[1].startswith(("part-", "compacted-"))
    ]


def _assert_s3_partitions_match(
    hms: MetastoreClient, run: StoreRun, server: S3Server, name: str, ids: dict[str, list[int]]
) -> None:
    """:func:`assert_partitions_match` for a table of the S3 run, its files and rows read from the bucket."""
    assert_partitions_match(
        hms,
        run.database,
        name,
        run.table(name),
        ids,
        lambda uri: s3_dir_files(server, uri),
        lambda uri: s3_ids(server, uri),
    )


def _report(what: str, requests: list[S3Request], prefix: str) -> None:
    """What a step cost on the server, printed for docs/object-stores.md (``-s`` or ``-rP``)."""
    counts = Counter(r.operation for r in requests if r.key.startswith(prefix + "/"))
    print(f"\n{what}: {dict(sorted(counts.items()))}; copies of data files: {len(_copies_into(requests, prefix))}")


@pytest.mark.s3
def test_a_batch_insert_into_s3_publishes_each_file_as_its_upload_without_a_copy(
    s3_run: StoreRun, s3_server: S3Server, store_metastore: MetastoreSettings
) -> None:
    outcome = s3_run.done("insert")
    table = s3_run.table("events")
    prefix = _key(table)
    requests = _window(s3_server, outcome)
    [entry, *_] = s3_log(s3_server, table, BATCH_QUERY.format(database=s3_run.database))

    assert entry["state"] == "completed" and entry["final"] and entry["operation"] == "append"
    assert sorted(entry["committed_partitions"]) == sorted(HOUR_IDS)
    assert sum(f["rows"] for f in entry["files"]) == len(ALL_IDS)
    written = {_key(f["final"]): f["size"] for f in entry["files"]}
    assert len(written) == 2 * HOURS, "two tasks ('sink.parallelism' = '2'), each with rows of every hour"
    assert all(f["upload"] for f in entry["files"]), "written as pending uploads to the final keys"
    completed = sorted(r.key for r in requests if r.operation == "CompleteMultipartUpload")
    assert completed == sorted(written)
    assert _copies_into(requests, prefix) == [], "no data file copied"
    sent = sum(r.body_bytes for r in requests if r.operation in ("PutObject", "UploadPart") and r.key in written)
    assert sent == sum(written.values()), "each data byte sent once"
    assert [r for r in requests if r.status >= 500] == []
    _report("batch INSERT INTO (4 partitions)", requests, prefix)


@pytest.mark.s3
def test_a_file_replaced_on_s3_between_its_open_and_its_read_is_read_again_as_its_new_version(
    s3_run: StoreRun, s3_server: S3Server
) -> None:
    """S3A reads the version it opened (If-Match on the ETag); the server refuses the read once another write
    replaced the object (412), as when a commit log entry is rewritten while a restarted batch reads it."""
    outcome = s3_run.done("replaced")
    key = _key(outcome["key"])
    reads = [r.status for r in _window(s3_server, outcome) if r.key == key and r.method == "GET"]

    assert json.loads(outcome["read"]) == {"version": 2}
    assert outcome["opens"] == 2
    assert len(reads) == 2 and reads[0] == 412, "the read of the replaced version was refused"
    assert reads[1] in (200, 206), "then the new version read (S3A asks for a range: 206)"


@pytest.mark.s3
def test_insert_overwrite_on_s3_replaces_a_static_partition_the_written_partitions_and_a_whole_table(
    s3_run: StoreRun, s3_server: S3Server, store_metastore: MetastoreSettings
) -> None:
    for step in ("overwrite_partition", "overwrite_dynamic", "flat_insert", "flat_overwrite"):
        s3_run.done(step)
    table = s3_run.table("events")
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_s3_partitions_match(hms, s3_run, s3_server, "events", EVENTS_IDS)
    log = s3_log(s3_server, table, BATCH_QUERY.format(database=s3_run.database))
    assert [(e["operation"], e["state"], sorted(e["partitions"])) for e in log[1:]] == [
        ("overwrite", "completed", [f"{DAY}/hr=01"]),
        ("overwrite", "completed", [f"{DAY}/hr=02"]),
    ]
    assert_nothing_pending(s3_server, BUCKET, _key(table))
    # The table without partitions holds the overwrite's rows alone, in its files alone.
    flat = s3_run.table("flat")
    assert s3_ids(s3_server, flat) == list(range(40))
    [overwrite] = s3_log(s3_server, flat, f"insert_{s3_run.database}_flat.batch")[1:]
    assert sorted(_data(s3_dir_files(s3_server, flat))) == sorted(
        f["final"].rsplit("/", 1)[1] for f in overwrite["files"]
    )
    # Each new file written once, as its upload, completed once; each replaced file (two a partition, listed in
    # the entry) deleted, every one before the first upload completed; no copy.
    overwrites = {"overwrite_partition": (table, log[1]), "overwrite_dynamic": (table, log[2])}
    for step, (where, entry) in {**overwrites, "flat_overwrite": (flat, overwrite)}.items():
        requests = _window(s3_server, s3_run.steps[step])
        _report(f"INSERT OVERWRITE ({step})", requests, _key(s3_run.root))
        assert _copies_into(requests, _key(s3_run.root)) == [], f"{step}: a data file copied"
        assert all(f["upload"] for f in entry["files"]), f"{step}: not written as pending uploads"
        completes = [(i, r.key) for i, r in enumerate(requests) if r.operation == "CompleteMultipartUpload"]
        assert sorted(k for _, k in completes) == sorted(_key(f["final"]) for f in entry["files"]), step
        replaced = {_key(uri) for uri in entry["replaced_files"]}
        assert len(replaced) == 2 and all(k.startswith(_key(where) + "/") for k in replaced), step
        deletes = [(i, r.key) for i, r in enumerate(requests) if r.operation == "DeleteObject" and r.key in replaced]
        assert {k for _, k in deletes} == replaced, f"{step}: replaced files not deleted"
        assert max(i for i, _ in deletes) < min(i for i, _ in completes), f"{step}: new files beside old ones"


@pytest.mark.s3
def test_a_streaming_insert_with_auto_compaction_on_s3_commits_each_hour_as_one_merged_file(
    s3_run: StoreRun, s3_server: S3Server, store_metastore: MetastoreSettings
) -> None:
    outcome = s3_run.done("stream")
    table = s3_run.table("stream_events")
    prefix = _key(table)
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_s3_partitions_match(hms, s3_run, s3_server, "stream_events", HOUR_IDS)
        for partition in hms.get_partitions_by_names(s3_run.database, "stream_events", sorted(HOUR_IDS)):
            assert partition.parameters["numFiles"] == "1", "the batch's two files merged before the commit"
    batches = s3_log(s3_server, table, f"insert_{s3_run.database}_stream_events")
    compactions = s3_log(s3_server, table, "_compaction")
    assert sum(len(e["files"]) for e in batches) == 2 * HOURS and all(e["state"] == "completed" for e in batches)
    assert [(e["state"], len(e["replaced_files"]), len(e["files"])) for e in compactions] == [("completed", 2, 1)] * 4
    for merged_file in (f for e in compactions for f in e["files"]):
        directory, name = merged_file["final"].rsplit("/", 1)
        assert s3_dir_files(s3_server, directory)[name] == merged_file["size"], "logged at its size as written"
    # The insert's files are published uploads; the only data files the server copied are the merged files,
    # moved from the compaction's work dir into their partitions (one copy each). The merged-away files are
    # deleted, not moved aside first.
    requests = _window(s3_server, outcome)
    completed = sorted(r.key for r in requests if r.operation == "CompleteMultipartUpload" and r.key.startswith(prefix))
    assert completed == sorted(_key(f["final"]) for e in batches for f in e["files"])
    merged = sorted(_key(f["final"]) for e in compactions for f in e["files"])
    assert sorted(_copies_into(requests, prefix)) == merged
    assert_nothing_pending(s3_server, BUCKET, prefix)
    _report("streaming INSERT with auto-compaction (4 batches)", requests, prefix)


def _assert_read_each_partition_once(run: StoreRun) -> None:
    """The streaming read of committed partitions read each once, and copied every row once."""
    outcome = run.done("stream")
    read = [partition for batch in outcome["read_partitions"] for partition in batch]
    assert sorted(read) == sorted(HOUR_IDS), "each committed partition read once"
    assert committed_ids(run.local / "stream_copy") == ALL_IDS, "every row copied once"


@pytest.mark.s3
def test_a_streaming_read_of_an_s3_table_reads_each_committed_partition_once(s3_run: StoreRun) -> None:
    _assert_read_each_partition_once(s3_run)


def _assert_staged_then_copied_once(
    s3_server: S3Server, requests: list[S3Request], prefix: str, batches: list[dict[str, Any]]
) -> None:
    """pyarrow's writes (format("sqlext"), SDP sinks): each file's bytes sent once, into the staging dir, then one
    server-side copy of each into its partition; nothing left staged."""
    finals = sorted(_key(f["final"]) for e in batches for f in e["files"])
    assert sorted(k for k in _copies_into(requests, prefix) if "/_sqlext/" not in k) == finals
    staged = sum(
        r.body_bytes for r in requests if r.operation in ("PutObject", "UploadPart") and "/_sqlext/staging/" in r.key
    )
    assert staged == sum(f["size"] for e in batches for f in e["files"])
    assert [k for k in s3_server.objects(BUCKET, f"{prefix}/_sqlext/staging/") if not k.endswith("/")] == []


@pytest.mark.s3
def test_format_sqlext_writes_an_s3_table_from_python_workers_configured_by_the_s3a_keys(
    s3_run: StoreRun, s3_server: S3Server, store_metastore: MetastoreSettings
) -> None:
    outcome = s3_run.done("dataframe")
    table = s3_run.table("df_events")
    prefix = _key(table)
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_s3_partitions_match(hms, s3_run, s3_server, "df_events", HOUR_IDS)
    batches = s3_log(s3_server, table, f"sqlext_{s3_run.database}_df_events")
    assert all(e["state"] == "completed" for e in batches)
    assert sum(f["rows"] for e in batches for f in e["files"]) == len(ALL_IDS)
    # pyarrow writes each file into the staging dir; its move into the partition is a server-side copy.
    requests = _window(s3_server, outcome)
    _assert_staged_then_copied_once(s3_server, requests, prefix, batches)
    _report("format('sqlext') (4 batches)", requests, prefix)


@pytest.mark.s3
def test_spark_pipelines_run_writes_an_s3_table_through_the_sqlext_sink(
    sdp_run: SdpRun, s3_run: StoreRun, s3_server: S3Server, store_metastore: MetastoreSettings
) -> None:
    sdp_run.assert_completed()
    table = s3_run.table("sdp_events")
    prefix = _key(table)
    with MetastoreClient(store_metastore.uri) as hms:
        _assert_s3_partitions_match(hms, s3_run, s3_server, "sdp_events", HOUR_IDS)
    batches = s3_log(s3_server, table, SDP_QUERY.format(database=s3_run.database))
    assert batches and all(e["state"] == "completed" for e in batches)
    assert sum(f["rows"] for e in batches for f in e["files"]) == len(ALL_IDS)
    # As format("sqlext"): pyarrow writes each file into the staging dir, and the commit's move into its
    # partition is a server-side copy (then a delete) of each data file: the file's bytes are sent once by the
    # writer and copied once by the server.
    requests = s3_server.requests(sdp_run.s3_since)[: sdp_run.s3_until - sdp_run.s3_since]
    _assert_staged_then_copied_once(s3_server, requests, prefix, batches)
    assert [r for r in requests if r.status >= 500] == []
    files = sum(len(e["files"]) for e in batches)
    _report(f"spark-pipelines run, sqlext sink ({len(batches)} batches, {files} data files)", requests, prefix)


@pytest.mark.s3
def test_sqlext_compact_merges_a_committed_s3_partition_and_updates_its_statistics(
    s3_run: StoreRun, s3_server: S3Server, store_metastore: MetastoreSettings
) -> None:
    assert s3_run.compact.returncode == 0, s3_run.compact.stderr[-4000:]
    assert "1 of 1 partition(s) compacted, 2 files merged into 1" in s3_run.compact.stdout
    table = s3_run.table("events")
    location = f"{table}/{COMPACTED}"
    [entry] = s3_log(s3_server, table, "_compaction")
    _assert_compacted(entry, location, _data(s3_dir_files(s3_server, location)))
    with MetastoreClient(store_metastore.uri) as hms:
        [partition] = hms.get_partitions_by_names(s3_run.database, "events", [COMPACTED])
    assert partition.sd.location == location, "switched back from the compaction's work dir"
    assert partition.parameters["numFiles"] == "1"
    assert partition.parameters["totalSize"] == str(sum(_data(s3_dir_files(s3_server, location)).values()))
    assert s3_ids(s3_server, location) == HOUR_IDS[COMPACTED]
    # The merged file is copied into the partition by the client (a GET and a PUT); nothing by the server.
    requests = _window(s3_server, s3_run.compact_requests)
    assert _copies_into(requests, _key(table)) == []
    _report("sqlext compact (1 partition)", requests, _key(table))


def _assert_compacted(entry: dict[str, Any], location: str, data: dict[str, int]) -> None:
    """``sqlext compact``'s log entry: the partition's two files merged into the one file now there."""
    assert (entry["state"], entry["committed_partitions"]) == ("completed", [COMPACTED])
    assert len(entry["replaced_files"]) == 2 and all(f.startswith(location + "/") for f in entry["replaced_files"])
    [merged] = entry["files"]
    [(name, size)] = data.items()
    assert (merged["final"], merged["size"]) == (f"{location}/{name}", size), "logged at its size as written"
    assert merged["rows"] == ROWS_PER_HOUR


# -- HDFS -------------------------------------------------------------------------------------------------


@pytest.fixture
def hdfs_run(store_runs: dict[str, StoreRun]) -> StoreRun:
    return store_runs["hdfs_paths"]


def _hdfs_files(uri: str) -> dict[str, int]:
    """The files directly in an ``hdfs://`` dir, through the test session's Spark (Hadoop's HDFS client)."""
    return {status.relative: status.size for status in FileSystem(uri).list_files(uri, recursive=False)}


def _hdfs_ids(spark: Any) -> Any:
    return lambda uri: sorted(row.id for row in spark.read.parquet(uri).select("id").collect())


@pytest.mark.hdfs
def test_batch_inserts_and_overwrites_on_hdfs_commit_the_rows_each_statement_leaves(
    hdfs_run: StoreRun, spark: Any, store_metastore: MetastoreSettings
) -> None:
    for step in ("insert", "overwrite_partition", "overwrite_dynamic", "flat_insert", "flat_overwrite"):
        hdfs_run.done(step)
    table = hdfs_run.table("events")
    with MetastoreClient(store_metastore.uri) as hms:
        assert_partitions_match(hms, hdfs_run.database, "events", table, EVENTS_IDS, _hdfs_files, _hdfs_ids(spark))
    log = commit_log(table, hdfs_run.conf, hdfs_run.home)  # `sqlext commits <hdfs uri> --json`
    batches = [e for e in log if e["query"] == BATCH_QUERY.format(database=hdfs_run.database)]
    assert [(e["batch"], e["operation"], e["state"]) for e in batches] == [
        (0, "append", "completed"),
        (1, "overwrite", "completed"),
        (2, "overwrite", "completed"),
    ]
    assert sorted(batches[0]["committed_partitions"]) == sorted(HOUR_IDS)
    assert sum(f["rows"] for f in batches[0]["files"]) == len(ALL_IDS)
    assert [sorted(e["committed_partitions"]) for e in batches[1:]] == [[f"{DAY}/hr=01"], [f"{DAY}/hr=02"]]
    assert not [name for name in FileSystem(table).list_files(f"{table}/_sqlext/staging")], "staged files left"
    flat = hdfs_run.table("flat")
    assert _hdfs_ids(spark)(flat) == list(range(40))


@pytest.mark.hdfs
def test_a_streaming_insert_with_auto_compaction_on_hdfs_commits_each_hour_as_one_merged_file(
    hdfs_run: StoreRun, spark: Any, store_metastore: MetastoreSettings
) -> None:
    hdfs_run.done("stream")
    table = hdfs_run.table("stream_events")
    with MetastoreClient(store_metastore.uri) as hms:
        assert_partitions_match(hms, hdfs_run.database, "stream_events", table, HOUR_IDS, _hdfs_files, _hdfs_ids(spark))
        for partition in hms.get_partitions_by_names(hdfs_run.database, "stream_events", sorted(HOUR_IDS)):
            assert partition.parameters["numFiles"] == "1", "the batch's two files merged before the commit"


def _hdfs_log(table: str, query: str) -> list[dict[str, Any]]:
    """The most advanced commit log entry of each batch of ``query``, read through the test session's Spark."""
    return [entry.to_json() for entry in CommitLog(FileSystem(table), table).entries(query)]


def _assert_moved_by_rename(cluster: HdfsCluster, since: int, until: int, finals: list[str]) -> None:
    """In the NameNode's audit log between ``since`` and ``until``: each final data file reached its place by
    one rename from sqlext's staging dir (WebHDFS's ``RENAME``, one NameNode operation), and none was created
    there (a copy would create it)."""
    operations = cluster.audit(since)[: until - since]
    renamed = {op["dst"]: op["src"] for op in operations if op.get("cmd", "").startswith("rename")}
    created = {op["src"] for op in operations if op.get("cmd") == "create"}
    for final in finals:
        path = urlparse(final).path
        assert "/_sqlext/staging/" in renamed.get(path, ""), f"{final} not renamed from staging"
        assert path not in created, f"{final} written in place"
    print(f"\nHDFS audit: {len(finals)} data files, {len(renamed)} renames, {len(created)} creates")


def _assert_hdfs_sink_committed(
    run: StoreRun, name: str, query: str, spark: Any, metastore: MetastoreSettings
) -> list[str]:
    """``name`` written by a ``format("sqlext")`` sink: the HMS partitions with their statistics, ``_SUCCESS``
    and rows read back by Spark, every batch of ``query`` completed with every row once, nothing left staged.
    Returns the data files' URIs."""
    table = run.table(name)
    with MetastoreClient(metastore.uri) as hms:
        assert_partitions_match(hms, run.database, name, table, HOUR_IDS, _hdfs_files, _hdfs_ids(spark))
    batches = _hdfs_log(table, query)
    assert batches and all(e["state"] == "completed" for e in batches)
    assert sum(f["rows"] for e in batches for f in e["files"]) == len(ALL_IDS)
    assert not FileSystem(table).list_files(f"{table}/_sqlext/staging"), "staged files left"
    return [f["final"] for e in batches for f in e["files"]]


@pytest.mark.hdfs
def test_the_webhdfs_fallback_renames_on_the_namenode_and_lists_what_is_there(
    hdfs_cluster: HdfsCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pyarrow's backend without libhdfs on the mini cluster: every operation the commit uses, and a rename is
    one NameNode rename (a file onto a file replaced in place), never a copy."""
    monkeypatch.setenv("ARROW_LIBHDFS_DIR", str(tmp_path / "no-libhdfs"))
    monkeypatch.setattr(arrowfs, "_settings", arrowfs.hadoop_settings(hdfs_cluster.hadoop_conf()))
    backend, root = arrowfs.ArrowBackend(), f"{hdfs_cluster.uri}/webhdfs-ops"
    backend.write_new(f"{root}/staging/a b.parquet", b"first")
    backend.write_new(f"{root}/staging/second", b"second")
    since = hdfs_cluster.audit_mark()
    backend.rename(f"{root}/staging/a b.parquet", f"{root}/dt=1/a b.parquet")
    backend.rename(f"{root}/staging/second", f"{root}/dt=1/a b.parquet")
    operations = [op for op in hdfs_cluster.audit(since) if op["cmd"] not in ("getfileinfo", "mkdirs")]
    assert [(op["cmd"], op["src"], op["dst"]) for op in operations] == [
        ("rename", "/webhdfs-ops/staging/a b.parquet", "/webhdfs-ops/dt=1/a b.parquet"),
        ("rename (options=[OVERWRITE])", "/webhdfs-ops/staging/second", "/webhdfs-ops/dt=1/a b.parquet"),
    ]
    assert backend.read_bytes(f"{root}/dt=1/a b.parquet") == b"second"
    [(name, size, mtime)] = backend.list_files(root, recursive=True)
    assert (name, size) == ("dt=1/a b.parquet", 6) and mtime > 0
    assert backend.list_dirs(root) == ["dt=1", "staging"]
    with pytest.raises(FileNotFoundError):
        backend.rename(f"{root}/staging/gone", f"{root}/dt=1/gone")
    with pytest.raises(IsADirectoryError):
        backend.rename(f"{root}/dt=1/a b.parquet", f"{root}/staging")
    backend.delete(root, recursive=True)
    assert backend.kind(root) is None


@pytest.mark.hdfs
def test_format_sqlext_writes_an_hdfs_table_from_python_workers_through_webhdfs(
    hdfs_run: StoreRun, hdfs_cluster: HdfsCluster, spark: Any, store_metastore: MetastoreSettings
) -> None:
    outcome = hdfs_run.done("dataframe")
    query = f"sqlext_{hdfs_run.database}_df_events"
    finals = _assert_hdfs_sink_committed(hdfs_run, "df_events", query, spark, store_metastore)
    _assert_moved_by_rename(hdfs_cluster, outcome["audit_since"], outcome["audit_until"], finals)


@pytest.mark.hdfs
def test_a_streaming_read_of_an_hdfs_table_reads_each_committed_partition_once(hdfs_run: StoreRun) -> None:
    _assert_read_each_partition_once(hdfs_run)


@pytest.mark.hdfs
def test_spark_pipelines_run_writes_an_hdfs_table_through_the_sqlext_sink(
    sdp_run: SdpRun, hdfs_run: StoreRun, hdfs_cluster: HdfsCluster, spark: Any, store_metastore: MetastoreSettings
) -> None:
    sdp_run.assert_completed()
    query = SDP_QUERY.format(database=hdfs_run.database)
    finals = _assert_hdfs_sink_committed(hdfs_run, "sdp_events", query, spark, store_metastore)
    _assert_moved_by_rename(hdfs_cluster, sdp_run.audit_since, sdp_run.audit_until, finals)


@pytest.mark.hdfs
def test_sqlext_compact_merges_a_committed_hdfs_partition_and_updates_its_statistics(
    hdfs_run: StoreRun, spark: Any, store_metastore: MetastoreSettings
) -> None:
    assert hdfs_run.compact.returncode == 0, hdfs_run.compact.stderr[-4000:]
    assert "1 of 1 partition(s) compacted, 2 files merged into 1" in hdfs_run.compact.stdout
    table = hdfs_run.table("events")
    location = f"{table}/{COMPACTED}"
    [entry] = [e.to_json() for e in CommitLog(FileSystem(table), table).entries("_compaction")]
    _assert_compacted(entry, location, _data(_hdfs_files(location)))
    with MetastoreClient(store_metastore.uri) as hms:
        [partition] = hms.get_partitions_by_names(hdfs_run.database, "events", [COMPACTED])
    assert partition.sd.location == location
    assert partition.parameters["numFiles"] == "1"
    assert partition.parameters["totalSize"] == str(sum(_data(_hdfs_files(location)).values()))
    assert _hdfs_ids(spark)(location) == HOUR_IDS[COMPACTED]
