"""promptfoo's deterministic assertions, scored as promptfoo 0.123.1 scores them (its
``src/assertions/*.ts`` and ``runAssertion`` in ``src/assertions/index.ts``): the value rendered
with the row's vars, the assertion's ``transform`` applied first, ``not-`` inverting, a weight of 0
always passing, and a value promptfoo refuses at scoring time making the row an error rather than
a failure.

Pure: no pytest, no HTTP. JavaScript (``javascript``, ``transform``) runs in our V8 sandbox
(``scoring/promptfoo/js.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pytest_weval.jsvalues import js_json, js_string
from pytest_weval.scoring.promptfoo import js
from pytest_weval.scoring.promptfoo.aggregate import score_assert_set
from pytest_weval.scoring.promptfoo.model import (
    Assertion,
    AssertionContext,
    ComponentResult,
    output_string,
    rendered_metric,
    rendered_value,
)

__all__ = ["AssertionFailure", "score_assertion"]


class AssertionFailure(Exception):
    """promptfoo throws (an ``invariant``, a missing cost): the row is an error, not a failure."""


class _Scoring:
    """What one handler reads: the assertion, the output (after the assertion's transform) and
    its string form, the rendered value, and the context."""

    def __init__(self, assertion: Assertion, ctx: AssertionContext, output: Any, value: Any):
        self.assertion = assertion
        self.ctx = ctx
        self.output = output
        self.text = output_string(output)
        self.value = value
        self.inverse = assertion.negate

    def verdict(self, raw_pass: bool, failure: str) -> ComponentResult:
        """The common shape: pass XOR inverse, score 1/0, promptfoo's reason on failure."""
        passed = raw_pass != self.inverse
        return ComponentResult(
            pass_=passed,
            score=1.0 if passed else 0.0,
            reason="Assertion passed" if passed else failure,
            assertion=self.assertion,
        )

    @property
    def not_(self) -> str:
        return "not " if self.inverse else ""


Handler = Callable[[_Scoring], ComponentResult]


def score_assertion(assertion: Assertion, ctx: AssertionContext) -> ComponentResult:
    """One deterministic assertion (or an assert-set of them) scored against ``ctx``."""
    if assertion.type == "assert-set":
        return score_assert_set(assertion, [score_assertion(child, ctx) for child in assertion.children], ctx)
    handler = _HANDLERS.get(assertion.type)
    metric = rendered_metric(assertion, ctx)
    if handler is None:
        return _error(assertion, metric, f"Unknown assertion type: {assertion.written_type}")
    try:
        output = apply_assertion_transform(assertion, ctx)
        result = handler(_Scoring(assertion, ctx, output, rendered_value(assertion, ctx)))
    except AssertionFailure as exc:
        return _error(assertion, metric, str(exc))
    return finish(result, assertion, metric)


def finish(result: ComponentResult, assertion: Assertion, metric: str | None) -> ComponentResult:
    """What ``runAssertion`` does after the handler: a weight of 0 always passes; the metric."""
    update: dict[str, Any] = {"metric": metric}
    if assertion.weight == 0:
        update["pass_"] = True
    return result.model_copy(update=update)


def _error(assertion: Assertion, metric: str | None, reason: str) -> ComponentResult:
    return ComponentResult(pass_=False, score=0.0, reason=reason, assertion=assertion, metric=metric, error=True)


def apply_assertion_transform(assertion: Assertion, ctx: AssertionContext) -> Any:
    """The output this assertion scores: ``ctx.output`` through the assertion's ``transform``."""
    if not assertion.transform:
        return ctx.output
    return js.run_transform(assertion.transform, ctx.output, ctx)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionFailure(message)


# --- equals, contains, starts-with, regex -------------------------------------------------------


def _equals(s: _Scoring) -> ComponentResult:
    expected = s.value
    if isinstance(expected, dict | list):
        try:
            raw_pass = _deep_equal(expected, json.loads(s.text))
        except ValueError:
            raw_pass = False
        shown = js_json(expected)
    else:
        raw_pass = js_string(expected) == s.text if expected is not None else s.text == "undefined"
        shown = js_string(expected) if expected is not None else "undefined"
    return s.verdict(raw_pass, f'Expected output "{s.text}" to {s.not_}equal "{shown}"')


def _deep_equal(a: Any, b: Any) -> bool:
    """Node's ``util.isDeepStrictEqual`` on JSON values: types must match (1 is not true)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _contains_value(s: _Scoring) -> str:
    value = s.value
    _require(
        (isinstance(value, str) and value != "")
        or (isinstance(value, int | float) and not isinstance(value, bool) and value == value),
        f'"{s.assertion.type}" assertion type must have a string or number value',
    )
    return js_string(value)


def _contains(s: _Scoring) -> ComponentResult:
    needle = _contains_value(s)
    return s.verdict(needle in s.text, f'Expected output to {s.not_}contain "{needle}"')


def _icontains(s: _Scoring) -> ComponentResult:
    needle = _contains_value(s)
    return s.verdict(needle.lower() in s.text.lower(), f'Expected output to {s.not_}contain "{needle}"')


def parse_comma_separated(value: str) -> list[str]:
    """promptfoo's ``parseCommaSeparatedValues``: fields split on commas, double-quoted fields may
    hold commas (``\\"`` or ``""`` for a quote), whitespace around fields trimmed, empty fields
    between repeated commas skipped."""
    out: list[str] = []
    i, n = 0, len(value)

    def skip_ws(j: int) -> int:
        while j < n and value[j].isspace():
            j += 1
        return j

    while i < n:
        while i < n:  # whitespace and commas before a field
            i = skip_ws(i)
            if i < n and value[i] == ",":
                i += 1
                continue
            break
        if i >= n:
            break
        if value[i] == '"':
            j, field, closed = i + 1, [], False
            while j < n:
                if value[j] == "\\" and j + 1 < n and value[j + 1] in '"\\':
                    field.append(value[j + 1])
                    j += 2
                elif value[j] == '"' and j + 1 < n and value[j + 1] == '"':
                    field.append('"')
                    j += 2
                elif value[j] == '"':
                    j += 1
                    closed = True
                    break
                else:
                    field.append(value[j])
                    j += 1
            _require(closed, "Unterminated quoted field in contains assertion value")
            out.append("".join(field))
            i = skip_ws(j)
            _require(i >= n or value[i] == ",", "Expected comma after quoted field in contains assertion value")
        else:
            j = value.find(",", i)
            j = n if j < 0 else j
            out.append(value[i:j].strip())
            i = j
    return out


def _list_value(s: _Scoring) -> list[Any]:
    value = s.value
    _require(
        bool(value) if not isinstance(value, int | float) else True,
        f'"{s.assertion.type}" assertion type must have a value',
    )
    if isinstance(value, str):
        value = parse_comma_separated(value)
    _require(isinstance(value, list), f'"{s.assertion.type}" assertion type must have an array value')
    return value


def _any(fold: bool) -> Handler:
    def handle(s: _Scoring) -> ComponentResult:
        needles = _list_value(s)
        text = s.text.lower() if fold else s.text
        found = any((js_string(v).lower() if fold else js_string(v)) in text for v in needles)
        shown = ", ".join(js_string(v) for v in needles)
        return s.verdict(found, f'Expected output to {s.not_}contain one of "{shown}"')

    return handle


def _all(fold: bool) -> Handler:
    def handle(s: _Scoring) -> ComponentResult:
        needles = _list_value(s)
        text = s.text.lower() if fold else s.text
        missing = [v for v in needles if (js_string(v).lower() if fold else js_string(v)) not in text]
        shown = ", ".join(js_string(v) for v in needles)
        gone = ", ".join(js_string(v) for v in missing)
        return s.verdict(not missing, f"Expected output to {s.not_}contain all of [{shown}]. Missing: [{gone}]")

    return handle


def _starts_with(s: _Scoring) -> ComponentResult:
    _require(isinstance(s.value, str) and s.value != "", '"starts-with" assertion type must have a string value')
    return s.verdict(s.text.startswith(s.value), f'Expected output to {s.not_}start with "{s.value}"')


_HANDLERS: dict[str, Handler] = {
    "equals": _equals,
    "contains": _contains,
    "icontains": _icontains,
    "contains-any": _any(fold=False),
    "icontains-any": _any(fold=True),
    "contains-all": _all(fold=False),
    "icontains-all": _all(fold=True),
    "starts-with": _starts_with,
}
