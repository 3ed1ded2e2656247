"""``hdfs://`` without libhdfs: the NameNode's WebHDFS REST API, through fsspec's ``WebHDFS`` (the ``webhdfs``
extra: ``pip install 'sqlext[webhdfs]'``), served to :mod:`sqlext.io.arrowfs` as a ``pyarrow.fs`` filesystem.

pyarrow's own HDFS client needs Hadoop's native ``libhdfs.so``, a JVM and Hadoop's jars in every process that
uses it; pip-installed pyspark ships none of them. WebHDFS needs only HTTP to the NameNode (and, for file
contents, to the DataNodes it redirects to). The NameNode's HTTP address comes from the Hadoop keys the
fallback is given (``spark.hadoop.<key>``):

- ``hdfs://<host>:<port>``: ``dfs.namenode.http-address`` (a wildcard host such as ``0.0.0.0`` stands for
  ``<host>``); without it, Hadoop's default port 9870 on ``<host>``;
- ``hdfs://<nameservice>`` of an HA pair: ``dfs.namenode.http-address.<nameservice>.<namenode>`` for each
  namenode of ``dfs.ha.namenodes.<nameservice>``, the first that is not a standby; a federated nameservice
  without HA: ``dfs.namenode.http-address.<nameservice>``.

The user is ``HADOOP_USER_NAME``, else the process's user (simple authentication). With
``hadoop.security.authentication=kerberos`` the user is the Kerberos login's, through SPNEGO
(:mod:`sqlext.io.webhdfs_kerberos`: the job's keytab, else the ticket cache).

Rename is the NameNode's ``RENAME`` (one metadata operation, atomic as with Hadoop's client): a file onto an
existing file is replaced with ``RENAME`` and ``renameoptions=OVERWRITE``, as Hadoop's ``FileContext.rename``
does; data is never copied.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from sqlext.errors import FileSystemError
from sqlext.io import webhdfs_kerberos

#: Hadoop's default NameNode HTTP port (``dfs.namenode.http-address``'s default, ``0.0.0.0:9870``).
DEFAULT_HTTP_PORT = 9870
HTTP_ADDRESS_KEY = "dfs.namenode.http-address"
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]"})
EXTRA_HINT = "pip install 'sqlext[webhdfs]'"


def available() -> bool:
    """Whether fsspec's WebHDFS client (and the ``requests`` it uses) can be imported."""
    try:
        import fsspec.implementations.webhdfs  # noqa: F401
    except ImportError:
        return False
    return True


def user() -> str:
    """The HDFS user: ``HADOOP_USER_NAME``, else the process's user."""
    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


def http_addresses(uri: str, conf: Mapping[str, str]) -> list[str]:
    """The ``host:port`` addresses of the NameNode(s) serving ``uri``, in the order to try them."""
    parsed = urlparse(uri)
    authority = parsed.netloc or _default_authority(conf)
    host = parsed.hostname or authority
    namenodes = [nn.strip() for nn in conf.get(f"dfs.ha.namenodes.{authority}", "").split(",") if nn.strip()]
    if namenodes:
        found = [conf[key] for nn in namenodes if (key := f"{HTTP_ADDRESS_KEY}.{authority}.{nn}") in conf]
        if not found:
            raise FileSystemError(
                f"No WebHDFS address for {uri}: set spark.hadoop.{HTTP_ADDRESS_KEY}.{authority}.<namenode> for "
                f"the namenodes of dfs.ha.namenodes.{authority} ({', '.join(namenodes)})."
            )
        return found
    address = conf.get(f"{HTTP_ADDRESS_KEY}.{authority}") or conf.get(HTTP_ADDRESS_KEY)
    if not address:
        return [f"{host}:{DEFAULT_HTTP_PORT}"]
    http_host, _, port = address.rpartition(":")
    return [f"{host if http_host in WILDCARD_HOSTS else http_host}:{port}"]


