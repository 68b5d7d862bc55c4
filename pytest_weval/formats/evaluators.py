"""Evaluators of agent eval files: the type dispatcher, the keys every evaluator has, and
composites (docs/agent-formats.md §1.5-§1.7, §2.4, §2.6, §2.7, §4).

Types are read with ``-`` as ``_`` (v2.14 kebab-case), ``rubrics`` as ``rubric`` (with its
``criteria`` list), and v3's ``*_grader`` as ``*_judge``. Keys a type does not name, and a
``config`` mapping, become the evaluator's ``config``. Every mistake is a located ``Problem``
of the case that uses the evaluator.

A type's own keys are read beside it: ``llm_judge`` and ``rubric`` in ``rubrics.py``,
``code_judge`` in ``code_judge.py``, ``tool_trajectory`` in ``trajectory.py``; a ``composite``
(evaluators of evaluators) here.
"""

from __future__ import annotations

from typing import Any, cast, get_args

from pytest_weval.formats.code_judge import CODE_JUDGE_KEYS, code_judge_fields
from pytest_weval.formats.context import (
    Context,
    Problem,
    describe,
    finite_number,
    join_field,
    parse_weight,
    snake_spelling,
    text_value,
)
from pytest_weval.formats.model import Aggregator, Evaluator, EvaluatorType
from pytest_weval.formats.rubrics import LLM_JUDGE_KEYS, RUBRIC_KEYS, judge_fields
from pytest_weval.formats.trajectory import TRAJECTORY_KEYS, trajectory_fields

SUPPORTED_TYPES: tuple[str, ...] = get_args(EvaluatorType)  # the model names them once
TYPE_ALIASES = {"rubrics": "rubric", "code_grader": "code_judge", "llm_grader": "llm_judge"}
# AgentV / AgentEvals types this plugin does not run (a case using one is an error that says so).
NOT_RUN_TYPES = (
    "field_accuracy",
    "latency",
    "cost",
    "token_usage",
    "execution_metrics",
    "skill_trigger",
    "agent_judge",
)
AGGREGATORS = ("weighted_average", "minimum", "maximum", "safety_gate", "all_or_nothing", "threshold")

_COMMON_KEYS = frozenset(("name", "type", "weight", "required", "negate", "config"))
_TYPE_KEYS: dict[str, frozenset[str]] = {
    "contains": frozenset(("value",)),
    "regex": frozenset(("value",)),
    "equals": frozenset(("value",)),
    "is_json": frozenset(),
    "llm_judge": LLM_JUDGE_KEYS,
    "rubric": RUBRIC_KEYS,
    "code_judge": CODE_JUDGE_KEYS,
    "tool_trajectory": TRAJECTORY_KEYS,
    "composite": frozenset(("evaluators", "assert", "aggregator")),
}


def normalise_type(written: str) -> str:
    kind = snake_spelling(written)
    return TYPE_ALIASES.get(kind, kind)


def parse_evaluator_list(ctx: Context, owner: Any, key: str, field: str) -> tuple[Evaluator, ...]:
    value = owner[key]
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ctx.problem_key(
            owner,
            key,
            field,
            f"`{key}` must be a list of evaluators, not {describe(value)}",
            hint="write `- type: ...` entries",
        )
    return tuple(parse_evaluator(ctx, value, index, join_field(field, index)) for index in range(len(value)))


