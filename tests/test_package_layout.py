"""The package's shape (docs/layout.md): no import circle, every import at the top of its
module, and the walls between layers, read from the source as a static import graph."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_weval"

# What each part of the package may import from the rest of it (docs/layout.md): a package, or a
# module at the root. Anything not listed is a wall. Read with `test_no_import_circle_between_packages`,
# this table is the layout.
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),  # the bottom: WevalError and ErrorKind
    "jsvalues": set(),  # JavaScript value semantics
    "files": set(),  # atomic writes
    "lazy": set(),  # a package's names loaded at first use (PEP 562)
    "defaults": set(),  # every setting's default
    "results": {"errors", "defaults"},
    "blueprint": {"defaults", "errors", "jsvalues"},
    "formats": {"errors", "jsvalues", "blueprint"},
    "scoring": {"errors", "jsvalues", "results", "blueprint", "formats"},
    "judges": {"errors", "jsvalues", "results", "blueprint", "formats", "scoring"},
    "lint": {"errors", "jsvalues", "blueprint", "scoring"},
    "engine": {"defaults", "errors", "jsvalues", "files", "lazy", "results", "blueprint"},
    "run": {
        "defaults",
        "errors",
        "jsvalues",
        "files",
        "results",
        "blueprint",
        "formats",
        "scoring",
        "judges",
        "engine",
    },
    "report": {
        "defaults",
        "errors",
        "jsvalues",
        "files",
        "lazy",
        "results",
        "blueprint",
        "formats",
        "scoring",
        "judges",
    },
    "api": {"defaults", "errors", "results", "blueprint", "scoring", "judges", "engine", "run"},
    "cli": {"defaults", "errors", "files", "results", "blueprint", "engine", "report"},
    "__main__": {"cli"},
    "plugin": {
        "defaults",
        "errors",
        "jsvalues",
        "files",
        "results",
        "blueprint",
        "formats",
        "scoring",
        "judges",
        "lint",
        "engine",
        "run",
        "report",
        "api",
    },
    "": {"errors", "lazy"},  # pytest_weval/__init__.py: the public API, loaded lazily
}

# Third-party libraries only some parts may import.
ONLY_IN = {
    "pytest": {"plugin"},
    "_pytest": {"plugin"},
    "httpx": {"engine"},
    "httpx_aiohttp": {"engine"},
    "aiohttp": {"engine"},
    "py_mini_racer": {"scoring"},
    "psycopg": {"engine"},
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
    # `if TYPE_CHECKING:` imports are for the type checker only: never run, never a dependency.
    typing_only = {
        id(inner)
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    nodes = tree.body if top_only else [n for n in ast.walk(tree) if id(n) not in typing_only]
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
    "aiohttp",  # ~0.15 s to load, needed only once a request is sent (not by a cached replay)
    "httpx_aiohttp",  # aiohttp's seam under httpx, loaded with it
    "py_mini_racer",  # V8, needed only once a run evaluates JavaScript ($js, regexes)
}

# Modules pytest loads in every run through the plugin's entry point, which import the rest of
# the package only where it is used, so that a run without blueprints loads nothing heavy
# (issue 43 item 4; each module's docstring says what it defers).
LIGHT = {
    "pytest_weval.plugin.activation",  # the plugin's concerns, once the run uses the plugin
    "pytest_weval.plugin.html_columns",  # the report's formatting, for a row holding a Weval result
    "pytest_weval.formats.discover",  # the YAML loader, to parse a file that may be an agent eval
}


# Parts of the package that most runs of blueprints never use, loaded where first used (issue 43
# items 3 and 5: every module a run loads is paid by every process's start; docs/engine.md, 'A
# process's start'). Each module names what it may import so: those and nothing else.
# - the agent eval and promptfoo formats (their loaders, collectors, runners and scoring: a fifth
#   of the bytecode activation loaded), at a run's first such file or item;
# - the plan (``run/plan.py``), made for --collect-only and -v only;
# - the batch APIs (``engine/batching/``, ``transport/batch_api.py``), for --weval-batch only.
# - the reports' writers and the HTML page's code, by the process that writes them (serial or
#   the xdist controller; the page for --weval-html only), and each of the plugin's concerns by
#   the roles that register it (``registration.py``).
ON_FIRST_USE = {
    "pytest_weval.plugin.collection": ("pytest_weval.plugin.agent_items", "pytest_weval.plugin.promptfoo_items"),
    "pytest_weval.plugin.settings": (
        "pytest_weval.formats.load",
        "pytest_weval.formats.promptfoo.load",
        "pytest_weval.run.plan",
        # the reports' code, by the process that reads or writes them (never an xdist worker)
        "pytest_weval.report.baseline",
        "pytest_weval.report.finish",
        "pytest_weval.report.history",
        "pytest_weval.report.weval_json",
        # the run's, by a process that runs items (never the xdist controller)
        "pytest_weval.run.pipeline",
        "pytest_weval.run.preflight",
        "pytest_weval.engine.transport.model_lists",
        "pytest_weval.scoring",  # an agent eval suite's regex check
    ),
    # each concern by the roles that register it: no summary or reports' code in an xdist
    # worker, no collection or run start in the controller
    "pytest_weval.plugin.registration": (
        "pytest_weval.plugin.session_checks",
        "pytest_weval.plugin.summary",
        "pytest_weval.plugin.collection",
        "pytest_weval.plugin.run_start",
        "pytest_weval.plugin.xdist_transfer",
    ),
    # the engine, by a process that runs items; the history's samples, --weval-repeat=auto
    "pytest_weval.plugin.run_engine": ("pytest_weval.api", "pytest_weval.plugin.history"),
    "pytest_weval.plugin.running": (
        "pytest_weval.run.schedule",
    ),  # the engine's scheduler, by a process that runs items
    "pytest_weval.plugin.similarity": ("pytest_weval.engine.engine",),  # embeddings, --weval-eval-methods only
    # the lint rules (and the scoring code they check points with), at the first blueprint linted
    "pytest_weval.lint": ("pytest_weval.lint.rules",),
    "pytest_weval.plugin.lint": ("pytest_weval.lint.rules",),
    "pytest_weval.report.finish": ("pytest_weval.report.html",),  # the page's code (~120 KB), --weval-html only
    # an agent case's verdict marks; the pipeline's item, by a process that runs items
    "pytest_weval.plugin.items": ("pytest_weval.formats.model", "pytest_weval.run.pipeline"),
    "pytest_weval.run.pipeline": ("pytest_weval.run.agent", "pytest_weval.run.promptfoo"),
    # a plan with promptfoo rows, with agent eval cases
    "pytest_weval.run.plan": ("pytest_weval.run.plan_promptfoo", "pytest_weval.run.plan_agent"),
    "pytest_weval.run.preflight": (
        "pytest_weval.run.agent",
        "pytest_weval.run.promptfoo",
        "pytest_weval.engine.transport.batch_api",
    ),
    "pytest_weval.engine.engine": ("pytest_weval.engine.batching",),
}


def _on_first_use(name: str, target: str) -> bool:
    return any(target == m or target.startswith(m + ".") for m in ON_FIRST_USE.get(name, ()))


def test_every_import_is_at_the_top_of_its_module():
    nested = []
    for name, path in _modules().items():
        top = {line for _, line in _imports(name, path, top_only=True)}
        nested += [
            f"{path.relative_to(PACKAGE.parent)}:{line}: {target}"
            for target, line in _imports(name, path, top_only=False)
            if line not in top
            and target.split(".")[0] not in DEFERRED
            and not (name in LIGHT and target.startswith("pytest_weval."))
            and not _on_first_use(name, target)
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


def _part(module: str) -> str:
    """The part of the package a module belongs to: its package, or itself at the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_part_of_the_package_is_in_the_table():
    assert {_part(name) for name in _modules()} == set(MAY_IMPORT)


def test_each_part_imports_only_what_the_table_allows():
    broken = []
    for name, path in _modules().items():
        part = _part(name)
        for target, line in _imports(name, path, top_only=False):
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            top = target.split(".")[0]
            if top == "pytest_weval":
                reached = _part(target) if target != "pytest_weval" else ""
                if reached not in (part, "") and reached not in MAY_IMPORT[part]:
                    broken.append(f"{where}: {part or 'pytest_weval'} imports {target}")
            elif top in ONLY_IN and part not in ONLY_IN[top]:
                broken.append(f"{where}: {part or 'pytest_weval'} imports {top}")
    assert not broken, "\n".join(sorted(set(broken)))


def test_no_import_circle_between_packages():
    """The table has no circle: each part only builds on parts below it."""
    done: set[str] = set()
    path: list[str] = []

    def visit(part: str) -> list[str] | None:
        if part in path:
            return path[path.index(part) :] + [part]
        if part in done:
            return None
        path.append(part)
        for target in sorted(MAY_IMPORT[part]):
            if (circle := visit(target)) is not None:
                return circle
        path.pop()
        done.add(part)
        return None

    for part in sorted(MAY_IMPORT):
        circle = visit(part)
        assert circle is None, " -> ".join(circle)
