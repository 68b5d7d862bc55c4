"""The package's shape (docs/layout.md): no import circle, every import at the top of its
module, and the walls between layers, read from the source as a static import graph."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_weval"

# layer -> what it must not import (third-party libraries or other layers), as DEVELOPERS.md says
WALLS = {
    "blueprint": {"pytest", "_pytest", "httpx", "engine", "run", "plugin", "report", "judges", "formats"},
    "scoring": {"pytest", "_pytest", "httpx", "engine", "run", "plugin", "report"},
    "judges": {"pytest", "_pytest", "engine", "run", "plugin", "report"},
    "engine": {"pytest", "_pytest", "run", "plugin", "report", "judges"},
    "run": {"pytest", "_pytest", "plugin", "report"},
    "report": {"engine", "run", "plugin"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path, *, top_only: bool) -> list[tuple[str, int]]:
    """(imported module, line) for each import, ``from x import y`` also as ``x.y``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = tree.body if top_only else list(ast.walk(tree))
    found: list[tuple[str, int]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.append((base, node.lineno))
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {target for target, _ in _imports(name, path, top_only=True) if target in modules and target != name}
        for name, path in modules.items()
    }


# Third-party libraries imported where they are used, each for a reason its comment gives.
DEFERRED = {
    "genai_prices",  # ~0.2 s to load, needed only once a reply is priced
    "psycopg",  # an extra (pytest-weval[postgres]), needed only with a postgresql:// store
}


def test_every_import_is_at_the_top_of_its_module():
    nested = []
    for name, path in _modules().items():
        top = {line for _, line in _imports(name, path, top_only=True)}
        nested += [
            f"{path.relative_to(PACKAGE.parent)}:{line}: {target}"
            for target, line in _imports(name, path, top_only=False)
            if line not in top and target.split(".")[0] not in DEFERRED
        ]
    assert not nested, "\n".join(sorted(set(nested)))


def test_no_import_circle_in_the_package():
    graph = _graph()
    # A package's __init__ re-exporting its own modules is not a circle between modules.
    edges = {
        name: {t for t in targets if not name.startswith(t + ".") and not t.startswith(name + ".")}
        for name, targets in graph.items()
    }
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        if name in path:
            return path[path.index(name) :] + [name]
        if name in done:
            return None
        path.append(name)
        for target in sorted(edges.get(name, ())):
            if (circle := visit(target)) is not None:
                return circle
        path.pop()
        done.add(name)
        return None

    for name in sorted(edges):
        circle = visit(name)
        assert circle is None, " -> ".join(circle)


def test_layers_stay_behind_their_walls():
    graph = _graph()
    modules = _modules()
    broken = []
    for layer, forbidden in WALLS.items():
        todo = [
            name for name in modules if name == f"pytest_weval.{layer}" or name.startswith(f"pytest_weval.{layer}.")
        ]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for target, _ in _imports(name, modules[name], top_only=True):
                top = target.split(".")
                reached = top[1] if top[0] == "pytest_weval" and len(top) > 1 else top[0]
                if reached in forbidden:
                    broken.append(f"{layer}: {name} imports {target}")
            todo += graph[name]
    assert not broken, "\n".join(sorted(set(broken)))
