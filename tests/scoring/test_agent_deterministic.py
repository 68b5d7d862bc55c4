"""Agent evaluators that need no judge: contains, regex, equals, is_json (docs/agent-formats.md
§1.6, §2.4; AgentV ``evaluators/assertions.ts``), and the stamping / negate every result gets."""

from __future__ import annotations

import pytest

from pytest_weval.formats.model import AgentMessage, AgentOutput, Evaluator, ToolCall
from pytest_weval.scoring.agent import (
    NEGATED,
    error_result,
    evaluate_contains,
    evaluate_deterministic,
    evaluate_equals,
    evaluate_is_json,
    evaluate_regex,
    finalize_result,
    is_authoring_error,
    is_json_text,
    make_result,
    negate_result,
    score_evaluator,
)


def answer(text: str) -> AgentOutput:
    return AgentOutput(messages=(AgentMessage(role="assistant", text=text),))


def ev(type_: str, value: object = None, **kw: object) -> Evaluator:
    return Evaluator(name=f"{type_}-check", type=type_, value=value, **kw)  # type: ignore[arg-type]


def test_the_answer_is_the_last_assistant_message() -> None:
    output = AgentOutput(
        messages=(
            AgentMessage(role="assistant", text="first", tool_calls=(ToolCall(name="t"),)),
            AgentMessage(role="tool", text="tool output"),
            AgentMessage(role="assistant", text="final"),
        )
    )
    assert evaluate_contains(ev("contains", "final"), output).score == 1.0
    assert evaluate_contains(ev("contains", "first"), output).score == 0.0


def test_contains_is_a_case_sensitive_substring() -> None:
    hit = evaluate_contains(ev("contains", "Paris"), answer("It is Paris."))
    assert (hit.score, hit.verdict, hit.hits, hit.misses) == (1.0, "pass", ('Output contains "Paris"',), ())
    miss = evaluate_contains(ev("contains", "paris"), answer("It is Paris."))
    assert (miss.score, miss.verdict, miss.hits, miss.misses) == (0.0, "fail", (), ('Output does not contain "paris"',))
    assert miss.error is None


def test_a_non_string_value_is_compared_as_js_string() -> None:
    assert evaluate_contains(ev("contains", 42), answer("the answer is 42")).score == 1.0
    assert evaluate_equals(ev("equals", 1.0), answer("1")).score == 1.0  # String(1.0) is "1"
    assert evaluate_equals(ev("equals", True), answer("true")).score == 1.0


@pytest.mark.parametrize("type_", ["contains", "regex", "equals"])
def test_a_missing_value_is_an_authoring_error(type_: str) -> None:
    result = evaluate_deterministic(ev(type_), answer("x"))
    assert result.error == f"{type_} evaluator '{type_}-check' has no value"
    assert is_authoring_error(result)


def test_regex_is_javascript_new_regexp_test() -> None:
    hit = evaluate_regex(ev("regex", r"\d{3}-\d{4}"), answer("call 555-1234"))
    assert (hit.score, hit.hits) == (1.0, (r"Output matches pattern /\d{3}-\d{4}/",))
    miss = evaluate_regex(ev("regex", "^call$"), answer("call 555"))
    assert (miss.score, miss.misses) == (0.0, ("Output does not match pattern /^call$/",))
    # ECMAScript-only syntax: [^] is any character, newlines included (invalid in Python's re)
    assert evaluate_regex(ev("regex", "a[^]b"), answer("a\nb")).score == 1.0
    # no flags: case-sensitive, and `.` does not cross a newline
    assert evaluate_regex(ev("regex", "PARIS"), answer("paris")).score == 0.0
    assert evaluate_regex(ev("regex", "a.b"), answer("a\nb")).score == 0.0


def test_an_invalid_regex_is_an_authoring_error_not_a_zero() -> None:
    result = evaluate_regex(ev("regex", "(unclosed"), answer("anything"))
    assert result.error is not None and "Invalid regular expression" in result.error
    assert result.error.startswith("regex evaluator 'regex-check': ")
    assert is_authoring_error(result)


def test_equals_trims_both_sides_with_js_whitespace() -> None:
    # U+FEFF is JS whitespace (trim removes it) but not Python's
    hit = evaluate_equals(ev("equals", "  42\n"), answer("\ufeff42 \t"))
    assert (hit.score, hit.hits) == (1.0, ('Output equals "  42\n"',))
    miss = evaluate_equals(ev("equals", "42"), answer("42."))
    assert (miss.score, miss.misses) == (0.0, ('Output does not equal "42"',))


