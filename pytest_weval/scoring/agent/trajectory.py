"""``tool_trajectory``: the agent's tool calls against the expected ones, as AgentV scores them
(docs/agent-formats.md §1.7.3; AgentV ``evaluators/tool-trajectory.ts``, v2.6.1 and v2.10).

The trajectory is ``AgentOutput.tool_calls``: every output message's calls, in order.

* ``any_order``: each tool in ``minimums`` is a hit when called at least that often;
  score = hits / tools; no minimums gives 1. (Spec §2.7: with no ``minimums`` but an
  ``expected`` list, each expected tool must be called as often as it is listed.)
* ``in_order``: one greedy pass; a call with the right name but wrong args is consumed as a miss.
* ``exact``: position by position; extra actual calls do not lower the score.
* ``superset``: each expected item matches a distinct call, greedily; score = found / expected.
* ``subset``: each call must match some expected item (reusable); score = allowed / calls.
* ``max_duration_ms`` (in_order / exact, on a matched call): one more scored aspect when the
  call's duration is known, neutral (left out of the denominator) when not.
* No tool calls at all: score 0, "No trace available for evaluation" (``subset``: 1, as AgentV
  v2.10 scores an answer that called nothing against an allow-list, when the output has messages).
"""

from __future__ import annotations

from typing import Any

from pytest_weval.formats.model import AgentOutput, Evaluator, EvaluatorResult, ExpectedToolCall, ToolCall
from pytest_weval.jsvalues import js_number_str
from pytest_weval.scoring.agent.common import deep_equal, make_result

NO_TRACE = "No trace available for evaluation"
_ABSENT = object()


def _nested(value: Any, path: str) -> Any:
    """AgentV's ``getNestedValue``: a dot path through objects (and arrays, by index)."""
    current = value
    for part in path.split("."):
        if isinstance(current, dict):
            current = current.get(part, _ABSENT)
        elif isinstance(current, (list, tuple)) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _ABSENT
    return current


def _value_equal(expected: Any, actual: Any, any_value_matches: bool) -> bool:
    if any_value_matches and expected == "any" and isinstance(expected, str):
        return True
    return deep_equal(expected, actual)


def args_match(
    expected: Any, actual: Any, mode: str | tuple[str, ...] | list[str], *, any_value_matches: bool = False
) -> bool:
    """Whether a call's args satisfy an expected item's ``args`` under ``mode``.

    ``expected`` None or ``"any"``, or mode ``ignore``: always. Otherwise no actual args never
    match. ``exact``: deep equality; ``superset``: every expected key present and deep-equal
    (extra actual keys allowed; v2.6.1's only mode); ``subset``: every actual key present in
    expected and deep-equal; a list of dot paths: those paths deep-equal, paths absent from
    expected skipped; any other string: exact (AgentV's default branch).
    ``any_value_matches``: a top-level expected value ``"any"`` matches anything (the AgentEvals
    spec example writes ``args: {query: any}``; AgentV compares it as the string "any").
    """
    if expected is None or (isinstance(expected, str) and expected == "any") or mode == "ignore":
        return True
    if actual is None:
        return False
    if not isinstance(mode, str):
        for path in mode:
            want = _nested(expected, path)
            if want is _ABSENT:
                continue
            got = _nested(actual, path)
            if got is _ABSENT or not _value_equal(want, got, any_value_matches):
                return False
        return True
    if isinstance(expected, dict) and isinstance(actual, dict):
        if mode == "superset":
            return all(
                key in actual and _value_equal(want, actual[key], any_value_matches) for key, want in expected.items()
            )
        if mode == "subset":
            return all(
                key in expected and _value_equal(expected[key], got, any_value_matches) for key, got in actual.items()
            )
        return len(expected) == len(actual) and all(
            key in actual and _value_equal(want, actual[key], any_value_matches) for key, want in expected.items()
        )
    return deep_equal(expected, actual)


def _mode_for(item: ExpectedToolCall, evaluator: Evaluator) -> str | tuple[str, ...]:
    return item.args_match if item.args_match is not None else evaluator.args_match


def _ms(value: float) -> str:
    return js_number_str(value)


class _Tally:
    """Hits, misses and the scored aspects of one in_order / exact run."""

    def __init__(self, expected: int) -> None:
        self.hits: list[str] = []
        self.misses: list[str] = []
        self.sequence_hits = 0
        self.latency_hits = 0
        self.latency_checks = 0
        self.expected = expected
        self.skipped: list[str] = []

    def latency(self, item: ExpectedToolCall, call: ToolCall) -> None:
        limit = item.max_duration_ms
        if limit is None:
            return
        if call.duration_ms is None:
            self.skipped.append(f"No duration data for {item.tool}; latency assertion skipped")
            return
        self.latency_checks += 1
        if call.duration_ms <= limit:
            self.latency_hits += 1
            self.hits.append(f"{item.tool} completed in {_ms(call.duration_ms)}ms (max: {_ms(limit)}ms)")
        else:
            self.misses.append(f"{item.tool} took {_ms(call.duration_ms)}ms (max: {_ms(limit)}ms)")

    def result(self, evaluator: Evaluator) -> EvaluatorResult:
        total = self.expected + self.latency_checks
        score = (self.sequence_hits + self.latency_hits) / total if total > 0 else 1.0
        details = {"skipped": self.skipped} if self.skipped else None
        return make_result(evaluator, score, self.hits, self.misses, details=details)


