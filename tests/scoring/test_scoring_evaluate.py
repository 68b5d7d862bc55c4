"""Function points -> assessments (docs/functions.md, 'Contract'; docs/scoring.md), the registry, tool
traces, and the exactness of the Python fast paths against V8."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import pytest

from pytest_weval.blueprint.functions import FUNCTION_NAMES
from pytest_weval.blueprint.model import EvalPoint
from pytest_weval.scoring import (
    PATTERN_FUNCTIONS,
    REGISTERED_FUNCTIONS,
    ExternalRequest,
    FnError,
    FnScore,
    PointContext,
    call_point_function,
    check_pattern_syntax,
    score_function_point_sync,
    score_function_points,
    subject_text,
)
from pytest_weval.scoring.regex_js import TextMatcher, word_pattern

CTX = PointContext(messages=[], model_id="openai:gpt-4o-mini[temp:0]", prompt_id="p1", config={})


def point(fn: str | None, args: Any = None, **kw: Any) -> EvalPoint:
    has_args = kw.pop("has_args", args is not None)
    display = kw.pop("display_text", f"Function: {fn}({args!r})" if fn else str(kw.get("text")))
    return EvalPoint(fn=fn, fn_args=args, has_args=has_args, display_text=display, **kw)


def score(points: list[EvalPoint], text: str, ctx: PointContext = CTX, **kw: Any) -> list[Any]:
    return asyncio.run(score_function_points(points, text, ctx, **kw))


# -- the registry ------------------------------------------------------------------------------


def test_registry_is_the_parsers_list_of_names() -> None:
    assert REGISTERED_FUNCTIONS == FUNCTION_NAMES
    assert len(REGISTERED_FUNCTIONS) == 74
    for unregistered in (
        "imatches_all_of",
        "imatches_at_least_n_of",
        "start_with",
        "end_with",
        "matches_any_of",
        "not_matches_all_of",
        "$js",
        "contain_any_of",
    ):
        assert unregistered not in REGISTERED_FUNCTIONS


def test_pattern_functions_name_their_flags() -> None:
    assert PATTERN_FUNCTIONS["matches"] == "" and PATTERN_FUNCTIONS["not_imatch"] == "i"
    assert PATTERN_FUNCTIONS["imatch_at_least_n_of"] == "i"
    assert "contains" not in PATTERN_FUNCTIONS


# -- assessments -------------------------------------------------------------------------------


def test_assessments_keep_definition_order_and_invert_should_not() -> None:
    points = [
        point("contains", "cat", path_id="path_0", multiplier=2.0, citation="c1"),
        point("contains", "dog", is_inverted=True),
        point("contains_all_of", ["cat", "cow"]),
        point(None, text="a judged point"),  # not a function point: not scored here
    ]
    out = score(points, "the cat sat")
    assert [a.key_point_text for a in out] == [p.display_text for p in points[:3]]
    assert [a.coverage_extent for a in out] == [1.0, 1.0, 0.5]
    assert out[0].multiplier == 2.0 and out[0].citation == "c1" and out[0].path_id == "path_0"
    assert out[1].is_inverted and out[1].reflection == "Function 'contains' evaluated to 1.00."
    assert out[2].reflection == "Function 'contains_all_of' evaluated to 0.50."
    assert out[2].default_reflection  # says only the score: the failure report leaves it out
    assert all(a.kind == "function" and a.error is None for a in out)


def test_default_reflection_uses_js_tofixed_after_inversion() -> None:
    # 1 - 0.875 = 0.125 -> toFixed(2) "0.13" (Python's round would say 0.12)
    out = score([point("contains_all_of", list("abcdefgh"), is_inverted=False)], "abcdefg")
    assert out[0].reflection == "Function 'contains_all_of' evaluated to 0.88."
    out = score([point("contains_all_of", list("abcdefgh"), is_inverted=True)], "abcdefg")
    assert out[0].coverage_extent == pytest.approx(0.125)
    assert out[0].reflection == "Function 'contains_all_of' evaluated to 0.13."


def test_explain_becomes_the_reflection() -> None:
    out = score([point("js", "({score: 2, explain: 'why'})")], "x")
    assert out[0].coverage_extent == 1.0 and out[0].reflection == "why"
    out = score([point("js", "({score: 0.3, explain: ''})")], "x")
    assert out[0].reflection == "Function 'js' evaluated to 0.30."


def test_nan_score_poisons_as_in_js() -> None:
    out = score([point("js", "NaN")], "x")
    assert math.isnan(out[0].coverage_extent)
    assert out[0].reflection == "Function 'js' evaluated to NaN."


def test_reflections_of_errors_section_7_15() -> None:
    out = score(
        [
            point("contains", 123),  # returned {error}: no reflection
            point("nope", "x"),  # unknown: reflection "Error: ..."
            point("tool_args_match", {"name": "t", "where": {"a": 1}}),  # threw: reflection
        ],
        'TOOL_CALL {"name": "t", "arguments": "a string"}',
    )
    assert out[0].error == "Invalid arguments for 'contains'. Expected a string."
    assert out[0].reflection is None and not out[0].authoring_error
    assert out[1].error == "Unknown point function: 'nope'"
    assert out[1].reflection == "Error: Unknown point function: 'nope'" and out[1].authoring_error
    assert out[2].error == (
        "Error executing point function 'tool_args_match': Cannot use 'in' operator to search for 'a' in a string"
    )
    assert out[2].reflection == f"Error: {out[2].error}"
    assert all(a.coverage_extent is None for a in out)


def test_authoring_errors_error_the_point() -> None:
    flagged = point("contans", "x", authoring_error="Unknown point function: 'contans' (did you mean 'contains'?)")
    bad_regex = point("matches", "[")
    out = score([flagged, bad_regex], "text")
    assert out[0].authoring_error and out[0].coverage_extent is None
    assert out[0].error.startswith("Unknown point function: 'contans'")
    assert out[1].authoring_error  # invalid regex syntax is the blueprint's mistake (docs/rulings.md, ruling 9)
    assert out[1].error == (
        "Invalid regex pattern for 'matches': Invalid regular expression: /[/: Unterminated character class"
    )


def test_factcheck_is_a_clear_point_error() -> None:
    out = score([point("factcheck", has_args=False)], "Paris is in France")
    assert out[0].coverage_extent is None and "not supported" in out[0].error


def test_call_without_an_executor_is_a_point_error() -> None:
    out = score([point("call", {"url": "http://127.0.0.1:9/x"})], "text")
    assert "no HTTP executor" in out[0].error


def test_call_goes_through_the_executor_in_order() -> None:
    sent: list[ExternalRequest] = []

    async def executor(request: ExternalRequest) -> tuple[int, str]:
        sent.append(request)
        return 200, '{"score": 0.4, "explain": "ok"}'

    points = [
        point("contains", "a"),
        point("call", {"url": "http://svc/x", "k": "{modelId}"}, is_inverted=True),
        point("external", {"url": "http://svc/y"}),
    ]
    out = score(points, "abc", call_external=executor)
    assert [a.coverage_extent for a in out] == [1.0, pytest.approx(0.6), 0.4]
    assert out[1].reflection == "ok"
    assert [r.url for r in sent] == ["http://svc/x", "http://svc/y"]
    assert sent[0].json_body == {
        "response": "abc",
        "modelId": "openai:gpt-4o-mini[temp:0]",
        "promptId": "p1",
        "k": "openai:gpt-4o-mini[temp:0]",
    }


def test_executor_failure_is_a_point_error() -> None:
    async def executor(request: ExternalRequest) -> tuple[int, str]:
        raise ConnectionError("external service unreachable (ConnectTimeout)")

    out = score([point("call", {"url": "http://svc/x"})], "abc", call_external=executor)
    assert out[0].error == "External service call failed: external service unreachable (ConnectTimeout)"


def test_sync_scoring_matches_async() -> None:
    p = point("imatches", r"\bHELLO\b", is_inverted=True)
    assert score_function_point_sync(p, "hello world", CTX) == score([p], "hello world")[0]


def test_subject_text() -> None:
    assert subject_text(["a", "b"], "final") == "a\n\nb"
    assert subject_text([], "final") == "final"


def test_js_sees_the_context() -> None:
    ctx = PointContext(
        messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        model_id="m[temp:0]",
        prompt_id="p",
        config={},
    )
    script = "context.messages.length === 2 && context.messages[1].content === 'u' && context.modelId === 'm[temp:0]'"
    assert call_point_function("js", script, "x", ctx) is True
    assert call_point_function("expr", "r == 85", "85", ctx) is True


# -- check_pattern_syntax ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, flags, error",
    [
        ("abc", "", None),
        (r"\p{L}+", "", None),  # Annex B: literal p{L}
        ("a{1", "", None),
        ("]", "", None),
        ("[", "", "Invalid regular expression: /[/: Unterminated character class"),
        ("[", "i", "Invalid regular expression: /[/i: Unterminated character class"),
        ("(?i)paris", "", "Invalid regular expression: /(?i)paris/: Invalid group"),
        ("(?i:paris)", "", "Invalid regular expression: /(?i:paris)/: Invalid group"),
        ("(?<a>x)|(?<a>y)", "", "Invalid regular expression: /(?<a>x)|(?<a>y)/: Duplicate capture group name"),
        ("[(?i:x)]", "", None),  # inside a class it is just characters
        (r"\(?i:x\)", "", None),
        ("*abc", "", "Invalid regular expression: /*abc/: Nothing to repeat"),
    ],
)
def test_check_pattern_syntax(pattern: str, flags: str, error: str | None) -> None:
    assert check_pattern_syntax(pattern, flags) == error


# -- tool traces ---------------------------------------------------------------------------------

TRACE_TEXT = "\r\n".join(
    [
        'intro TOOL_CALL {"name": "ignored"}',
        '  TOOL_CALL {"name": "search", "arguments": {"q": "a  b", "n": 1, "deep": {"k": [1, 2]}}}  ',
        "TOOL_CALL {not json}",
        'TOOL_CALL {"arguments": {}}',
        'TOOL_CALL {"name": "nan", "arguments": NaN}',
        'TOOL_CALL{"name": "nospace"}',
        'TOOL_CALL {"name": "retrieve", "arguments": null}',
        'TOOL_CALL {"name": "search", "arguments": {"q": "c"}}',
    ]
)


@pytest.mark.parametrize(
    "fn, args, expected",
    [
        ("tool_called", "search", True),
        ("tool_called", "ignored", False),
        ("tool_called", "nospace", False),
        ("tool_called", "nan", False),
        ("tool_called", "", "error"),
        ("tool_call_count_between", [2, 2, "search"], True),
        ("tool_call_count_between", [3], True),  # search, retrieve, search
        ("tool_call_count_between", "junk", True),  # [0, inf]
        ("tool_call_order", ["search", "search"], True),
        ("tool_call_order", ["retrieve", "search"], True),
        ("tool_call_order", ["search", "retrieve", "retrieve"], False),
        ("tool_call_order", [1, None], "error"),
        ("tool_args_match", {"name": "search", "where": {"q": "ab"}, "normalizeWhitespace": True}, True),
        ("tool_args_match", {"name": "search", "where": {"q": "ab"}}, False),
        ("tool_args_match", {"name": "search", "where": {"n": "1"}}, False),  # 1 !== "1"
        ("tool_args_match", {"name": "search", "where": {"deep": {"k": [1]}}}, True),
        ("tool_args_match", {"name": "search", "where": {}}, True),
        ("tool_args_match", {"name": "retrieve", "where": {}}, False),  # null arguments skipped
        ("tool_args_match", {"name": "search", "where": "args.q === 'c'"}, True),
        ("tool_args_match", {"name": "search", "where": "args.nope.deeper"}, False),  # errors ignored
        ("tool_args_match", {"name": "search", "where": 5}, False),
        ("tool_args_match", ["search"], "error"),
        ("tool_args_match", {"where": {}}, "error"),
    ],
)
def test_tool_functions_on_text_trace(fn: str, args: Any, expected: Any) -> None:
    result = call_point_function(fn, args, TRACE_TEXT, CTX)
    if expected == "error":
        assert isinstance(result, FnError)
    else:
        assert result is expected


def test_structured_trace_replaces_the_text() -> None:
    ctx = PointContext(
        messages=[],
        model_id="m",
        prompt_id="p",
        config={},
        tool_calls=[{"name": "calc", "arguments": {"x": 1}}, "junk", None],
    )
    assert call_point_function("tool_called", "calc", TRACE_TEXT, ctx) is True
    assert call_point_function("tool_called", "search", TRACE_TEXT, ctx) is False
    assert call_point_function("tool_call_count_between", [3, 3], TRACE_TEXT, ctx) is True


# -- the rest of docs/functions.md, 'Text functions' ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a\ufeffb", 1.0),  # U+FEFF separates words in JS (not in Python's split())
        ("a\u200bb", 0.5),  # U+200B does not
        ("a\x1cb c", 1.0),  # nor U+001C (Python's split() would: 3 words)
        ("  one\u3000two\u2028", 1.0),
        ("one two three four", 0.5),  # above max: max / count
    ],
)
def test_word_count_uses_the_js_whitespace_set(text: str, expected: float) -> None:
    assert call_point_function("word_count_between", [2, 2], text, CTX) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        (' {"a": 1}\n', True),
        ("[]", True),
        ("null", False),
        ("NaN", False),
        ('{"a": NaN}', False),
        ('{"a": 1,}', False),
        ("```json\n{}\n```", False),
        ("\ufeff{}", False),
        ("[" * 3000 + "]" * 3000, True),  # deeper than Python's json can go: V8 decides
    ],
    ids=["ws", "array", "null", "nan", "nan-inside", "trailing-comma", "fence", "bom", "deep"],
)
def test_is_json_is_json_parse(text: str, expected: bool) -> None:
    assert call_point_function("is_json", None, text, CTX, has_args=False) is expected


def test_case_insensitive_functions_use_js_lowercasing() -> None:
    assert call_point_function("icontains", "straße", "STRASSE", CTX) is False
    assert call_point_function("icontains", "ΟΔΟΣ", "οδος", CTX) is True  # final sigma
    assert call_point_function("iends_with", "done.", "DONE.\n", CTX) is False


def test_negations_pass_errors_and_flip() -> None:
    assert call_point_function("not_contains_word", "", "x", CTX) is False
    assert call_point_function("not_contains_all_of", [], "x", CTX) == 0.0
    assert call_point_function("not_contains_any_of", [], "x", CTX) is True
    err = call_point_function("not_imatch", "[", "x", CTX)
    assert isinstance(err, FnError) and "'imatches'" in err.message


# -- the fast paths are exact ------------------------------------------------------------------------

ALPHABET = list("abkKsS_1 -.,'(") + ["é", "É", "\u212a", "\u017f", "\u0131", "ß", "中", "\u0301", "😀", "²", "\n"]


def _random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def test_word_fast_path_agrees_with_v8() -> None:
    rng = random.Random(7)
    for _ in range(400):
        text = _random_text(rng, rng.randint(0, 14))
        word = _random_text(rng, rng.randint(1, 3))
        for ignore_case in (False, True):
            matcher = TextMatcher(text)
            fast = matcher._fast_word(word, ignore_case)
            if fast is None:
                continue
            v8 = TextMatcher(text).test(word_pattern(word), "iu" if ignore_case else "u")
            assert fast == v8, (text, word, ignore_case)


def test_literal_fast_path_agrees_with_v8() -> None:
    rng = random.Random(11)
    for _ in range(400):
        text = _random_text(rng, rng.randint(0, 12))
        pattern = _random_text(rng, rng.randint(0, 3))
        for flags in ("", "i"):
            fast = TextMatcher(text)._fast_test(pattern, flags)
            if fast is None:
                continue
            # "(?:)" prefix forces the V8 path for the same regex
            assert fast == TextMatcher(text).test("(?:)" + pattern, flags), (text, pattern, flags)


def test_scores_are_numbers_not_bools_for_graded_functions() -> None:
    result = call_point_function("contains_all_of", ["a"], "a", CTX)
    assert result == 1.0 and not isinstance(result, bool)
    assert isinstance(call_point_function("js", "({score: true})", "a", CTX), FnScore)


def test_a_reply_served_from_the_executors_cache_says_so() -> None:
    calls = 0

    async def executor(request: ExternalRequest) -> tuple[int, str, bool]:
        nonlocal calls
        calls += 1
        return 200, '{"score": 0.5, "explain": "fine"}', calls > 1

    first = score([point("call", {"url": "http://svc/x"})], "abc", call_external=executor)
    again = score([point("call", {"url": "http://svc/x"})], "abc", call_external=executor)
    assert (first[0].reflection, again[0].reflection) == ("fine", "fine (cached)")
    assert first[0].coverage_extent == again[0].coverage_extent == 0.5
