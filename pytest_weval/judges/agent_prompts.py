"""AgentV / AgentEvals LLM judges: the requests (agent-formats.md §1.9, §2.9, §4, §5.4).

Three modes, chosen by the evaluator's rubrics (:func:`judge_mode`):

* **freeform** (no rubrics): a system prompt with the JSON contract ``{score, hits, misses,
  reasoning}`` and a user prompt from the evaluator's template (or the default one with the four
  ``[[ ## name ## ]]`` sections), its ``{{ name }}`` variables filled in;
* **checklist** (rubrics without score ranges): ``checks[{id, satisfied, reasoning}]``;
* **score ranges** (any rubric with ``score_ranges``): ``checks[{id, score 0-10, reasoning}]``.

The protocol (section labels, rubric lines, JSON shapes) follows AgentV v2.6.1; the wording is
our own. Pure. The replies and the asking are ``judges.agent``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pytest_weval.formats.messages import expected_message_dicts, message_dicts
from pytest_weval.formats.model import AgentCase, AgentOutput, Evaluator, Rubric

__all__ = [
    "DEFAULT_FREEFORM_TEMPLATE",
    "JudgeMode",
    "checklist_messages",
    "freeform_messages",
    "judge_messages",
    "judge_mode",
    "render_template",
    "retry_messages",
    "score_range_messages",
    "template_variables",
]

JudgeMode = Literal["freeform", "checklist", "score_ranges"]


# --- the case as data --------------------------------------------------------------------------


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
    expected = _pretty(expected_message_dicts(case))
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
