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
import re
from collections.abc import Callable
from typing import Any

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import count_words, is_number, js_json, js_number_str, js_string, js_trim, to_fixed, truthy
from pytest_weval.scoring import regex_js
from pytest_weval.scoring.promptfoo import js, json_schema
from pytest_weval.scoring.promptfoo.aggregate import score_assert_set
from pytest_weval.scoring.promptfoo.jsonish import extract_json_objects, js_trim_end, load_yaml_value
from pytest_weval.scoring.promptfoo.metrics import bleu, levenshtein, rouge_n, to_precision
from pytest_weval.scoring.promptfoo.model import (
    Assertion,
    AssertionContext,
    ComponentResult,
    ValueFileError,
    output_string,
    rendered_metric,
    rendered_value,
)

__all__ = ["AssertionFailure", "score_assertion"]


class AssertionFailure(WevalError):
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
    except js.ScriptError as exc:
        return _error(assertion, metric, exc.message)
    except ValueFileError as exc:
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
    written_null = expected is None and "value" in s.assertion.raw  # typeof null is "object"
    if isinstance(expected, dict | list) or written_null:
        try:
            raw_pass = _deep_equal(expected, parse_json(s.text))
        except ValueError:
            raw_pass = False
        shown = js_json(expected)
    else:
        shown = "undefined" if expected is None else js_string(expected)  # no value: String(undefined)
        raw_pass = shown == s.text
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


def _regex(s: _Scoring) -> ComponentResult:
    pattern = s.value
    _require(isinstance(pattern, str) and pattern != "", '"regex" assertion type must have a string value')
    try:
        found = regex_js.TextMatcher(s.text).test(pattern)
    except regex_js.RegexSyntaxError as exc:
        # promptfoo: an invalid pattern fails (not-regex too), it does not error.
        return ComponentResult(pass_=False, score=0.0, reason=f"Invalid regex pattern: {exc}", assertion=s.assertion)
    except regex_js.RegexTimeout as exc:
        raise AssertionFailure(f"regex: {exc}") from None
    return s.verdict(found, f'Expected output to {s.not_}match regex "{pattern}"')


# --- JSON ---------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> Any:
    """``JSON.parse``: strict JSON (no NaN/Infinity), surrounding whitespace allowed."""
    return json.loads(text.strip(" \t\n\r"), parse_constant=_reject_constant)


def _schema_of(s: _Scoring) -> Any:
    value = s.value
    if isinstance(value, str):
        try:
            return load_yaml_value(value)
        except ValueError as exc:
            raise AssertionFailure(f"{s.assertion.type}: the schema is not valid YAML or JSON: {exc}") from None
    if isinstance(value, dict | list):
        return value
    raise AssertionFailure(f"{s.assertion.type} assertion must have a string or object value")


def _validate(s: _Scoring, schema: Any, instance: Any) -> str | None:
    try:
        return json_schema.validate(schema, instance)
    except json_schema.SchemaError as exc:
        raise AssertionFailure(f"{s.assertion.type}: {exc}") from None


def _is_json(s: _Scoring) -> ComponentResult:
    try:
        parsed, ok = parse_json(s.text), True
    except ValueError:
        parsed, ok = None, False
    if ok and truthy(s.value):
        problem = _validate(s, _schema_of(s), parsed)
        passed = (problem is None) != s.inverse
        if not passed:
            reason = (
                "Output is JSON that conforms to the provided schema"
                if s.inverse
                else f"JSON does not conform to the provided schema. Errors: {problem}"
            )
            return ComponentResult(pass_=False, score=0.0, reason=reason, assertion=s.assertion)
        return ComponentResult(pass_=True, score=1.0, reason="Assertion passed", assertion=s.assertion)
    return s.verdict(ok, f"Expected output to {s.not_}be valid JSON")


def _contains_json(s: _Scoring) -> ComponentResult:
    failure = f"Expected output to {s.not_}contain valid JSON"
    found = extract_json_objects(s.text)
    passed = not found if s.inverse else bool(found)
    if truthy(s.value):
        schema = _schema_of(s) if found else None
        for candidate in found:
            problem = _validate(s, schema, candidate)
            valid = problem is None
            passed = not valid if s.inverse else valid
            if valid:
                if s.inverse:
                    failure = "Output contains JSON conforming to the provided schema"
                break
            failure = f"JSON does not conform to the provided schema. Errors: {problem}"
    return ComponentResult(
        pass_=passed,
        score=1.0 if passed else 0.0,
        reason="Assertion passed" if passed else failure,
        assertion=s.assertion,
    )


# --- javascript ---------------------------------------------------------------------------------


def _with_code(reason: str, code: Any) -> str:
    return f"{reason}\n{code}" if isinstance(code, str) and code else reason


