"""The engine's cache key (``request_key``) is the key as defined: the sha256 of the request's
``canonical_json`` payload, byte for byte, so every recorded cache still replays."""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ChatMessage, ModelRequest
from pytest_weval.engine.store.cache import _MESSAGES_HERE, canonical_json, key_payload, request_key
from pytest_weval.engine.transport.providers import adapter_for

TEXTS = [
    "",
    "hi",
    "héllo wörld",
    "日本語 and emoji 🙂 and 𝄞",
    'quotes " and \\ backslashes \\" and /slashes/',
    "controls \x00 \x01 \x1f \x7f \t \r \n \b \f",
    "line separators \u2028 \u2029 and bidi \u202e",
    "a judge's system prompt, long: " + "You are a meticulous expert examiner. " * 60,  # over 2 KB
    "ü" * 1500,  # 3,000 bytes of UTF-8 in 1,500 characters
    "x" * 2047,
    "y" * 2048,
    _MESSAGES_HERE,  # the marker the key's head is cut at, as a message: no different
    '"messages":[]',
]

IDENTITIES = [
    {"provider": "openai", "endpoint": "chat", "model": "m"},
    {"provider": "anthropic", "endpoint": "chat", "model": "claude-x"},
    {"provider": "openai", "endpoint": "embeddings", "model": "e", "dimensions": 256},
    {
        "provider": "custom",
        "endpoint": "openai",
        "custom": {
            "url": "https://h/${VAR}/v1",
            "modelName": "ünï",
            "inherit": None,
            "format": "openai",
            "promptFormat": None,
            "parameters": {"messages": [], "temperature": 0.2, "z": [1, {"b": 2, "a": "é"}]},
            "parameterMapping": {},
        },
    },
    # The marker inside the identity: the head cannot be cut there, the key is made whole.
    {"provider": "custom", "endpoint": "openai", "custom": {"url": _MESSAGES_HERE, "parameters": {}}},
    {"provider": "openai", "endpoint": "chat", "model": "m", "extra": True},
    {"provider": "openai", "endpoint": "chat", "model": "m", "extra": 1},
]


def defined_key(identity, request):
    """The key as defined (and as every existing cache was recorded): sha256 of the payload's canonical JSON."""
    return hashlib.sha256(canonical_json(key_payload(identity, request)).encode("utf-8")).hexdigest()


def requests(seed: int, count: int):
    rng = random.Random(seed)
    model = ModelSpec(id="openai:m")
    roles = ["system", "user", "assistant", "tool", "rôle"]
    shared_first = [ChatMessage("system", text) for text in TEXTS[:8]]
    for _ in range(count):
        n = rng.choice([0, 1, 1, 2, 2, 2, 3, 5])
        messages = [
            ChatMessage(rng.choice(roles), rng.choice(TEXTS + [None, "item " + str(rng.random())])) for _ in range(n)
        ]
        if n > 1 and rng.random() < 0.6:  # a first message other requests share, as a judge's system prompt
            messages[0] = rng.choice(shared_first)
        yield ModelRequest(
            model=model,
            messages=tuple(messages),
            temperature=rng.choice([None, 0, 0.0, 0.7, 1, 1.0, 1e-7, 2.5e20, -0.0, True]),
            max_tokens=rng.choice([None, 0, 100, 100.0, 4096, 2**40]),
            sample=rng.choice([0, 0, 1, 2, 17]),
            priority=rng.randrange(5),
            purpose=rng.choice(["generate", "judge"]),
        )


@pytest.mark.parametrize("seed", range(4))
def test_request_key_is_sha256_of_the_canonical_json(seed):
    checked = 0
    for identity, request in zip(itertools.cycle(IDENTITIES), requests(seed, 1500)):
        assert request_key(identity, request) == defined_key(identity, request), (identity, request)
        checked += 1
    assert checked == 1500


def test_request_key_is_the_same_asked_again_and_in_any_order():
    """What the key function remembers (the head, a shared first message) never changes a key."""
    pairs = list(zip(itertools.cycle(IDENTITIES), requests(99, 600)))
    first = [request_key(identity, request) for identity, request in pairs]
    random.Random(1).shuffle(pairs)
    assert sorted(request_key(identity, request) for identity, request in pairs) == sorted(first)
    assert all(request_key(i, r) == defined_key(i, r) for i, r in pairs)


def test_messages_given_as_content_other_than_text_keep_their_key():
    """Content the engine's callers do not send (a list of parts, a number) is keyed as the
    payload's JSON writes it, unhashable first message included."""
    identity = {"provider": "openai", "endpoint": "chat", "model": "m"}
    parts = [{"type": "text", "text": "é"}, {"type": "image_url", "image_url": {"url": "data:x"}}]
    for messages in (
        [{"role": "user", "content": parts}],
        [{"role": "system", "content": parts}, {"role": "user", "content": "hi"}],
        [{"role": "system", "content": "S"}, {"role": "user", "content": 3.5}],
    ):
        request = ModelRequest(model=ModelSpec(id="openai:m"), messages=messages, temperature=0)
        assert request_key(identity, request) == request_key(identity, request) == defined_key(identity, request)


def test_the_engines_key_is_the_defined_key():
    from pytest_weval.engine import Engine, EngineSettings

    engine = Engine(EngineSettings(cache_mode="off"))
    spec = ModelSpec(id="openai:m")
    request = ModelRequest(model=spec, messages=(ChatMessage("system", "S"), ChatMessage("user", "hé")), temperature=0)
    identity = adapter_for(spec, frozenset()).identity()
    assert engine.key_for(request) == defined_key(identity, request)


def test_what_the_key_function_remembers_stays_bounded_and_right():
    """Many distinct heads (temperatures) and shared first messages (system prompts): what is
    remembered is let go of when full, and every key is still the defined one."""
    from pytest_weval.engine.store import cache

    identity = {"provider": "openai", "endpoint": "chat", "model": "m"}
    model = ModelSpec(id="openai:m")
    for n in range(1500):
        request = ModelRequest(
            model=model,
            messages=(ChatMessage("system", f"system prompt {n % 700} " * 20), ChatMessage("user", f"q{n}")),
            temperature=n / 1000,
        )
        assert request_key(identity, request) == defined_key(identity, request)
        assert len(cache._HEADS) <= cache._HEADS_MOST and len(cache._FIRSTS) <= cache._FIRSTS_MOST
