"""Tables in the Hive Metastore: the HMS catalog, the formats' HMS descriptors, the metastore client and the
embedded metastore's launcher. May import :mod:`sqlext.sql`, :mod:`sqlext.io` and the shared core.

``sqlext.catalog`` was a module before it was this package; its names (``HiveCatalog``, ...) are still
importable from here, loaded when first used."""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    hms = importlib.import_module("sqlext.catalog.hms")
    try:
        return getattr(hms, name)
    except AttributeError:
        raise AttributeError(f"module 'sqlext.catalog' has no attribute '{name}'") from None
