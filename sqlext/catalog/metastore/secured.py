"""The server side of a kerberized embedded metastore (``sqlext metastore start --kerberos-principal ...
--kerberos-keytab ...``): the Hive, Hadoop and JVM settings that make it take SASL GSSAPI logins only, and the
login it checks itself with."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from sqlext.catalog.metastore import kerberos
from sqlext.errors import MetastoreError


@dataclass(frozen=True)
class ServerKerberos:
    """The metastore's principal (``_HOST`` allowed: its host name) and keytab."""

    principal: str
    keytab: Path

    def check(self) -> None:
        if not self.keytab.is_file():
            raise MetastoreError(
                f"The metastore's keytab {self.keytab} does not exist.",
                option=kerberos.SERVER_KEYTAB,
                value=str(self.keytab),
            )

    def hive_properties(self) -> tuple[tuple[str, str], ...]:
        """hive-site.xml: Hive 2.3's names, and the standalone metastore's (3.1, 4)."""
        keytab = str(self.keytab.resolve())
        return (
            ("hive.metastore.sasl.enabled", "true"),
            ("hive.metastore.kerberos.principal", self.principal),
            ("hive.metastore.kerberos.keytab.file", keytab),
            ("metastore.sasl.enabled", "true"),
            ("metastore.kerberos.principal", self.principal),
            ("metastore.kerberos.keytab.file", keytab),
            *self.hadoop_properties(),
        )

    @staticmethod
    def hadoop_properties() -> tuple[tuple[str, str], ...]:
        """core-site.xml: Hadoop's login (UserGroupInformation) is Kerberos."""
        return (("hadoop.security.authentication", "kerberos"),)

    @staticmethod
    def jvm_options() -> list[str]:
        """Java's Kerberos reads no KRB5_CONFIG: the krb5.conf MIT's tools use is handed to it. Hadoop 3.1's
        (Hive 3.1's) KerberosUtil reads the default realm from ``sun.security.krb5.Config`` by reflection."""
        conf = os.environ.get("KRB5_CONFIG")
        exports = ["--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED"]
        return exports + ([f"-Djava.security.krb5.conf={conf}"] if conf else [])

    def own_auth(self) -> kerberos.MetastoreAuth:
        """A client login as the metastore itself (its keytab): how ``start`` and ``status`` ask whether it
        answers. ``_HOST`` is this machine's name, as the server puts it (Hadoop's SecurityUtil)."""
        own = self.principal.replace("_HOST", socket.getfqdn().lower())
        return kerberos.MetastoreAuth(True, own, own, str(self.keytab))
