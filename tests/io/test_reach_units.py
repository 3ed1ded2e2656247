"""What a store client's error means (``sqlext.io.reach``), read from messages the clients really print: S3A of
Hadoop 3.5 (AWS SDK v2) as Hadoop's shell printed them against a loopback server answering 403 or nothing,
S3A of Hadoop 3.3 (SDK v1) as users reported them, and pyarrow 26's S3 client against the same server."""

from __future__ import annotations

import pytest

from sqlext.io.reach import unreachable_cause

TABLE = "s3a://bucket/table"
REFUSED = "the credentials were refused for the bucket 'bucket'"

#: A HEAD answered 403 without a body, through sqlext's Hadoop backend (``Cannot stat <uri>: <class>: <message>``).
S3A_V2_FORBIDDEN = (
    f"Cannot stat {TABLE}: java.nio.file.AccessDeniedException: {TABLE}: getFileStatus on {TABLE}: "
    "software.amazon.awssdk.services.s3.model.S3Exception: Forbidden (Service: S3, Status Code: 403, "
    "Request ID: R1):null"
)
#: The same, as Hadoop's shell prints it (the message alone: only the status says it was refused).
S3A_V2_FORBIDDEN_MESSAGE = (
    f"getFileStatus on {TABLE}: software.amazon.awssdk.services.s3.model.S3Exception: Forbidden (Service: S3, "
    "Status Code: 403, Request ID: R1):null"
)
S3A_V1_FORBIDDEN_MESSAGE = (
    f"getFileStatus on {TABLE}/f.txt: com.amazonaws.services.s3.model.AmazonS3Exception: Forbidden (Service: "
    "Amazon S3; Status Code: 403; Error Code: 403 Forbidden; Request ID: W9VA1Z6XN1EE1X8Y; S3 Extended Request "
    "ID: RkjsxxndJFWISI/CrmzgetG/RpTi/iJtbpbuMcB96Haw8kF6ldTXf4gEr/vg4SH41VooU8/UkA0=; Proxy: 127.0.0.1), S3 "
    "Extended Request ID: RkjsxxndJFWISI/CrmzgetG/RpTi/iJtbpbuMcB96Haw8kF6ldTXf4gEr/vg4SH41VooU8/UkA0=:403 Forbidden"
)
PYARROW_HEAD_FORBIDDEN = (
    "When getting information for key 'table' in bucket 'bucket': AWS Error ACCESS_DENIED during HeadObject "
    "operation: No response body."
)
PYARROW_LIST_BAD_KEY = (
    "When listing objects under key 'table/' in bucket 'bucket': AWS Error INVALID_ACCESS_KEY_ID during "
    "ListObjectsV2 operation: The AWS Access Key Id you provided does not exist in our records."
)
#: A 403 whose error code the SDK does not know: pyarrow gives the status alone.
PYARROW_LIST_UNKNOWN_403 = (
    "When listing objects under key 'table/' in bucket 'bucket': AWS Error UNKNOWN (HTTP status 403) during "
    "ListObjectsV2 operation: Unable to parse ExceptionName: AllAccessDisabled Message: All access to this "
    "object has been disabled"
)
#: Nothing listens at the endpoint; a stack whose line numbers include 403 comes with it.
S3A_CONNECTION_REFUSED_WITH_STACK = (
    f"Cannot stat {TABLE}: org.apache.hadoop.fs.s3a.AWSClientIOException: getFileStatus on {TABLE}: "
    "software.amazon.awssdk.core.exception.SdkClientException: Unable to execute HTTP request: Connect to "
    "127.0.0.1:9 [/127.0.0.1] failed: Connection refused (SDK Attempt Count: 2): Connection refused\n"
    "\tat org.apache.hadoop.fs.s3a.S3AUtils.translateException(S3AUtils.java:403)\n"
    "\tat org.apache.hadoop.fs.s3a.Invoker.once(Invoker.java:124)"
)


@pytest.mark.parametrize(
    "error",
    [
        S3A_V2_FORBIDDEN,
        S3A_V2_FORBIDDEN_MESSAGE,
        S3A_V1_FORBIDDEN_MESSAGE,
        PYARROW_HEAD_FORBIDDEN,
        PYARROW_LIST_BAD_KEY,
        PYARROW_LIST_UNKNOWN_403,
    ],
    ids=["s3a-v2", "s3a-v2-message", "s3a-v1-message", "pyarrow-head", "pyarrow-bad-key", "pyarrow-unknown-403"],
)
def test_a_refusal_is_told_by_its_status_or_error_code(error: str) -> None:
    cause = unreachable_cause(TABLE, error)
    assert cause is not None and cause.startswith(REFUSED), cause
    assert "spark.hadoop.fs.s3a.access.key" in cause


@pytest.mark.parametrize(
    "error",
    [
        S3A_CONNECTION_REFUSED_WITH_STACK,
        "Cannot stat s3a://bucket/table: java.io.IOException: read timed out (Request ID: 403A7F; Foo.java:403)",
        "getFileStatus on s3a://bucket/table: S3Exception: Slow Down (Service: S3, Status Code: 503, Request ID: 4031)",
    ],
    ids=["stack-line-403", "digits-in-ids", "status-503"],
)
def test_digits_403_elsewhere_in_an_error_do_not_make_it_a_refusal(error: str) -> None:
    assert unreachable_cause(TABLE, error) is None


def test_a_refusal_reported_by_the_metastore_names_its_keys() -> None:
    cause = unreachable_cause(TABLE, f"Got exception: {S3A_V2_FORBIDDEN_MESSAGE}", metastore=True)
    assert cause is not None and cause.startswith(REFUSED)
    assert "spark.sqlext.metastore.hadoop.fs.s3a.access.key" in cause
