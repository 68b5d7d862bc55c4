"""Retries, backoff, Retry-After, timeouts, and the circuit breaker, counted in the server log."""

from __future__ import annotations

import email.utils
import time

import pytest
from engine_helpers import complete_sync, request

from pytest_weval.engine import CircuitOpenError, ProviderError
from pytest_weval.engine.transport.ratelimit import parse_retry_after
from pytest_weval.engine.transport.retry import backoff_delay
from tests.fakeserver import Rule


@pytest.mark.parametrize("fault", ["500", "429", "malformed", "drop"])
def test_fault_is_retried_then_succeeds(make_engine, server, fault):
    server.rules.append(Rule(fault=fault, times=2))
    engine = make_engine()
    reply = complete_sync(engine, request("openai:m", "hi"))
    assert reply.text == "echo: hi"
    assert server.count == 3
    assert [r.outcome for r in server.requests] == [fault, fault, "200"]


def test_timeout_is_retried(make_engine, server):
    server.rules.append(Rule(fault="hang", times=1))  # the server would hold it for an hour
    engine = make_engine(timeout_s=1)
    started = time.monotonic()
    reply = complete_sync(engine, request("anthropic:c", "hi"))
    assert reply.text == "echo: hi"
    assert server.count == 2 and 1 <= time.monotonic() - started < 30


def test_attempts_are_bounded_and_the_error_carries_the_provider_message(make_engine, server):
    server.rules.append(Rule(status=503, body='{"error": {"message": "overloaded, come back later"}}'))
    engine = make_engine(max_attempts=3)
    with pytest.raises(ProviderError) as info:
        complete_sync(engine, request("openai:m"))
    assert server.count == 3
    error = info.value
    assert error.status == 503
    assert "overloaded, come back later" in str(error) and "after 3 attempts" in str(error)


def test_request_level_max_attempts(make_engine, server):
    server.rules.append(Rule(fault="500"))
    engine = make_engine(max_attempts=5)
    with pytest.raises(ProviderError):
        complete_sync(engine, request("openai:m", max_attempts=2))
    assert server.count == 2


def test_client_errors_are_not_retried(make_engine, server):
    server.rules.append(Rule(status=401, body='{"error": {"message": "bad key"}}'))
    engine = make_engine()
    with pytest.raises(ProviderError, match="HTTP 401: bad key") as info:
        complete_sync(engine, request("openai:m"))
    assert info.value.status == 401 and server.count == 1


def test_timeouts_exhausted(make_engine, server):
    server.rules.append(Rule(fault="hang"))
    engine = make_engine(timeout_s=0.2, max_attempts=2)
    with pytest.raises(ProviderError, match="timeout") as info:
        complete_sync(engine, request("openai:m"))
    assert info.value.status is None and server.count == 2


def test_retry_after_seconds_is_honoured(make_engine, server):
    server.rules.append(Rule(fault="429", retry_after="1", times=1))
    engine = make_engine(backoff_base_s=0.01)
    started = time.monotonic()
    complete_sync(engine, request("openai:m"))
    first, second = server.requests
    assert second.at - first.at >= 0.95
    assert time.monotonic() - started < 30  # the 1 s it was told, not some long default


def test_a_wait_longer_than_the_budget_is_an_error_at_once(make_engine, server):
    server.rules.append(Rule(fault="429", retry_after="3600", times=1))
    engine = make_engine(rate_limit_wait_s=600)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"rate limited: .*refused the request 1 time.*--weval-rate-limit-wait"):
        complete_sync(engine, request("openai:m"))
    # without waiting out the 600 s first
    assert time.monotonic() - started < 30 and server.count == 1


def test_retry_after_forms():
    now = time.time()
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    date = email.utils.formatdate(now + 10, usegmt=True)
    assert 8 <= parse_retry_after({"retry-after": date}, now=now) <= 10.5
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_with_jitter_and_is_capped():
    import random

    rng = random.Random(1)
    delays = [backoff_delay(n, 1.0, 30.0, rng) for n in range(1, 8)]
    assert 0.5 <= delays[0] <= 1 and 1 <= delays[1] <= 2 and 2 <= delays[2] <= 4
    assert all(d <= 30 for d in delays) and delays[-1] >= 15


