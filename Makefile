# The targets README.md names. `make demo` and `make test` work on a fresh machine with Java 17.
VENV   ?= .venv
PYTHON ?= python3
PY      = $(VENV)/bin/python
PYTEST_ARGS ?=
# Maven artifacts the tests fetch once (a Kafka broker, other metastores, storage connectors); see sqlext/jars.py.
JARS_DIR ?= $(HOME)/.cache/sqlext/jars
export SQLEXT_JARS_DIR = $(JARS_DIR)

.PHONY: runtime install system-deps flink-venv spark35-venv jars class-archive demo docs test lint typecheck unit clean

# sqlext and what it needs at run time: all `make demo` installs.
runtime: $(VENV)/.runtime

$(VENV)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

# The rest of what the tests, linters and benchmarks need.
install: $(VENV)/.installed

$(VENV)/.installed: $(VENV)/.runtime | system-deps
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

# What the tests need from the system besides Java: PostgreSQL and its JDBC driver (for the
# PostgreSQL-backed metastore tests), headless Chromium (for the commit timeline page) and MIT Kerberos (a
# KDC, and libkrb5-dev for python-gssapi's build: before the dev install). Installed with apt when we may;
# otherwise those tests skip.
system-deps:
	@bash .ci/system-deps.sh

# Flink itself, the reference the differential tests (marker `flink`) compare with. `apache-flink` pins
# pyarrow and pandas, so it gets a venv of its own. If it cannot be installed, the reason is written to
# $(FLINK_VENV)/.failed and the flink tests skip with it; `make test` goes on.
FLINK_VENV ?= .venv-flink
FLINK_SPEC ?= apache-flink>=2.0,<3

flink-venv: $(FLINK_VENV)/.installed

$(FLINK_VENV)/.installed:
	@bash .ci/flink-venv.sh "$(PYTHON)" "$(FLINK_VENV)" "$(FLINK_SPEC)"

# pyspark 3.5, for bench/peers.py's Paimon and Hudi variants (Maven Central serves their Spark runtimes up to
# Spark 3.5 only): a venv of its own, as sqlext needs pyspark 4; the bench runs its workers from the checkout.
# Not part of `make test`.
SPARK35_VENV ?= .venv-spark35
SPARK35_SPEC ?= pyspark>=3.5,<3.6

spark35-venv: $(SPARK35_VENV)/.installed

$(SPARK35_VENV)/.installed: pyproject.toml
	@bash .ci/spark35-venv.sh "$(PYTHON)" "$(SPARK35_VENV)" "$(SPARK35_SPEC)"

# The Maven artifacts of the tests (a Kafka broker, Spark's Kafka source, S3A, an HDFS mini cluster, Hive 3.1
# and 4 metastores), fetched side by side into $(JARS_DIR) before the tests start; later runs find them there.
jars: install
	$(PY) -m tests.support.prefetch

# A class-data sharing archive of Spark's classes, dumped once into the venv: the tests' Spark drivers map it
# and start faster (tests/support/class_archive.py).
class-archive: install
	$(PY) -m tests.support.class_archive

demo: runtime
	$(VENV)/bin/sqlext demo

# The docs site, from docs/ (mkdocs.yml), into site/; --strict fails on a broken link or anchor.
docs: install
	$(VENV)/bin/mkdocs build --strict

lint: install
	$(VENV)/bin/ruff check sqlext tests bench
	$(VENV)/bin/ruff format --check sqlext tests bench

typecheck: install
	$(VENV)/bin/mypy

unit: install
	$(PY) -m pytest -m "not hms and not spark and not postgres and not flink" $(PYTEST_ARGS)

# Test files run on $(TEST_WORKERS) pytest-xdist workers (each with its own metastore, Spark session and
# services); a file's tests stay on one worker, in order. Files are handed out longest first, by the seconds
# recorded in tests/file_durations.json (tests/support/ordering.py), not by their number of tests. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2

test: install system-deps flink-venv lint typecheck jars class-archive
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(FLINK_VENV) $(SPARK35_VENV) .pytest_cache .mypy_cache .ruff_cache site
