"""The plan streams its totals (run/plan.py): the example suite's plan.json is the one the
earlier plan, which kept an object per request, wrote (tests/run/data/examples_plan.json,
recorded before the change; its `unusable_models`, added since, is empty for the examples)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).parent / "data" / "examples_plan.json"


def test_the_examples_plan_is_what_the_earlier_plan_computed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "example_blueprints", project / "example_blueprints")
    shutil.copy(ROOT / "pyproject.toml", project / "pyproject.toml")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "example_blueprints",
            f"--weval-out={tmp_path / 'out'}",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "out" / "plan.json").read_text()) == json.loads(RECORDED.read_text())
