"""Fixtures for the blueprint parser tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from blueprint_helpers import write_collections


@pytest.fixture
def configs_repo(tmp_path: Path) -> Path:
    """A configs-repository layout: blueprints/ beside models/ with CORE and an empty collection."""
    (tmp_path / "blueprints").mkdir()
    write_collections(tmp_path, {"CORE": ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku"], "EMPTY": []})
    return tmp_path
