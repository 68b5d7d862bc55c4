"""Function points -> ``PointAssessment``s (docs/functions.md, 'Contract'; docs/scoring.md).

``score_function_points`` is what the pipeline calls per (prompt x model): function points in
definition order, one V8 call for all their regexes, ``$call`` through the caller's executor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pytest_weval.blueprint.model import EvalPoint
from pytest_weval.jsvalues import clamp01, to_fixed
from pytest_weval.results import PointAssessment
from pytest_weval.scoring.context import PointContext
from pytest_weval.scoring.external import (
    ExternalRequest,
    build_external_request,
    read_external_response,
)
from pytest_weval.scoring.functions import EXTERNAL_FUNCTIONS, PATTERN_FUNCTIONS, REGISTRY, CallEnv, patterns_of
from pytest_weval.scoring.regex_dialect import dialect_problems
from pytest_weval.scoring.regex_js import TextMatcher, check_pattern_syntax
from pytest_weval.scoring.types import FnError, FnScore, RawResult

# (status, body) or (status, body, served from the executor's cache)
ExternalExecutor = Callable[[ExternalRequest], Awaitable["tuple[int, str] | tuple[int, str, bool]"]]


def subject_text(generated_texts: Sequence[str], final_text: str) -> str:
    """What function points and judges read (docs/scoring.md, 'Subject text'): every generated assistant turn joined
    by a blank line, or the final assistant text when nothing was generated."""
    return "\n\n".join(generated_texts) if generated_texts else final_text


def _unknown(fn_name: str) -> FnError:
    return FnError(f"Unknown point function: '{fn_name}'", reflect=True, authoring=True)


def _threw(fn_name: str, exc: BaseException) -> FnError:
    return FnError(f"Error executing point function '{fn_name}': {exc}", reflect=True)


def _run(fn_name: str, args: Any, env: CallEnv) -> RawResult:
    spec = REGISTRY.get(fn_name)
    if spec is None:
        return _unknown(fn_name)
    try:
        return spec.impl(env.text, args, env)
    except Exception as exc:  # noqa: BLE001 - a JS function that threw (or a bug here): a point error
        return _threw(fn_name, exc)


def call_point_function(fn_name: str, args: Any, text: str, ctx: PointContext, has_args: bool = True) -> RawResult:
    """One point function's raw result (true/false, a number, FnScore or FnError), before
    inversion and clamping. ``fn_name`` is looked up as given (the parser pluralises).
    ``$call`` needs an executor: see :func:`acall_point_function`."""
    env = CallEnv(text, ctx, TextMatcher(text))
    return _run(fn_name, args if has_args else None, env)


async def acall_point_function(
    fn_name: str,
    args: Any,
    text: str,
    ctx: PointContext,
    has_args: bool = True,
    call_external: ExternalExecutor | None = None,
) -> RawResult:
    """:func:`call_point_function`, with ``$call`` sent through ``call_external``."""
    if fn_name in EXTERNAL_FUNCTIONS and call_external is not None:
        return await _call_external(args if has_args else None, text, ctx, call_external)
    return await asyncio.to_thread(call_point_function, fn_name, args, text, ctx, has_args)


async def _call_external(args: Any, text: str, ctx: PointContext, call_external: ExternalExecutor) -> RawResult:
    request = build_external_request(args, ctx, response=text)
    if isinstance(request, FnError):
        return request
    try:
        reply = await call_external(request)
    except Exception as exc:  # noqa: BLE001 - transport failure after the executor's retries
        return FnError(f"External service call failed: {exc}")
    status, body = reply[0], reply[1]
    return read_external_response(status, body, cached=len(reply) > 2 and bool(reply[2]))


def to_assessment(point: EvalPoint, raw: RawResult) -> PointAssessment:
    """``createAssessmentFromResult`` / ``createErrorAssessment`` of the reference."""
    base = dict(
        key_point_text=point.display_text,
        multiplier=point.multiplier,
        citation=point.citation,
        is_inverted=point.is_inverted,
        path_id=point.path_id,
        kind="function",
        line=point.location.line if point.location else None,
    )
    if isinstance(raw, FnError):
        return PointAssessment(
            **base,
            coverage_extent=None,
            error=raw.message,
            reflection=f"Error: {raw.message}" if raw.reflect else None,
            authoring_error=raw.authoring,
        )
    explain: str | None = None
    if isinstance(raw, FnScore):
        explain = raw.explain if isinstance(raw.explain, str) and raw.explain else None
        raw = raw.score
    score = (1.0 if raw else 0.0) if isinstance(raw, bool) else clamp01(float(raw))
    if point.is_inverted:
        score = 1.0 - score
    if explain:
        return PointAssessment(**base, coverage_extent=score, reflection=explain)
    reflection = f"Function '{point.fn}' evaluated to {to_fixed(score, 2)}."
    return PointAssessment(**base, coverage_extent=score, reflection=reflection, default_reflection=True)


def authoring_assessment(point: EvalPoint) -> PointAssessment:
    """The point error the reference records for a point with an authoring mistake (an unknown
    function, a bad regex, a missing ``$ref``): it errors whatever the answer (docs/rulings.md, ruling 9)."""
    message = point.authoring_error or ""
    return to_assessment(point, FnError(message, reflect=True, authoring=True))


def pattern_error(point: EvalPoint) -> str | None:
    """JavaScript's syntax error for a pattern the point runs (``$matches: "(unclosed"``), which
    errors the point on every response: an authoring mistake known before any answer."""
    flags = PATTERN_FUNCTIONS.get(point.fn or "")
    if flags is None or point.authoring_error:
        return None
    for pattern in patterns_of(point.fn_args):
        error = check_pattern_syntax(pattern, flags)
        if error:
            advice = dialect_problems(pattern, flags)  # what the author meant, e.g. (?i) -> $imatches
            return f"the pattern {pattern!r} is not a valid JavaScript regex ({error})" + (
                ": " + "; ".join(advice) if advice else ""
            )
    return None


def mistake_assessments(points: Sequence[EvalPoint], ctx: PointContext) -> list[PointAssessment]:
    """The points with authoring mistakes (an unknown function, a missing ``$ref``, a pattern
    JavaScript rejects), each as the point error the reference records for it whatever the
    answer (docs/rulings.md, ruling 9), marked as the blueprint's fault."""
    out = []
    for point in points:
        if point.authoring_error:
            out.append(authoring_assessment(point))
        elif pattern_error(point):
            scored = score_function_point_sync(point, "", ctx)  # the error does not depend on the text
            out.append(scored.model_copy(update={"authoring_error": True}))
    return out


