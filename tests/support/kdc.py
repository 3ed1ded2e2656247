"""A real Kerberos KDC on loopback for the tests: MIT Kerberos's ``krb5kdc`` (Debian's ``krb5-kdc``), a realm of
its own in a temporary dir, its own ``krb5.conf`` (``KRB5_CONFIG``, and ``java.security.krb5.conf`` for JVMs).

The session fixture ``kdc`` starts one for the session (skipping, with the reason, where the packages are not
installed: ``.ci/system-deps.sh`` installs them); :meth:`Kdc.principal` creates a principal with a keytab, and a
short ``max_life`` gives its tickets that lifetime (the ticket-renewal tests). ``KRB5_CONFIG`` is set for the
whole session, so every Kerberos client of the test process (python-gssapi) finds this realm; each principal's
credential cache is a file of its own, never the user's.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sqlext.catalog.metastore import launcher
from sqlext.catalog.metastore.launcher import MetastoreSettings
from tests.support.waiting import free_port, wait_for

REALM = "SQLEXT.TEST"
MASTER_PASSWORD = "sqlext-kdc-master"
#: The longest ticket of the realm; a principal's own max_life shortens its tickets.
REALM_MAX_LIFE = "10h"
_PROGRAMS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")


def _program(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name) if p.is_file()), None
    )


def missing_programs() -> list[str]:
    """The MIT Kerberos programs the KDC needs that are not installed."""
    return [name for name in _PROGRAMS if _program(name) is None]


@dataclass
class Kdc:
    """A running KDC: its realm, port, config files and the principals made so far."""

    directory: Path
    port: int
    realm: str = REALM
    process: subprocess.Popen[bytes] | None = None
    keytabs: dict[str, Path] = field(default_factory=dict)

    @property
    def krb5_conf(self) -> Path:
        return self.directory / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        return self.directory / "kdc.conf"

    @property
    def log_file(self) -> Path:
        return self.directory / "kdc.log"

    @property
    def env(self) -> dict[str, str]:
        """The environment the MIT tools run with: this realm's config files."""
        return {**os.environ, "KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def java_options(self) -> list[str]:
        """JVM options pointing Java's Kerberos at this realm (Java reads no KRB5_CONFIG)."""
        return [f"-Djava.security.krb5.conf={self.krb5_conf}"]

    def write_config(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        # dns_canonicalize_hostname/rdns off: a service principal names the host as given (127.0.0.1), in C and
        # in Java (17 honours the setting); udp_preference_limit=1: TCP only, the port the KDC's readiness is
        # waited on.
        self.krb5_conf.write_text(
            f"""[libdefaults]
  default_realm = {self.realm}
  dns_lookup_realm = false
  dns_lookup_kdc = false
  dns_canonicalize_hostname = false
  rdns = false
  ignore_acceptor_hostname = true
  udp_preference_limit = 1
  forwardable = false
  default_ccache_name = FILE:{self.directory}/ccache-default

[realms]
  {self.realm} = {{
    kdc = 127.0.0.1:{self.port}
  }}

[domain_realm]
  127.0.0.1 = {self.realm}
  localhost = {self.realm}
"""
        )
        self.kdc_conf.write_text(
            f"""[kdcdefaults]
  kdc_listen = 127.0.0.1:{self.port}
  kdc_tcp_listen = 127.0.0.1:{self.port}

[realms]
  {self.realm} = {{
    database_name = {self.directory}/principal
    key_stash_file = {self.directory}/stash
    acl_file = {self.directory}/kadm5.acl
    max_life = {REALM_MAX_LIFE}
    max_renewable_life = 0
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }}

[logging]
  kdc = FILE:{self.log_file}
"""
        )
        (self.directory / "kadm5.acl").write_text("")

    def start(self) -> None:
        self.write_config()
        self._run("kdb5_util", "create", "-s", "-r", self.realm, "-P", MASTER_PASSWORD)
        krb5kdc = _program("krb5kdc")
        assert krb5kdc is not None
        # -n: in the foreground (no fork), so the fixture owns and stops exactly this process.
        self.process = subprocess.Popen(
            [krb5kdc, "-n", "-r", self.realm], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        wait_for(self._answering, timeout_s=30, what=f"the KDC on 127.0.0.1:{self.port}")

    def _answering(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            log = self.log_file.read_text() if self.log_file.exists() else ""
            pytest.fail(f"krb5kdc exited with {self.process.returncode}: {log[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def _run(self, program: str, *args: str) -> str:
        path = _program(program)
        assert path is not None
        done = subprocess.run([path, *args], env=self.env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.fail(f"{program} {' '.join(args)} failed ({done.returncode}): {done.stderr or done.stdout}")
        return done.stdout

    def kadmin(self, query: str) -> str:
        """Run one ``kadmin.local`` query on this realm's database."""
        return self._run("kadmin.local", "-r", self.realm, "-q", query)

    def principal(self, name: str, max_life: str | None = None) -> tuple[str, Path]:
        """Create ``name`` (``user`` or ``service/host``; the realm is added) with a random key, unless it exists;
        return its full name and a keytab holding its key. ``max_life`` (kadmin's form: "90 seconds",
        "2 minutes") is the longest ticket it gets."""
        full = f"{name}@{self.realm}"
        if full in self.keytabs:
            return full, self.keytabs[full]
        life = f' -maxlife "{max_life}"' if max_life else ""
        self.kadmin(f"addprinc -randkey{life} {full}")
        keytab = self.directory / f"{name.replace('/', '_')}.keytab"
        self.kadmin(f"ktadd -k {keytab} {full}")
        self.keytabs[full] = keytab
        return full, keytab

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> Path:
        """Get a TGT for ``principal`` from its keytab into the credential cache file ``ccache``."""
        self._run("kinit", "-k", "-t", str(keytab), "-c", f"FILE:{ccache}", principal)
        return ccache


@pytest.fixture(scope="session")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kdc]:
    """A KDC for realm SQLEXT.TEST on a free loopback port, with KRB5_CONFIG pointing at its krb5.conf for the
    session. Skips when MIT Kerberos is not installed (``.ci/system-deps.sh`` installs it), or python-gssapi."""
    missing = missing_programs()
    if missing:
        pytest.skip(
            f"MIT Kerberos is not installed (missing {', '.join(missing)}): "
            "apt-get install krb5-kdc krb5-admin-server krb5-user (.ci/system-deps.sh)"
        )
    pytest.importorskip("gssapi", reason="python-gssapi (the kerberos extra) is not installed: pip install -e '.[dev]'")
    server = Kdc(tmp_path_factory.mktemp("kdc"), free_port())
    server.start()
    before = os.environ.get("KRB5_CONFIG")
    os.environ["KRB5_CONFIG"] = str(server.krb5_conf)
    try:
        yield server
    finally:
        server.stop()
        if before is None:
            os.environ.pop("KRB5_CONFIG", None)
        else:
            os.environ["KRB5_CONFIG"] = before


@pytest.fixture(scope="session")
def kerberized_metastore(kdc: Kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetastoreSettings]:
    """The embedded Hive 2.3 metastore taking Kerberos logins only, as hive/127.0.0.1 (started the first time a
    test needs it, shared by the session's tests)."""
    principal, keytab = kdc.principal("hive/127.0.0.1")
    settings = MetastoreSettings(
        port=free_port(),
        home=tmp_path_factory.mktemp("kerberized-hms"),
        kerberos_principal=principal,
        kerberos_keytab=keytab,
    )
    launcher.start(settings)
    yield settings
    launcher.stop(settings)
