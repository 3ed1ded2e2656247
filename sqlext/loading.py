"""Load a user's class by its Python path (custom policies, custom time extractors)."""

from __future__ import annotations

import importlib
from typing import Any

from sqlext.errors import PolicyError


def load_class(class_path: str, interface: type[Any], option: str) -> type[Any]:
    """Import ``package.module.Class`` and check it implements ``interface``.

    Raises :class:`PolicyError` naming the option and the path when the module or class does not
    exist or the class does not implement the interface.
    """
    module_name, _, class_name = class_path.rpartition(".")
    if not module_name or not class_name:
        raise PolicyError(
            f"Invalid class path '{class_path}' for option '{option}': expected 'package.module.ClassName'.",
            option=option,
            value=class_path,
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicyError(
            f"Cannot import module '{module_name}' for option '{option}' ('{class_path}'): {exc}.",
            option=option,
            value=class_path,
        ) from exc
    loaded = getattr(module, class_name, None)
    if not isinstance(loaded, type):
        raise PolicyError(
            f"Module '{module_name}' has no class '{class_name}' (option '{option}' = '{class_path}').",
            option=option,
            value=class_path,
        )
    if not issubclass(loaded, interface):
        raise PolicyError(
            f"Class '{class_path}' (option '{option}') does not implement "
            f"{interface.__module__}.{interface.__qualname__}.",
            option=option,
            value=class_path,
        )
    return loaded
