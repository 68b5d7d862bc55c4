"""promptfoo's ``python`` assertions, scored as promptfoo 0.123.1 scores them (its
``src/assertions/python.ts`` and ``normalizeScriptResult``). The program itself runs in the run
layer, only with --weval-allow-exec (ruling 27); here: the script it runs (the written code as
the body of ``main(output, context)``, a one-line value as its return expression) and what the
value it returns means (a boolean, a number against the threshold, a ``{pass, score, reason}``
object, or their JSON text)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any

from pytest_weval.errors import WevalError
from pytest_weval.scoring.promptfoo import js
from pytest_weval.scoring.promptfoo.deterministic import (
    AssertionFailure,
    apply_assertion_transform,
    finish,
    is_grading_result,
)
from pytest_weval.scoring.promptfoo.model import (
    Assertion,
    AssertionContext,
    ComponentResult,
    rendered_metric,
    rendered_value,
)

_LEADING_INDENT = re.compile(r"^(?!\s*$)\s+", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class PythonCall:
    """What the run layer hands the program: the script, and ``main``'s two arguments."""

    script: str
    output: Any
    context: dict[str, Any]
    code: str
    metric: str | None


class _NotAResult(WevalError):
    """What the program returned (or its failure) is no result: the assertion fails with it."""


def python_call(assertion: Assertion, ctx: AssertionContext) -> PythonCall:
    code = rendered_value(assertion, ctx)
    if not isinstance(code, str):
        raise AssertionFailure("python assertion must have a string value")
    context, _ = js.assertion_context(ctx, assertion.config)
    return PythonCall(
        build_script(code), apply_assertion_transform(assertion, ctx), context, code, rendered_metric(assertion, ctx)
    )


def build_script(code: str) -> str:
    """promptfoo's ``buildPythonScript``: a multi-line value is ``main``'s body (indented as its
    own first indented line is), a one-line value its return expression."""
    if "\n" not in code:
        return f"import json\n\ndef main(output, context):\n    return {code}\n"
    found = _LEADING_INDENT.search(code)
    indent = found.group(0) if found else "    "
    body = "\n".join(indent + line for line in code.split("\n"))
    return f"import json\n\ndef main(output, context):\n{body}\n"


def python_result(
    assertion: Assertion, call: PythonCall, value: Any = None, error: str | None = None
) -> ComponentResult:
    """The assertion's result from what ``main`` returned (``value``) or why it did not
    (``error``: the program's failure)."""
    try:
        if error is not None:
            raise _NotAResult(error)
        result = _normalized(assertion, value, call.code)
    except _NotAResult as exc:
        result = ComponentResult(
            pass_=False, score=0.0, reason=f"Python code execution failed: {exc}", assertion=assertion
        )
    return finish(result, assertion, call.metric)


def _normalized(assertion: Assertion, value: Any, code: str) -> ComponentResult:
    lowered = value.lower() if isinstance(value, str) else None
    if value is True or lowered == "true":
        return _of_pass(assertion, True, code)
    if value is False or lowered == "false":
        return _of_pass(assertion, False, code)
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise _NotAResult(f"Invalid JSON: {exc} when parsing result: {value}") from None
        if not isinstance(parsed, dict):
            raise _NotAResult(
                f"Python assertion must return a boolean, number, or {{pass, score, reason}} object. Got instead: {value}"
            )
        return _of_object(assertion, parsed, code)
    if isinstance(value, dict):
        return _of_object(assertion, value, code)
    score = _parse_float(value)
    if score is None:
        raise _NotAResult(
            "Python assertion must return a boolean, number, or {pass, score, reason} object. "
            f"Instead got:\n{_js_text(value)}"
        )
    threshold = assertion.threshold
    raw_pass = score > 0 if threshold is None else score >= threshold
    passed = raw_pass != assertion.negate
    reason = "Assertion passed" if passed else f"Python code returned {_js_bool(raw_pass)}\n{code}"
    return ComponentResult(pass_=passed, score=score, reason=reason, assertion=assertion)


def _of_pass(assertion: Assertion, raw_pass: bool, code: str) -> ComponentResult:
    passed = raw_pass != assertion.negate
    reason = "Assertion passed" if passed else f"Python code returned {_js_bool(raw_pass)}\n{code}"
    return ComponentResult(pass_=passed, score=1.0 if passed else 0.0, reason=reason, assertion=assertion)


def _of_object(assertion: Assertion, value: dict[str, Any], code: str) -> ComponentResult:
    mapped = {_camel(key): item for key, item in value.items()}
    if not is_grading_result(mapped):
        raise _NotAResult(
            "Python assertion must return a boolean, number, or {pass, score, reason} object. Got instead:\n"
            + json.dumps(mapped, indent=2, ensure_ascii=False)
        )
    raw_pass, score, reason = mapped["pass"], float(mapped["score"]), mapped["reason"]
    threshold = assertion.threshold
    if threshold is not None and score < threshold:
        raw_pass = False
        message = f"Python score {_js_number(score)} is less than threshold {_js_number(threshold)}"
        reason = f"{message}: {reason}" if reason else message
    passed = raw_pass != assertion.negate
    if passed != raw_pass:
        reason = "Assertion passed" if passed else f"Python code returned {_js_bool(raw_pass)}"
    named = mapped.get("namedScores") or {}
    return ComponentResult(
        pass_=passed,
        score=score,
        reason=reason,
        assertion=assertion,
        named_scores={k: float(v) for k, v in named.items() if isinstance(v, int | float) and not isinstance(v, bool)},
    )


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _parse_float(value: Any) -> float | None:
    """JavaScript's ``Number.parseFloat(String(value))`` for the values a program's JSON holds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    found = re.match(r"\s*[+-]?(\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?)", str(value), re.IGNORECASE)
    return float(found.group(0)) if found else None


def _js_bool(flag: bool) -> str:
    return "true" if flag else "false"


def _js_number(number: float) -> str:
    return str(int(number)) if number == int(number) else repr(number)


def _js_text(value: Any) -> str:
    """JavaScript's ``String(value)`` for JSON values (an array joins its items with commas)."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return ",".join("" if item is None else _js_text(item) for item in value)
    return str(value)
