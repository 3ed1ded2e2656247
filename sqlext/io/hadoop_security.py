"""Hadoop's security refusals said as what to set: a kerberized HDFS reached without Kerberos, without a ticket,
without the NameNode's principal, and HDFS's permission checks.

Hadoop's client says these things in its own terms ("SIMPLE authentication is not enabled. Available:[TOKEN,
KERBEROS]", "Client cannot authenticate via:[TOKEN, KERBEROS]", "Failed to specify server's Kerberos principal
name"), deep in a py4j stack; :func:`explain` names the setting that is missing, and :func:`permission_denied`
tells a refused write from a failure.
"""

from __future__ import annotations

import re

#: Hadoop's words (in any exception of the chain) -> what is wrong and what to set.
_HINTS = (
    (
        "SIMPLE authentication is not enabled",
        "the HDFS cluster takes Kerberos logins only and this job's Hadoop login is not Kerberos: set "
        "spark.hadoop.hadoop.security.authentication=kerberos and spark.hadoop.dfs.namenode.kerberos.principal "
        "(the NameNode's principal, e.g. nn/_HOST@YOUR.REALM), and log in with spark.kerberos.principal and "
        "spark.kerberos.keytab (or kinit)",
    ),
    (
        "Client cannot authenticate via",
        "there is no Kerberos ticket for the kerberized HDFS: kinit as the user (the ticket cache KRB5CCNAME), or "
        "set spark.kerberos.principal and spark.kerberos.keytab",
    ),
    (
        "Failed to find any Kerberos tgt",
        "there is no Kerberos ticket for the kerberized HDFS: kinit as the user (the ticket cache KRB5CCNAME), or "
        "set spark.kerberos.principal and spark.kerberos.keytab",
    ),
    (
        "Failed to specify server's Kerberos principal name",
        "the NameNode's Kerberos principal is not set: set spark.hadoop.dfs.namenode.kerberos.principal (Hadoop's "
        "dfs.namenode.kerberos.principal, e.g. nn/_HOST@YOUR.REALM, as in the cluster's hdfs-site.xml)",
    ),
    (
        "Server not found in Kerberos database",
        "the NameNode's principal is not known to the KDC: set spark.hadoop.dfs.namenode.kerberos.principal to the "
        "principal the NameNode runs as (the cluster's hdfs-site.xml)",
    ),
)
_PERMISSION = re.compile(
    r"Permission denied: user=(?P<user>[^,]+), access=(?P<access>\w+), inode=\"(?P<inode>[^\"]+)\""
    r"(?::(?P<owner>[^:\s]+):(?P<group>[^:\s]+):(?P<mode>[-\w]+))?"
)


def explain(message: str) -> str | None:
    """What to set for a Hadoop security failure whose text is ``message``; None for another failure."""
    return next((hint for words, hint in _HINTS if words in message), None)


def permission_denied(message: str) -> str | None:
    """What HDFS's permission refusal in ``message`` says (who, what access, on what, owned by whom); None for
    another failure."""
    found = _PERMISSION.search(message)
    if found is None:
        return None
    owned = f" (owner {found['owner']}, group {found['group']}, mode {found['mode']})" if found["owner"] else ""
    return (
        f"HDFS refused {found['access']} access on {found['inode']}{owned} to user {found['user']}: HDFS "
        "permissions hold per user; write where that user may, or have the owner grant access"
    )
