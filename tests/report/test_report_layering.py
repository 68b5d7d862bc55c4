"""report/ reads records only: it imports neither the engine nor pytest."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest_weval.report

REPORT_DIR = Path(pytest_weval.report.__file__).parent


def test_no_engine_or_pytest_imports_in_the_source():
    for path in sorted(REPORT_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith("pytest_weval.engine"), f"{path.name} imports {name}"
                assert name.split(".")[0] not in ("pytest", "_pytest"), f"{path.name} imports {name}"


def test_importing_the_reporters_loads_neither():
    # every reporter module (the package's own names load theirs on first use)
    modules = ", ".join(
        f"pytest_weval.report.{path.stem}" for path in sorted(REPORT_DIR.glob("*.py")) if path.stem != "__init__"
    )
    code = (
        f"import sys, {modules};"
        "bad = [m for m in sys.modules if m.startswith(('pytest_weval.engine', '_pytest')) or m == 'pytest'];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
