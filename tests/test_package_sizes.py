"""Issue 42: every class of the package stays one concern (no class over 350 lines or 25
methods, no function over 100 lines), so no hub grows back: the engine reads as stages, the
plugin as one object per concern, the pipeline as steps."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_weval

PACKAGE = Path(pytest_weval.__file__).parent


def _sizes() -> list[tuple[str, str, int, int]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                methods = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                found.append((f"{path.relative_to(PACKAGE)}:{node.name}", kind, lines, methods))
    return found


def test_no_class_over_350_lines_or_25_methods() -> None:
    big = [(name, lines, methods) for name, kind, lines, methods in _sizes() if kind == "class"]
    assert [b for b in big if b[1] > 350 or b[2] > 25] == []


def test_no_function_over_100_lines() -> None:
    assert [(name, lines) for name, kind, lines, _ in _sizes() if kind == "function" and lines > 100] == []
