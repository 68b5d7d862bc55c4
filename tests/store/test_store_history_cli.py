"""``python -m pytest_weval history`` as a command in a shell: a reader that stops early
(``| head``) gets no traceback, and the top-level help names every cache action."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_weval.engine.store.history import history_for

ROOT = Path(__file__).resolve().parents[2]
RUNS = 400  # far more JSON than a pipe holds, so the writer meets the closed pipe


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_history_piped_into_head_ends_without_a_traceback(tmp_path: Path):
    history = history_for("sqlite", tmp_path / ".weval_cache")
    for n in range(RUNS):
        run = {
            "id": f"run-{n:04d}",
            "started": 1_700_000_000.0 + n,
            "ended": 1_700_000_001.0 + n,
            "host": "ci",
            "models": ["openai:a"],
            "judges": [],
            "figures": {"openai:a": {"mean": 0.5, "ci95": [0.25, 0.75], "items": 4, "selection": "s"}},
        }
        assert history.record(run, [])
    for args in (("--json",), ()):
        reader = subprocess.Popen(
            [sys.executable, "-m", "pytest_weval", "history", *args],
            cwd=tmp_path,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert reader.stdout is not None and reader.stderr is not None
        reader.stdout.readline()  # as `head -1` does, then goes away
        reader.stdout.close()
        errors = reader.stderr.read().decode()
        reader.wait(timeout=60)
        assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors


def test_the_top_level_help_lists_every_cache_action():
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "--help"], env=_env(), capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0
    line = next(line for line in shown.stdout.splitlines() if line.strip().startswith("cache "))
    for action in ("stats", "prune", "check", "repair"):
        assert action in line, line
