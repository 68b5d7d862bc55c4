"""A canary key must never appear in exception text, reprs, logs or the cache."""

from __future__ import annotations

import logging
import traceback

import pytest
from engine_helpers import complete_sync, request

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ModelCallError, ProviderError
from tests.fakeserver import Rule

CANARY = "sk-canary-7f3a9c1e5b2d4680"
HEADER_CANARY = "hdr-canary-1b2c3d4e5f60"


def everything_about(error: BaseException) -> str:
    return "\n".join([str(error), repr(error), "".join(traceback.format_exception(error))])


@pytest.mark.parametrize(
    "model,header",
    [
        ("openai:m", "authorization"),
        ("openrouter:m", "authorization"),
        ("anthropic:c", "x-api-key"),
        ("google:g", "x-goog-api-key"),
    ],
)
def test_key_echoed_by_the_provider_is_redacted(make_engine, server, caplog, model, header):
    caplog.set_level(logging.DEBUG)
    env = server.env()
    for name in list(env):
        if name.endswith("_API_KEY"):
            env[name] = CANARY
    server.rules.append(Rule(status=401, echo_header=header))
    engine = make_engine(env=env)
    with pytest.raises(ProviderError) as info:
        complete_sync(engine, request(model))
    assert server.requests[0].headers[header].endswith(CANARY)  # it was sent...
    text = everything_about(info.value)
    assert "you sent" in text and CANARY not in text  # ...and never shown
    assert "[REDACTED]" in text
    assert CANARY not in caplog.text
    assert CANARY not in repr(engine) and CANARY not in repr(engine.settings)
    assert CANARY not in str(engine.stats)


def test_retried_failures_log_no_key(make_engine, server, caplog):
    caplog.set_level(logging.DEBUG)
    env = dict(server.env(), OPENAI_API_KEY=CANARY)
    server.rules.append(Rule(status=500, echo_header="authorization"))
    engine = make_engine(env=env, max_attempts=3)
    with pytest.raises(ProviderError) as info:
        complete_sync(engine, request("openai:m"))
    assert CANARY not in everything_about(info.value) and CANARY not in caplog.text


@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_cache_never_holds_a_key(make_engine, server, tmp_path, store):
    env = dict(server.env(), OPENAI_API_KEY=CANARY, HDR=HEADER_CANARY)
    engine = make_engine(env=env, cache_store=store, allowed_env=frozenset({"HDR"}))
    complete_sync(engine, request("openai:m", "hi"))
    spec = ModelSpec(
        id="local:x",
        custom={
            "id": "local:x",
            "url": server.url + "/c/chat/completions",
            "modelName": "x",
            "headers": {"X-Token": "${HDR}", "X-Literal": HEADER_CANARY + "2"},
        },
    )
    complete_sync(engine, request(spec, "hi"))
    engine.close()
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert CANARY.encode() not in data, path
            assert HEADER_CANARY.encode() not in data, path


def test_custom_url_secret_is_redacted_from_connection_errors(make_engine, server):
    env = {"TOKEN": CANARY}
    engine = make_engine(env=env, allowed_env=frozenset({"TOKEN"}), max_attempts=1, timeout_s=1)
    spec = ModelSpec(
        id="local:y",
        custom={
            "id": "local:y",
            "url": "http://127.0.0.1:9/v1/chat?token=${TOKEN}",
            "modelName": "y",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
        },
    )
    with pytest.raises(ModelCallError) as info:
        complete_sync(engine, request(spec))
    assert "connection failed" in str(info.value)
    assert CANARY not in everything_about(info.value)


def test_request_reprs_hide_header_values():
    from pytest_weval.engine.transport.providers import HttpCall

    call = HttpCall(url="http://x", headers={"Authorization": f"Bearer {CANARY}"}, body={})
    assert CANARY not in repr(call) and "Authorization" in repr(call)


def test_error_recorded_for_other_workers_is_redacted(make_engine, server, tmp_path):
    import sqlite3

    env = dict(server.env(), OPENAI_API_KEY=CANARY)
    server.rules.append(Rule(status=401, echo_header="authorization"))
    engine = make_engine(env=env, coordinate=True, run_id="run-1")
    with pytest.raises(ProviderError):
        complete_sync(engine, request("openai:m"))
    engine.close()
    db = sqlite3.connect(tmp_path / "cache" / "weval-cache.sqlite")
    [(message,)] = db.execute("SELECT error_message FROM run_results").fetchall()
    assert "you sent" in message and CANARY not in message
