"""Agent eval files as typed objects: AgentV eval YAML and AgentEvals ``EVAL.yaml``, after
aliases and suite defaults (docs/agent-formats.md). One model for the three dialects in scope
(AgentV classic v2.6.1, AgentV transitional v2.10.0, AgentEvals), so the loader is the only
place that knows the spellings, and scoring, judging and running read one shape.

Pure: no pytest, no network. Paths here are absolute (resolved by the loader); ``Location``
says where each part was written, for located errors.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_weval.blueprint.model import Location

Dialect = Literal["agentv-classic", "agentv", "agentevals"]
Verdict = Literal["pass", "borderline", "fail"]

PASS_AT = 0.8  # verdict: pass >= 0.8, borderline >= 0.6, else fail (agent-formats.md §1.7, §2.5)
BORDERLINE_AT = 0.6


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ToolCall(_Frozen):
    """One tool call, AgentV's ``{tool, input, output}`` and OpenAI's
    ``{function: {name, arguments}}`` read into one shape."""

    name: str
    args: Any = None  # the call's input (OpenAI ``arguments`` JSON already parsed)
    output: Any = None
    id: str | None = None
    duration_ms: float | None = None


class ContentBlock(_Frozen):
    """A part of a message: ``text`` (value: str), ``file`` (value: its text, ``path`` the
    resolved file), ``image`` (value: a path or base64, ``path`` when a file), ``json``
    (value: the object)."""

    type: Literal["text", "file", "image", "json"]
    value: Any
    path: str | None = None


class AgentMessage(_Frozen):
    role: Literal["system", "user", "assistant", "tool"]
    # The message as text, the way it is sent to a chat model: text blocks and file contents
    # joined by blank lines, an object as pretty JSON (agent-formats.md §1.4).
    text: str = ""
    blocks: tuple[ContentBlock, ...] = ()
    structured: Any = None  # an object or list given as the content itself (structured output)
    tool_calls: tuple[ToolCall, ...] = ()
    name: str | None = None
    tool_call_id: str | None = None


class ScoreRange(_Frozen):
    low: int  # 0..10 inclusive
    high: int
    outcome: str


class Rubric(_Frozen):
    id: str
    outcome: str
    weight: float = 1.0
    required: bool = False
    required_min_score: int | None = None  # score-range mode: the lowest raw score (0..10) allowed
    score_ranges: tuple[ScoreRange, ...] = ()  # empty: checklist item
    location: Location | None = None


class ExpectedToolCall(_Frozen):
    tool: str
    args: Any = None  # None or "any": not checked; else the expected input
    max_duration_ms: float | None = None
    args_match: str | tuple[str, ...] | None = None  # per-item override of the evaluator's


class Aggregator(_Frozen):
    """A composite's rule: weighted_average (``weights`` by child name), minimum, maximum,
    safety_gate (``required`` child names, 0.6), all_or_nothing / threshold (``threshold``)."""

    type: Literal["weighted_average", "minimum", "maximum", "safety_gate", "all_or_nothing", "threshold"]
    weights: dict[str, float] = Field(default_factory=dict)
    required: tuple[str, ...] = ()
    threshold: float | None = None


EvaluatorType = Literal[
    "llm_judge",
    "rubric",
    "code_judge",
    "tool_trajectory",
    "composite",
    "contains",
    "regex",
    "equals",
    "is_json",
]


class Evaluator(_Frozen):
    """One evaluator of a case (``assert`` / ``evaluators`` entry, or the rubric evaluator made
    from inline ``rubrics``). Fields not used by its type stay at their defaults."""

    name: str
    type: EvaluatorType
    weight: float = 1.0  # finite, >= 0; 0 keeps it as information only
    required: float | None = None  # the score it must reach (``required: true`` is 0.8)
    negate: bool = False
    # contains / regex / equals
    value: Any = None
    # llm_judge: the user prompt template (a file's text, or inline); None: AgentV's default
    prompt: str | None = None
    prompt_path: str | None = None
    judge: str | None = None  # the evaluator's own judge target, when it names one
    # llm_judge with rubrics, or rubric
    rubrics: tuple[Rubric, ...] = ()
    # code_judge: argv (a list) or a shell string (run with ``sh -c``), in ``cwd``
    command: tuple[str, ...] | str | None = None
    cwd: str | None = None
    timeout_s: float | None = None
    # tool_trajectory
    mode: Literal["any_order", "in_order", "exact", "subset", "superset"] | None = None
    minimums: dict[str, int] = Field(default_factory=dict)
    expected: tuple[ExpectedToolCall, ...] = ()
    args_match: str | tuple[str, ...] = "superset"  # exact | superset | subset | ignore | field paths
    # composite
    evaluators: tuple[Evaluator, ...] = ()
    aggregator: Aggregator | None = None
    # every key the format does not name, passed to code judges and templates as ``config``
    config: dict[str, Any] = Field(default_factory=dict)
    location: Location | None = None


class AgentCase(_Frozen):
    """One test case; with a target it is one pytest item."""

    id: str
    criteria: str = ""
    input: tuple[AgentMessage, ...] = ()
    expected: tuple[AgentMessage, ...] = ()  # the reference messages (may be empty)
    expected_structured: Any = None  # an object given as the expected output (structured)
    evaluators: tuple[Evaluator, ...] = ()  # in running order; empty: one freeform llm_judge
    targets: tuple[str, ...] = ()  # the case's own target(s); empty: the suite's
    conversation_id: str | None = None
    note: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float | None = None
    # A mistake that keeps this case from running as written (a missing fixture, an invalid
    # evaluator): its items error with it, located; the file's other cases still run.
    problem: str | None = None
    problem_location: Location | None = None  # where the problem is (its file may be a case file)
    location: Location

    @property
    def question(self) -> str:
        """Every text part of every input message, trimmed, joined with single spaces (AgentV
        v2.6.1, agent-formats.md §1.3)."""
        parts = []
        for message in self.input:
            for block in message.blocks:
                if block.type == "text" and str(block.value).strip():
                    parts.append(str(block.value).strip())
            if not message.blocks and message.text.strip():
                parts.append(message.text.strip())
        return " ".join(parts)

    @property
    def input_files(self) -> list[str]:
        """The paths of the input's ``file`` blocks, each once, in order (a code judge's
        ``input_files``, a ``cli`` target's ``{FILES}``)."""
        files: list[str] = []
        for message in self.input:
            for block in message.blocks:
                if block.type == "file" and block.path and block.path not in files:
                    files.append(block.path)
        return files

    @property
    def reference_answer(self) -> str:
        """The last expected message's content: text as is, an object as pretty JSON, tool calls
        as JSON when there is no content (agent-formats.md §1.3)."""
        if not self.expected:
            if self.expected_structured is not None:
                return json.dumps(self.expected_structured, indent=2, ensure_ascii=False)
            return ""
        last = self.expected[-1]
        if last.structured is not None:
            return json.dumps(last.structured, indent=2, ensure_ascii=False)
        if not last.text and last.tool_calls:
            return json.dumps([c.model_dump(exclude_none=True) for c in last.tool_calls], indent=2)
        return last.text


