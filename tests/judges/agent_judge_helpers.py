"""A case, an answer and three rubric evaluators (freeform, checklist, score ranges) shared by the
AgentV judge tests (test_agent_judge_prompts.py, test_agent_judges.py)."""

from __future__ import annotations

from pytest_weval.blueprint.model import Location
from pytest_weval.formats.model import (
    AgentCase,
    AgentMessage,
    AgentOutput,
    ContentBlock,
    Evaluator,
    Rubric,
    ScoreRange,
    ToolCall,
)

LOC = Location(path="evals/dataset.yaml", line=3)


def make_case(**kw) -> AgentCase:
    values = dict(
        id="case-1",
        criteria="  Explains the fix and names the function  ",
        input=(
            AgentMessage(role="system", text="Be brief."),
            AgentMessage(
                role="user",
                text="Why does parse() fail?\n\nfile body",
                blocks=(
                    ContentBlock(type="text", value="Why does parse() fail?"),
                    ContentBlock(type="file", value="file body", path="/abs/evals/parse.py"),
                ),
            ),
        ),
        expected=(AgentMessage(role="assistant", text="It reads past the end of the buffer."),),
        note="written by hand",
        location=LOC,
    )
    values.update(kw)
    return AgentCase(**values)


def make_output(answer: str = "  The loop reads one byte too many in parse().  ") -> AgentOutput:
    return AgentOutput(
        messages=(
            AgentMessage(
                role="assistant",
                text="",
                tool_calls=(ToolCall(name="read_file", args={"filePath": "parse.py"}, output="...", duration_ms=12.0),),
            ),
            AgentMessage(role="assistant", text=answer),
        ),
        duration_ms=1500.0,
        input_tokens=100,
        output_tokens=20,
        cost_usd=0.001,
    )


FREEFORM = Evaluator(name="quality", type="llm_judge")
CHECKLIST = Evaluator(
    name="rubric",
    type="rubric",
    rubrics=(
        Rubric(id="names-fn", outcome="Names the function parse()", required=True),
        Rubric(id="explains", outcome="Explains the off-by-one", weight=2.0),
        Rubric(id="brief", outcome="Is brief", weight=0.5, required=False),
    ),
)
RANGES = Evaluator(
    name="analytic",
    type="rubric",
    rubrics=(
        Rubric(
            id="accuracy",
            outcome="Technical accuracy",
            weight=3.0,
            required_min_score=7,
            score_ranges=(
                ScoreRange(low=0, high=3, outcome="Wrong"),
                ScoreRange(low=4, high=6, outcome="Partly right"),
                ScoreRange(low=7, high=9, outcome="Right"),
                ScoreRange(low=10, high=10, outcome="Exact"),
            ),
        ),
        Rubric(id="clarity", outcome="", score_ranges=(ScoreRange(low=0, high=10, outcome="Any"),)),
    ),
)
