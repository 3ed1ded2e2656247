"""``sqlext run``'s start-up: what it imports before the driver JVM starts, and what while it starts (no JVM)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from sqlext.spark import driver_start
from sqlext.spark.runner import RUN_MODULES

ROOT = Path(__file__).resolve().parents[2]


def test_the_modules_a_run_needs_are_imported_while_the_jvm_starts_and_a_failing_one_is_left_to_its_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}
    launching = threading.Event()
    import_all = driver_start._import_all

    def fake_jvm(launch: Any) -> None:
        seen["launched_on"] = threading.current_thread().name
        launching.set()

    def imports_once_the_launch_began(modules: list[str]) -> None:
        assert launching.wait(10)
        seen["imported_on"] = threading.current_thread().name
        import_all(modules)

    monkeypatch.setattr(driver_start, "_ensure_jvm", fake_jvm)
    monkeypatch.setattr(driver_start.class_sharing, "share_classes", lambda conf, mode: None)  # no JVM options set
    monkeypatch.setattr(driver_start, "_import_all", imports_once_the_launch_began)
    monkeypatch.delitem(sys.modules, "sqlext.cli.status", raising=False)
    driver_start.start_driver({}, meanwhile=["sqlext.cli.status", "sqlext.no_such_module"])
    assert seen["launched_on"] == threading.current_thread().name  # the JVM is launched where it always was
    assert seen["imported_on"] == "sqlext-imports"
    assert "sqlext.cli.status" in sys.modules  # imported by the time the JVM is up: the thread was joined
    assert "sqlext.no_such_module" not in sys.modules


def test_sqlext_run_reaches_the_jvm_launch_without_the_parser_sqlglot_or_the_connectors() -> None:
    probe = (
        "import sys; import sqlext.cli.main, sqlext.spark.runner, sqlext.spark.driver_start; "
        "print(','.join(m for m in ('sqlglot', 'sqlext.sql.parser', 'sqlext.spark.session', "
        "'sqlext.connectors.filesystem', 'sqlext.catalog.hms', 'sqlext.jobs.insert') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
    assert {"sqlext.spark.session", "sqlext.jobs.insert"} <= set(RUN_MODULES)
