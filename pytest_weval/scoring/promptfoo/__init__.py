"""promptfoo's assertions, scored as promptfoo 0.123.1 scores them (docs/promptfoo.md).

``parse_assertion`` reads a written assertion; ``score_assertion`` scores a deterministic one (or
an assert-set of them); the model-graded ones are ``judges/promptfoo.py``'s; ``grade_test``
makes the row's outcome. Pure: no pytest, no HTTP.
"""

from __future__ import annotations

from pytest_weval.scoring.promptfoo.aggregate import grade_test, score_assert_set
from pytest_weval.scoring.promptfoo.deterministic import (
    AssertionFailure,
    apply_assertion_transform,
    score_assertion,
)
from pytest_weval.scoring.promptfoo.js import ScriptError, apply_transform
from pytest_weval.scoring.promptfoo.model import (
    DETERMINISTIC_TYPES,
    MODEL_GRADED_TYPES,
    SUPPORTED_TYPES,
    Assertion,
    AssertionContext,
    AssertionProblem,
    ComponentResult,
    GradingResult,
    describe,
    grading_json,
    metric_names,
    needs_exec,
    parse_assertion,
    rendered_metric,
    rendered_value,
)
from pytest_weval.scoring.promptfoo.python import PythonCall, python_call, python_result

__all__ = [
    "DETERMINISTIC_TYPES",
    "MODEL_GRADED_TYPES",
    "SUPPORTED_TYPES",
    "Assertion",
    "AssertionContext",
    "AssertionFailure",
    "AssertionProblem",
    "ComponentResult",
    "GradingResult",
    "PythonCall",
    "ScriptError",
    "apply_assertion_transform",
    "apply_transform",
    "describe",
    "grade_test",
    "grading_json",
    "metric_names",
    "needs_exec",
    "parse_assertion",
    "python_call",
    "python_result",
    "rendered_metric",
    "rendered_value",
    "score_assert_set",
    "score_assertion",
]