def _jobs_for(points: Sequence[EvalPoint], matcher: TextMatcher) -> list[tuple[str, str]]:
    jobs: list[tuple[str, str]] = []
    for point in points:
        spec = REGISTRY.get(point.fn or "")
        if spec is not None and spec.jobs is not None and not point.authoring_error:
            jobs.extend(spec.jobs(point.fn_args if point.has_args else None, matcher))
    return jobs


def _score_sync(
    points: Sequence[EvalPoint],
    text: str,
    ctx: PointContext,
    skip: frozenset[str],
    matcher: TextMatcher | None = None,
) -> list[PointAssessment | None]:
    """Every point except those whose function is in ``skip`` (left as None)."""
    env = CallEnv(text, ctx, matcher or TextMatcher(text))
    try:
        env.matcher.prefetch(_jobs_for([p for p in points if p.fn not in skip], env.matcher))
    except Exception:  # noqa: BLE001 - each point asks again on its own and errors alone if it must
        pass
    out: list[PointAssessment | None] = []
    for point in points:
        if point.authoring_error:
            out.append(authoring_assessment(point))
        elif point.fn in skip:
            out.append(None)
        else:
            args = point.fn_args if point.has_args else None
            out.append(to_assessment(point, _run(point.fn or "", args, env)))
    return out


def _needs_engine(points: Sequence[EvalPoint], matcher: TextMatcher, skip: frozenset[str]) -> bool:
    """Whether scoring would wait on V8 (then it runs off the caller's event loop). What the
    Python paths decide on the way is kept in ``matcher``."""
    for point in points:
        if point.authoring_error or point.fn in skip:
            continue
        spec = REGISTRY.get(point.fn or "")
        if spec is None:
            continue
        if spec.uses_sandbox:
            return True
        if spec.jobs is not None:
            for job in spec.jobs(point.fn_args if point.has_args else None, matcher):
                if not matcher.decided_without_engine(job):
                    return True
    return False


def _function_points(points: Sequence[EvalPoint]) -> list[EvalPoint]:
    return [p for p in points if p.fn is not None or p.authoring_error]


def score_function_point_sync(point: EvalPoint, text: str, ctx: PointContext) -> PointAssessment:
    """One function point, synchronously (``$call`` has no executor here: a point error).
    For the linter ("a deterministic point fails on its own ideal answer")."""
    result = _score_sync([point], text, ctx, frozenset())[0]
    assert result is not None
    return result


async def score_function_points(
    points: Sequence[EvalPoint],
    text: str,
    ctx: PointContext,
    call_external: ExternalExecutor | None = None,
) -> list[PointAssessment]:
    """Assess the function points of ``points`` (others are ignored) against ``text``, in
    definition order. Points carrying an ``authoring_error`` become error assessments with
    ``authoring_error=True``. Without ``call_external``, ``$call`` points are point errors."""
    selected = _function_points(points)
    skip = EXTERNAL_FUNCTIONS if call_external is not None else frozenset()
    matcher = TextMatcher(text)
    if _needs_engine(selected, matcher, skip):
        # Up to 100-250 ms per runaway script or pattern: keep the caller's loop free.
        results = await asyncio.to_thread(_score_sync, selected, text, ctx, skip, matcher)
    else:
        results = _score_sync(selected, text, ctx, skip, matcher)
    assessments: list[PointAssessment] = []
    for point, result in zip(selected, results):
        if result is None:
            assert call_external is not None
            args = point.fn_args if point.has_args else None
            result = to_assessment(point, await _call_external(args, text, ctx, call_external))
        assessments.append(result)
    return assessments