def _default_authority(conf: Mapping[str, str]) -> str:
    default = urlparse(conf.get("fs.defaultFS", ""))
    if default.scheme != "hdfs" or not default.netloc:
        raise FileSystemError("An hdfs:/// URI without a NameNode needs spark.hadoop.fs.defaultFS=hdfs://<namenode>.")
    return default.netloc


def filesystem(uri: str, conf: Mapping[str, str]) -> pafs.FileSystem:
    """A ``pyarrow.fs`` filesystem reaching ``uri``'s NameNode through WebHDFS (the first that is active)."""
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    kerberized = webhdfs_kerberos.enabled(conf)
    who = webhdfs_kerberos.login(conf) if kerberized else None
    errors = []
    for address in http_addresses(uri, conf):
        host, _, port = address.rpartition(":")
        client = _client_class()(
            host=host,
            port=int(port),
            user=None if kerberized else user(),
            kerberos=kerberized,
            skip_instance_cache=True,
        )
        client.refusal = lambda said, address=address: webhdfs_kerberos.refused(address, conf, who, said)
        try:
            client.info("/")
        except FileSystemError:
            raise  # refused, not unreachable: another NameNode would refuse the same login
        except Exception as exc:  # a standby NameNode (StandbyException), or nothing listening
            errors.append(f"{address}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            continue
        return PyFileSystem(FSSpecHandler(client))
    raise FileSystemError(
        f"Cannot reach {uri} through WebHDFS ({'; '.join(errors)}): set spark.hadoop.{HTTP_ADDRESS_KEY} (or its "
        "per-nameservice forms) to the NameNode's HTTP address, and make sure dfs.webhdfs.enabled is true."
    )


_CLIENT: Any = None


def _client_class() -> Any:
    """fsspec's ``WebHDFS`` with a rename that says when the NameNode refused it (fsspec ignores the answer)."""
    global _CLIENT
    if _CLIENT is not None:
        return _CLIENT
    from fsspec.implementations.webhdfs import WebHDFS

    class CheckedWebHDFS(WebHDFS):
        """WebHDFS whose ``mv`` is the NameNode's atomic ``RENAME``, checked, and whose listings carry each
        file's modification time (as ``mtime``, which pyarrow's ``FSSpecHandler`` reads)."""

        @staticmethod
        def _process_info(info: dict[str, Any]) -> dict[str, Any]:
            info = WebHDFS._process_info(info)
            info["mtime"] = datetime.fromtimestamp(info["modificationTime"] / 1000, tz=UTC)
            return info

        #: What a refused login (HTTP 401) is said as (set by :func:`filesystem`).
        refusal: Any = None

        def _call(self, op: str, method: str = "get", path: str | None = None, **kwargs: Any) -> Any:
            from requests import HTTPError

            try:
                return super()._call(op, method, path, **kwargs)
            except HTTPError as exc:
                if exc.response is None or exc.response.status_code != 401 or self.refusal is None:
                    raise
                said = " ".join((exc.response.reason or str(exc)).split())
                raise FileSystemError(self.refusal(said), option=webhdfs_kerberos.AUTHENTICATION) from None

        def mv(self, path1: str, path2: str, **kwargs: Any) -> None:
            if self.isdir(path2):
                # The NameNode moves a source *into* an existing directory; a POSIX rename (and sqlext) refuses.
                raise IsADirectoryError(f"Cannot rename {path1} to {path2}: the target is a directory")
            answer = self._call("RENAME", method="put", path=path1, destination=self._strip_protocol(path2))
            if answer.json().get("boolean"):
                return
            if self.isfile(path1) and self.isfile(path2):
                # A file onto a file: replaced in the same NameNode operation (rename2 with OVERWRITE).
                self._call(
                    "RENAME",
                    method="put",
                    path=path1,
                    destination=self._strip_protocol(path2),
                    renameoptions="OVERWRITE",
                )
                return
            if not self.exists(path1):
                raise FileNotFoundError(f"Cannot rename {path1} to {path2}: the source does not exist")
            raise OSError(f"Cannot rename {path1} to {path2}: the NameNode refused it")

    _CLIENT = CheckedWebHDFS
    return _CLIENT
