"""Each provider's request shape (path, auth headers, body) and reply parsing, over real HTTP."""

from __future__ import annotations

import pytest
from engine_helpers import complete_sync, request

from pytest_weval.engine import ConfigError, MissingKeyError
from pytest_weval.engine.transport.keys import base_url
from tests.fakeserver import Rule

OPENAI_STYLE = [
    ("openai", "/openai/v1/chat/completions", "test-openai-key"),
    ("mistral", "/mistral/v1/chat/completions", "test-mistral-key"),
    ("together", "/together/v1/chat/completions", "test-together-key"),
    ("xai", "/xai/v1/chat/completions", "test-xai-key"),
    ("openrouter", "/openrouter/api/v1/chat/completions", "test-openrouter-key"),
]


@pytest.mark.parametrize("provider,path,key", OPENAI_STYLE)
def test_openai_style_request_shape(make_engine, server, provider, path, key):
    engine = make_engine()
    reply = complete_sync(
        engine, request(f"{provider}:some/model-1", "What is 2+2?", system="Be brief.", temperature=0.5)
    )
    assert reply.text == "echo: What is 2+2?"
    assert (reply.input_tokens, reply.output_tokens) == (3, 4)
    [sent] = server.requests
    assert sent.path == path
    assert sent.headers["authorization"] == f"Bearer {key}"
    assert sent.headers["content-type"] == "application/json"
    body = sent.body
    assert body["model"] == "some/model-1"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+2?"},
    ]
    assert body["stream"] is False
    assert body["temperature"] == 0.5
    if provider == "openrouter":
        assert "max_tokens" not in body  # omitted when not given (docs/engine.md, 'Providers')
    else:
        assert body["max_tokens"] == 1500


def test_provider_default_temperatures(make_engine, server):
    engine = make_engine()
    complete_sync(engine, request("openai:m", temperature=None))
    complete_sync(engine, request("openrouter:m", temperature=None))
    assert server.requests[0].body["temperature"] == 0.3
    assert server.requests[1].body["temperature"] == 0.7


def test_openrouter_keeps_the_whole_model_name_and_does_not_trim(make_engine, server):
    server.rules.append(Rule(reply="  spaced  "))
    engine = make_engine()
    reply = complete_sync(engine, request("openrouter:meta/llama-3:free"))
    assert server.requests[0].body["model"] == "meta/llama-3:free"
    assert reply.text == "  spaced  "


def test_openai_trims_and_counts_usage(make_engine, server):
    server.rules.append(Rule(reply="  answer \n"))
    engine = make_engine()
    reply = complete_sync(engine, request("openai:gpt-4o-mini"))
    assert reply.text == "answer"
    assert reply.output_tokens == 1


def test_openai_reasoning_models_send_max_completion_tokens(make_engine, server):
    engine = make_engine()
    complete_sync(engine, request("openai:o3-mini", max_tokens=100))
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body and "temperature" not in body


def test_openai_400_unsupported_parameter_is_adapted_once(make_engine, server):
    server.rules.append(
        Rule(
            status=400,
            times=1,
            body='{"error": {"message": "Unsupported parameter: '
            "'max_tokens' is not supported with this model.\", \"param\": \"max_tokens\"}}",
        )
    )
    engine = make_engine()
    reply = complete_sync(engine, request("openai:new-model"))
    assert reply.text == "echo: hello"
    first, second = server.requests
    assert "max_tokens" in first.body
    assert "max_tokens" not in second.body and second.body["max_completion_tokens"] == 1500
    complete_sync(engine, request("openai:new-model", "again"))  # remembered for the model
    assert "max_completion_tokens" in server.requests[2].body


def test_anthropic_request_shape(make_engine, server):
    engine = make_engine()
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    from pytest_weval.blueprint.model import ModelSpec
    from pytest_weval.engine import ModelRequest

    reply = complete_sync(
        engine, ModelRequest(model=ModelSpec(id="anthropic:claude-3-5-haiku"), messages=messages, temperature=0)
    )
    assert reply.text == "echo: three"
    [sent] = server.requests
    assert sent.path == "/anthropic/v1/messages"
    assert sent.headers["x-api-key"] == "test-anthropic-key"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "claude-3-5-haiku",
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": "three"},
        ],
        "max_tokens": 1500,
        "temperature": 0,
        "stream": False,
    }


