"""A table's path at CREATE TABLE (:mod:`sqlext.catalog.locations`) when this process cannot reach its
filesystem: a kerberized WebHDFS without a Kerberos ticket, in a process with no JVM. The filesystem is a fake
whose every call makes the WebHDFS Kerberos login (:func:`sqlext.io.webhdfs_kerberos.login`) with an empty
ticket cache, so the error it wraps is the real one (the kerberized WebHDFS itself: tests/io)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlext.catalog import locations
from sqlext.errors import FileSystemError
from sqlext.io import webhdfs_kerberos
from sqlext.table import Column, TableDefinition, TableIdentifier

PATH = "webhdfs://namenode.example:9870/warehouse/orders"


class _NoTicketFileSystem:
    """A WebHDFS filesystem as a process without a ticket has it: each request needs the login first."""

    def __init__(self, uri: str) -> None:
        self.uri = uri

    def exists(self, path: str) -> bool:
        webhdfs_kerberos.login({})
        raise AssertionError("the login should have failed")


def test_no_kerberos_ticket_fails_create_table_naming_table_path_and_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("gssapi")
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-ticket'}")
    monkeypatch.setattr(locations, "FileSystem", _NoTicketFileSystem)
    table = TableDefinition(
        TableIdentifier("db", "orders"),
        (Column("id", "INT"),),
        {"connector": "filesystem", "path": PATH, "format": "json"},
    )
    with pytest.raises(FileSystemError) as refused:
        locations.missing_path(table)
    message = str(refused.value)
    assert message.startswith(f"Cannot create db.orders at {PATH}: this process cannot reach the path")
    assert "there is no Kerberos ticket for WebHDFS" in message
    assert "kinit as the user" in message and "spark.kerberos.keytab" in message
    assert message.endswith("Nothing was created.")
    assert refused.value.value == PATH
    assert refused.value.option == "spark.kerberos.keytab"
