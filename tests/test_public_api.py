"""The curated public API (pytest_weval/__init__.py): every name resolves, errors share one
base, and importing the package (which pytest does at start-up) loads no engine."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_weval


@pytest.mark.parametrize("name", pytest_weval.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(pytest_weval, name) is not None
    assert name in dir(pytest_weval)


DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_docs_list_the_public_api_once_and_as_all_does() -> None:
    layout = (DOCS / "layout.md").read_text(encoding="utf-8")
    section = layout.split("## The public API", 1)[1].split("\n## ", 1)[0]
    listed = section.strip().split("\n\n")[1]  # the list, between its lead-in and what else users reach
    assert sorted(re.findall(r"`(\w+)`", listed)) == sorted(pytest_weval.__all__)
    other_homes = [
        f"{page.name}: {line}"
        for page in DOCS.glob("*.md")
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("#") and "public api" in line.lower() and page.name != "layout.md"
    ]
    assert other_homes == []


def test_every_error_is_a_weval_error(tmp_path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("prompts: [\n", encoding="utf-8")
    with pytest.raises(pytest_weval.WevalError) as caught:
        pytest_weval.load_blueprint(path)
    assert isinstance(caught.value, pytest_weval.BlueprintError)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        pytest_weval.NoSuchThing  # noqa: B018


def test_importing_the_package_loads_no_engine() -> None:
    code = "import sys, pytest_weval; print(sorted(m for m in ('httpx', 'pytest_weval.engine', 'py_mini_racer') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# Run in a child process: importing every module (the plugin's, the programs') must not leave
# this test process with modules other tests expect to load themselves.
_WALK = """
import ast, importlib, inspect, pkgutil, sys
import pytest_weval
from pytest_weval.errors import PytestWevalWarning, WevalError

for info in pkgutil.walk_packages(pytest_weval.__path__, "pytest_weval."):
    if info.name == "pytest_weval.__main__":
        # The program itself: importing it runs it. It may define no class at all.
        source = sys.modules["pytest_weval"].__spec__.submodule_search_locations[0] + "/__main__.py"
        tree = ast.parse(open(source, encoding="utf-8").read())
        if any(isinstance(node, ast.ClassDef) for node in ast.walk(tree)):
            print(info.name, "defines a class")
        continue
    module = importlib.import_module(info.name)
    for name, value in vars(module).items():
        if not (inspect.isclass(value) and issubclass(value, BaseException)):
            continue
        if value.__module__ != module.__name__:
            continue
        base = PytestWevalWarning if issubclass(value, Warning) else WevalError
        if not issubclass(value, base):
            print(f"{info.name}.{name}")
"""


def test_every_exception_class_the_package_defines_is_a_weval_error() -> None:
    """Whatever the package raises, ``except WevalError`` catches it (its warnings share
    ``PytestWevalWarning`` instead, as pytest's share ``PytestWarning``)."""
    done = subprocess.run([sys.executable, "-c", _WALK], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []
