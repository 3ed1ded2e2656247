"""The WebHDFS keytab login (:mod:`sqlext.io.webhdfs_kerberos`) against a real MIT KDC: once its ticket has
expired, MIT Kerberos gets a new one from the keytab (``KRB5_CLIENT_KTNAME``) when the next service ticket is
asked for, so a long-running Python worker needs no ``kinit``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sqlext.io import webhdfs_kerberos
from tests.support.kdc import Kdc

pytestmark = [pytest.mark.kerberos, pytest.mark.slow]

LIFE_S = 8


def _logins(kdc: Kdc, principal: str) -> int:
    """The KDC's AS requests (logins) of ``principal``, from its log."""
    return sum(1 for line in kdc.log_file.read_text().splitlines() if "AS_REQ" in line and f" {principal} for" in line)


def test_an_expired_keytab_login_is_renewed_from_the_keytab_for_the_next_service_ticket(
    kdc: Kdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gssapi

    principal, keytab = kdc.principal("webhdfs-short", max_life=f"{LIFE_S} seconds")
    service, _ = kdc.principal("HTTP/127.0.0.1")
    # The login points these at itself: put back after the test.
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-ticket'}")
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", "")
    conf = {"spark.kerberos.principal": principal, "spark.kerberos.keytab": str(keytab)}

    assert webhdfs_kerberos.login(conf) == principal
    first = _logins(kdc, principal)
    assert first >= 1
    time.sleep(LIFE_S + 2)  # past the ticket's end

    # What requests-kerberos does for each SPNEGO exchange: the default credentials, a context for HTTP@host.
    target = gssapi.Name("HTTP@127.0.0.1", gssapi.NameType.hostbased_service)
    token = gssapi.SecurityContext(name=target, usage="initiate").step()

    assert token
    assert _logins(kdc, principal) > first
    assert str(gssapi.Credentials(usage="initiate").name) == principal
    assert service == f"HTTP/127.0.0.1@{kdc.realm}"


def test_the_metastore_client_and_webhdfs_share_one_keytab_login(
    kdc: Kdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gssapi

    from sqlext.catalog.metastore import kerberos

    principal, keytab = kdc.principal("shared-login")
    kdc.principal("hive/127.0.0.1")
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-ticket'}")
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", "")
    conf = {"spark.kerberos.principal": principal, "spark.kerberos.keytab": str(keytab)}

    assert webhdfs_kerberos.login(conf) == principal
    logins = _logins(kdc, principal)
    auth = kerberos.MetastoreAuth(True, f"hive/_HOST@{kdc.realm}", principal, str(keytab))
    token = kerberos.GssapiSaslClient(auth, "127.0.0.1").start("GSSAPI")[2]

    assert token  # the metastore's service ticket, got with WebHDFS's login: no second AS request
    assert _logins(kdc, principal) == logins
    assert str(gssapi.Credentials(usage="initiate").name) == principal