def _javascript(s: _Scoring) -> ComponentResult:
    _require(isinstance(s.value, str), "javascript assertion must have a string value")
    code = js_trim_end(s.value)
    context, provider = js.assertion_context(s.ctx, s.assertion.config)
    try:
        outcome = js.run_function("output", js.assertion_body(code), s.output, context, provider)
    except js.ScriptError as exc:
        return _js_threw(s, code, exc.message, exc.stack)
    value = outcome.value
    if outcome.typeof == "boolean":
        raw_pass = bool(value)
        passed = raw_pass != s.inverse
        reason = "Assertion passed" if passed else _with_code(f"Custom function returned {js_string(raw_pass)}", code)
        return ComponentResult(pass_=passed, score=1.0 if passed else 0.0, reason=reason, assertion=s.assertion)
    if outcome.typeof == "number":
        number = float(value)
        threshold = s.assertion.threshold
        raw_pass = number > 0 if threshold is None else number >= threshold
        passed = raw_pass != s.inverse
        reason = "Assertion passed" if passed else _with_code(f"Custom function returned {js_string(raw_pass)}", code)
        return ComponentResult(pass_=passed, score=number, reason=reason, assertion=s.assertion)
    if outcome.typeof == "object" and is_grading_result(value):
        raw_pass = value["pass"]
        passed = raw_pass != s.inverse
        if passed == raw_pass:
            reason = value["reason"]
        else:
            reason = "Assertion passed" if passed else f"Custom function returned {js_string(raw_pass)}"
        named = value.get("namedScores") or {}
        return ComponentResult(
            pass_=passed,
            score=float(value["score"]),
            reason=reason,
            assertion=s.assertion,
            named_scores={k: float(v) for k, v in named.items() if is_number(v)},
        )
    shown = "undefined" if outcome.is_undefined else js_json(value) if outcome.typeof == "object" else outcome.text
    kind = "object" if outcome.typeof == "promise" else outcome.typeof
    message = f"Custom function must return a boolean, number, or GradingResult object. Got type {kind}: {shown}"
    return _js_threw(s, code, message, "")


def _js_threw(s: _Scoring, code: str, message: str, stack: str) -> ComponentResult:
    # promptfoo's reason carries Node's stack trace; ours carries V8's (the frames differ).
    reason = _with_code(f"Custom function threw error: {message}\nStack Trace: {stack or message}", code)
    return ComponentResult(pass_=False, score=0.0, reason=reason, assertion=s.assertion)


def is_grading_result(value: Any) -> bool:
    """promptfoo's ``isGradingResult``."""
    if not isinstance(value, dict):
        return False
    optional_objects = ("namedScores", "namedScoreWeights", "tokensUsed")
    return (
        isinstance(value.get("pass"), bool)
        and is_number(value.get("score"))
        and isinstance(value.get("reason"), str)
        and all(
            key not in value or isinstance(value[key], dict | list) or value[key] is None for key in optional_objects
        )
        and ("componentResults" not in value or isinstance(value["componentResults"], list))
        and ("assertion" not in value or value["assertion"] is None or isinstance(value["assertion"], dict | list))
        and ("comment" not in value or isinstance(value["comment"], str))
    )


# --- similarity metrics -------------------------------------------------------------------------


def _levenshtein(s: _Scoring) -> ComponentResult:
    _require(isinstance(s.value, str), '"levenshtein" assertion type must have a string value')
    distance = levenshtein(s.text, s.value)
    threshold = 5.0 if s.assertion.threshold is None else s.assertion.threshold
    relation = "less than or equal to" if s.inverse else "greater than"
    return s.verdict(
        distance <= threshold, f"Levenshtein distance {distance} is {relation} threshold {js_number_str(threshold)}"
    )


def _rouge_n(s: _Scoring) -> ComponentResult:
    _require(isinstance(s.value, str), '"rouge" assertion type must be a string value')
    try:
        score = rouge_n(s.text.lower(), s.value.lower())
    except js.ScriptError as exc:
        raise AssertionFailure(exc.message) from None
    threshold = 0.75 if s.assertion.threshold is None else s.assertion.threshold
    relation = "greater than or equal to" if score >= threshold else "less than"
    return ComponentResult(
        pass_=(score >= threshold) != s.inverse,
        score=1 - score if s.inverse else score,
        reason=f"ROUGE-N score {to_fixed(score, 2)} is {relation} threshold {js_number_str(threshold)}",
        assertion=s.assertion,
    )


