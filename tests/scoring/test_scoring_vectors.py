"""Conformance vectors: point_functions.json (all cases, ``$call`` against a loopback service),
regex_dialect.json, and the ``aggregate`` cases of aggregation.json."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from scoring_helpers import LoopbackService, load_vectors, make_context, replace_mock, stdlib_executor

from pytest_weval.blueprint.functions import pluralise_function_name
from pytest_weval.results import PointAssessment
from pytest_weval.scoring import (
    FnError,
    FnScore,
    acall_point_function,
    aggregate,
    call_point_function,
    round2,
)

POINT_CASES = load_vectors("point_functions.json")
REGEX_CASES = load_vectors("regex_dialect.json")
AGGREGATE_CASES = load_vectors("aggregation.json", kind="aggregate")


def assert_matches_expected(result: Any, case: dict[str, Any]) -> None:
    expected = case["expected"]
    if expected == "error":
        assert isinstance(result, FnError), f"expected an error, got {result!r}"
        return
    assert not isinstance(result, FnError), f"unexpected error: {result.message}"
    value = result.score if isinstance(result, FnScore) else result
    if isinstance(expected, bool):
        assert value is expected
    else:
        assert not isinstance(value, bool) or isinstance(result, FnScore), (
            f"expected the number {expected}, got the boolean {value}"
        )
        assert float(value) == pytest.approx(expected, abs=1e-12)
    if "explain" in case:
        assert isinstance(result, FnScore) and result.explain == case["explain"]


CALL_CASES = [(i, c) for i, c in POINT_CASES if c["fn"] == "call"]
LOCAL_CASES = [(i, c) for i, c in POINT_CASES if c["fn"] != "call"]


@pytest.mark.parametrize("case", [c for _, c in LOCAL_CASES], ids=[i for i, _ in LOCAL_CASES])
def test_point_function_vector(case: dict[str, Any]) -> None:
    fn = pluralise_function_name(case["fn"])
    result = call_point_function(fn, case.get("args"), case["response"], make_context(case), has_args="args" in case)
    assert_matches_expected(result, case)


@pytest.mark.parametrize("case", [c for _, c in CALL_CASES], ids=[i for i, _ in CALL_CASES])
async def test_call_vector(case: dict[str, Any], loopback: LoopbackService, monkeypatch: pytest.MonkeyPatch) -> None:
    """$call: the vector's service answers from a loopback server; TEST_API_KEY is allowed
    explicitly (docs/rulings.md, ruling 16)."""
    monkeypatch.setenv("TEST_API_KEY", "secret-key-123")
    case = replace_mock(case, loopback.base_url)
    if "mockHttp" in case:
        mock = case["mockHttp"]
        for url in _service_urls(case):
            loopback.serve(url.removeprefix(loopback.base_url), mock["status"], mock["body"])
    ctx = make_context(case, allowed_env=frozenset({"TEST_API_KEY"}))
    result = await acall_point_function(
        "call",
        case.get("args"),
        case["response"],
        ctx,
        has_args="args" in case,
        call_external=stdlib_executor,
    )
    assert_matches_expected(result, case)
    args = case.get("args") if isinstance(case.get("args"), dict) else {}
    if "expectRequest" in case:
        assert len(loopback.requests) == 1
        body = json.loads(loopback.requests[0].body)
        assert body.items() >= case["expectRequest"].items()
        if args.get("service"):
            for key in ("url", "method", "headers", "timeout_ms"):
                assert key not in body  # configuration keys never reach the body
        headers = {k.lower(): v for k, v in loopback.requests[0].headers.items()}
        assert headers["content-type"] == "application/json"
        if args.get("service") == "test-service":
            assert headers["authorization"] == "Bearer secret-key-123"
    if "mockHttp" not in case:
        assert loopback.requests == []


def _service_urls(case: dict[str, Any]) -> list[str]:
    services = (case.get("context") or {}).get("config", {}).get("externalServices", {})
    urls = [s["url"] for s in services.values()]
    if isinstance(case.get("args"), dict) and isinstance(case["args"].get("url"), str):
        urls.append(case["args"]["url"])
    return urls


@pytest.mark.parametrize("case", [c for _, c in REGEX_CASES], ids=[f"{i}-{c['fn']}" for i, c in REGEX_CASES])
def test_regex_dialect_vector(case: dict[str, Any]) -> None:
    result = call_point_function(case["fn"], case["args"], case["response"], make_context(case))
    assert_matches_expected(result, case)


def _assessment(point: dict[str, Any]) -> PointAssessment:
    return PointAssessment(
        key_point_text=point["text"],
        coverage_extent=point["coverageExtent"],
        multiplier=point.get("multiplier", 1.0),
        is_inverted=point["isInverted"],
        path_id=point["pathId"],
    )


@pytest.mark.parametrize("case", [c for _, c in AGGREGATE_CASES], ids=[i for i, _ in AGGREGATE_CASES])
def test_aggregate_vector(case: dict[str, Any]) -> None:
    points = [_assessment(p) for p in case["points"]]
    value = aggregate(points)
    assert value == case["expected"]  # exact: same operations in the same order as the JS
    assert round2(value) == case["expectedRounded"]


def test_vector_counts() -> None:
    """Every case of each file is collected above (the `evaluate` kind belongs to the judges)."""
    assert len(POINT_CASES) == 323
    assert len(CALL_CASES) == 15
    assert len(REGEX_CASES) == 90
    assert len(AGGREGATE_CASES) == 20
    assert not any(math.isnan(c["expected"]) for _, c in AGGREGATE_CASES)
