"""The package layout is the architecture: imports run one way, from the entry points down to the core,
and no two modules import each other, directly or around a circle (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sqlext"

#: From the top down; a module may import its own layer and the layers below it. Top-level modules not
#: named here are the shared core.
LAYERS: list[tuple[str, ...]] = [
    ("sqlext", "sqlext.cli", "sqlext.gateway", "sqlext.drivers", "sqlext.session"),
    ("sqlext.spark",),
    ("sqlext.metrics",),
    ("sqlext.jobs",),
    ("sqlext.connectors",),
    ("sqlext.catalog",),
    ("sqlext.sql",),
    ("sqlext.io",),
    ("core",),
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every sqlext module ``path`` imports, at the top or inside a function (both are dependencies)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                found.add(target if target in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in modules}


def _layer(module: str) -> int:
    for index, layer in enumerate(LAYERS):
        if any(module == root or module.startswith(root + ".") for root in layer if root != "sqlext"):
            return index
    return 0 if module == "sqlext" else LAYERS.index(("core",))


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def test_imports_run_from_the_entry_points_down_to_the_core() -> None:
    upward = [
        f"{module} ({LAYERS[_layer(module)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _layer(target) < _layer(module)
    ]
    assert upward == []


def test_no_module_imports_itself_around_a_circle() -> None:
    graph = _graph()
    cycles = sorted({" -> ".join(cycle) for cycle in _cycles(graph)})
    assert cycles == []


def test_no_package_imports_itself_around_a_circle() -> None:
    """Packages too (``commit`` runs ``compaction``, which must then not import ``commit``); a top-level module
    counts as a package of its own."""
    modules = _modules()

    def package(module: str) -> str:
        is_package = modules[module].name == "__init__.py"
        return module if is_package or module.count(".") == 1 else module.rsplit(".", 1)[0]

    packages: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        packages.setdefault(package(module), set()).update(package(t) for t in targets if package(t) != package(module))
    # A package's __init__ re-exporting its own modules is not a circle between packages.
    packages = {name: {t for t in targets if not t.startswith(name + ".")} for name, targets in packages.items()}
    assert sorted(" -> ".join(cycle) for cycle in _cycles(packages)) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_past_500_lines(path: Path) -> None:
    lines = path.read_text().count("\n")
    assert lines <= 500, f"{path.name} has {lines} lines: split it by concept"


#: The top level is the architecture's index: the shared core's modules and the packages. More than this many
#: modules there and a concept two of them share wants a package of its own.
MAX_TOP_LEVEL_MODULES = 14


def test_the_top_level_holds_at_most_14_modules() -> None:
    modules = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, f"{len(modules)} top-level modules: {modules}"
