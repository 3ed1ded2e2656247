"""A table's storage checked before an insert writes anything: a bucket that does not exist, credentials that are
missing or refused, or a filesystem whose jars are not on the class path fail at once, naming the path and the
keys to set, rather than as a Spark job's stack trace once the first batch runs.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

from sqlext.errors import FileSystemError
from sqlext.io.fs import FileSystem

#: A refusal's HTTP status as the store clients print it: the AWS SDK ("Status Code: 403" in v2's ``(Service: S3,
#: Status Code: 403, ...)`` and v1's ``(Service: Amazon S3; Status Code: 403; ...)``), S3A's error code of a HEAD
#: (``...:403 Forbidden``) and pyarrow (``AWS Error UNKNOWN (HTTP status 403)``, for an error code the SDK does not
#: know); never bare digits, which may be a line of a Java stack (``S3AUtils.java:403``) or part of an id.
_FORBIDDEN_STATUS = r"Status Code: 403\b|\b403 Forbidden\b|HTTP status 403\b"

#: S3's error codes of a refusal and pyarrow's names of them (``AWS Error ACCESS_DENIED``); ``AccessDenied`` is also
#: in S3A's ``java.nio.file.AccessDeniedException``.
_REFUSED_CODES = (
    "AccessDenied",
    "ACCESS_DENIED",
    "InvalidAccessKeyId",
    "INVALID_ACCESS_KEY_ID",
    "SignatureDoesNotMatch",
    "SIGNATURE_DOES_NOT_MATCH",
)


def _markers(*words: str) -> re.Pattern[str]:
    """A pattern matching any of ``words`` as written (error codes and exception names)."""
    return re.compile("|".join(re.escape(word) for word in words))


#: (what to look for in the store client's error, what it means) for S3A; ``{bucket}``, ``{scheme}`` and ``{keys}``
#: (where the Hadoop keys are set: ``spark.hadoop.`` for Spark) are filled in.
_S3A_CAUSES = (
    (
        _markers("UnknownStoreException", "NoSuchBucket"),
        "the bucket '{bucket}' does not exist at the endpoint (check the bucket's name, and "
        "{keys}fs.s3a.endpoint or {keys}fs.s3a.bucket.{bucket}.endpoint)",
    ),
    (
        _markers("NoAuthWithAWSException", "No AWS Credentials", "No AWS credentials"),
        "no credentials for the bucket '{bucket}': set {keys}fs.s3a.access.key and "
        "{keys}fs.s3a.secret.key (or {keys}fs.s3a.bucket.{bucket}.access.key / .secret.key), or "
        "a provider in {keys}fs.s3a.aws.credentials.provider",
    ),
    (
        re.compile(f"{_markers(*_REFUSED_CODES).pattern}|{_FORBIDDEN_STATUS}"),
        "the credentials were refused for the bucket '{bucket}': check {keys}fs.s3a.access.key and "
        "{keys}fs.s3a.secret.key (or {keys}fs.s3a.bucket.{bucket}.access.key / .secret.key)",
    ),
)
_MISSING_JARS = (
    _markers("ClassNotFoundException", "No FileSystem for scheme"),
    "no filesystem for '{scheme}://' on the class path: add its jars (for s3a://: hadoop-aws and the AWS SDK, "
    "see docs/object-stores.md) with spark.jars, spark.jars.packages or spark.driver.extraClassPath",
)
_METASTORE_MISSING_JARS = (
    _MISSING_JARS[0],
    "no filesystem for '{scheme}://' on the metastore's class path: add its jars (for s3a://: hadoop-aws and "
    "the AWS SDK, see docs/object-stores.md) with spark.sqlext.metastore.classpath (an external metastore: to "
    "its own class path)",
)
#: Where the embedded metastore takes Hadoop keys (an external one: its core-site.xml).
METASTORE_KEYS = "spark.sqlext.metastore.hadoop."


def check_reachable(fs: FileSystem, uri: str) -> None:
    """Raise :class:`FileSystemError` naming ``uri`` and the keys to set when its storage cannot be reached;
    return quietly otherwise (whether ``uri`` exists or not)."""
    try:
        fs.exists(uri)
    except OSError as exc:
        cause = unreachable_cause(uri, str(exc)) or "the filesystem refused the first request"
        raise FileSystemError(f"Cannot reach {uri}: {cause}. Nothing was written. ({exc})", value=uri) from exc


def unreachable_cause(uri: str, error: str, metastore: bool = False) -> str | None:
    """What a store client's ``error`` about ``uri`` means and what to set or check, naming Spark's keys
    (``metastore``: the embedded metastore's); None when the error is none of the known causes."""
    parsed = urlparse(uri)
    keys = METASTORE_KEYS if metastore else "spark.hadoop."
    fields = {"bucket": parsed.netloc, "scheme": parsed.scheme, "keys": keys}
    jars = _METASTORE_MISSING_JARS if metastore else _MISSING_JARS
    causes = [jars, *(_S3A_CAUSES if parsed.scheme == "s3a" else ())]
    for pattern, meaning in causes:
        if pattern.search(error):
            return meaning.format(**fields)
    return None