def _any_order(evaluator: Evaluator, calls: tuple[ToolCall, ...]) -> EvaluatorResult:
    minimums = dict(evaluator.minimums)
    if not minimums:
        for item in evaluator.expected:
            minimums[item.tool] = minimums.get(item.tool, 0) + 1
    if not minimums:
        return make_result(evaluator, 1.0, ["No tool requirements specified"])
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
    hits: list[str] = []
    misses: list[str] = []
    for tool, required in minimums.items():
        actual = counts.get(tool, 0)
        (hits if actual >= required else misses).append(f"{tool}: called {actual} times (required >={required})")
    return make_result(evaluator, len(hits) / len(minimums), hits, misses)


def _in_order(evaluator: Evaluator, calls: tuple[ToolCall, ...], any_value_matches: bool) -> EvaluatorResult:
    expected = evaluator.expected
    if not expected:
        return make_result(evaluator, 1.0, ["No tool sequence specified"])
    tally = _Tally(len(expected))
    cursor = 0
    for i, item in enumerate(expected):
        mode = _mode_for(item, evaluator)
        outcome = "not found"
        while cursor < len(calls):
            call = calls[cursor]
            if call.name == item.tool:
                if args_match(item.args, call.args, mode, any_value_matches=any_value_matches):
                    tally.hits.append(f"Found {item.tool} at position {cursor}")
                    tally.sequence_hits += 1
                    tally.latency(item, call)
                    outcome = "found"
                else:
                    tally.misses.append(
                        f"Expected {item.tool} at position {i}: tool found at {cursor} but args mismatch"
                    )
                    outcome = "args"
                cursor += 1
                break
            cursor += 1
        if outcome == "not found":
            tally.misses.append(f"Expected {item.tool} at position {i}, not found in remaining trace")
    return tally.result(evaluator)


def _exact(evaluator: Evaluator, calls: tuple[ToolCall, ...], any_value_matches: bool) -> EvaluatorResult:
    expected = evaluator.expected
    if not expected:
        return make_result(evaluator, 1.0, ["No tool sequence specified"])
    tally = _Tally(len(expected))
    if len(calls) != len(expected):
        tally.misses.append(f"Expected {len(expected)} tool calls, got {len(calls)}")
    for i, (item, call) in enumerate(zip(expected, calls)):
        if call.name != item.tool:
            tally.misses.append(f"Position {i}: expected {item.tool}, got {call.name}")
        elif not args_match(item.args, call.args, _mode_for(item, evaluator), any_value_matches=any_value_matches):
            tally.misses.append(f"Position {i}: {item.tool} args mismatch")
        else:
            tally.hits.append(f"Position {i}: {item.tool}")
            tally.sequence_hits += 1
            tally.latency(item, call)
    for i in range(len(calls), len(expected)):
        tally.misses.append(f"Position {i}: expected {expected[i].tool}, got nothing")
    return tally.result(evaluator)


def _superset(evaluator: Evaluator, calls: tuple[ToolCall, ...], any_value_matches: bool) -> EvaluatorResult:
    expected = evaluator.expected
    if not expected:
        return make_result(evaluator, 1.0, ["No expected tools specified"])
    hits: list[str] = []
    misses: list[str] = []
    used: set[int] = set()
    for item in expected:
        mode = _mode_for(item, evaluator)
        for j, call in enumerate(calls):
            if (
                j not in used
                and call.name == item.tool
                and args_match(item.args, call.args, mode, any_value_matches=any_value_matches)
            ):
                used.add(j)
                hits.append(f"Found {item.tool} at position {j}")
                break
        else:
            misses.append(f"Expected {item.tool} not found in actual trajectory")
    return make_result(evaluator, len(hits) / len(expected), hits, misses)


def _subset(evaluator: Evaluator, calls: tuple[ToolCall, ...], any_value_matches: bool) -> EvaluatorResult:
    expected = evaluator.expected
    if not calls:
        return make_result(evaluator, 1.0, ["No actual tool calls (trivially a subset)"])
    if not expected:
        return make_result(evaluator, 0.0, [], [f"{len(calls)} unexpected tool call(s) with empty allowed list"])
    hits: list[str] = []
    misses: list[str] = []
    for i, call in enumerate(calls):
        allowed = any(
            call.name == item.tool
            and args_match(item.args, call.args, _mode_for(item, evaluator), any_value_matches=any_value_matches)
            for item in expected
        )
        if allowed:
            hits.append(f"Position {i}: {call.name} is in allowed set")
        else:
            misses.append(f"Position {i}: {call.name} is not in allowed set")
    return make_result(evaluator, len(hits) / len(calls), hits, misses)


def evaluate_tool_trajectory(
    evaluator: Evaluator, output: AgentOutput, *, any_value_matches: bool = False
) -> EvaluatorResult:
    """Score ``output``'s tool calls against ``evaluator`` (``mode`` None: ``any_order``, the
    AgentEvals default). ``any_value_matches``: see :func:`args_match`."""
    calls = output.tool_calls
    mode = evaluator.mode or "any_order"
    if not calls and not (mode == "subset" and output.messages):
        return make_result(evaluator, 0.0, [], [NO_TRACE])
    if mode == "any_order":
        return _any_order(evaluator, calls)
    if mode == "in_order":
        return _in_order(evaluator, calls, any_value_matches)
    if mode == "exact":
        return _exact(evaluator, calls, any_value_matches)
    if mode == "superset":
        return _superset(evaluator, calls, any_value_matches)
    return _subset(evaluator, calls, any_value_matches)
