"""The curated public API (pytest_weval/__init__.py): every name resolves, errors share one
base, and importing the package (which pytest does at start-up) loads no engine."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pytest_weval


@pytest.mark.parametrize("name", pytest_weval.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(pytest_weval, name) is not None
    assert name in dir(pytest_weval)


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
