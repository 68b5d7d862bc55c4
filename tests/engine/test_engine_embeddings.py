"""Embeddings requests through the engine (providers/embeddings.py): the body each provider's
reference client sends, the vector back, cached and priced as any reply."""

from __future__ import annotations

import pytest

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ChatMessage, ConfigError, ModelRequest
from pytest_weval.engine.transport.providers.embeddings import vector_of
from tests.engine.engine_helpers import complete_sync


def embed(model_id: str, text: str) -> ModelRequest:
    return ModelRequest(model=ModelSpec(id=model_id), messages=(ChatMessage("user", text),), endpoint="embeddings")


def test_openai_body_and_vector(make_engine, server):
    server.embeddings = {"a\nb": [0.5, -1.0, 2.0]}
    engine = make_engine()
    reply = complete_sync(engine, embed("openai:text-embedding-3-small", "a\nb"))
    assert vector_of(reply) == [0.5, -1.0, 2.0] and reply.input_tokens == 2  # the fake counts words
    large = complete_sync(engine, embed("openai:text-embedding-3-large", "a\nb"))
    assert vector_of(large) == [0.5, -1.0, 2.0]
    bodies = [(r.path, r.body) for r in server.requests]
    assert bodies == [
        (
            "/openai/v1/embeddings",
            {"model": "text-embedding-3-small", "input": "a\nb", "dimensions": 1536, "encoding_format": "float"},
        ),
        (
            "/openai/v1/embeddings",
            {"model": "text-embedding-3-large", "input": "a\nb", "dimensions": 3072, "encoding_format": "float"},
        ),
    ]
    assert server.requests[0].headers["authorization"] == "Bearer test-openai-key"


def test_together_sends_newlines_as_spaces(make_engine, server):
    server.embeddings = {"one two  three": [1.0, 0.0]}
    reply = complete_sync(make_engine(), embed("together:BAAI/bge-large", "one\ntwo\n\nthree"))
    assert vector_of(reply) == [1.0, 0.0]
    assert server.requests[0].path == "/together/v1/embeddings"
    assert server.requests[0].body == {"model": "BAAI/bge-large", "input": "one two  three"}


def test_an_embedding_is_bought_once(make_engine, server):
    engine = make_engine()
    first = complete_sync(engine, embed("openai:text-embedding-3-small", "same text"))
    again = complete_sync(engine, embed("openai:text-embedding-3-small", "same text"))
    assert vector_of(first) == vector_of(again) and server.count == 1
    engine.close()
    later = complete_sync(make_engine(), embed("openai:text-embedding-3-small", "same text"))
    assert later.cached and vector_of(later) == vector_of(first) and server.count == 1
    # Not the chat reply to the same text: the endpoint is part of the key.
    chat = complete_sync(
        make_engine(),
        ModelRequest(model=ModelSpec(id="openai:text-embedding-3-small"), messages=(ChatMessage("user", "same text"),)),
    )
    assert chat.text == "echo: same text" and server.count == 2


def test_embeddings_are_priced(make_engine, server):
    engine = make_engine()
    complete_sync(engine, embed("openai:text-embedding-3-small", "four words of text"))
    used = engine.run_usage()["openai:text-embedding-3-small"]
    assert used.requests == 1 and used.input_tokens == 4
    assert used.cost_usd == pytest.approx(4 * 0.02 / 1_000_000)


def test_a_provider_without_an_embeddings_endpoint(make_engine, server):
    with pytest.raises(ConfigError, match="embedding model 'anthropic:x'"):
        complete_sync(make_engine(), embed("anthropic:x", "hi"))
    assert server.count == 0
