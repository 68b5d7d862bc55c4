"""One test case of an agent eval file -> an ``AgentCase`` (docs/agent-formats.md §1.3-§1.5,
§2.3, §4, §7.2): its ``id``, criterion, metadata, ``execution``, messages and evaluators, with
the suite defaults it inherits (:class:`SuiteDefaults`).

A mistake in the case, or in a default it inherits, is the case's ``problem``; the file's other
cases still load.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.case_sources import CaseEntry
from pytest_weval.formats.context import Context, Problem, describe, finite_number, text_value
from pytest_weval.formats.evaluators import parse_evaluator_list
from pytest_weval.formats.messages import parse_expected, parse_input
from pytest_weval.formats.model import AgentCase, AgentMessage, Evaluator
from pytest_weval.formats.rubrics import parse_rubrics


@dataclasses.dataclass
class SuiteDefaults:
    """What every case of the suite inherits."""

    input: tuple[AgentMessage, ...] = ()
    input_problem: Problem | None = None
    evaluators: tuple[Evaluator, ...] | None = None  # None: the suite has no list
    evaluators_problem: Problem | None = None
    override: bool = False  # v2.6.1: a case's own list replaces the suite's
    evaluator_kind: Any = None
    timeout_s: float | None = None


def suite_defaults(
    ctx: Context, document: dict[str, Any], execution: dict[str, Any], *, case_list_key: str | None
) -> SuiteDefaults:
    """What every case of the suite inherits: its ``input``, its evaluators (and whether a case's
    own list replaces them), the ``evaluator`` kind and ``execution.timeout_seconds``. A mistake
    in the input or the evaluators is kept for the cases that use them; a bad timeout is the
    file's error."""
    defaults = SuiteDefaults(evaluator_kind=document.get("evaluator"))
    if document.get("input") is not None:
        try:
            defaults.input = parse_input(ctx, document, "input", "input")
        except Problem as problem:
            defaults.input_problem = problem
    if document.get("assert") is not None:
        owner, key, field = document, "assert", "assert"
    elif execution.get("evaluators") is not None:
        owner, key, field = execution, "evaluators", "execution.evaluators"
    else:
        owner = None
    if owner is not None:
        try:
            defaults.evaluators = parse_evaluator_list(ctx, owner, key, field)
        except Problem as problem:
            defaults.evaluators_problem = problem
    classic_list = case_list_key == "evalcases" or (case_list_key is None and ctx.dialect == "agentv-classic")
    defaults.override = classic_list and document.get("assert") is None
    timeout = execution.get("timeout_seconds")
    if timeout is not None:
        if not finite_number(timeout) or timeout <= 0:
            raise BlueprintError(
                f"`execution.timeout_seconds` must be a number > 0, not {describe(timeout)}",
                ctx.where.key(execution, "timeout_seconds", "execution.timeout_seconds"),
            )
        defaults.timeout_s = float(timeout)
    return defaults


def build_case(suite_ctx: Context, entry: CaseEntry, index: int, defaults: SuiteDefaults) -> AgentCase:
    """The case ``entry`` holds (the ``index``-th of the suite), or one that carries its problem."""
    fallback = entry.fallback_id or f"case-{index + 1}"
    if entry.problem is not None or not isinstance(entry.raw, dict):
        problem = entry.problem or Problem(f"a test case must be a mapping, not {describe(entry.raw)}", entry.location)
        return AgentCase(
            id=fallback, problem=problem.text(), problem_location=problem.location, location=entry.location
        )
    raw: dict[str, Any] = entry.raw
    ctx = suite_ctx.with_where(entry.where)
    location = ctx.where.at(raw)
    fields: dict[str, Any] = {"id": fallback, "location": location, "timeout_s": defaults.timeout_s}
    steps = (_case_id, _case_meta, _case_execution, _case_messages, _case_evaluators)
    try:
        for step in steps:
            fields.update(step(ctx, raw, defaults))
    except Problem as problem:
        return AgentCase(**fields, problem=problem.text(), problem_location=problem.location)
    return AgentCase(**fields)


def _case_id(ctx: Context, raw: dict[str, Any], defaults: SuiteDefaults) -> dict[str, Any]:
    written = raw.get("id")
    case_id = text_value(written)
    if case_id is None or not case_id.strip():
        raise ctx.problem_at(
            raw,
            "id",
            "the test case has no `id`" if written is None else f"`id` must be text, not {describe(written)}",
            hint="give each case a unique `id:` (it names the test)",
        )
    return {"id": case_id.strip()}


def _case_meta(ctx: Context, raw: dict[str, Any], defaults: SuiteDefaults) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    criteria_key = next((k for k in ("criteria", "expected_outcome", "outcome") if raw.get(k) is not None), None)
    if criteria_key is not None:
        criteria = text_value(raw[criteria_key])
        if criteria is None:
            raise ctx.problem_key(
                raw, criteria_key, criteria_key, f"`{criteria_key}` must be text, not {describe(raw[criteria_key])}"
            )
        fields["criteria"] = criteria
    for key in ("description", "note", "conversation_id"):
        if raw.get(key) is not None:
            value = text_value(raw[key])
            if value is None:
                raise ctx.problem_key(raw, key, key, f"`{key}` must be text, not {describe(raw[key])}")
            fields[key] = value
    metadata = raw.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise ctx.problem_key(
                raw, "metadata", "metadata", f"`metadata` must be a mapping, not {describe(metadata)}"
            )
        fields["metadata"] = metadata
    fields["tags"] = tags_of(raw.get("tags"), (metadata or {}).get("tags"))
    return fields


