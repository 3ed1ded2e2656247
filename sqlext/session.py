"""Moved to :mod:`sqlext.spark.session`; this name keeps imports written before the move working."""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module("sqlext.spark.session"), name)
