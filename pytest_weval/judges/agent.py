"""AgentV / AgentEvals LLM judges: the JSON replies and the asking (agent-formats.md §1.9, §2.9,
§5.4; ruling 26).

The requests, one per mode (freeform, rubric checklist, score ranges), are
``judges.agent_prompts``. Reply parsing is pure. :func:`judge_agent_evaluator` calls the
caller's ``ask`` (the same ``Ask`` as the Weval judges), asks again when a reply does not parse,
and returns the evaluator's finalized result (the rubric score and ``negate`` come from
``scoring.agent``). The code judge's payload and program are ``run.programs.code_judge``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_weval.errors import WevalError
from pytest_weval.formats.model import AgentCase, AgentOutput, Evaluator, EvaluatorResult, Rubric, verdict_of
from pytest_weval.scoring.agent import error_result, finalize_result, score_rubric_checks

from .agent_prompts import judge_messages, judge_mode, retry_messages
from .config import JUDGE_TEMPERATURE, JudgeSpec
from .consensus import Ask

__all__ = [
    "AGENT_JUDGE_ATTEMPTS",
    "AGENT_JUDGE_MAX_TOKENS",
    "AgentJudgeFailed",
    "AgentJudgeReplyError",
    "extract_json_object",
    "judge_agent_evaluator",
    "parse_checklist_reply",
    "parse_freeform_reply",
    "parse_reply",
    "parse_score_range_reply",
]

AGENT_JUDGE_ATTEMPTS = 3  # AgentV asks up to 3 times for a reply that parses
AGENT_JUDGE_MAX_TOKENS = 2048  # a reply with one reasoning line per rubric item fits
MAX_HITS = 4  # AgentV keeps at most 4 hits and 4 misses of a freeform reply


class AgentJudgeReplyError(WevalError, ValueError):
    """One judge reply that cannot be used (no JSON object, or not the mode's shape). The
    caller asks again; the message says what was wrong."""


class AgentJudgeFailed(WevalError):
    """The judge gave no usable answer: every attempt failed to parse, or the call itself failed
    (the engine already retried transport errors). The case cannot be scored (ruling 26)."""

    def __init__(self, message: str, *, attempts: int = 0):
        self.message = message
        self.attempts = attempts
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


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
