"""Hadoop's security refusals said as what to set (sqlext.io.hadoop_security), on Hadoop's own words."""

from __future__ import annotations

import pytest

from sqlext.io import hadoop_security


@pytest.mark.parametrize(
    ("hadoop_said", "named"),
    [
        (
            "org.apache.hadoop.security.AccessControlException: SIMPLE authentication is not enabled.  "
            "Available:[TOKEN, KERBEROS]",
            "spark.hadoop.hadoop.security.authentication=kerberos",
        ),
        (
            "java.io.IOException: Failed on local exception | org.apache.hadoop.security.AccessControlException: "
            "Client cannot authenticate via:[TOKEN, KERBEROS]",
            "spark.kerberos.keytab",
        ),
        (
            "java.lang.IllegalArgumentException: Failed to specify server's Kerberos principal name",
            "spark.hadoop.dfs.namenode.kerberos.principal",
        ),
        (
            "GSSException: No valid credentials provided (Mechanism level: Server not found in Kerberos database (7))",
            "spark.hadoop.dfs.namenode.kerberos.principal",
        ),
    ],
)
def test_each_refusal_names_the_setting(hadoop_said: str, named: str) -> None:
    hint = hadoop_security.explain(hadoop_said)

    assert hint is not None and named in hint


def test_another_failure_has_no_hint() -> None:
    assert hadoop_security.explain("java.io.FileNotFoundException: File /x does not exist") is None
    assert hadoop_security.permission_denied("java.io.FileNotFoundException: File /x does not exist") is None


def test_a_permission_refusal_names_the_user_the_access_and_the_owner() -> None:
    said = (
        "org.apache.hadoop.security.AccessControlException: Permission denied: user=bob, access=WRITE, "
        'inode="/warehouse/alice":alice:supergroup:drwxr-xr-x'
    )

    assert hadoop_security.permission_denied(said) == (
        "HDFS refused WRITE access on /warehouse/alice (owner alice, group supergroup, mode drwxr-xr-x) to user "
        "bob: HDFS permissions hold per user; write where that user may, or have the owner grant access"
    )