def _bleu(s: _Scoring) -> ComponentResult:
    value = s.value
    _require(
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)),
        '"bleu" assertion type must have a string or array of strings value',
    )
    references = value if isinstance(value, list) else [value]
    _require(bool(references), "Invalid inputs")
    threshold = 0.5 if s.assertion.threshold is None else s.assertion.threshold
    score = bleu(s.text, references)
    passed = (score >= threshold) != s.inverse
    relation = "greater" if s.inverse else "less"
    return ComponentResult(
        pass_=passed,
        score=1 - score if s.inverse else score,
        reason="Assertion passed"
        if passed
        else f"BLEU score {to_fixed(score, 4)} is {relation} than threshold {js_number_str(threshold)}",
        assertion=s.assertion,
    )


# --- word-count, latency, cost ------------------------------------------------------------------


def _word_count(s: _Scoring) -> ComponentResult:
    value = s.value
    _require(value is not None, '"word-count" assertion must have a value')
    count = count_words(s.text)
    if isinstance(value, dict):
        low, high = value.get("min"), value.get("max")
        _require(
            low is not None or high is not None, '"word-count" assertion object must have "min" and/or "max" properties'
        )
        if low is not None and high is not None:
            _require(
                low <= high,
                f'"word-count" assertion: min ({js_string(low)}) must be less than or equal to max ({js_string(high)})',
            )
            base = low <= count <= high
            lo, hi = js_string(low), js_string(high)
            failure = (
                f"Expected word count to not be between {lo} and {hi}, but got {count}"
                if s.inverse
                else f"Word count {count} is not between {lo} and {hi}"
            )
        elif low is None:
            assert high is not None
            base = count <= high
            failure = (
                f"Expected word count to be greater than {js_string(high)}, but got {count}"
                if s.inverse
                else f"Word count {count} is greater than maximum {js_string(high)}"
            )
        else:
            base = count >= low
            failure = (
                f"Expected word count to be less than {js_string(low)}, but got {count}"
                if s.inverse
                else f"Word count {count} is less than minimum {js_string(low)}"
            )
        return _word_verdict(s, base, failure)
    expected = _js_number(value)
    _require(
        expected is not None and not isinstance(value, list | bool),
        '"word-count" assertion value must be a number or an object with min/max properties',
    )
    assert expected is not None
    shown = js_number_str(expected)
    failure = (
        f"Expected word count to not equal {shown}, but got {count}"
        if s.inverse
        else f"Word count {count} does not equal expected {shown}"
    )
    return _word_verdict(s, count == expected, failure)


def _word_verdict(s: _Scoring, base: bool, failure: str) -> ComponentResult:
    passed = base != s.inverse
    return ComponentResult(
        pass_=passed,
        score=1.0 if passed else 0.0,
        reason="Assertion passed" if passed else failure,
        assertion=s.assertion,
    )


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def _js_number(value: Any) -> float | None:
    """``Number(value)`` of a number or a string (NaN as None)."""
    if is_number(value):
        return float(value)
    if not isinstance(value, str):
        return None
    text = js_trim(value)
    if text == "":
        return 0.0
    if _DECIMAL.fullmatch(text):
        return float(text)
    if _RADIX.fullmatch(text):
        return float(int(text, 0))
    if text in {"Infinity", "+Infinity", "-Infinity"}:
        return float(text.replace("Infinity", "inf"))
    return None


def _latency(s: _Scoring) -> ComponentResult:
    threshold = s.assertion.threshold
    _require(threshold is not None, "Latency assertion must have a threshold in milliseconds")
    assert threshold is not None
    latency = s.ctx.latency_ms
    _require(latency is not None, "Latency assertion does not support cached results. Rerun the eval with --no-cache")
    assert latency is not None
    relation = "less than or equal to" if s.inverse else "greater than"
    return s.verdict(
        latency <= threshold,
        f"Latency {js_number_str(latency)}ms is {relation} threshold {js_number_str(threshold)}ms",
    )


def _cost(s: _Scoring) -> ComponentResult:
    threshold = s.assertion.threshold
    _require(threshold is not None, "Cost assertion must have a threshold")
    assert threshold is not None
    cost = s.ctx.cost
    _require(cost is not None, "Cost assertion does not support providers that do not return cost")
    assert cost is not None
    relation = "less than or equal to" if s.inverse else "greater than"
    return s.verdict(
        cost <= threshold, f"Cost {to_precision(cost, 2)} is {relation} threshold {js_number_str(threshold)}"
    )


_HANDLERS: dict[str, Handler] = {
    "equals": _equals,
    "contains": _contains,
    "icontains": _icontains,
    "contains-any": _any(fold=False),
    "icontains-any": _any(fold=True),
    "contains-all": _all(fold=False),
    "icontains-all": _all(fold=True),
    "starts-with": _starts_with,
    "regex": _regex,
    "is-json": _is_json,
    "contains-json": _contains_json,
    "javascript": _javascript,
    "levenshtein": _levenshtein,
    "rouge-n": _rouge_n,
    "bleu": _bleu,
    "word-count": _word_count,
    "latency": _latency,
    "cost": _cost,
}
