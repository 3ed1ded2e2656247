"""The gateway's impersonation, as HiveServer2's ``hive.server2.enable.doAs``: with
``spark.sqlext.gateway.enable.doAs=true`` a signed-in user's statements act on HDFS as that user, so the files
they write are that user's and HDFS's permissions hold per user.

The gateway's Spark session is one JVM for every user; what acts as a user is its HDFS client. ``hdfs://`` is
served there by ``ImpersonatingFileSystem`` (``ImpersonatingFileSystem.java``, in ``sqlext-hdfs-doas.jar``): for
each call it takes the user from the Spark local property :data:`USER_PROPERTY`, which a session's worker thread
sets before each statement (Spark hands it to the statement's jobs, their tasks, and the streaming query threads
they start), and acts as a Hadoop proxy user of the gateway's login (``UserGroupInformation.createProxyUser``).
The NameNode must allow it: ``hadoop.proxyuser.<gateway user>.hosts`` and ``.groups`` in its ``core-site.xml``;
a NameNode that does not refuses each call ("User: sqlext is not allowed to impersonate alice").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlext import javac
from sqlext.config import conf_flag
from sqlext.gateway.security import ENABLE_DOAS
from sqlext.io.hadoopfs import DOAS_USER_PROPERTY

JAR = "sqlext-hdfs-doas.jar"
FILE_SYSTEM_CLASS = "io.sqlext.hdfs.ImpersonatingFileSystem"
#: The Spark local property naming the user a thread's and its jobs' HDFS calls act as.
USER_PROPERTY = DOAS_USER_PROPERTY
EXTRA_CLASS_PATH = "spark.driver.extraClassPath"


def enabled(values: Mapping[str, str]) -> bool:
    """Whether ``spark.sqlext.gateway.enable.doAs`` is on (``true``/``false``, default false)."""
    return conf_flag(values, ENABLE_DOAS)


def spark_conf(values: Mapping[str, str]) -> dict[str, str]:
    """The Spark conf that serves ``hdfs://`` as the caller's user (the jar on the driver's class path, before
    the JVM starts); empty when impersonation is off."""
    if not enabled(values):
        return {}
    jar = str(javac.packaged_jar(JAR))
    class_path = values.get(EXTRA_CLASS_PATH, "")
    return {
        EXTRA_CLASS_PATH: f"{class_path}:{jar}" if class_path else jar,
        "spark.hadoop.fs.hdfs.impl": FILE_SYSTEM_CLASS,
        # Hadoop caches a FileSystem per login: one user's would be handed to the next. The wrapper is cheap and
        # keeps one HDFS client per user itself.
        "spark.hadoop.fs.hdfs.impl.disable.cache": "true",
    }


def act_as(spark_context: Any, user: str | None) -> None:
    """Make this thread's HDFS calls, and those of the jobs it starts, act as ``user`` (None: the gateway's)."""
    spark_context.setLocalProperty(USER_PROPERTY, user)
