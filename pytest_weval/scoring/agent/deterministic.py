"""AgentV's deterministic assertions on the answer (the last assistant message's text):
``contains``, ``regex``, ``equals``, ``is_json`` (docs/agent-formats.md §1.6, §2.4;
AgentV ``evaluators/assertions.ts``). Each scores 1 or 0 with AgentV's hit or miss text.
"""

from __future__ import annotations

from pytest_weval.formats.model import AgentCase, AgentOutput, Evaluator, EvaluatorResult
from pytest_weval.jsvalues import js_string, js_trim
from pytest_weval.scoring import jsbox
from pytest_weval.scoring.agent.common import error_result, make_result
from pytest_weval.scoring.agent.trajectory import evaluate_tool_trajectory
from pytest_weval.scoring.regex_js import RegexSyntaxError, RegexTimeout, TextMatcher
from pytest_weval.scoring.tools import parse_strict_json
from pytest_weval.scoring.types import FnError

_JSON_PARSE_OK = "(() => { try { JSON.parse(r); return true; } catch (e) { return false; } })()"


def _value(evaluator: Evaluator) -> str | None:
    """The evaluator's ``value`` as JS ``String(value)`` would give it; None when absent."""
    return None if evaluator.value is None else js_string(evaluator.value)


def _binary(evaluator: Evaluator, passed: bool, hit: str, miss: str) -> EvaluatorResult:
    return make_result(evaluator, 1.0 if passed else 0.0, [hit] if passed else [], [] if passed else [miss])


def _missing_value(evaluator: Evaluator) -> EvaluatorResult:
    return error_result(evaluator, f"{evaluator.type} evaluator '{evaluator.name}' has no value", authoring=True)


def evaluate_contains(evaluator: Evaluator, output: AgentOutput) -> EvaluatorResult:
    """``answer.includes(value)``: case-sensitive substring."""
    value = _value(evaluator)
    if value is None:
        return _missing_value(evaluator)
    passed = value in output.answer
    return _binary(evaluator, passed, f'Output contains "{value}"', f'Output does not contain "{value}"')


def evaluate_regex(evaluator: Evaluator, output: AgentOutput) -> EvaluatorResult:
    """``new RegExp(value).test(answer)`` on the project's ECMAScript engine (``regex_js``). An
    invalid pattern is an authoring error; a pattern that runs past the time bound, an error."""
    pattern = _value(evaluator)
    if pattern is None:
        return _missing_value(evaluator)
    try:
        passed = TextMatcher(output.answer).test(pattern)
    except RegexSyntaxError as exc:
        return error_result(evaluator, f"regex evaluator '{evaluator.name}': {exc}", authoring=True)
    except RegexTimeout as exc:
        return error_result(evaluator, f"regex evaluator '{evaluator.name}': {exc}")
    return _binary(
        evaluator, passed, f"Output matches pattern /{pattern}/", f"Output does not match pattern /{pattern}/"
    )


def evaluate_equals(evaluator: Evaluator, output: AgentOutput) -> EvaluatorResult:
    """``answer.trim() === value.trim()`` (JS whitespace)."""
    value = _value(evaluator)
    if value is None:
        return _missing_value(evaluator)
    passed = js_trim(output.answer) == js_trim(value)
    return _binary(evaluator, passed, f'Output equals "{value}"', f'Output does not equal "{value}"')


def is_json_text(text: str) -> bool:
    """``JSON.parse(text)`` does not throw (any JSON value, not only objects). Python's parser
    with NaN / Infinity refused is JSON.parse; nesting too deep for it goes to V8's parser."""
    try:
        parse_strict_json(text)
    except RecursionError:
        outcome = jsbox.run_script(_JSON_PARSE_OK, text, [], "")
        if isinstance(outcome, FnError):
            raise ValueError(outcome.message) from None
        return outcome is True
    except ValueError:
        return False
    return True


def evaluate_is_json(evaluator: Evaluator, output: AgentOutput) -> EvaluatorResult:
    """``JSON.parse(answer)`` succeeds."""
    try:
        passed = is_json_text(output.answer)
    except ValueError as exc:
        return error_result(evaluator, f"is_json evaluator '{evaluator.name}': {exc}")
    return _binary(evaluator, passed, "Output is valid JSON", "Output is not valid JSON")


def evaluate_deterministic(evaluator: Evaluator, output: AgentOutput) -> EvaluatorResult:
    """Every evaluator that needs neither a judge nor a program: ``contains``, ``regex``,
    ``equals``, ``is_json`` and ``tool_trajectory``. Any other type raises ValueError."""
    if evaluator.type == "contains":
        return evaluate_contains(evaluator, output)
    if evaluator.type == "regex":
        return evaluate_regex(evaluator, output)
    if evaluator.type == "equals":
        return evaluate_equals(evaluator, output)
    if evaluator.type == "is_json":
        return evaluate_is_json(evaluator, output)
    if evaluator.type == "tool_trajectory":
        return evaluate_tool_trajectory(evaluator, output)
    raise ValueError(f"{evaluator.type} is not a deterministic evaluator")


def score_evaluator(evaluator: Evaluator, case: AgentCase, output: AgentOutput) -> EvaluatorResult:
    """:func:`evaluate_deterministic` in the runner's calling shape (``case`` is not needed by
    any deterministic evaluator today)."""
    return evaluate_deterministic(evaluator, output)
