"""Custom model objects (docs/format.md, 'Custom model objects'): formats, parameters, parameterMapping, system handling, ${VAR}."""

from __future__ import annotations

import pytest
from engine_helpers import complete_sync, request

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ConfigError, MissingKeyError, ModelRequest


def custom(server, **fields):
    definition = {
        "id": "local:model",
        "url": server.url + "/custom/v1/chat/completions",
        "modelName": "local-model",
        "inherit": "openai",
    }
    definition.update(fields)
    return ModelSpec(id=definition["id"], custom=definition)


def test_openai_inherit_chat(make_engine, server):
    engine = make_engine(env={})  # no provider key needed
    reply = complete_sync(engine, request(custom(server, headers={"X-Team": "qa"}), "hi", system="S"))
    assert reply.text == "echo: hi"
    [sent] = server.requests
    assert sent.path == "/custom/v1/chat/completions"
    assert sent.headers["x-team"] == "qa"
    assert sent.body == {
        "model": "local-model",
        "stream": False,
        "temperature": 0,
        "max_tokens": 1500,
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}],
    }


def test_parameters_override_and_null_removes(make_engine, server):
    engine = make_engine(env={})
    spec = custom(
        server, parameters={"stream": None, "max_tokens": 150, "top_p": 0, "extra": False, "temperature": None}
    )
    complete_sync(engine, request(spec))
    body = server.requests[0].body
    assert "stream" not in body and "temperature" not in body
    assert body["max_tokens"] == 150 and body["top_p"] == 0 and body["extra"] is False


def test_parameter_mapping(make_engine, server):
    engine = make_engine(env={})
    spec = custom(
        server,
        url=server.url + "/special/generate",
        parameterMapping={"temperature": "heat", "maxTokens": "token_limit"},
        parameters={"token_limit": 200, "custom_param": "value"},
    )
    complete_sync(engine, request(spec, temperature=0.9))
    body = server.requests[0].body
    assert body["heat"] == 0.9 and body["token_limit"] == 200 and body["custom_param"] == "value"
    assert "temperature" not in body and "max_tokens" not in body


def test_completions_conversational(make_engine, server):
    engine = make_engine(env={})
    spec = custom(server, url=server.url + "/local/v1/completions", format="completions")
    messages = [
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"},
    ]
    server.rules.clear()
    reply = complete_sync(engine, ModelRequest(model=spec, messages=messages, temperature=0))
    body = server.requests[0].body
    assert body["prompt"] == "Sys\n\nUser: Q1\nAssistant: A1\nUser: Q2\nAssistant:"
    assert "messages" not in body
    assert reply.text == "echo: " + body["prompt"]  # choices[0].text, trimmed


def test_completions_raw(make_engine, server):
    engine = make_engine(env={})
    spec = custom(server, url=server.url + "/local/v1/completions", format="completions", promptFormat="raw")
    complete_sync(engine, request(spec, "Just this"))
    assert server.requests[0].body["prompt"] == "Just this"
    complete_sync(
        engine,
        ModelRequest(model=spec, messages=[{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]),
    )
    assert server.requests[1].body["prompt"] == "S\n\nU"


def test_anthropic_inherit_sends_system_as_system(make_engine, server):
    """Fix over the reference, which dropped the system message (docs/compatibility.md)."""
    engine = make_engine(env={})
    spec = custom(server, url=server.url + "/proxy/v1/messages", inherit="anthropic")
    reply = complete_sync(engine, request(spec, "hi", system="Be kind"))
    assert reply.text == "echo: hi"
    body = server.requests[0].body
    assert body["system"] == "Be kind"
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_google_inherit_sends_system_instruction(make_engine, server):
    """Fix over the reference, which sent role 'system' inside contents."""
    engine = make_engine(env={})
    spec = custom(server, url=server.url + "/g/v1beta/models/x:generateContent", inherit="google")
    reply = complete_sync(engine, request(spec, "hi", system="Be kind", max_tokens=20))
    assert reply.text == "echo: hi"
    body = server.requests[0].body
    assert body["systemInstruction"] == {"parts": [{"text": "Be kind"}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["generationConfig"] == {"temperature": 0, "maxOutputTokens": 20}


def test_env_substitution_only_for_allowed_variables(make_engine, server):
    env = {"PROXY_API_KEY": "proxy-secret-123", "PROXY_HOST": server.url}
    engine = make_engine(env=env, allowed_env=frozenset({"PROXY_API_KEY", "PROXY_HOST"}))
    spec = custom(
        server,
        url="${PROXY_HOST}/custom/v1/chat/completions",
        headers={"X-API-Key": "${PROXY_API_KEY}", "X-Plain": "value"},
    )
    complete_sync(engine, request(spec))
    sent = server.requests[0]
    assert sent.headers["x-api-key"] == "proxy-secret-123" and sent.headers["x-plain"] == "value"


def test_env_reference_not_allowed_is_a_clear_error(make_engine, server):
    engine = make_engine(env={"SECRET": "x"}, allowed_env=frozenset({"OTHER"}))
    spec = custom(server, headers={"Authorization": "Bearer ${SECRET}"})
    with pytest.raises(ConfigError) as info:
        complete_sync(engine, request(spec))
    message = str(info.value)
    assert "local:model" in message and "SECRET" in message and "--weval-allow-env" in message
    assert server.count == 0


def test_env_reference_allowed_but_unset(make_engine, server):
    engine = make_engine(env={}, allowed_env=frozenset({"TOKEN"}))
    spec = custom(server, headers={"Authorization": "Bearer ${TOKEN}"})
    with pytest.raises(MissingKeyError, match=r"local:model.*TOKEN"):
        complete_sync(engine, request(spec))


def test_bad_definitions(make_engine, server):
    engine = make_engine(env={})
    with pytest.raises(ConfigError, match="no 'url'"):
        complete_sync(engine, request(ModelSpec(id="c", custom={"id": "c", "modelName": "m"})))
    with pytest.raises(ConfigError, match="inherit 'cohere'"):
        complete_sync(engine, request(custom(server, inherit="cohere")))


def test_header_values_are_not_part_of_the_cache_key(make_engine, server):
    engine = make_engine(env={})
    one = engine.key_for(request(custom(server, headers={"Authorization": "Bearer a"})))
    two = engine.key_for(request(custom(server, headers={"Authorization": "Bearer b"})))
    three = engine.key_for(request(custom(server, parameters={"top_p": 0.5})))
    assert one == two != three
