"""Fixtures for the agent-format loader tests: the spec's example files in their original
layout (docs/rulings.md, ruling 21), and small eval files written on the spot."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# As the blueprint tests find the spec (tests/blueprint/blueprint_helpers.py).
EXAMPLES = Path(os.environ.get("WEVAL_SPEC_DIR", "/work/shared/spec")) / "agent-examples"
GROUPS = (
    "agentevals/spec-initial-73a98c1",
    "agentv/v2.6.1-classic",
    "agentv/v2.10.0-transitional",
    "agentv/head-v5",
)


@pytest.fixture(scope="session")
def examples_source() -> Path:
    if not EXAMPLES.is_dir():
        pytest.skip(f"the spec's example files are not at {EXAMPLES}")
    return EXAMPLES


@pytest.fixture
def examples(examples_source: Path, tmp_path: Path) -> Path:
    """Each example group rebuilt with its original paths: ``a__b__EVAL.yaml`` -> ``a/b/EVAL.yaml``."""
    for group in GROUPS:
        for file in sorted((examples_source / group).iterdir()):
            if file.name in ("LICENSE", "README.md", "eval.schema.json"):
                continue
            target = tmp_path / group / file.name.replace("__", "/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
    return tmp_path
