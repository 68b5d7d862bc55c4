"""The markers the plugin registers in every run (``pytest --markers`` lists them, and
``--strict-markers`` accepts ``-m weval`` and ``-m weval_lint`` whether or not blueprints are
collected). Blueprint tags become markers as their files are collected (``collect.py``)."""

from __future__ import annotations

import pytest

WEVAL_MARKER = "weval"
LINT_MARKER = "weval_lint"


def register(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{WEVAL_MARKER}: an item generated from a Weval blueprint")
    config.addinivalue_line("markers", f"{LINT_MARKER}: the blueprint linter's item for one file (--weval-lint-strict)")
