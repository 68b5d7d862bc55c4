"""Scoring for agent eval files (AgentV eval YAML, AgentEvals ``EVAL.yaml``): pure functions
from a typed case, its evaluators and the target's ``AgentOutput`` to ``EvaluatorResult``s, a
``CaseScore`` and report points (docs/agent-formats.md §1.6-1.8, §2.4-2.7, §5.3-5.4, §7).

No I/O: judges and code judges are called elsewhere; their parsed replies come here.

Every function returns *finalized* results: stamped with the evaluator's name, type, weight and
``required``, with ``negate`` applied (``finalize_result``, idempotent: a result built elsewhere,
say a freeform judge's, goes through it once before ``aggregate_case``).

Modules: ``common`` (deepEqual, clamp, negate, errors), ``deterministic`` (contains, regex,
equals, is_json), ``trajectory`` (tool_trajectory), ``judged`` (rubric replies, code judge
output), ``aggregate`` (composite, case, points).
"""

from pytest_weval.scoring.agent.aggregate import (
    CaseScore,
    aggregate_case,
    aggregate_composite,
    required_gate_failures,
    to_point_assessments,
)
from pytest_weval.scoring.agent.common import (
    AUTHORING_ERROR,
    NEGATED,
    REQUIRED_FAILED,
    clamp_score,
    deep_equal,
    error_result,
    finalize_result,
    is_authoring_error,
    is_negated,
    make_result,
    negate_result,
)
from pytest_weval.scoring.agent.deterministic import (
    evaluate_contains,
    evaluate_deterministic,
    evaluate_equals,
    evaluate_is_json,
    evaluate_regex,
    is_json_text,
    score_evaluator,
)
from pytest_weval.scoring.agent.judged import (
    read_code_judge_output,
    score_checklist,
    score_rubric_checks,
    score_score_ranges,
    uses_score_ranges,
)
from pytest_weval.scoring.agent.trajectory import NO_TRACE, args_match, evaluate_tool_trajectory

composite = aggregate_composite  # the name the runner calls it by

__all__ = [
    "AUTHORING_ERROR",
    "NEGATED",
    "NO_TRACE",
    "REQUIRED_FAILED",
    "CaseScore",
    "aggregate_case",
    "aggregate_composite",
    "args_match",
    "clamp_score",
    "composite",
    "deep_equal",
    "error_result",
    "evaluate_contains",
    "evaluate_deterministic",
    "evaluate_equals",
    "evaluate_is_json",
    "evaluate_regex",
    "evaluate_tool_trajectory",
    "finalize_result",
    "is_authoring_error",
    "is_json_text",
    "is_negated",
    "make_result",
    "negate_result",
    "read_code_judge_output",
    "required_gate_failures",
    "score_checklist",
    "score_evaluator",
    "score_rubric_checks",
    "score_score_ranges",
    "to_point_assessments",
    "uses_score_ranges",
]
