"""sqlext's jars in the checkout under test, built first when missing or older than their sources.

An installed sqlext has them from its build hook (hatch_build.py); a checkout run with ``PYTHONPATH`` (or one whose
Java sources changed since ``pip install -e .``) may not: each test process checks them as it starts and builds
them with the JDK's ``javac`` where needed (:func:`sqlext.javac.build`, about 15 s), as ``python -m sqlext.javac``
does. A build replaces each jar whole, so processes starting together may both build.
"""

from __future__ import annotations

import pytest

from sqlext import javac


def pytest_configure(config: pytest.Config) -> None:
    """Build the jars before any test when one is missing or stale."""
    try:
        for name in javac.JARS:
            javac.packaged_jar(name)
    except javac.MissingJarError:
        javac.build(javac.find_javac(), javac.build_class_path(), javac.JARS_DIR)
