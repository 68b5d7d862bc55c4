"""Paths and helpers shared by the blueprint parser tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

SPEC_DIR = Path(os.environ.get("WEVAL_SPEC_DIR", "/work/shared/spec"))
CORPUS_DIR = Path(os.environ.get("WEVAL_CORPUS_DIR", "/work/shared/corpus/weval-configs"))


def write_collections(root: Path, collections: dict[str, list[str]]) -> Path:
    """models/NAME.json files under `root`, as a configs repository has them."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    for name, members in collections.items():
        (root / "models" / f"{name}.json").write_text(json.dumps(members), encoding="utf-8")
    return root
