"""``tool_trajectory`` (docs/agent-formats.md §1.7.3; AgentV ``tool-trajectory.ts`` v2.6.1 and
v2.10): the AgentV example file's cases against its mock agent's traces, then each mode, the
args matching modes and ``max_duration_ms`` with hand-computed scores."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from scoring_helpers import SPEC

from pytest_weval.formats.model import AgentMessage, AgentOutput, Evaluator, ExpectedToolCall, ToolCall
from pytest_weval.scoring.agent import NO_TRACE, args_match, deep_equal, evaluate_tool_trajectory

EXAMPLE = SPEC / "agent-examples/agentv/v2.6.1-classic/tool-trajectory-simple__evals__dataset.yaml"


def trace(*calls: ToolCall | str, text: str = "done") -> AgentOutput:
    tool_calls = tuple(ToolCall(name=c) if isinstance(c, str) else c for c in calls)
    return AgentOutput(messages=(AgentMessage(role="assistant", text=text, tool_calls=tool_calls),))


def call(name: str, args: Any = None, duration_ms: float | None = None) -> ToolCall:
    return ToolCall(name=name, args=args, duration_ms=duration_ms)


def trajectory(mode: str, *expected: ExpectedToolCall | str, **kw: Any) -> Evaluator:
    items = tuple(ExpectedToolCall(tool=e) if isinstance(e, str) else e for e in expected)
    return Evaluator(name="traj", type="tool_trajectory", mode=mode, expected=items, **kw)  # type: ignore[arg-type]


# --- AgentV's example file --------------------------------------------------------------------

# What AgentV's mock agent (examples/features/tool-trajectory-simple/mock-agent.ts, v2.6.1)
# answers each case's prompt with.
MOCK_TRACES = {
    "research": (
        call("knowledgeSearch", {"query": "REST API characteristics"}),
        call("knowledgeSearch", {"query": "GraphQL characteristics"}),
        call("documentRetrieve", {"docId": "api-comparison"}),
    ),
    "load": (
        call("load_data", {"source": "customers"}),
        call("transform", {"operation": "normalize"}),
        call("save_data", {"destination": "output"}),
    ),
    "pipeline": (
        call("fetchData", {"endpoint": "/api/customers"}),
        call("validateSchema", {"schema": "customer-v2"}),
        call("transformData", {"format": "normalized"}),
        call("saveResults", {"destination": "processed_customers"}),
    ),
    "auth": (
        call("checkCredentials", {"user": "user@example.com"}),
        call("generateToken", {"userId": "user@example.com", "ttl": 3600}),
        call("auditLog", {"event": "login", "user": "user@example.com"}),
    ),
    "metrics": (call("getCpuMetrics", {"server": "prod-1"}), call("getMemoryMetrics", {"server": "prod-1"})),
    "weather": (call("search", {"query": "weather Paris"}), call("get_weather", {"location": "Paris"})),
}
# case id -> (scenario, score, hits) as AgentV's dataset.baseline.jsonl records them (with ">="
# where v2.6.1 wrote "≥"); the YAML's comments give the scores ("Expected score: ~0.67 ...").
EXAMPLE_RESULTS = {
    "any-order-pass": (
        "research",
        1.0,
        ["knowledgeSearch: called 2 times (required >=2)", "documentRetrieve: called 1 times (required >=1)"],
    ),
    "in-order-pass": (
        "pipeline",
        1.0,
        [
            "Found fetchData at position 0",
            "Found validateSchema at position 1",
            "Found transformData at position 2",
            "Found saveResults at position 3",
        ],
    ),
    "exact-auth-flow": (
        "auth",
        1.0,
        ["Position 0: checkCredentials", "Position 1: generateToken", "Position 2: auditLog"],
    ),
    "metrics-check": (
        "metrics",
        1.0,
        ["getCpuMetrics: called 1 times (required >=1)", "getMemoryMetrics: called 1 times (required >=1)"],
    ),
    "partial-match": (
        "research",
        2 / 3,
        ["knowledgeSearch: called 2 times (required >=1)", "documentRetrieve: called 1 times (required >=1)"],
    ),
    "exact-args-match": ("weather", 1.0, ["Found search at position 0", "Found get_weather at position 1"]),
    "skip-args-validation": (
        "load",
        1.0,
        ["Found load_data at position 0", "Found transform at position 1", "Found save_data at position 2"],
    ),
}


def _example_evaluator(raw: dict[str, Any]) -> Evaluator:
    expected = tuple(ExpectedToolCall(tool=e["tool"], args=e.get("args")) for e in raw.get("expected", ()))
    return Evaluator(
        name=raw["name"],
        type="tool_trajectory",
        mode=raw["mode"],
        minimums=raw.get("minimums", {}),
        expected=expected,
        args_match="superset",  # v2.6.1: partial match
    )


def _example_cases() -> list[tuple[str, dict[str, Any]]]:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return [(case["id"], case["execution"]["evaluators"][0]) for case in data["evalcases"]]


def test_every_example_case_is_covered() -> None:
    assert [case_id for case_id, _ in _example_cases()] == list(EXAMPLE_RESULTS)


@pytest.mark.parametrize("case_id, raw", _example_cases(), ids=[c for c, _ in _example_cases()])
def test_agentv_example_file_scores_as_agentv_does(case_id: str, raw: dict[str, Any]) -> None:
    scenario, score, hits = EXAMPLE_RESULTS[case_id]
    result = evaluate_tool_trajectory(_example_evaluator(raw), trace(*MOCK_TRACES[scenario]))
    assert result.score == pytest.approx(score)
    assert list(result.hits) == hits
    if case_id == "partial-match":
        assert result.misses == ("generateReport: called 0 times (required >=1)",)
        assert result.verdict == "borderline"  # 0.67: >= 0.6, < 0.8
    else:
        assert (result.misses, result.verdict) == ((), "pass")


def test_example_with_wrong_args_drops_to_half() -> None:
    # exact-args-match against a trace that searched for London: search is consumed as a miss
    raw = dict(_example_cases())["exact-args-match"]
    result = evaluate_tool_trajectory(
        _example_evaluator(raw),
        trace(call("search", {"query": "weather London"}), call("get_weather", {"location": "Paris"})),
    )
    assert result.score == 0.5 and result.verdict == "fail"
    assert result.misses == ("Expected search at position 0: tool found at 0 but args mismatch",)


# --- no trace -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["any_order", "in_order", "exact", "superset"])
def test_no_tool_calls_scores_zero_with_no_trace(mode: str) -> None:
    evaluator = trajectory(mode, "search", minimums={"search": 1})
    result = evaluate_tool_trajectory(evaluator, trace(text="I answered without tools"))
    assert (result.score, result.verdict, result.hits, result.misses) == (0.0, "fail", (), (NO_TRACE,))


def test_subset_of_no_calls_is_trivially_allowed_but_no_output_is_no_trace() -> None:
    evaluator = trajectory("subset", "search")
    assert evaluate_tool_trajectory(evaluator, trace()).score == 1.0
    assert evaluate_tool_trajectory(evaluator, AgentOutput()).misses == (NO_TRACE,)


# --- any_order ------------------------------------------------------------------------------------


def test_any_order_counts_minimums() -> None:
    evaluator = trajectory("any_order", minimums={"search": 2, "read": 1, "summarize": 1, "never": 0})
    result = evaluate_tool_trajectory(evaluator, trace("read", "search", "summarize", "read"))
    # search called once (needs 2): miss; read, summarize and never (0 >= 0): hits -> 3/4
    assert result.score == 0.75
    assert result.misses == ("search: called 1 times (required >=2)",)
    assert result.verdict == "borderline"


def test_any_order_with_no_minimums_scores_one() -> None:
    result = evaluate_tool_trajectory(trajectory("any_order"), trace("x"))
    assert (result.score, result.hits) == (1.0, ("No tool requirements specified",))


def test_any_order_without_minimums_reads_the_expected_list() -> None:
    # AgentEvals §2.7: each expected tool called (as often as listed); mode defaults to any_order
    evaluator = Evaluator(
        name="t",
        type="tool_trajectory",
        expected=(ExpectedToolCall(tool="a"), ExpectedToolCall(tool="a"), ExpectedToolCall(tool="b")),
    )
    result = evaluate_tool_trajectory(evaluator, trace("b", "a"))
    assert result.score == 0.5
    assert result.misses == ("a: called 1 times (required >=2)",)


# --- in_order --------------------------------------------------------------------------------------


def test_in_order_allows_gaps() -> None:
    result = evaluate_tool_trajectory(trajectory("in_order", "a", "c"), trace("a", "b", "c", "d"))
    assert (result.score, result.hits) == (1.0, ("Found a at position 0", "Found c at position 2"))


def test_in_order_is_one_greedy_pass() -> None:
    # b comes before a: b is found at 1, then nothing named a is left after it
    result = evaluate_tool_trajectory(trajectory("in_order", "b", "a"), trace("a", "b"))
    assert result.score == 0.5
    assert result.misses == ("Expected a at position 1, not found in remaining trace",)


def test_in_order_a_missing_item_uses_up_the_trace() -> None:
    # the cursor runs off the end looking for a, so b (which was there) is not found either
    result = evaluate_tool_trajectory(trajectory("in_order", "a", "b"), trace("x", "b"))
    assert result.score == 0.0
    assert result.misses == (
        "Expected a at position 0, not found in remaining trace",
        "Expected b at position 1, not found in remaining trace",
    )


def test_in_order_consumes_a_name_match_with_wrong_args() -> None:
    evaluator = trajectory("in_order", ExpectedToolCall(tool="a", args={"x": 1}), "b")
    # the first a has the wrong args: a miss, and the matcher does not look on to the second a
    result = evaluate_tool_trajectory(evaluator, trace(call("a", {"x": 2}), call("a", {"x": 1}), call("b")))
    assert result.score == 0.5
    assert result.hits == ("Found b at position 2",)
    assert result.misses == ("Expected a at position 0: tool found at 0 but args mismatch",)


def test_in_order_with_nothing_expected_scores_one() -> None:
    assert evaluate_tool_trajectory(trajectory("in_order"), trace("a")).hits == ("No tool sequence specified",)


# --- exact -------------------------------------------------------------------------------------------


def test_exact_extra_calls_are_logged_but_do_not_lower_the_score() -> None:
    result = evaluate_tool_trajectory(trajectory("exact", "a", "b"), trace("a", "b", "c"))
    assert (result.score, result.verdict) == (1.0, "pass")
    assert result.misses == ("Expected 2 tool calls, got 3",)


def test_exact_missing_positions_are_misses() -> None:
    result = evaluate_tool_trajectory(trajectory("exact", "a", "b", "c"), trace("a"))
    assert result.score == pytest.approx(1 / 3)
    assert result.misses == (
        "Expected 3 tool calls, got 1",
        "Position 1: expected b, got nothing",
        "Position 2: expected c, got nothing",
    )


def test_exact_compares_position_by_position() -> None:
    evaluator = trajectory("exact", "a", ExpectedToolCall(tool="b", args={"k": 1}), "c", "d")
    result = evaluate_tool_trajectory(evaluator, trace("a", call("b", {"k": 2}), "d", "c"))
    assert result.score == 0.25
    assert result.misses == (
        "Position 1: b args mismatch",
        "Position 2: expected c, got d",
        "Position 3: expected d, got c",
    )


# --- superset / subset ------------------------------------------------------------------------------


def test_superset_matches_each_expected_item_to_a_distinct_call() -> None:
    result = evaluate_tool_trajectory(trajectory("superset", "a", "a", "b"), trace("b", "x", "a"))
    assert result.score == pytest.approx(2 / 3)
    assert result.hits == ("Found a at position 2", "Found b at position 0")
    assert result.misses == ("Expected a not found in actual trajectory",)


def test_subset_needs_every_call_allowed_and_reuses_items() -> None:
    evaluator = trajectory("subset", "a", ExpectedToolCall(tool="b", args={"safe": True}))
    result = evaluate_tool_trajectory(evaluator, trace("a", call("b", {"safe": False}), "a"))
    assert result.score == pytest.approx(2 / 3)
    assert result.misses == ("Position 1: b is not in allowed set",)
    empty = evaluate_tool_trajectory(trajectory("subset"), trace("a", "b"))
    assert (empty.score, empty.misses) == (0.0, ("2 unexpected tool call(s) with empty allowed list",))


# --- max_duration_ms --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["in_order", "exact"])
def test_max_duration_is_an_extra_scored_aspect(mode: str) -> None:
    evaluator = trajectory(
        mode, ExpectedToolCall(tool="a", max_duration_ms=100), ExpectedToolCall(tool="b", max_duration_ms=50)
    )
    # a is in time, b is slow: 2 sequence hits + 1 latency hit of 2 + 2 aspects
    result = evaluate_tool_trajectory(evaluator, trace(call("a", duration_ms=100), call("b", duration_ms=50.5)))
    assert result.score == 0.75
    assert "a completed in 100ms (max: 100ms)" in result.hits
    assert result.misses == ("b took 50.5ms (max: 50ms)",)


def test_unknown_durations_are_neutral() -> None:
    evaluator = trajectory("in_order", ExpectedToolCall(tool="a", max_duration_ms=100), "b")
    result = evaluate_tool_trajectory(evaluator, trace("a", "b"))
    assert result.score == 1.0
    assert result.details == {"skipped": ["No duration data for a; latency assertion skipped"]}


def test_a_latency_check_counts_only_on_a_matched_call() -> None:
    # a's args are wrong: a miss, and its latency check never runs; b hits -> 1 of 2 aspects
    evaluator = trajectory("in_order", ExpectedToolCall(tool="a", args={"k": 1}, max_duration_ms=10), "b")
    result = evaluate_tool_trajectory(evaluator, trace(call("a", {"k": 2}, duration_ms=50), call("b", duration_ms=5)))
    assert result.score == 0.5
    assert not any("ms" in line for line in result.hits + result.misses)


# --- args matching ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, actual, mode, matches",
    [
        (None, {"a": 1}, "exact", True),  # no args: not checked
        ("any", {"a": 1}, "exact", True),
        ({"a": 1}, {"a": 2}, "ignore", True),
        ({"a": 1}, None, "superset", False),  # no actual args
        ({"a": 1}, {"a": 1}, "exact", True),
        ({"a": 1}, {"a": 1, "b": 2}, "exact", False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, "exact", True),  # key order does not matter
        ({"a": 1}, {"a": 1, "b": 2}, "superset", True),  # extra actual keys allowed
        ({"a": 1, "c": 3}, {"a": 1, "b": 2}, "superset", False),
        ({"a": {"x": [1, 2]}}, {"a": {"x": [1, 2]}, "b": 0}, "superset", True),  # deep equality
        ({"a": {"x": [1, 2]}}, {"a": {"x": [2, 1]}}, "superset", False),  # arrays keep order
        ({"a": {"x": 1}}, {"a": {"x": 1, "y": 2}}, "superset", False),  # only the top level is partial
        ({"a": 1, "b": 2}, {"a": 1}, "subset", True),  # no unexpected actual key
        ({"a": 1}, {"a": 1, "b": 2}, "subset", False),
        ({"a": 1}, {"a": True}, "exact", False),  # JS: 1 !== true
        ({"a": "1"}, {"a": 1}, "exact", False),
        ({"a": 1.0}, {"a": 1}, "exact", True),  # one number type
        ({"a": None}, {}, "superset", False),
        ({"a": 1}, {"a": 1}, "unknown-mode", True),  # AgentV's default branch: exact
        ({"a": 1}, {"a": 1, "b": 2}, "unknown-mode", False),
        ({"q": {"city": "Paris", "n": 3}, "x": 9}, {"q": {"city": "Paris", "n": 4}, "x": 1}, ("q.city",), True),
        ({"q": {"city": "Paris"}}, {"q": {"city": "Rome"}}, ("q.city",), False),
        ({"q": {"city": "Paris"}}, {"q": {}}, ("q.city",), False),  # missing in actual
        ({"x": 1}, {"x": 2}, ("q.city",), True),  # a path absent from expected is skipped
        ({"items": [{"id": 7}]}, {"items": [{"id": 7}, {"id": 8}]}, ("items.0.id",), True),
    ],
)
def test_args_match_modes(expected: Any, actual: Any, mode: Any, matches: bool) -> None:
    assert args_match(expected, actual, mode) is matches


def test_the_item_args_match_overrides_the_evaluators() -> None:
    evaluator = trajectory(
        "in_order",
        ExpectedToolCall(tool="a", args={"k": 1}),
        ExpectedToolCall(tool="b", args={"k": 1}, args_match="superset"),
        args_match="exact",
    )
    result = evaluate_tool_trajectory(
        evaluator, trace(call("a", {"k": 1, "extra": 0}), call("b", {"k": 1, "extra": 0}))
    )
    assert result.score == 0.5
    assert result.misses == ("Expected a at position 0: tool found at 0 but args mismatch",)


def test_a_key_valued_any_is_literal_unless_asked() -> None:
    # The AgentEvals example writes `args: {query: any}`; AgentV compares the string "any".
    evaluator = trajectory("in_order", ExpectedToolCall(tool="search", args={"query": "any"}))
    output = trace(call("search", {"query": "python history"}))
    assert evaluate_tool_trajectory(evaluator, output).score == 0.0
    assert evaluate_tool_trajectory(evaluator, output, any_value_matches=True).score == 1.0


def test_deep_equal_follows_javascript_types() -> None:
    assert deep_equal({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    assert not deep_equal(0, False) and not deep_equal(None, {}) and not deep_equal([], {})
    assert not deep_equal(float("nan"), float("nan"))
    assert deep_equal((1, 2), [1, 2])