def test_circuit_breaker_opens_fails_fast_and_closes_on_success(make_engine, server):
    server.rules.append(Rule(status=500, times=2))
    engine = make_engine(max_attempts=1, breaker_threshold=2, breaker_cooldown_s=0.3)
    for text in ("a", "b"):
        with pytest.raises(ProviderError):
            complete_sync(engine, request("openai:m", text))
    with pytest.raises(CircuitOpenError, match=r"model 'openai:m' failed 2 times in a row") as info:
        complete_sync(engine, request("openai:m", "c"))
    assert "HTTP 500" in str(info.value)
    assert server.count == 2  # failed fast: nothing sent
    # Other models are unaffected.
    assert complete_sync(engine, request("openai:other", "d")).text == "echo: d"
    time.sleep(0.35)  # cooldown: one probe goes through, succeeds, and closes the breaker
    assert complete_sync(engine, request("openai:m", "e")).text == "echo: e"
    assert complete_sync(engine, request("openai:m", "f")).text == "echo: f"


def test_rate_limits_spend_no_attempt_and_do_not_open_the_breaker(make_engine, server):
    server.rules.append(Rule(fault="429", times=4))
    engine = make_engine(max_attempts=1, breaker_threshold=2)
    reply = complete_sync(engine, request("openai:m", "a"))
    assert reply.text == "echo: a" and reply.refused == 4
    assert [r.outcome for r in server.requests] == ["429"] * 4 + ["200"]
    assert complete_sync(engine, request("openai:m", "e")).text == "echo: e"


def test_malformed_reply_structure_is_retried(make_engine, server):
    engine = make_engine()
    # A 200 whose JSON lacks the documented fields: the fake server's /__reset answers {}.
    from pytest_weval.blueprint.model import ModelSpec

    spec = ModelSpec(id="x", custom={"id": "x", "url": server.url + "/__reset", "modelName": "m"})
    with pytest.raises(ProviderError, match="malformed reply"):
        complete_sync(engine, request(spec, max_attempts=2))


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (
            "openai:gpt-4o-mnii",
            '{"error": {"message": "no access", "type": "invalid_request_error", "code": "model_not_found"}}',
        ),
        (
            "anthropic:claude-nope",
            '{"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}}',
        ),
        (
            "google:gemini-nope",
            '{"error": {"code": 404, "message": "models/gemini-nope is not found for API version v1beta", "status": "NOT_FOUND"}}',
        ),
    ],
)
def test_a_404_that_says_the_model_is_unknown_is_an_unknown_model(make_engine, server, model, body):
    """Decided from the decoded body: OpenAI's code, or an error naming the model asked for
    (Anthropic's and Gemini's not-found are the same for a wrong path). Later requests for the
    model fail without being sent."""
    server.rules.append(Rule(status=404, body=body))
    engine = make_engine()
    with pytest.raises(ProviderError) as info:
        complete_sync(engine, request(model, "one"))
    assert info.value.error_kind == "unknown_model" and info.value.status == 404
    with pytest.raises(ProviderError) as again:
        complete_sync(engine, request(model, "two"))
    assert again.value.error_kind == "unknown_model" and server.count == 1


@pytest.mark.parametrize(
    "body",
    [
        '{"error": {"message": "no route for this path; model routes are under /v2", "type": "invalid_request_error"}}',
        '{"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}}',
        "<html><body>404: the model page was not found</body></html>",
    ],
)
def test_a_404_that_does_not_name_the_model_stays_a_provider_error(make_engine, server, body):
    """A wrong base URL or path: its 404 may say "model" without naming the one asked for."""
    server.rules.append(Rule(status=404, body=body))
    engine = make_engine()
    with pytest.raises(ProviderError) as info:
        complete_sync(engine, request("openai:gpt-4o-mini", "one"))
    assert info.value.error_kind == "provider" and info.value.status == 404
