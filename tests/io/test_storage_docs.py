"""docs/object-stores.md's ``--packages`` line for ``s3a://`` is the one the cluster test runs."""

from __future__ import annotations

from pathlib import Path

from tests.support.stores import s3a_packages_conf

DOC = Path(__file__).resolve().parents[2] / "docs" / "object-stores.md"


def test_the_docs_give_users_the_packages_and_excludes_the_cluster_test_runs() -> None:
    text = DOC.read_text()
    conf = s3a_packages_conf()
    assert f"--conf spark.jars.packages={conf['spark.jars.packages']} " in text
    assert f"--conf spark.jars.excludes={conf['spark.jars.excludes']} " in text
