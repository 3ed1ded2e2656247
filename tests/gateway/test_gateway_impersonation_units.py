"""The gateway's doAs settings (sqlext.gateway.impersonation) and how an HDFS refusal reaches the client."""

from __future__ import annotations

import pytest

from sqlext.errors import ConfigError
from sqlext.gateway import impersonation
from sqlext.gateway.operations import OperationError
from sqlext.gateway.security import ENABLE_DOAS


def test_doas_is_off_unless_set_and_adds_nothing_then() -> None:
    assert not impersonation.enabled({})
    assert impersonation.spark_conf({ENABLE_DOAS: "false"}) == {}


def test_doas_serves_hdfs_through_the_impersonating_file_system_on_the_driver_s_class_path() -> None:
    conf = impersonation.spark_conf({ENABLE_DOAS: "TRUE", "spark.driver.extraClassPath": "/opt/extra.jar"})

    assert conf["spark.hadoop.fs.hdfs.impl"] == "io.sqlext.hdfs.ImpersonatingFileSystem"
    assert conf["spark.hadoop.fs.hdfs.impl.disable.cache"] == "true"
    first, jar = conf["spark.driver.extraClassPath"].split(":")
    assert first == "/opt/extra.jar" and jar.endswith("sqlext-hdfs-doas.jar")


def test_a_doas_value_other_than_true_or_false_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as refused:
        impersonation.enabled({ENABLE_DOAS: "yes"})

    assert "'spark.sqlext.gateway.enable.doAs': 'yes'. Expected true or false" in str(refused.value)


def test_an_hdfs_permission_refusal_is_said_first_to_the_client() -> None:
    spark_said = (
        "An error occurred while calling o1.sql: org.apache.hadoop.security.AccessControlException: Permission "
        'denied: user=bob, access=WRITE, inode="/warehouse/alice/t":alice:supergroup:drwxr-xr-x'
    )

    message = OperationError.of(RuntimeError(spark_said)).message

    assert message.startswith(
        "HDFS refused WRITE access on /warehouse/alice/t (owner alice, group supergroup, mode drwxr-xr-x) to user bob"
    )
    assert message.endswith(spark_said)
