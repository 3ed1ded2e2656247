"""S3A's *magic* committer as sqlext uses it on ``s3a://``: each data file of a batch written as a pending
multipart upload to its final key, and completed by sqlext once its commit log records the batch
(docs/object-stores.md, "A commit without copies on S3").

- the write: Spark's default commit protocol with ``BindingParquetOutputCommitter`` (Spark's
  ``spark-hadoop-cloud`` jar) as its output committer, which binds to the committer factory of the
  ``s3a`` scheme, here sqlext's (``SqlextMagicCommitterFactory.java``): S3A's ``MagicS3GuardCommitter`` whose
  job commit completes nothing (``SqlextMagicCommitter.java``). All of it is set by write options
  (:func:`write_options`), so other writes of the session keep their committers;
- the manifests: each committed task leaves ``<table>/__magic_job-<job>/.../<task>.pendingset``, a JSON list of
  its files' uploads (:func:`pending_uploads`); sqlext records them in the batch's plan;
- the publish: :class:`Uploads` completes (or aborts) an upload through S3A's own ``CommitOperations``.

The two Java classes are built with the package (``sqlext-s3a-committer.jar``, :mod:`sqlext.javac`; against stubs of
S3A's classes, as hadoop-aws is on the class path only at run time) and loaded into the running JVM: on the driver
through the Hadoop configuration's class loader (Hadoop resolves committer factories there), on executors as a jar
added to the session (``addJar``).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

from sqlext import javac
from sqlext.errors import FileSystemError
from sqlext.io.fs import FileSystem, join
from sqlext.runtime import jvm_classes

log = logging.getLogger("sqlext.commit")

JAR = "sqlext-s3a-committer.jar"
FACTORY_CLASS = "io.sqlext.s3a.SqlextMagicCommitterFactory"
#: Spark's committer that binds a Parquet (or any file) write to the scheme's committer factory.
BINDING_COMMITTER = "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter"
MAGIC_COMMITTER = "org.apache.hadoop.fs.s3a.commit.magic.MagicS3GuardCommitter"
#: The nearest version of ``spark-hadoop-cloud`` Maven Central serves for pyspark 4.3 (none for 4.2/4.3).
HADOOP_CLOUD_ARTIFACT = "org.apache.spark:spark-hadoop-cloud_2.13:4.1.1"
#: The prefix of a job's manifest dir in the table (S3A's ``MagicCommitPaths``).
MAGIC_PREFIX = "__magic_job-"
#: What an upload's record in the plan keeps of S3A's ``SinglePendingCommit`` (its JSON names): enough to
#: complete or abort it. Its I/O statistics and extra data are left out.
COMMIT_FIELDS = (
    "version",
    "filename",
    "uri",
    "uploadId",
    "bucket",
    "destinationKey",
    "created",
    "saved",
    "date",
    "jobId",
    "taskId",
    "text",
    "etags",
    "length",
)

_lock = threading.Lock()
_installed: dict[tuple[int, str], bool] = {}


def job_id(query: str, batch: int) -> str:
    """The magic committer's job UUID of a batch: the same for every attempt, so a replay finds the manifests
    of the attempt before it."""
    return f"sqlext-{re.sub(r'[^A-Za-z0-9_-]', '_', query)}-{batch}"


def magic_dir(table: str, query: str, batch: int) -> str:
    """Where the batch's task manifests go (and the magic paths its tasks write through)."""
    return join(table, MAGIC_PREFIX + job_id(query, batch))


def write_options(query: str, batch: int) -> dict[str, str]:
    """The write options of a batch written with sqlext's magic committer (Spark passes write options into
    the job's Hadoop configuration: only this write uses them)."""
    return {
        "mapreduce.outputcommitter.factory.scheme.s3a": FACTORY_CLASS,
        # Spark's protocol instantiates this committer (a FileOutputCommitter, so it uses its work path);
        # Parquet writes name theirs under the second key.
        "spark.sql.sources.outputCommitterClass": BINDING_COMMITTER,
        "spark.sql.parquet.output.committer.class": BINDING_COMMITTER,
        "fs.s3a.committer.magic.enabled": "true",
        "fs.s3a.committer.uuid": job_id(query, batch),
        "fs.s3a.committer.generate.uuid": "false",
        # A failed job aborts its own manifests' uploads, never the others pending under the table (the
        # previous batch's, planned and not yet published).
        "fs.s3a.committer.abort.pending.uploads": "false",
    }