def test_google_key_in_header_never_in_url(make_engine, server):
    engine = make_engine()
    reply = complete_sync(engine, request("google:gemini-2.0-flash", "hi", system="Sys", max_tokens=50))
    assert reply.text == "echo: hi"
    [sent] = server.requests
    assert sent.path == "/google/v1beta/models/gemini-2.0-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == "test-gemini-key"
    assert "key=" not in sent.path and "test-gemini-key" not in sent.path
    assert sent.body == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "Sys"}]},
        "generationConfig": {"temperature": 0, "maxOutputTokens": 50},
    }


def test_google_assistant_turns_become_model(make_engine, server):
    from pytest_weval.blueprint.model import ModelSpec
    from pytest_weval.engine import ModelRequest

    engine = make_engine()
    complete_sync(
        engine,
        ModelRequest(
            model=ModelSpec(id="google:g"),
            messages=[
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
            ],
        ),
    )
    assert [c["role"] for c in server.requests[0].body["contents"]] == ["user", "model", "user"]


def test_google_uses_google_api_key_when_gemini_key_is_missing(make_engine, server):
    env = server.env()
    del env["GEMINI_API_KEY"]
    env["GOOGLE_API_KEY"] = "the-google-key"
    engine = make_engine(env=env)
    complete_sync(engine, request("google:g"))
    assert server.requests[0].headers["x-goog-api-key"] == "the-google-key"


def test_missing_key_names_variable_and_model(make_engine, server):
    env = server.env()
    del env["ANTHROPIC_API_KEY"]
    engine = make_engine(env=env)
    with pytest.raises(MissingKeyError) as info:
        complete_sync(engine, request("anthropic:claude-x"))
    assert "ANTHROPIC_API_KEY" in str(info.value) and "anthropic:claude-x" in str(info.value)
    assert server.count == 0


def test_missing_google_key_names_both_variables(make_engine, server):
    env = server.env()
    del env["GEMINI_API_KEY"]
    engine = make_engine(env=env)
    with pytest.raises(MissingKeyError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        complete_sync(engine, request("google:g"))


def test_unknown_provider_and_invalid_id(make_engine):
    engine = make_engine()
    with pytest.raises(ConfigError, match=r"Unsupported provider 'foo' in model id 'foo:bar'"):
        complete_sync(engine, request("foo:bar"))
    with pytest.raises(ConfigError, match=r"Invalid model id 'gpt4'"):
        complete_sync(engine, request("gpt4"))


def test_base_urls_default_to_the_official_sdks():
    assert base_url("openai", {}) == "https://api.openai.com/v1"
    assert base_url("anthropic", {}) == "https://api.anthropic.com"
    assert base_url("google", {}) == "https://generativelanguage.googleapis.com"
    assert base_url("openrouter", {}) == "https://openrouter.ai/api/v1"
    assert base_url("mistral", {}) == "https://api.mistral.ai/v1"
    assert base_url("together", {}) == "https://api.together.xyz/v1"
    assert base_url("xai", {}) == "https://api.x.ai/v1"
    assert base_url("openai", {"OPENAI_BASE_URL": "http://proxy/v1/"}) == "http://proxy/v1"


def test_native_tool_calls_become_tool_call_lines():
    from pytest_weval.engine.transport.providers.openai_compat import OpenAICompat

    adapter = OpenAICompat("openai", "openai:m", "m")
    reply = adapter.parse(
        {
            "choices": [
                {
                    "message": {
                        "content": "done",
                        "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}],
                    }
                }
            ]
        }
    )
    assert reply.text == 'TOOL_CALL {"name": "search", "arguments": {"q": "x"}}\ndone'
    assert reply.tool_calls == [{"name": "search", "arguments": '{"q": "x"}'}]


def test_having_a_batch_api_is_the_adapters_declared_property():
    # The batcher asks the adapter, not its class: each provider with a batch API says so,
    # and each adapter that says so has one (transport/batch_api.py).
    from pytest_weval.blueprint.model import ModelSpec
    from pytest_weval.engine.transport.batch_api import BATCH_APIS
    from pytest_weval.engine.transport.keys import STANDARD_PROVIDERS
    from pytest_weval.engine.transport.providers import adapter_for

    batched = {
        provider
        for provider in STANDARD_PROVIDERS
        if adapter_for(ModelSpec(id=f"{provider}:m"), frozenset()).has_batch_api
    }
    assert batched == set(BATCH_APIS) == {"openai", "anthropic", "google", "xai", "together", "mistral"}
    definition = {"id": "openai:mine", "url": "http://x", "modelName": "m", "inherit": "openai"}
    custom = ModelSpec(id="openai:mine", custom=definition)
    assert not adapter_for(custom, frozenset()).has_batch_api