def parse_evaluator(ctx: Context, seq: list[Any], index: int, field: str) -> Evaluator:
    raw = seq[index]
    if not isinstance(raw, dict):
        raise ctx.problem_item(
            seq,
            index,
            field,
            f"an evaluator must be a mapping with `type`, not {describe(raw)}",
            hint="write `- type: llm_judge` (or contains, regex, code_judge, ...) with its fields",
        )
    written_type = raw.get("type")
    if not isinstance(written_type, str) or not written_type.strip():
        if "type" not in raw:
            raise ctx.problem_at(
                raw, field, "an evaluator has no `type`", hint=f"add `type:` ({', '.join(SUPPORTED_TYPES)})"
            )
        raise ctx.problem_key(
            raw, "type", join_field(field, "type"), f"`type` must be text, not {describe(written_type)}"
        )
    kind = normalise_type(written_type)
    if kind not in SUPPORTED_TYPES:
        known = kind in NOT_RUN_TYPES
        raise ctx.problem_key(
            raw,
            "type",
            join_field(field, "type"),
            f"evaluator type {written_type!r} is {'an AgentV type this plugin does not run' if known else 'unknown'}",
            hint=f"use one of {', '.join(SUPPORTED_TYPES)}"
            + ("" if known else " (kebab-case and `rubrics` are read too)"),
        )
    name = _name(ctx, raw, kind, field)
    common: dict[str, Any] = {
        "name": name,
        "type": kind,
        "weight": parse_weight(ctx, raw, field),
        "required": _required(ctx, raw, field),
        "negate": _negate(ctx, raw, field),
        "config": _config(ctx, raw, kind, field),
        "location": ctx.where.at(raw, field),
    }
    if kind in ("contains", "regex", "equals"):
        common["value"] = _value(ctx, raw, kind, field)
    elif kind in ("llm_judge", "rubric"):
        common.update(judge_fields(ctx, raw, kind, field))
    elif kind == "code_judge":
        common.update(code_judge_fields(ctx, raw, field))
    elif kind == "tool_trajectory":
        common.update(trajectory_fields(ctx, raw, field))
    elif kind == "composite":
        common.update(_composite_fields(ctx, raw, field))
    return Evaluator(**common)


# --- common keys -----------------------------------------------------------------------------------


