"""``$call`` request building and reply reading (docs/functions.md, '$call and $external'; docs/rulings.md, ruling 16)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from pytest_weval.scoring import (
    ExternalRequest,
    FnError,
    FnScore,
    PointContext,
    build_external_request,
    read_external_response,
)

SERVICES = {
    "grader": {
        "url": "http://svc/grade",
        "headers": {"Authorization": "Bearer ${GRADER_KEY}", "X-Static": "v"},
        "timeout_ms": 5000,
        "max_retries": 0,
        "retry_backoff_ms": 250,
        "cache": False,
    },
    "plain": {"url": "http://svc/plain"},
}
CTX = PointContext(
    messages=[{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A $& \"x\""}],
    model_id="openai:gpt-4o-mini[temp:0]",
    prompt_id="p-1",
    config={"externalServices": SERVICES},
    allowed_env=frozenset({"GRADER_KEY"}),
)
ENV = {"GRADER_KEY": "k-123", "OTHER": "nope"}


def build(args: Any, response: str = "the answer", **kw: Any) -> ExternalRequest | FnError:
    kw.setdefault("environ", ENV)
    return build_external_request(args, CTX, response=response, **kw)


def test_named_service_request() -> None:
    request = build({"service": "grader", "url": "ignored", "claim": "c"})
    assert isinstance(request, ExternalRequest)
    assert request.url == "http://svc/grade" and request.method == "POST"
    assert dict(request.headers) == {
        "Content-Type": "application/json",
        "Authorization": "Bearer k-123",
        "X-Static": "v",
    }
    assert request.json_body == {
        "response": "the answer",
        "modelId": "openai:gpt-4o-mini[temp:0]",
        "promptId": "p-1",
        "claim": "c",
    }
    assert (request.timeout_s, request.max_retries, request.retry_backoff_s) == (5.0, 0, 0.25)
    assert request.cache is False and request.service == "grader"


def test_defaults_for_an_inline_service() -> None:
    request = build({"url": "http://svc/inline", "method": "put"})
    assert isinstance(request, ExternalRequest)
    assert request.method == "PUT"  # fetch normalizes the standard method names
    assert (request.timeout_s, request.max_retries, request.retry_backoff_s) == (30.0, 2, 1.0)
    assert request.cache is True and request.service == "inline"
    assert dict(request.headers) == {"Content-Type": "application/json"}


def test_deviation_get_sends_no_body() -> None:
    """Deviation (a fix listed in docs/compatibility.md): the reference sends a body with GET, so fetch rejects
    every GET call; here a GET request carries none."""
    request = build({"url": "http://svc/q", "method": "GET", "x": 1})
    assert isinstance(request, ExternalRequest)
    assert request.method == "GET" and request.json_body is None


def test_cache_key_is_the_references() -> None:
    request = build({"service": "plain", "x": 1.0})
    assert isinstance(request, ExternalRequest)
    expected = (
        '{"type":"call","service":"plain","url":"http://svc/plain","body":'
        '{"response":"the answer","modelId":"openai:gpt-4o-mini[temp:0]","promptId":"p-1","x":1}}'
    )
    assert request.cache_key == hashlib.sha256(expected.encode()).hexdigest()


def test_user_params_override_standard_fields_in_place() -> None:
    request = build({"url": "http://svc/x", "response": "mine", "2": "two"})
    assert isinstance(request, ExternalRequest)
    assert list(request.json_body) == ["response", "modelId", "promptId", "2"]
    assert request.json_body["response"] == "mine"


def test_templates() -> None:
    args = {
        "url": "http://svc/x",
        "history": "{messages}",
        "who": "{modelId}",
        "nested": {"text": "R={response};P={promptId};M={messages}", "list": ["{response}", 3]},
        "unknown": "{promptText}",
    }
    request = build(args, response="a $& b $$ c")
    assert isinstance(request, ExternalRequest)
    body = request.json_body
    assert body["history"] == CTX.messages
    assert body["who"] == "openai:gpt-4o-mini[temp:0]"
    # Embedded templates use JS replace(): `$&` in the value is the matched text, `$$` is `$`.
    assert body["nested"]["text"] == (
        'R=a {response} b $ c;P=p-1;M=[{"role":"user","content":"Q?"},'
        '{"role":"assistant","content":"A {messages} \\"x\\""}]'
    )
    assert body["nested"]["list"] == ["a $& b $$ c", 3]  # an exact template is the raw value
    assert body["unknown"] == "{promptText}"


@pytest.mark.parametrize(
    "args, message",
    [
        ("text", "Argument for 'call' must be an object"),
        (None, "Argument for 'call' must be an object"),
        ({}, "Must provide either 'service' (named service) or 'url' (inline service)"),
        (["service"], "Must provide either 'service'"),
        ({"service": "nope"}, "External service 'nope' not found in config. Available services: grader, plain"),
    ],
)
def test_argument_errors(args: Any, message: str) -> None:
    result = build(args)
    assert isinstance(result, FnError) and message in result.message


def test_unknown_service_without_any_configured() -> None:
    ctx = PointContext(messages=[], model_id="m", prompt_id="p", config={})
    result = build_external_request({"service": "x"}, ctx, response="r")
    assert isinstance(result, FnError) and result.message.endswith("Available services: none")


def test_deviation_env_only_for_allowed_variables() -> None:
    """Deviation (docs/rulings.md, ruling 16): `${VAR}` in service headers reads only variables the run
    allows with --weval-allow-env; the reference reads any environment variable."""
    ctx = PointContext(messages=[], model_id="m", prompt_id="p", config={"externalServices": SERVICES})
    result = build_external_request({"service": "grader"}, ctx, response="r", environ=ENV)
    assert isinstance(result, FnError)
    assert "${GRADER_KEY}" in result.message and "--weval-allow-env=GRADER_KEY" in result.message
    allowed = build_external_request({"service": "grader"}, ctx, frozenset({"GRADER_KEY"}), response="r", environ=ENV)
    assert isinstance(allowed, ExternalRequest)


def test_allowed_but_unset_variable() -> None:
    result = build({"service": "grader"}, environ={})
    assert isinstance(result, FnError)
    assert result.message == (
        "External service call failed: Failed to substitute env var in header 'Authorization': "
        "Environment variable GRADER_KEY is not defined"
    )


@pytest.mark.parametrize(
    "status, body, expected",
    [
        (200, '{"score": 0.5, "explain": "fine"}', FnScore(0.5, "fine")),
        (200, '{"score": 1}', FnScore(1.0, None)),
        (200, '{"score": 0, "explain": 7}', FnScore(0.0, None)),
        (201, '{"score": 0.25}', FnScore(0.25, None)),
        (200, '{"error": "busy"}', "External service error: busy"),
        (200, '{"score": 1.5}', "Invalid service response: score must be between 0 and 1, got 1.5"),
        (200, '{"score": true}', "Invalid service response: score must be a number, got boolean"),
        (200, '{"score": null}', "Invalid service response: score must be a number, got object"),
        (200, "[]", "Invalid service response: score must be a number, got undefined"),
        (200, '"text"', "Invalid service response: Response must be an object"),
        (200, "not json", "not JSON"),
        (404, "x" * 300, "External service call failed: HTTP 404: " + "x" * 200),
        (500, "😀" * 150, "External service call failed: HTTP 500: " + "😀" * 100),
    ],
)
def test_read_external_response(status: int, body: str, expected: Any) -> None:
    result = read_external_response(status, body)
    if isinstance(expected, FnScore):
        assert result == expected
    else:
        assert isinstance(result, FnError) and expected in result.message
        if expected.startswith("External service call failed"):
            assert result.message == expected


def test_cached_reply_says_so() -> None:
    assert read_external_response(200, '{"score": 1, "explain": "e"}', cached=True) == FnScore(1.0, "e (cached)")
    assert read_external_response(200, '{"score": 1}', cached=True) == FnScore(1.0, None)
