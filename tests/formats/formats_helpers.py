"""Helpers for the agent-format loader tests (imported by name, as ``blueprint_helpers`` is)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from pytest_weval.formats.load import load_agent_suite
from pytest_weval.formats.model import AgentCase, AgentSuite
from pytest_weval.scoring import check_pattern_syntax


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(path: Path, root: Path) -> AgentSuite:
    suite = load_agent_suite(path, rootdir=root, check_regex=check_pattern_syntax)
    assert suite is not None
    return suite


def case(suite: AgentSuite, case_id: str) -> AgentCase:
    found = [c for c in suite.cases if c.id == case_id]
    assert found, f"no case {case_id!r} in {[c.id for c in suite.cases]}"
    return found[0]


def one_case(tmp_path: Path, body: str, rel: str = "evals/x.eval.yaml"):
    suite = load(write(tmp_path, rel, body), tmp_path)
    assert len(suite.cases) == 1
    return suite.cases[0]


def problem_of(tmp_path: Path, body: str, rel: str = "evals/x.eval.yaml") -> str:
    found = one_case(tmp_path, body, rel)
    assert found.problem is not None, "expected the case to have a problem"
    return found.problem
