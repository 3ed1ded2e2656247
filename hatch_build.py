"""The build hook of sqlext's wheel (and of ``pip install -e .``): sqlext's Java classes compiled into jars.

hatchling runs it for each wheel it builds (``[tool.hatch.build.targets.wheel.hooks.custom]`` in pyproject.toml).
It compiles the Java sources with the JDK's ``javac --release 17`` against the jars of the pyspark installed for
the build (a build requirement) and the stubs of ``java/stubs/`` (:func:`sqlext.javac.build`). A wheel gets the
jars as ``sqlext/_jars/*.jar``; an editable install writes them into the checkout's ``sqlext/_jars/``, where the
code it points at finds them. Building needs a JDK; running needs a JRE only.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class JavaClassesHook(BuildHookInterface):
    """Compile sqlext's Java sources into the jars the package ships."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Build the jars; a standard wheel includes them, an editable one finds them in the checkout."""
        root = Path(self.root)
        sys.path.insert(0, str(root))  # this checkout's sqlext.javac (standard library only)
        try:
            from sqlext import javac
        finally:
            sys.path.remove(str(root))
        if version == "editable":
            out = root / "sqlext" / "_jars"
        else:
            self._scratch = tempfile.TemporaryDirectory(prefix="sqlext-jars-")
            out = Path(self._scratch.name)
        try:
            built = javac.build(javac.find_javac(), javac.build_class_path(), out, root / "sqlext")
        except javac.JavaCompileError as exc:
            raise RuntimeError(f"sqlext's Java classes did not build: {exc.message}") from None
        if version != "editable":
            for jar in built:
                build_data["force_include"][str(jar)] = f"sqlext/_jars/{jar.name}"
        self.app.display_info(f"sqlext's Java classes: {', '.join(jar.name for jar in built)}")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """Remove the standard wheel's scratch jars (they are in the wheel now)."""
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            scratch.cleanup()
