#!/usr/bin/env bash
# A venv with pyspark 3.5 for bench/peers.py's Paimon and Hudi variants, whose Spark runtimes on Maven Central
# stop at Spark 3.5. sqlext itself needs pyspark 4, so it is not installed there: the bench's workers run from
# the checkout (python -m bench.peers, with the checkout on sys.path) and get sqlext's other dependencies.
# Usage: spark35-venv.sh PYTHON VENV PYSPARK_SPEC
set -euo pipefail
python=$1 venv=$2 spec=$3
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
# sqlext's dependencies less pyspark, from pyproject.toml.
mapfile -t deps < <("$python" -c '
import re, tomllib
for dep in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]:
    if re.split(r"[\s<>=!\[;]", dep, maxsplit=1)[0] != "pyspark":
        print(dep)
')
"$venv/bin/python" -m pip install -q "$spec" "${deps[@]}"
"$venv/bin/python" -c "import pyspark; print('pyspark', pyspark.__version__)"
touch "$venv/.installed"
