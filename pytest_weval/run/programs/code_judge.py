"""Code judges: programs from eval files that score a case (agent-formats.md §1.8, §2.8, §7.6;
rulings 26-27).

:func:`run_code_judge` runs one through a :class:`~pytest_weval.run.programs.runner.ProgramRunner`
(which decides whether it may run at all, and how): the case as JSON on stdin
(:func:`code_judge_payload`), ``{score, hits, misses, reasoning}`` read from stdout
(:func:`parse_code_judge_stdout`). A judge that cannot give a score makes the case an error,
not a 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_weval.formats.messages import expected_message_dicts, message_dicts
from pytest_weval.formats.model import AgentCase, AgentOutput, Evaluator, EvaluatorResult, verdict_of
from pytest_weval.run.programs.runner import (
    ProgramError,
    ProgramOutputError,
    ProgramRunner,
    describe_command,
    finite_float,
    json_object,
)

__all__ = [
    "DEFAULT_CODE_JUDGE_TIMEOUT_S",
    "case_needs_exec",
    "code_judge_payload",
    "parse_code_judge_stdout",
    "run_code_judge",
    "to_snake_case_deep",
]

DEFAULT_CODE_JUDGE_TIMEOUT_S = 60.0


async def run_code_judge(
    runner: ProgramRunner,
    evaluator: Evaluator,
    case: AgentCase,
    output: AgentOutput,
    *,
    cwd: Path | str,
    timeout_s: float = DEFAULT_CODE_JUDGE_TIMEOUT_S,
) -> EvaluatorResult:
    """Run a ``code_judge`` (§1.8) with ``runner`` in ``cwd`` under ``timeout_s`` (the caller's
    choice: the evaluator's own, else the eval file's folder and the default), with
    :func:`code_judge_payload` as pretty JSON on stdin, and read its stdout
    (:func:`parse_code_judge_stdout`).

    The result is stamped with the evaluator's name, type, weight and ``required``; ``negate``
    is the scoring layer's (``scoring.agent.finalize_result``). A judge that is not allowed,
    cannot start, crashes, exits non-zero, times out or prints no JSON object gives a result
    with ``error`` set: the case is an error, not a 0 (ruling 26).
    """
    base: dict[str, Any] = dict(
        name=evaluator.name, type=evaluator.type, weight=evaluator.weight, required=evaluator.required
    )
    command = evaluator.command
    if command is None or (not isinstance(command, str) and not command):
        return EvaluatorResult(**base, error=f"code judge '{evaluator.name}' has no command")
    described = f"code judge '{evaluator.name}' ({describe_command(command)})"
    stdin = json.dumps(code_judge_payload(case, evaluator, output), indent=2, ensure_ascii=False).encode("utf-8")
    try:
        result = await runner.run(command, cwd=cwd, stdin=stdin, timeout_s=timeout_s, what=described)
    except ProgramError as exc:
        return EvaluatorResult(**base, error=str(exc))
    failure = result.failure(described, timeout_s)
    if failure is not None:
        return EvaluatorResult(**base, error=str(failure))
    try:
        parsed = parse_code_judge_stdout(result.stdout_text)
    except ProgramOutputError as exc:
        cut = " (its stdout was cut at the output cap)" if result.truncated else ""
        return EvaluatorResult(**base, error=f"{described} {exc}{cut}")
    return EvaluatorResult(
        **base,
        score=parsed["score"],
        verdict=verdict_of(parsed["score"]),
        hits=parsed["hits"],
        misses=parsed["misses"],
        reasoning=parsed["reasoning"],
        details=parsed["details"],
    )


def case_needs_exec(case: AgentCase) -> bool:
    """Whether scoring ``case`` runs a program (a ``code_judge``, composites included), so an item
    can error before its target is asked when programs are not allowed."""

    def walk(evaluators: Sequence[Evaluator]) -> bool:
        return any(e.type == "code_judge" or walk(e.evaluators) for e in evaluators)

    return walk(case.evaluators)


# --- the payload ---------------------------------------------------------------------------------


def _snake(key: str) -> str:
    # AgentV's toSnakeCase: a key starting with a capital (a tool name) is kept as is.
    if key[:1].isupper():
        return key
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key)


def to_snake_case_deep(value: Any) -> Any:
    """Every object key camelCase -> snake_case, deeply (AgentV converts the whole payload,
    ``config`` and tool inputs included)."""
    if isinstance(value, Mapping):
        return {_snake(str(k)): to_snake_case_deep(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_snake_case_deep(v) for v in value]
    return value


def _trace_summary(output: AgentOutput) -> dict[str, Any]:
    calls = output.tool_calls
    by_name: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    for call in calls:
        by_name[call.name] = by_name.get(call.name, 0) + 1
        if call.duration_ms is not None:
            durations.setdefault(call.name, []).append(call.duration_ms)
    summary: dict[str, Any] = {
        "event_count": len(calls),
        "tool_names": sorted(by_name),
        "tool_calls_by_name": by_name,
        "error_count": 0,
    }
    if output.input_tokens is not None or output.output_tokens is not None:
        summary["token_usage"] = {"input": output.input_tokens or 0, "output": output.output_tokens or 0}
    if output.cost_usd is not None:
        summary["cost_usd"] = output.cost_usd
    if output.duration_ms is not None:
        summary["duration_ms"] = output.duration_ms
    if durations:
        summary["tool_durations"] = durations
    return summary


def _trace_summary_camel(output: AgentOutput) -> dict[str, Any]:
    # The AgentEvals spec's traceSummary (§2.8).
    names = sorted({call.name for call in output.tool_calls})
    inputs, outputs = output.input_tokens, output.output_tokens
    total = None if inputs is None and outputs is None else (inputs or 0) + (outputs or 0)
    return {
        "eventCount": len(output.tool_calls),
        "toolNames": names,
        "toolCallCount": len(output.tool_calls),
        "llmCallCount": sum(1 for m in output.messages if m.role == "assistant"),
        "inputTokens": inputs,
        "outputTokens": outputs,
        "totalTokens": total,
        "costUsd": output.cost_usd,
        "durationMs": output.duration_ms,
    }


def code_judge_payload(case: AgentCase, evaluator: Evaluator, output: AgentOutput) -> dict[str, Any]:
    """The code judge's stdin object (agent-formats.md §1.8, §2.8, §7.6): AgentV v2.6.1's
    snake_case keys (converted deeply, as AgentV does), the v2.10 names (``criteria``,
    ``expected_output``, ``answer``, ``output``, ``input``) and the AgentEvals spec's camelCase
    keys, so a judge written for any of them finds what it reads. It goes to the judge as
    ``json.dumps(payload, indent=2)``.

    ``guideline_files`` is empty: the model does not tell guideline files from input files, so
    every ``file`` block is in ``input_files``."""
    inputs = message_dicts(case.input)
    expected = expected_message_dicts(case)
    outputs = message_dicts(output.messages) if output.messages else None
    files = case.input_files
    config = dict(evaluator.config) if evaluator.config else None
    snake: dict[str, Any] = {
        "question": case.question,
        "expected_outcome": case.criteria,
        "expected_messages": expected,
        "reference_answer": case.reference_answer,
        "candidate_answer": output.answer,
        "output_messages": outputs,
        "guideline_files": [],
        "input_files": files,
        "input_messages": inputs,
        "trace_summary": _trace_summary(output),
        "config": config,
        # v2.10 renames
        "criteria": case.criteria,
        "expected_output": expected,
        "answer": output.answer,
        "output": outputs,
        "input": inputs,
        "token_usage": (
            {"input": output.input_tokens or 0, "output": output.output_tokens or 0}
            if output.input_tokens is not None or output.output_tokens is not None
            else None
        ),
        "cost_usd": output.cost_usd,
        "duration_ms": output.duration_ms,
    }
    payload: dict[str, Any] = to_snake_case_deep(snake)
    payload.update(
        {
            "candidateAnswer": payload["candidate_answer"],
            "expectedOutcome": payload["expected_outcome"],
            "expectedMessages": payload["expected_messages"],
            "referenceAnswer": payload["reference_answer"],
            "outputMessages": payload["output_messages"],
            "inputMessages": payload["input_messages"],
            "inputFiles": payload["input_files"],
            "guidelineFiles": payload["guideline_files"],
            "traceSummary": _trace_summary_camel(output),
        }
    )
    return payload


# --- the reply -----------------------------------------------------------------------------------


def parse_code_judge_stdout(text: str) -> dict[str, Any]:
    """``{score, hits, misses, reasoning, details}`` from a code judge's stdout (§1.8): one JSON
    object (the whole trimmed output, else its last line that is one, for judges that log first).
    As AgentV: a missing or non-numeric ``score`` is 0, the score is clamped to [0, 1], blank and
    non-string hits/misses are dropped, ``details`` kept when it is an object. No JSON object:
    :class:`ProgramOutputError`."""
    trimmed = text.strip()
    data = json_object(trimmed) if trimmed else None
    if data is None:
        for line in reversed(trimmed.splitlines()):
            if line.strip().startswith("{"):
                data = json_object(line.strip())
                if data is not None:
                    break
    if data is None:
        shown = " ".join(trimmed.split())[:200] or "(nothing)"
        raise ProgramOutputError(f"printed no JSON object on stdout: {shown}")
    number = finite_float(data.get("score"))
    score = min(1.0, max(0.0, number)) if number is not None else 0.0

    def strings(key: str) -> tuple[str, ...]:
        value = data.get(key)
        if not isinstance(value, list):
            return ()
        return tuple(v for v in value if isinstance(v, str) and v.strip())

    reasoning = data.get("reasoning")
    details = data.get("details")
    return {
        "score": score,
        "hits": strings("hits"),
        "misses": strings("misses"),
        "reasoning": reasoning if isinstance(reasoning, str) else None,
        "details": details if isinstance(details, dict) else None,
    }
