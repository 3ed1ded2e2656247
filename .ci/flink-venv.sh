#!/usr/bin/env bash
# Install Flink (PyPI `apache-flink`) into a venv of its own for the differential tests.
# Usage: flink-venv.sh PYTHON VENV SPEC. Never fails the build: when the install fails, the reason is
# written to VENV/.failed (the flink tests skip with it) and a later run tries again.
set -uo pipefail
python=$1 venv=$2 spec=$3
rm -f "$venv/.failed"
log=$(mktemp)
if "$python" -m venv "$venv" >"$log" 2>&1 \
  && "$venv/bin/python" -m pip install -q --upgrade pip >>"$log" 2>&1 \
  && "$venv/bin/python" -m pip install -q "$spec" >>"$log" 2>&1 \
  && "$venv/bin/python" -c "import pyflink.table" >>"$log" 2>&1; then
  touch "$venv/.installed"
else
  mkdir -p "$venv"
  { echo "pip install '$spec' failed:"; tail -n 5 "$log"; } >"$venv/.failed"
  echo "flink-venv: $(head -c 2000 "$venv/.failed")" >&2
  echo "flink-venv: the flink tests will skip" >&2
fi
rm -f "$log"
exit 0
