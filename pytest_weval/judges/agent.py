"""AgentV / AgentEvals LLM judges: the request and the JSON reply (agent-formats.md §1.9, §2.9, §5.4).

Three modes, chosen by the evaluator's rubrics:

* **freeform** (no rubrics): a system prompt with the JSON contract ``{score, hits, misses,
  reasoning}`` and a user prompt from the evaluator's template (or the default one with the four
  ``[[ ## name ## ]]`` sections), its ``{{ name }}`` variables filled in;
* **checklist** (rubrics without score ranges): ``checks[{id, satisfied, reasoning}]``;
* **score ranges** (any rubric with ``score_ranges``): ``checks[{id, score 0-10, reasoning}]``.

The protocol (section labels, rubric lines, JSON shapes) follows AgentV v2.6.1; the wording is
our own. Prompt building and reply parsing are pure. :func:`judge_agent_evaluator` calls the
caller's ``ask`` (the same ``Ask`` as the Weval judges), asks again when a reply does not parse,
and returns the evaluator's finalized result (the rubric score and ``negate`` come from
``scoring.agent``). The code judge's payload and program are ``engine.programs``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pytest_weval.formats.model import (
    AgentCase,
    AgentMessage,
    AgentOutput,
    Evaluator,
    EvaluatorResult,
    Rubric,
    ToolCall,
    verdict_of,
)
from pytest_weval.scoring.agent import error_result, finalize_result, score_rubric_checks

from .config import JUDGE_TEMPERATURE, JudgeSpec
from .consensus import Ask

__all__ = [
    "AGENT_JUDGE_ATTEMPTS",
    "AGENT_JUDGE_MAX_TOKENS",
    "DEFAULT_FREEFORM_TEMPLATE",
    "AgentJudgeFailed",
    "AgentJudgeReplyError",
    "JudgeMode",
    "ask_rubric_checks",
    "ask_rubric_reply",
    "checklist_messages",
    "extract_json_object",
    "freeform_messages",
    "judge_agent_evaluator",
    "judge_messages",
    "judge_mode",
    "message_dicts",
    "parse_checklist_reply",
    "parse_freeform_reply",
    "parse_reply",
    "parse_score_range_reply",
    "render_template",
    "retry_messages",
    "score_range_messages",
    "template_variables",
]

JudgeMode = Literal["freeform", "checklist", "score_ranges"]

AGENT_JUDGE_ATTEMPTS = 3  # AgentV asks up to 3 times for a reply that parses
AGENT_JUDGE_MAX_TOKENS = 2048  # a reply with one reasoning line per rubric item fits
MAX_HITS = 4  # AgentV keeps at most 4 hits and 4 misses of a freeform reply


class AgentJudgeReplyError(ValueError):
    """One judge reply that cannot be used (no JSON object, or not the mode's shape). The
    caller asks again; the message says what was wrong."""


class AgentJudgeFailed(Exception):
    """The judge gave no usable answer: every attempt failed to parse, or the call itself failed
    (the engine already retried transport errors). The case cannot be scored (ruling 26)."""

    def __init__(self, message: str, *, attempts: int = 0):
        self.message = message
        self.attempts = attempts
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


# --- the case as data --------------------------------------------------------------------------


def _call_dict(call: ToolCall) -> dict[str, Any]:
    # AgentV's trace shape {tool, input, output, id, duration_ms}; absent parts left out.
    out: dict[str, Any] = {"tool": call.name}
    if call.args is not None:
        out["input"] = call.args
    if call.output is not None:
        out["output"] = call.output
    if call.id is not None:
        out["id"] = call.id
    if call.duration_ms is not None:
        out["duration_ms"] = call.duration_ms
    return out


def _message_dict(message: AgentMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role}
    out["content"] = message.structured if message.structured is not None else message.text
    if message.tool_calls:
        out["tool_calls"] = [_call_dict(call) for call in message.tool_calls]
    if message.name is not None:
        out["name"] = message.name
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def message_dicts(messages: Sequence[AgentMessage]) -> list[dict[str, Any]]:
    """Messages as AgentV shows them to judges and code judges: ``{role, content, tool_calls?}``
    with ``content`` the message text (or its structured object) and tool calls as
    ``{tool, input, output, id, duration_ms}``."""
    return [_message_dict(m) for m in messages]


def _expected_dicts(case: AgentCase) -> list[dict[str, Any]]:
    if case.expected:
        return message_dicts(case.expected)
    if case.expected_structured is not None:
        return [{"role": "assistant", "content": case.expected_structured}]
    return []


def _pretty(value: Any) -> str:
    # JSON.stringify(value, null, 2): non-ASCII kept as is.
    return json.dumps(value, indent=2, ensure_ascii=False)


def template_variables(case: AgentCase, output: AgentOutput) -> dict[str, str]:
    """Every ``{{ name }}`` a judge template may use: the union of AgentV v2.6.1, v2.10 and the
    AgentEvals spec names (agent-formats.md §4, §1.9.1, §2.9). Message arrays are pretty JSON;
    texts are trimmed as AgentV trims them. ``file_changes`` (v2.10) is empty: we have none."""
    answer = output.answer.strip()
    criteria = case.criteria.strip()
    inputs = _pretty(message_dicts(case.input))
    expected = _pretty(_expected_dicts(case))
    outputs = _pretty(message_dicts(output.messages))
    return {
        "candidate_answer": answer,
        "answer": answer,
        "expected_outcome": criteria,
        "criteria": criteria,
        "question": case.question.strip(),
        "reference_answer": case.reference_answer.strip(),
        "input_messages": inputs,
        "input": inputs,
        "expected_messages": expected,
        "expected_output": expected,
        "output_messages": outputs,
        "output": outputs,
        "note": (case.note or "").strip(),
        "file_changes": "",
    }


_VARIABLE = re.compile(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}")


def render_template(template: str, variables: Mapping[str, str]) -> str:
    """``{{ name }}`` (spaces optional) replaced by ``variables[name]`` in one pass, so a value
    that itself holds ``{{ x }}`` is not expanded again; unknown names are left untouched."""

    def replace(match: re.Match[str]) -> str:
        value = variables.get(match.group(1))
        return match.group(0) if value is None else value

    return _VARIABLE.sub(replace, template)


# --- requests ----------------------------------------------------------------------------------

DEFAULT_FREEFORM_TEMPLATE = """You are an expert evaluator. Grade the candidate_answer by how well it achieves the expected_outcome of the original task.

Treat the reference_answer, when there is one, as a gold standard of a good response. It may be plain text or a sequence of expected agent messages with tool calls; in a sequence, the last message is the final expected answer. The candidate_answer need not match it word for word, but it should cover its key points in the same spirit.

Keep the evaluation short and specific.

[[ ## expected_outcome ## ]]
{{expected_outcome}}

[[ ## question ## ]]
{{question}}

[[ ## reference_answer ## ]]
{{reference_answer}}

[[ ## candidate_answer ## ]]
{{candidate_answer}}"""

FREEFORM_SYSTEM = """You must respond with a single JSON object of this shape:

{
  "score": <number from 0.0 to 1.0>,
  "hits": [<up to 4 short strings: specific things the answer achieves>],
  "misses": [<up to 4 short strings: specific failures or omissions; empty if none>],
  "reasoning": "<one or two sentences explaining the score>"
}"""

CHECKLIST_SYSTEM = """You are an expert evaluator. Judge the candidate answer against each rubric item.
You must respond with a single JSON object of this shape:
{
  "checks": [
    {
      "id": "string (the rubric item's id)",
      "satisfied": boolean,
      "reasoning": "string (brief explanation)"
    }
  ],
  "overall_reasoning": "string (summary)"
}"""

SCORE_RANGE_SYSTEM = """You are an expert evaluator. Score the candidate answer on each criterion.
You must respond with a single JSON object of this shape:
{
  "checks": [
    {
      "id": "string (the criterion's id)",
      "score": integer (0-10),
      "reasoning": "string (brief explanation of the score)"
    }
  ],
  "overall_reasoning": "string (summary, optional)"
}

The "score" must be an integer from 0 to 10 inside one of the score ranges defined for that criterion."""


def judge_mode(evaluator: Evaluator) -> JudgeMode:
    """Score ranges when any rubric has them, a checklist when there are rubrics, else freeform
    (AgentV: one rubric with ``score_ranges`` switches the whole evaluator)."""
    if not evaluator.rubrics:
        return "freeform"
    if any(r.score_ranges for r in evaluator.rubrics):
        return "score_ranges"
    return "checklist"


def _js_number(value: float) -> str:
    # How JavaScript prints a weight: 2 not 2.0, 0.5 as is.
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _context_sections(case: AgentCase, output: AgentOutput) -> list[str]:
    # question, expected_outcome, reference_answer (only when non-empty), candidate_answer
    parts = ["[[ ## question ## ]]", case.question, "", "[[ ## expected_outcome ## ]]", case.criteria, ""]
    reference = case.reference_answer
    if reference.strip():
        parts += ["[[ ## reference_answer ## ]]", reference, ""]
    parts += ["[[ ## candidate_answer ## ]]", output.answer, ""]
    return parts


def freeform_messages(case: AgentCase, evaluator: Evaluator, output: AgentOutput) -> list[dict[str, str]]:
    """System (the JSON contract) and user (the evaluator's template, else the default one) for a
    freeform ``llm_judge``."""
    template = evaluator.prompt if evaluator.prompt is not None else DEFAULT_FREEFORM_TEMPLATE
    user = render_template(template, template_variables(case, output))
    return [{"role": "system", "content": FREEFORM_SYSTEM}, {"role": "user", "content": user}]


def _rubric_line(rubric: Rubric) -> str:
    required = " (REQUIRED)" if rubric.required else ""
    weight = f" (weight: {_js_number(rubric.weight)})" if rubric.weight != 1.0 else ""
    return f"- [{rubric.id}]{required}{weight}: {rubric.outcome}"


def checklist_messages(case: AgentCase, evaluator: Evaluator, output: AgentOutput) -> list[dict[str, str]]:
    """A rubric checklist: the context sections, then ``[[ ## rubrics ## ]]`` with one
    ``- [id] (REQUIRED) (weight: w): outcome`` line per item (the labels only when they apply,
    as AgentV writes them)."""
    parts = ["You are an expert evaluator. Judge the candidate answer against each rubric item below.", ""]
    parts += _context_sections(case, output)
    parts.append("[[ ## rubrics ## ]]")
    parts += [_rubric_line(r) for r in evaluator.rubrics]
    parts += ["", "For each rubric item, decide whether it is satisfied and give brief reasoning."]
    return [{"role": "system", "content": CHECKLIST_SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


def score_range_messages(case: AgentCase, evaluator: Evaluator, output: AgentOutput) -> list[dict[str, str]]:
    """Score ranges: the context sections, then ``[[ ## scoring_criteria ## ]]`` with, per
    criterion, ``### Criterion: id (weight: w) [REQUIRED: min score n]``, ``Description: ...``
    and ``Score ranges:`` lines ``  - Score a-b: text``."""
    parts = [
        "You are an expert evaluator. Score the candidate answer on each criterion below using its score ranges.",
        "For each criterion, give an integer score from 0 to 10: the score range that best describes the answer.",
        "",
    ]
    parts += _context_sections(case, output)
    parts.append("[[ ## scoring_criteria ## ]]")
    for rubric in evaluator.rubrics:
        weight = f" (weight: {_js_number(rubric.weight)})" if rubric.weight != 1.0 else ""
        minimum = f" [REQUIRED: min score {rubric.required_min_score}]" if rubric.required_min_score is not None else ""
        parts += ["", f"### Criterion: {rubric.id}{weight}{minimum}"]
        if rubric.outcome:
            parts.append(f"Description: {rubric.outcome}")
        if rubric.score_ranges:
            parts.append("Score ranges:")
            for band in rubric.score_ranges:
                label = str(band.low) if band.low == band.high else f"{band.low}-{band.high}"
                parts.append(f"  - Score {label}: {band.outcome}")
    parts += ["", "For each criterion, give an integer score from 0 to 10 that lies in one of its score ranges."]
    return [{"role": "system", "content": SCORE_RANGE_SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


def judge_messages(case: AgentCase, evaluator: Evaluator, output: AgentOutput) -> list[dict[str, str]]:
    """The request for ``evaluator``'s mode (:func:`judge_mode`)."""
    mode = judge_mode(evaluator)
    if mode == "freeform":
        return freeform_messages(case, evaluator, output)
    if mode == "checklist":
        return checklist_messages(case, evaluator, output)
    return score_range_messages(case, evaluator, output)


def retry_messages(messages: list[dict[str, str]], attempt: int, attempts: int, reason: str) -> list[dict[str, str]]:
    """The request for attempt ``attempt`` (2, 3, ...) after a reply that did not parse.

    The engine caches identical requests, so asking again with the same messages would return
    the same bad reply. The last user message gets a note naming the attempt and what was wrong:
    a different request (its own cache entry, so a replayed run asks the same things in the same
    order), and a hint that helps the judge."""
    if attempt <= 1:
        return messages
    note = (
        f"\n\n(Attempt {attempt} of {attempts}: the previous reply could not be used: {reason[:300]}. "
        "Reply with only the JSON object the system prompt describes.)"
    )
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message["role"] == "user":
            message["content"] = (message["content"] or "") + note
            break
    else:
        out.append({"role": "user", "content": note.strip()})
    return out


# --- replies -----------------------------------------------------------------------------------

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?")


def extract_json_object(text: str | None) -> dict[str, Any]:
    """The JSON object in a judge's reply: code fences removed, then the first ``{`` to the last
    ``}``; when that span is not JSON, the first complete object that starts at the first ``{``."""
    if text is None or not text.strip():
        raise AgentJudgeReplyError("empty reply")
    cleaned = _FENCE.sub("", text).replace("```", "")
    start = cleaned.find("{")
    if start < 0:
        raise AgentJudgeReplyError(f"no JSON object in the reply: {_clip(text)}")
    end = cleaned.rfind("}")
    value: Any = None
    try:
        value = json.loads(cleaned[start : end + 1])
    except ValueError:
        try:
            value, _ = json.JSONDecoder().raw_decode(cleaned, start)
        except ValueError as exc:
            raise AgentJudgeReplyError(f"the reply's JSON does not parse ({exc}): {_clip(text)}") from None
    if not isinstance(value, dict):
        raise AgentJudgeReplyError(f"the reply's JSON is not an object: {_clip(text)}")
    return value


def _clip(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _strings(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AgentJudgeReplyError(f"'{key}' must be a list of strings")
    return [v for v in value if v.strip()]


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise AgentJudgeReplyError(f"'{key}' must be a string")
    return value


def parse_freeform_reply(text: str | None) -> dict[str, Any]:
    """``{score, hits, misses, reasoning}`` from a freeform reply. ``score`` must be a number from
    0 to 1 (AgentV's schema: out of range is a bad reply, asked again); ``hits`` and ``misses``
    lists of strings (blank ones dropped, at most 4 kept); ``reasoning`` a string if present."""
    data = extract_json_object(text)
    score: Any = data.get("score")
    if not _is_number(score):
        raise AgentJudgeReplyError("'score' must be a number from 0 to 1")
    if not 0.0 <= score <= 1.0:
        raise AgentJudgeReplyError(f"'score' must be from 0 to 1, not {score}")
    return {
        "score": float(score),
        "hits": _strings(data, "hits")[:MAX_HITS],
        "misses": _strings(data, "misses")[:MAX_HITS],
        "reasoning": _optional_text(data, "reasoning"),
    }


def _checks(data: Mapping[str, Any], rubrics: Sequence[Rubric]) -> dict[str, Mapping[str, Any]]:
    checks = data.get("checks")
    if not isinstance(checks, list):
        raise AgentJudgeReplyError("'checks' must be a list")
    by_id: dict[str, Mapping[str, Any]] = {}
    for check in checks:
        if not isinstance(check, dict) or not isinstance(check.get("id"), str):
            raise AgentJudgeReplyError("every check must be an object with a string 'id'")
        by_id.setdefault(check["id"], check)  # a repeated id: the first answer counts
    missing = [r.id for r in rubrics if r.id not in by_id]
    if missing:
        raise AgentJudgeReplyError("no check for " + ", ".join(f"[{m}]" for m in missing))
    return by_id


def parse_checklist_reply(text: str | None, rubrics: Sequence[Rubric]) -> dict[str, Any]:
    """``{checks: [{id, satisfied, reasoning}], overall_reasoning}`` with one check per rubric, in
    the rubrics' order. Every rubric must be answered (a skipped item is asked again rather than
    left out of the score); checks for unknown ids are dropped."""
    data = extract_json_object(text)
    by_id = _checks(data, rubrics)
    out = []
    for rubric in rubrics:
        check = by_id[rubric.id]
        if not isinstance(check.get("satisfied"), bool):
            raise AgentJudgeReplyError(f"check [{rubric.id}]: 'satisfied' must be true or false")
        out.append(
            {"id": rubric.id, "satisfied": check["satisfied"], "reasoning": _optional_text(check, "reasoning") or ""}
        )
    return {"checks": out, "overall_reasoning": _optional_text(data, "overall_reasoning")}


def parse_score_range_reply(text: str | None, rubrics: Sequence[Rubric]) -> dict[str, Any]:
    """``{checks: [{id, score, reasoning}], overall_reasoning}`` with ``score`` an integer 0-10
    (``7.0`` is accepted as 7), one check per rubric in the rubrics' order."""
    data = extract_json_object(text)
    by_id = _checks(data, rubrics)
    out = []
    for rubric in rubrics:
        check = by_id[rubric.id]
        score: Any = check.get("score")
        if not _is_number(score) or float(score) != int(score) or not 0 <= score <= 10:
            raise AgentJudgeReplyError(f"check [{rubric.id}]: 'score' must be an integer from 0 to 10")
        out.append({"id": rubric.id, "score": int(score), "reasoning": _optional_text(check, "reasoning") or ""})
    return {"checks": out, "overall_reasoning": _optional_text(data, "overall_reasoning")}


def parse_reply(text: str | None, evaluator: Evaluator) -> dict[str, Any]:
    """The reply parsed for ``evaluator``'s mode; :class:`AgentJudgeReplyError` when unusable."""
    mode = judge_mode(evaluator)
    if mode == "freeform":
        return parse_freeform_reply(text)
    if mode == "checklist":
        return parse_checklist_reply(text, evaluator.rubrics)
    return parse_score_range_reply(text, evaluator.rubrics)


# --- asking ------------------------------------------------------------------------------------


async def _ask_parsed(
    messages: list[dict[str, str]],
    evaluator: Evaluator,
    ask: Ask,
    judge_model_id: str,
    attempts: int,
) -> tuple[dict[str, Any], int]:
    """Ask until a reply parses: ``(parsed, attempts used)``, or :class:`AgentJudgeFailed`."""
    judge = JudgeSpec(id=None, model=judge_model_id)
    reason = ""
    for attempt in range(1, max(1, attempts) + 1):
        request = retry_messages(messages, attempt, attempts, reason)
        try:
            reply = await ask(judge, request, JUDGE_TEMPERATURE, AGENT_JUDGE_MAX_TOKENS)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the judge call failed (the engine already retried transport errors)
            raise AgentJudgeFailed(f"judge {judge_model_id} failed: {exc}", attempts=attempt) from exc
        try:
            return parse_reply(reply, evaluator), attempt
        except AgentJudgeReplyError as exc:
            reason = str(exc)
    raise AgentJudgeFailed(
        f"judge {judge_model_id} gave no usable reply in {max(1, attempts)} attempt(s): {reason}",
        attempts=max(1, attempts),
    )


async def judge_agent_evaluator(
    case: AgentCase,
    evaluator: Evaluator,
    output: AgentOutput,
    ask: Ask,
    judge_model_id: str,
    attempts: int = AGENT_JUDGE_ATTEMPTS,
) -> EvaluatorResult:
    """An ``llm_judge`` or ``rubric`` evaluator's finalized result: one judge call (asked again
    up to ``attempts`` times while the reply does not parse), then

    * freeform: the reply's score (0..1), verdict 0.8 / 0.6, hits, misses and reasoning;
    * rubrics: ``scoring.agent.score_rubric_checks`` on the checks (``overall_reasoning`` as the
      reasoning): weighted checklist or score ranges, with the required gates in ``details``;

    stamped with the evaluator's name, type, weight and ``required``, ``negate`` applied
    (``scoring.agent.finalize_result``). ``details`` names the judge and the attempts used.

    A judge that never gives a usable reply, or whose call fails, gives a result with ``error``
    set: the case is an error, not a 0 (ruling 26; AgentV scores a freeform one 0 silently).
    """
    mode = judge_mode(evaluator)
    try:
        parsed, used = await _ask_parsed(
            judge_messages(case, evaluator, output), evaluator, ask, judge_model_id, attempts
        )
    except AgentJudgeFailed as exc:
        failed = error_result(evaluator, str(exc))
        return failed.model_copy(update={"details": {"judge": judge_model_id, "attempts": exc.attempts}})
    about = {"judge": judge_model_id, "attempts": used}
    if mode != "freeform":
        result = score_rubric_checks(evaluator, parsed["checks"], reasoning=parsed["overall_reasoning"])
        details = {**result.details, **about} if isinstance(result.details, dict) else about
        return result.model_copy(update={"details": details})
    score = min(1.0, max(0.0, parsed["score"]))
    result = EvaluatorResult(
        name=evaluator.name,
        type=evaluator.type,
        score=score,
        verdict=verdict_of(score),
        hits=tuple(parsed["hits"]),
        misses=tuple(parsed["misses"]),
        reasoning=parsed["reasoning"],
        details=about,
    )
    return finalize_result(evaluator, result)


async def ask_rubric_reply(
    case: AgentCase,
    evaluator: Evaluator,
    output: AgentOutput,
    ask: Ask,
    judge_model_id: str,
    attempts: int = AGENT_JUDGE_ATTEMPTS,
) -> dict[str, Any]:
    """One judge call for all of a rubric evaluator's items: ``{mode, checks, overall_reasoning,
    attempts}`` (``checks`` as :func:`ask_rubric_checks` returns them). Raises
    :class:`AgentJudgeFailed` when no reply parses or the call fails."""
    mode = judge_mode(evaluator)
    if mode == "freeform":
        raise ValueError(f"evaluator '{evaluator.name}' has no rubrics")
    parsed, used = await _ask_parsed(judge_messages(case, evaluator, output), evaluator, ask, judge_model_id, attempts)
    return {
        "mode": mode,
        "checks": parsed["checks"],
        "overall_reasoning": parsed["overall_reasoning"],
        "attempts": used,
    }


async def ask_rubric_checks(
    case: AgentCase,
    evaluator: Evaluator,
    output: AgentOutput,
    ask: Ask,
    judge_model_id: str,
    attempts: int = AGENT_JUDGE_ATTEMPTS,
) -> list[dict[str, Any]]:
    """The judge's checks, one per rubric in the evaluator's order: checklist
    ``{id, satisfied: bool, reasoning: str}``, score ranges ``{id, score: int 0-10, reasoning: str}``.
    Raises :class:`AgentJudgeFailed` (the case errors)."""
    reply = await ask_rubric_reply(case, evaluator, output, ask, judge_model_id, attempts)
    return list(reply["checks"])
