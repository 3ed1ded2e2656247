#!/usr/bin/env bash
# Install the system packages the tests use besides Java: PostgreSQL server and its JDBC driver, and
# openssl (the gateway's TLS tests make their certificate with it), and headless Chromium (renders the
# commit timeline page), and strace (tests/io/test_renames.py counts renames with it), and MIT Kerberos: the KDC
# the Kerberos tests start on loopback (tests/support/kdc.py) and libkrb5-dev, which python-gssapi (the
# `kerberos` extra) builds against: so this runs before the venv's install.
set -euo pipefail
need=()
[ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v openssl >/dev/null || need+=(openssl)
command -v strace >/dev/null || need+=(strace)
command -v chromium >/dev/null || need+=(chromium)
[ -x /usr/sbin/krb5kdc ] || need+=(krb5-kdc)
[ -x /usr/sbin/kadmin.local ] || need+=(krb5-admin-server)
command -v kinit >/dev/null || need+=(krb5-user)
command -v krb5-config >/dev/null || need+=(libkrb5-dev)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "system-deps: missing ${need[*]} and cannot apt-get install them; the tests needing them will skip" >&2
  exit 0
fi
echo "system-deps: installing ${need[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
