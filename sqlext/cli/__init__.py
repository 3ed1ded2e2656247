"""The ``sqlext`` command: ``run``, ``metastore``, ``gateway``, ``thriftserver``, ``demo`` and the inspection
commands. An entry point: it may import every other package; nothing below imports it."""

from sqlext.cli.main import main

__all__ = ["main"]