def _case_execution(ctx: Context, raw: dict[str, Any], defaults: SuiteDefaults) -> dict[str, Any]:
    execution = raw.get("execution")
    if execution is None:
        return {}
    if not isinstance(execution, dict):
        raise ctx.problem_key(
            raw, "execution", "execution", f"`execution` must be a mapping, not {describe(execution)}"
        )
    fields: dict[str, Any] = {}
    if execution.get("targets") is not None:
        targets = execution["targets"]
        if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t.strip() for t in targets):
            raise ctx.problem_key(
                execution,
                "targets",
                "execution.targets",
                f"`execution.targets` must list target names, not {describe(targets)}",
            )
        fields["targets"] = tuple(t.strip() for t in targets)
    elif execution.get("target") is not None:
        target = text_value(execution["target"])
        if not target or not target.strip():
            raise ctx.problem_key(
                execution,
                "target",
                "execution.target",
                f"`execution.target` must name a target, not {describe(execution['target'])}",
            )
        fields["targets"] = (target.strip(),)
    skip = execution.get("skip_defaults", False)
    if not isinstance(skip, bool):
        raise ctx.problem_key(
            execution,
            "skip_defaults",
            "execution.skip_defaults",
            f"`skip_defaults` must be true or false, not {describe(skip)}",
        )
    timeout = execution.get("timeout_seconds")
    if timeout is not None:
        if not finite_number(timeout) or timeout <= 0:
            raise ctx.problem_key(
                execution,
                "timeout_seconds",
                "execution.timeout_seconds",
                f"`timeout_seconds` must be a number > 0, not {describe(timeout)}",
            )
        fields["timeout_s"] = float(timeout)
    return fields


def _skips_defaults(raw: dict[str, Any]) -> bool:
    execution = raw.get("execution")
    return isinstance(execution, dict) and execution.get("skip_defaults") is True


def _case_messages(ctx: Context, raw: dict[str, Any], defaults: SuiteDefaults) -> dict[str, Any]:
    input_key = next((k for k in ("input_messages", "input") if raw.get(k) is not None), None)
    if input_key is None:
        raise ctx.problem_at(
            raw, "input", "the test case has no `input`", hint="write `input: \"...\"` or a list of messages"
        )
    messages = parse_input(ctx, raw, input_key, input_key)
    if not _skips_defaults(raw):
        if defaults.input_problem is not None:
            raise defaults.input_problem
        messages = defaults.input + messages
    fields: dict[str, Any] = {"input": messages}
    expected_key = next((k for k in ("expected_messages", "expected_output") if raw.get(k) is not None), None)
    if expected_key is not None:
        fields["expected"], fields["expected_structured"] = parse_expected(ctx, raw, expected_key, expected_key)
    return fields


def _case_evaluators(ctx: Context, raw: dict[str, Any], defaults: SuiteDefaults) -> dict[str, Any]:
    execution: dict[str, Any] = raw["execution"] if isinstance(raw.get("execution"), dict) else {}
    if raw.get("assert") is not None:
        own: tuple[Evaluator, ...] | None = parse_evaluator_list(ctx, raw, "assert", "assert")
    elif execution.get("evaluators") is not None:
        own = parse_evaluator_list(ctx, execution, "evaluators", "execution.evaluators")
    elif raw.get("evaluators") is not None:
        own = parse_evaluator_list(ctx, raw, "evaluators", "evaluators")
    else:
        own = None
    if (defaults.override and own is not None) or _skips_defaults(raw):
        inherited: tuple[Evaluator, ...] = ()
    else:
        if defaults.evaluators_problem is not None:
            raise defaults.evaluators_problem
        inherited = defaults.evaluators or ()
    evaluators = (own or ()) + inherited
    if raw.get("rubrics") is not None:
        rubrics = parse_rubrics(ctx, raw, "rubrics", "rubrics", inline=True)
        rubric = Evaluator(name="rubric", type="rubric", rubrics=rubrics, location=ctx.where.key(raw, "rubrics"))
        evaluators = (rubric,) + evaluators
    if not evaluators:
        kind_owner = raw if raw.get("evaluator") is not None else None
        kind = raw.get("evaluator", defaults.evaluator_kind)
        if kind is not None and kind != "llm_judge":
            where = (
                ctx.where.key(raw, "evaluator", "evaluator")
                if kind_owner is not None
                else ctx.where.at(raw, "evaluator")
            )
            raise Problem(
                f"`evaluator: {kind}` names an evaluator kind that cannot run without its settings",
                where,
                hint="list the evaluator under `assert:` (or `execution.evaluators:`) with its fields",
            )
        criteria = next((raw[k] for k in ("criteria", "expected_outcome", "outcome") if raw.get(k) is not None), None)
        if not (isinstance(criteria, str) and criteria.strip()):
            raise ctx.problem_at(
                raw,
                "criteria",
                "the test case has nothing to judge by: no `criteria`, no `rubrics` and no evaluators",
                hint="write `criteria:` (what a good answer does), or add `rubrics:` or `assert:`",
            )
    return {"evaluators": evaluators}


def tags_of(*values: Any) -> tuple[str, ...]:
    """``tags`` given as text or lists of text, trimmed, each once, in order."""
    tags: list[str] = []
    for value in values:
        items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for item in items:
            text = text_value(item)
            if text and text.strip():
                tags.append(text.strip())
    return tuple(dict.fromkeys(tags))
