"""A table's storage checked before an insert writes anything: a bucket that does not exist, credentials that are
missing or refused, or a filesystem whose jars are not on the class path fail at once, naming the path and the
keys to set, rather than as a Spark job's stack trace once the first batch runs.
"""

from __future__ import annotations

from urllib.parse import urlparse

from sqlext.errors import FileSystemError
from sqlext.io.fs import FileSystem

#: (markers in the store client's error, what it means) for S3A; ``{bucket}`` and ``{scheme}`` are filled in.
_S3A_CAUSES = (
    (
        ("UnknownStoreException", "NoSuchBucket"),
        "the bucket '{bucket}' does not exist at the endpoint (spark.hadoop.fs.s3a.endpoint, or "
        "spark.hadoop.fs.s3a.bucket.{bucket}.endpoint)",
    ),
    (
        ("NoAuthWithAWSException", "No AWS Credentials", "No AWS credentials"),
        "no credentials for the bucket '{bucket}': set spark.hadoop.fs.s3a.access.key and "
        "spark.hadoop.fs.s3a.secret.key (or spark.hadoop.fs.s3a.bucket.{bucket}.access.key / .secret.key), or "
        "a provider in spark.hadoop.fs.s3a.aws.credentials.provider",
    ),
    (
        ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403"),
        "the credentials were refused for the bucket '{bucket}': check spark.hadoop.fs.s3a.access.key and "
        "spark.hadoop.fs.s3a.secret.key (or spark.hadoop.fs.s3a.bucket.{bucket}.access.key / .secret.key)",
    ),
)
_MISSING_JARS = (
    ("ClassNotFoundException", "No FileSystem for scheme"),
    "no filesystem for '{scheme}://' on the class path: add its jars (for s3a://: hadoop-aws and the AWS SDK, "
    "see docs/object-stores.md) with spark.jars, spark.jars.packages or spark.driver.extraClassPath",
)


def check_reachable(fs: FileSystem, uri: str) -> None:
    """Raise :class:`FileSystemError` naming ``uri`` and the keys to set when its storage cannot be reached;
    return quietly otherwise (whether ``uri`` exists or not)."""
    try:
        fs.exists(uri)
    except OSError as exc:
        raise FileSystemError(
            f"Cannot reach {uri}: {_cause(uri, str(exc))}. Nothing was written. ({exc})", value=uri
        ) from exc


def _cause(uri: str, error: str) -> str:
    parsed = urlparse(uri)
    fields = {"bucket": parsed.netloc, "scheme": parsed.scheme}
    causes = [_MISSING_JARS, *(_S3A_CAUSES if parsed.scheme == "s3a" else ())]
    for markers, meaning in causes:
        if any(marker in error for marker in markers):
            return meaning.format(**fields)
    return "the filesystem refused the first request"