def available(spark_context: Any) -> bool:
    """Whether batches can be written with the magic committer in this JVM: S3A's committer and Spark's
    binding committer on the class path (logged once when not), sqlext's classes loaded."""
    conf = spark_context._jsc.hadoopConfiguration()
    with _lock:
        key = jvm_classes.context_key(spark_context)
        if key not in _installed:
            _installed[key] = _install(spark_context, conf)
        return _installed[key]


def _install(spark_context: Any, conf: Any) -> bool:
    missing = [name for name in (MAGIC_COMMITTER, BINDING_COMMITTER) if conf.getClassByNameOrNull(name) is None]
    if missing:
        log.warning(
            "s3a:// tables are committed by copying each file (no %s on the class path); for a commit that "
            "writes each byte once, add org.apache.hadoop:hadoop-aws and %s to the driver's class path "
            "(spark.jars.packages or spark.driver.extraClassPath)",
            " or ".join(missing),
            HADOOP_CLOUD_ARTIFACT,
        )
        return False
    if conf.getClassByNameOrNull(FACTORY_CLASS) is not None:
        return True  # put on the class path by the user
    try:
        jar = javac.packaged_jar(JAR)
    except javac.MissingJarError as exc:
        log.warning("s3a:// tables are committed by copying each file: %s", exc)
        return False
    # The loader of every Hadoop configuration the session derives from this one (they copy it).
    conf.setClassLoader(jvm_classes.added_jar(spark_context, jar, conf.getClassLoader()))
    log.info("s3a:// tables: each file is written once, as a multipart upload completed at commit (%s)", jar)
    return True


def pending_uploads(fs: FileSystem, directory: str) -> list[dict[str, Any]]:
    """The uploads of the tasks that committed in the job whose manifest dir is ``directory``, each as its
    ``SinglePendingCommit`` JSON (:data:`COMMIT_FIELDS`)."""
    return [
        _slim(commit)
        for status in fs.list_files(directory)
        if status.relative.endswith(".pendingset")
        for commit in fs.read_json(status.uri).get("commits", [])
    ]


def abandoned_uploads(fs: FileSystem, directory: str) -> list[dict[str, Any]]:
    """Every upload the manifests in ``directory`` name: the committed tasks' and those of tasks that wrote
    their files but did not commit (``.pending``)."""
    if not fs.is_dir(directory):
        return []
    found = pending_uploads(fs, directory)
    found += [_slim(fs.read_json(s.uri)) for s in fs.list_files(directory) if s.relative.endswith(".pending")]
    return found


def _slim(commit: dict[str, Any]) -> dict[str, Any]:
    return {key: commit[key] for key in COMMIT_FIELDS if key in commit}


def final_uri(table: str, commit: dict[str, Any]) -> str:
    """The ``s3a://`` URI an upload completes into."""
    scheme = table.split("://", 1)[0]
    return f"{scheme}://{commit['bucket']}/{commit['destinationKey']}"


class Uploads:
    """Completes and aborts the pending uploads of one ``s3a://`` table through S3A's ``CommitOperations``
    (on the driver's JVM)."""

    def __init__(self, table: str) -> None:
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        if context is None or context._jvm is None:
            raise FileSystemError(f"The uploads of {table} are completed on Spark's driver: no SparkContext here")
        jvm = context._jvm
        self._table = jvm.org.apache.hadoop.fs.Path(table)
        fs = self._table.getFileSystem(context._jsc.hadoopConfiguration())
        commit = jvm.org.apache.hadoop.fs.s3a.commit
        self._operations = commit.impl.CommitOperations(fs)
        self._serializer = commit.files.SinglePendingCommit.serializer()

    def in_progress(self) -> list[dict[str, str]]:
        """The multipart uploads under the table neither completed nor aborted, each as its ``destinationKey``
        and ``uploadId`` (one listing of the bucket's uploads under the table's prefix)."""
        found = self._operations.listPendingUploadsUnderPath(self._table)
        return [{"destinationKey": str(upload.key()), "uploadId": str(upload.uploadId())} for upload in found]

    def complete(self, commit: dict[str, Any]) -> None:
        """Complete the upload: its object appears, whole, at its final key."""
        self._operations.commitOrFail(self._serializer.fromJson(json.dumps(commit)))

    def abort(self, commit: dict[str, Any]) -> None:
        """Abort the upload (nothing appears; an upload already gone is no error)."""
        try:
            self._operations.abortMultipartCommit(commit["destinationKey"], commit["uploadId"])
        except Exception as exc:  # py4j's error: an upload aborted or expired before
            log.info("upload %s of %s was not aborted: %s", commit["uploadId"], commit["destinationKey"], exc)
