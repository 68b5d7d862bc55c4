"""Deterministic scoring: point functions, ECMAScript regexes, the ``$js`` sandbox, ``$call``
requests and score aggregation, as Weval's reference computes them (docs/functions.md; docs/scoring.md, 'Aggregation').

Pure: no pytest, no HTTP (``$call`` goes through an executor the caller passes in).

Modules: ``functions`` (registry, string/regex/word/JSON functions), ``regex_js`` (patterns on
V8, batched), ``jsbox`` (``$js`` sandbox), ``words``, ``tools`` (tool traces), ``external``
(``$call`` request/response), ``aggregate``, ``evaluate`` (points -> assessments), ``v8``
(the shared isolates); JS value semantics are ``pytest_weval.jsvalues``, shared by every layer.
"""

from pytest_weval.scoring.aggregate import aggregate, round2, weighted_mean
from pytest_weval.scoring.context import PointContext
from pytest_weval.scoring.evaluate import (
    acall_point_function,
    authoring_assessment,
    call_point_function,
    mistake_assessments,
    pattern_error,
    score_function_point_sync,
    score_function_points,
    subject_text,
    to_assessment,
)
from pytest_weval.scoring.external import (
    ExternalRequest,
    build_external_request,
    read_external_response,
)
from pytest_weval.scoring.functions import (
    EXTERNAL_FUNCTIONS,
    PATTERN_FUNCTIONS,
    REGISTERED_FUNCTIONS,
)
from pytest_weval.scoring.regex_js import check_pattern_syntax
from pytest_weval.scoring.types import FnError, FnScore, RawResult

__all__ = [
    "EXTERNAL_FUNCTIONS",
    "PATTERN_FUNCTIONS",
    "REGISTERED_FUNCTIONS",
    "ExternalRequest",
    "FnError",
    "FnScore",
    "PointContext",
    "RawResult",
    "acall_point_function",
    "aggregate",
    "authoring_assessment",
    "build_external_request",
    "call_point_function",
    "check_pattern_syntax",
    "mistake_assessments",
    "pattern_error",
    "read_external_response",
    "round2",
    "score_function_point_sync",
    "score_function_points",
    "subject_text",
    "to_assessment",
    "weighted_mean",
]
