"""Helpers: lint blueprint text without touching the disk."""

from __future__ import annotations

import textwrap

from pytest_weval.blueprint.build import build_blueprint
from pytest_weval.blueprint.loader import load_source, room_for_depth
from pytest_weval.blueprint.model import Finding
from pytest_weval.lint import lint_blueprint


def lint_text(text: str, fmt: str = "yaml") -> list[Finding]:
    text = textwrap.dedent(text)
    with room_for_depth():
        source = load_source(text, fmt=fmt, path="bp.yml")
        blueprint = build_blueprint(source, rel_path="bp.yml", collections_dir=None, keep_unresolved_placeholders=True)
    return lint_blueprint(blueprint, source)


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]
