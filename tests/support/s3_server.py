"""A real S3-compatible server for tests: moto's server (PyPI ``moto[server]``, a dev extra) on a free loopback
port, one per test session, in a process of its own that logs every request it answers.

Why moto rather than s3proxy: it implements what sqlext's commit path relies on as AWS does (multipart uploads
completed or aborted, ``CopyObject`` and ``UploadPartCopy``, ``ListObjectsV2`` with delimiters and pages,
conditional ``If-None-Match`` puts), starts in about a second without a JVM, and its WSGI app can be wrapped
so that every request is counted: the request log is how the tests measure what a commit costs on S3.

Run alone: ``python -m tests.support.s3_server --port 9000 --log requests.jsonl``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from tests.support.daemons import start_daemon, stop_daemon
from tests.support.waiting import free_port

ACCESS_KEY = "sqlext-test"
SECRET_KEY = "sqlext-test-secret"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Request:
    """One request the server answered, as the tests count them."""

    method: str
    bucket: str
    key: str
    query: dict[str, list[str]]
    copy_source: str | None
    body_bytes: int
    status: int

    @property
    def operation(self) -> str:
        """The S3 operation, by AWS's name (only those the tests count; the rest are ``Other``)."""
        upload = "uploadId" in self.query
        if self.method == "PUT" and self.copy_source:
            return "UploadPartCopy" if upload else "CopyObject"
        if self.method == "PUT":
            return "UploadPart" if upload else ("PutObject" if self.key else "CreateBucket")
        if self.method == "POST" and "uploads" in self.query:
            return "CreateMultipartUpload"
        if self.method == "POST" and upload:
            return "CompleteMultipartUpload"
        if self.method == "POST" and "delete" in self.query:
            return "DeleteObjects"
        if self.method == "DELETE":
            return "AbortMultipartUpload" if upload else "DeleteObject"
        if self.method == "HEAD":
            return "HeadObject"
        if self.method == "GET" and not self.key:
            return "ListObjects"
        return "GetObject" if self.method == "GET" else "Other"


@dataclass
class S3Server:
    """A running server: its endpoint, its process and its request log."""

    endpoint: str
    process: subprocess.Popen[bytes]
    log: Path

    def client(self) -> Any:
        """A boto3 client of the server (to create buckets and look at objects)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def objects(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Every object under ``prefix``: key -> size."""
        found: dict[str, int] = {}
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found.update({item["Key"]: item["Size"] for item in page.get("Contents", [])})
        return found

    def requests(self, since: int = 0) -> list[S3Request]:
        """The requests answered so far (from the ``since``-th on)."""
        lines = self.log.read_text().splitlines()[since:]
        return [S3Request(**{**json.loads(line)}) for line in lines]

    def mark(self) -> int:
        """A position in the request log, for :meth:`requests`' ``since``."""
        return len(self.log.read_text().splitlines())

    def hadoop_conf(self, prefix: str = "spark.hadoop.") -> dict[str, str]:
        """The ``fs.s3a.*`` keys that reach this server (with ``prefix``: Spark's ``spark.hadoop.``, or the
        embedded metastore's ``spark.sqlext.metastore.hadoop.``)."""
        keys = {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            # A test server on loopback: give up on an error within seconds, not after S3A's long retries.
            "fs.s3a.attempts.maximum": "2",
            "fs.s3a.retry.limit": "2",
        }
        return {prefix + key: value for key, value in keys.items()}


def start_server(log: Path) -> S3Server:
    """Start the server on a free loopback port and wait until it answers."""
    port = free_port()
    log.touch()
    command = [sys.executable, "-m", "tests.support.s3_server", "--port", str(port), "--log", str(log)]
    endpoint = f"http://127.0.0.1:{port}"
    answers = partial(_answers, port)
    process = start_daemon(command, log.with_suffix(".out"), answers, "the S3 server", 60, Path(__file__).parents[2])
    return S3Server(endpoint, process, log)


def stop_server(server: S3Server) -> None:
    """Stop the server process."""
    stop_daemon(server.process, grace_s=10)


def _answers(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _logging_app(app: Callable[..., Iterable[bytes]], log: Path) -> Callable[..., Iterable[bytes]]:
    """Wrap moto's WSGI app: one JSON line per request answered."""
    lock = threading.Lock()
    out = log.open("a", buffering=1)

    def logged(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        status: list[int] = []

        def record_status(code: str, headers: Any, *rest: Any) -> Any:
            status.append(int(code.split()[0]))
            return start_response(code, headers, *rest)

        body = app(environ, record_status)
        yield from body
        path = unquote(environ.get("PATH_INFO", ""))
        bucket, _, key = path.lstrip("/").partition("/")
        # The AWS SDK streams signed bodies in chunks: the decoded length is the object's bytes.
        length = environ.get("HTTP_X_AMZ_DECODED_CONTENT_LENGTH") or environ.get("CONTENT_LENGTH") or 0
        line = {
            "method": environ["REQUEST_METHOD"],
            "bucket": bucket,
            "key": key,
            "query": parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True),
            "copy_source": environ.get("HTTP_X_AMZ_COPY_SOURCE"),
            "body_bytes": int(length),
            "status": status[0] if status else 0,
        }
        with lock:
            out.write(json.dumps(line) + "\n")

    return logged


def main(argv: list[str] | None = None) -> int:
    import argparse

    from moto.server import create_backend_app
    from werkzeug.serving import make_server

    parser = argparse.ArgumentParser(prog="python -m tests.support.s3_server")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--log", type=Path, required=True, help="the request log (JSON lines)")
    args = parser.parse_args(argv)
    app = _logging_app(create_backend_app("s3"), args.log)
    make_server("127.0.0.1", args.port, app, threaded=True).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