def _name(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> str:
    if raw.get("name") is not None:
        name = text_value(raw["name"])
        if not name or not name.strip():
            raise ctx.problem_key(
                raw, "name", join_field(field, "name"), f"`name` must be text, not {describe(raw['name'])}"
            )
        return name
    value = text_value(raw.get("value"))
    if kind in ("contains", "equals"):
        return f"{kind}-{value}" if value else kind
    if kind == "regex":
        return f"regex-{value[:30]}" if value else kind
    if kind == "rubric":
        return "rubrics"  # as AgentV names it; inline `rubrics` make the evaluator named "rubric"
    return kind


def _required(ctx: Context, raw: dict[str, Any], field: str) -> float | None:
    """``required: true`` is 0.8; a number in (0, 1] is the score the evaluator must reach."""
    required = raw.get("required")
    if required is None or required is False:
        return None
    if required is True:
        return 0.8
    if finite_number(required) and 0 < required <= 1:
        return float(required)
    raise ctx.problem_key(
        raw,
        "required",
        join_field(field, "required"),
        f"`required` must be true, false or a score in (0, 1], not {describe(required)}",
        hint="`required: true` means the evaluator must score at least 0.8",
    )


def _negate(ctx: Context, raw: dict[str, Any], field: str) -> bool:
    negate = raw.get("negate")
    if negate is None:
        return False
    if not isinstance(negate, bool):
        raise ctx.problem_key(
            raw, "negate", join_field(field, "negate"), f"`negate` must be true or false, not {describe(negate)}"
        )
    return negate


def _config(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if raw.get("config") is not None:
        if not isinstance(raw["config"], dict):
            raise ctx.problem_key(
                raw, "config", join_field(field, "config"), f"`config` must be a mapping, not {describe(raw['config'])}"
            )
        config.update(raw["config"])
    known = _COMMON_KEYS | _TYPE_KEYS[kind]
    config.update({key: value for key, value in raw.items() if key not in known})
    return config


def _value(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> str:
    if raw.get("value") is None:
        raise ctx.problem_at(
            raw, field, f"the {kind} evaluator has no `value`", hint="write `value:` with the text to look for"
        )
    value = text_value(raw["value"])
    if value is None:
        raise ctx.problem_key(
            raw, "value", join_field(field, "value"), f"`value` must be text, not {describe(raw['value'])}"
        )
    if kind == "regex":
        error = ctx.check_regex(value)
        if error:
            raise ctx.problem_key(
                raw,
                "value",
                join_field(field, "value"),
                f"invalid regular expression {value!r}: {error}",
                hint="the pattern is an ECMAScript (JavaScript) regular expression",
            )
    return value


# --- composite -------------------------------------------------------------------------------------


def _composite_fields(ctx: Context, raw: dict[str, Any], field: str) -> dict[str, Any]:
    key = "evaluators" if raw.get("evaluators") is not None else "assert"
    children_raw = raw.get(key)
    if not isinstance(children_raw, list) or not children_raw:
        raise ctx.problem_at(
            raw,
            field,
            "the composite evaluator has no `evaluators`",
            hint="list the evaluators it combines under `evaluators:`",
        )
    children = parse_evaluator_list(ctx, raw, key, join_field(field, key))
    names = {child.name for child in children}
    return {"evaluators": children, "aggregator": _aggregator(ctx, raw, names, join_field(field, "aggregator"))}


def _aggregator(ctx: Context, raw: dict[str, Any], names: set[str], field: str) -> Aggregator:
    written = raw.get("aggregator")
    if written is None:
        return Aggregator(type="weighted_average")
    if isinstance(written, str):
        written = {"type": written}
    if not isinstance(written, dict):
        raise ctx.problem_key(
            raw, "aggregator", field, f"`aggregator` must be a mapping with `type`, not {describe(written)}"
        )
    kind = normalise_type(str(written.get("type", "weighted_average")))
    if kind not in AGGREGATORS:
        unsupported = kind in ("code_judge", "llm_judge")
        raise Problem(
            f"aggregator type {written.get('type')!r} is {'not supported' if unsupported else 'unknown'}",
            ctx.where.key(written, "type", join_field(field, "type")),
            hint=f"use one of {', '.join(AGGREGATORS)}",
        )
    weights: dict[str, float] = {}
    if written.get("weights") is not None:
        written_weights = written["weights"]
        if not isinstance(written_weights, dict):
            raise Problem(
                f"aggregator `weights` must map evaluator names to weights, not {describe(written_weights)}",
                ctx.where.key(written, "weights", join_field(field, "weights")),
            )
        for name, weight in written_weights.items():
            where = ctx.where.key(written_weights, name, join_field(join_field(field, "weights"), str(name)))
            if str(name) not in names:
                raise Problem(
                    f"aggregator weight for {name!r}, which is not one of the composite's evaluators ({', '.join(sorted(names))})",
                    where,
                )
            if not finite_number(weight) or weight < 0:
                raise Problem(f"the weight of {name!r} must be a finite number >= 0, not {describe(weight)}", where)
            weights[str(name)] = float(weight)
    required: tuple[str, ...] = ()
    if written.get("required") is not None:
        written_required = written["required"]
        listed = [written_required] if isinstance(written_required, str) else written_required
        where = ctx.where.key(written, "required", join_field(field, "required"))
        if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
            raise Problem(f"aggregator `required` must list evaluator names, not {describe(written_required)}", where)
        unknown = [n for n in listed if n not in names]
        if unknown:
            raise Problem(
                f"aggregator `required` names {', '.join(map(repr, unknown))}, not among the composite's evaluators ({', '.join(sorted(names))})",
                where,
            )
        required = tuple(listed)
    threshold = written.get("threshold")
    if threshold is not None and (not finite_number(threshold) or not 0 <= threshold <= 1):
        raise Problem(
            f"aggregator `threshold` must be a score 0..1, not {describe(threshold)}",
            ctx.where.key(written, "threshold", join_field(field, "threshold")),
        )
    if kind == "threshold" and threshold is None:
        raise Problem(
            "the threshold aggregator needs `threshold`", ctx.where.at(written, field), hint="e.g. `threshold: 0.7`"
        )
    return Aggregator(
        type=cast(Any, kind),
        weights=weights,
        required=required,
        threshold=float(threshold) if threshold is not None else None,
    )