class TargetDef(_Frozen):
    """A named entry of ``.agentv/targets.yaml``."""

    name: str
    provider: str
    model: str | None = None
    judge_target: str | None = None
    command: tuple[str, ...] | str | None = None  # cli: ``command_template`` (a string) or argv
    cwd: str | None = None
    timeout_s: float | None = None
    files_format: str | None = None
    # every other key of the entry as written (endpoint, api_key, version, healthcheck, ...);
    # ``${{ VAR }}`` references are kept as text (formats/targets.py)
    config: dict[str, Any] = Field(default_factory=dict)
    location: Location | None = None


class AgentSuite(_Frozen):
    """One agent eval file."""

    path: str  # relative to the rootdir, "/" separated (as a blueprint's)
    id: str  # the AgentEvals ``name``, AgentV ``dataset``, else from the path
    dialect: Dialect
    title: str = ""
    description: str | None = None
    tags: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()  # the file's target(s); empty: "default"
    cases: tuple[AgentCase, ...] = ()
    named_targets: dict[str, TargetDef] = Field(default_factory=dict)  # from .agentv/targets.yaml
    directory: str  # absolute folder of the file: where relative paths and programs start


class AgentOutput(_Frozen):
    """What the target gave for a case: its messages (the last assistant one is the answer)
    and, for agents, the trace of tool calls with their timings."""

    messages: tuple[AgentMessage, ...] = ()
    duration_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None

    @property
    def answer(self) -> str:
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.text
        return ""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(call for message in self.messages for call in message.tool_calls)


class EvaluatorResult(_Frozen):
    """One evaluator's result (AgentV's ``evaluator_results[]`` entry). ``error`` set: the
    evaluator could not score (a judge reply never parsed, a code judge that crashed): the
    case is an error, not a 0 (docs/rulings.md, ruling 26)."""

    name: str
    type: str
    score: float = 0.0
    weight: float = 1.0
    verdict: Verdict = "fail"
    hits: tuple[str, ...] = ()
    misses: tuple[str, ...] = ()
    reasoning: str | None = None
    details: Any = None
    error: str | None = None
    required: float | None = None
    children: tuple[EvaluatorResult, ...] = ()


def verdict_of(score: float) -> Verdict:
    return "pass" if score >= PASS_AT else "borderline" if score >= BORDERLINE_AT else "fail"
