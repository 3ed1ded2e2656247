"""TLS material made by the tests themselves: a self-signed certificate (``openssl``) for 127.0.0.1 and
localhost, and a Java truststore holding it (``keytool``) for beeline."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

TRUSTSTORE_PASSWORD = "changeit"


@dataclass(frozen=True)
class SelfSigned:
    cert: Path
    key: Path

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this certificate only (hostname checked)."""
        return ssl.create_default_context(cafile=str(self.cert))

    def truststore(self) -> Path:
        """A JKS truststore with the certificate, password :data:`TRUSTSTORE_PASSWORD`."""
        store = self.cert.with_name("truststore.jks")
        if not store.exists():
            keytool = shutil.which("keytool") or pytest.fail("keytool (from the JDK) is not on PATH")
            subprocess.run(
                [
                    keytool,
                    "-importcert",
                    "-noprompt",
                    "-alias",
                    "gateway",
                    "-file",
                    str(self.cert),
                    "-keystore",
                    str(store),
                    "-storepass",
                    TRUSTSTORE_PASSWORD,
                    "-storetype",
                    "JKS",
                ],
                check=True,
                capture_output=True,
            )
        return store

    def pkcs12_truststore(self) -> Path:
        """A PKCS12 truststore with the certificate (keytool's trusted entry), password
        :data:`TRUSTSTORE_PASSWORD`: Java and Python (cryptography) both read it."""
        store = self.cert.with_name("truststore.p12")
        if not store.exists():
            keytool = shutil.which("keytool") or pytest.fail("keytool (from the JDK) is not on PATH")
            arguments = ["-keystore", str(store), "-storepass", TRUSTSTORE_PASSWORD, "-storetype", "PKCS12"]
            subprocess.run(
                [keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", str(self.cert), *arguments],
                check=True,
                capture_output=True,
            )
        return store

    def keystore(self) -> Path:
        """A PKCS12 keystore of the key and certificate (a Java server's), password :data:`TRUSTSTORE_PASSWORD`."""
        store = self.cert.with_name("keystore.p12")
        if not store.exists():
            openssl = shutil.which("openssl") or pytest.fail("openssl is not on PATH")
            arguments = ["-out", str(store), "-in", str(self.cert), "-inkey", str(self.key), "-name", "server"]
            subprocess.run(
                [openssl, "pkcs12", "-export", "-passout", f"pass:{TRUSTSTORE_PASSWORD}", *arguments],
                check=True,
                capture_output=True,
            )
        return store


def self_signed(directory: Path) -> SelfSigned:
    """A new RSA key and a certificate valid for a day for 127.0.0.1 and localhost."""
    openssl = shutil.which("openssl") or pytest.fail("openssl is not on PATH")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    return SelfSigned(cert, key)
