"""Helpers shared by the tests of programs named by eval files (test_programs.py,
test_code_judge.py, test_cli_target.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_weval.blueprint.model import Location
from pytest_weval.formats.model import AgentCase, AgentMessage, AgentOutput, ContentBlock
from pytest_weval.run.programs.runner import ProgramRunner

PY = sys.executable
HERE = Path(__file__).parent / "programs"
LOC = Location(path="evals/dataset.yaml", line=1)
NO_OUTPUT = AgentOutput()


def runner(**kw) -> ProgramRunner:
    kw.setdefault("allow_exec", True)
    return ProgramRunner(**kw)


def make_case(**kw) -> AgentCase:
    values = dict(
        id="echo case",
        criteria="Echoes the prompt",
        input=(
            AgentMessage(
                role="user",
                text="Say it's $(touch pwned) `x`",
                blocks=(
                    ContentBlock(type="text", value="Say it's $(touch pwned) `x`"),
                    ContentBlock(type="file", value="A", path=str(HERE / "cli_agent.py")),
                    ContentBlock(type="file", value="B", path="/tmp/with space.txt"),
                ),
            ),
        ),
        location=LOC,
    )
    values.update(kw)
    return AgentCase(**values)