@pytest.mark.parametrize(
    "text, valid",
    [
        ('{"a": [1, 2]}', True),
        ("42", True),  # any JSON value, not only objects
        ('"text"', True),
        ("null", True),
        (" \n[1]\r\t", True),
        ("1e400", True),  # JSON.parse gives Infinity, it does not throw
        ("NaN", False),  # Python's json accepts these; JSON.parse does not
        ('{"a": Infinity}', False),
        ("-Infinity", False),
        ("", False),
        ("{'a': 1}", False),
        ("[1,]", False),
        ("\ufeff[1]", False),  # a BOM is not JSON whitespace
        ('```json\n{"a": 1}\n```', False),
        ("[" * 5000 + "]" * 5000, True),  # deeper than Python's parser goes: V8 decides
        ("[" * 5000 + "]" * 4999, False),
    ],
)
def test_is_json_is_json_parse(text: str, valid: bool) -> None:
    assert is_json_text(text) is valid
    result = evaluate_is_json(ev("is_json"), answer(text))
    assert result.score == (1.0 if valid else 0.0)
    assert (result.hits if valid else result.misses) == (
        ("Output is valid JSON",) if valid else ("Output is not valid JSON",)
    )


def test_results_are_stamped_with_their_evaluator() -> None:
    evaluator = Evaluator(name="has-city", type="contains", value="Paris", weight=2.5, required=0.8)
    result = evaluate_contains(evaluator, answer("Paris"))
    assert (result.name, result.type, result.weight, result.required) == ("has-city", "contains", 2.5, 0.8)


def test_negate_inverts_the_score_and_swaps_pass_and_fail() -> None:
    evaluator = Evaluator(name="no-apology", type="contains", value="sorry", negate=True)
    said_it = evaluate_contains(evaluator, answer("I am sorry"))
    assert (said_it.score, said_it.verdict) == (0.0, "fail")
    assert said_it.hits == () and said_it.misses == ('Output contains "sorry"',)
    assert said_it.reasoning == "[Negated] Original score: 1.00"
    assert said_it.details == {NEGATED: True, "original_score": 1.0}
    clean = evaluate_contains(evaluator, answer("Here you go"))
    assert (clean.score, clean.verdict, clean.hits) == (1.0, "pass", ('Output does not contain "sorry"',))


def test_negate_keeps_borderline_and_annotates_reasoning() -> None:
    base = Evaluator(name="j", type="llm_judge")
    result = make_result(base, 0.7, ["h"], ["m"], reasoning="ok", details={"judge": "x"})
    negated = negate_result(result)
    assert negated.verdict == "borderline"
    assert negated.score == pytest.approx(0.3)
    assert negated.reasoning == "[Negated] ok (original score: 0.70)"
    assert negated.details == {"judge": "x", NEGATED: True, "original_score": 0.7}


def test_finalize_is_idempotent_so_negate_never_applies_twice() -> None:
    evaluator = Evaluator(name="j", type="llm_judge", negate=True, weight=3)
    once = finalize_result(evaluator, make_result(Evaluator(name="x", type="llm_judge"), 0.9))
    twice = finalize_result(evaluator, once)
    assert once.score == pytest.approx(0.1) and twice == once
    assert (once.name, once.weight) == ("j", 3)


def test_negate_leaves_an_error_alone() -> None:
    evaluator = Evaluator(name="j", type="llm_judge", negate=True)
    result = error_result(evaluator, "judge broke")
    assert (result.error, result.score, result.details) == ("judge broke", 0.0, None)


def test_the_dispatcher_refuses_evaluators_that_need_a_judge_or_program() -> None:
    assert score_evaluator(ev("is_json"), None, answer("{}")).score == 1.0  # type: ignore[arg-type]
    for type_ in ("llm_judge", "rubric", "code_judge", "composite"):
        with pytest.raises(ValueError, match="not a deterministic evaluator"):
            evaluate_deterministic(ev(type_), answer("x"))


@pytest.mark.parametrize(
    "score, verdict",
    [(1.0, "pass"), (0.8, "pass"), (0.7999999, "borderline"), (0.6, "borderline"), (0.5999999, "fail"), (0.0, "fail")],
)
def test_verdict_thresholds(score: float, verdict: str) -> None:
    assert make_result(Evaluator(name="x", type="llm_judge"), score).verdict == verdict
