"""The response cache: modes rw/ro/refresh/off, no_cache, both stores, keys, in-flight dedup."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading

import pytest
from engine_helpers import complete_sync, request

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ChatMessage, ModelReply, ModelRequest, ReplayMissError
from pytest_weval.engine.store.cache import cache_key, json_encoder
from pytest_weval.engine.transport.providers import adapter_for
from tests.engine.test_engine_processes import wait_until
from tests.fakeserver import FakeServer, Rule


def test_rw_records_then_hits(make_engine, server, tmp_path):
    engine = make_engine()
    first = complete_sync(engine, request("openai:m", "hi"))
    second = complete_sync(engine, request("openai:m", "hi"))
    # Sent once; the repeat within the same run is that run's own response, not a replay (a
    # cache hit means "recorded by an earlier run", so -n 2 and serial count alike).
    assert (first.cached, second.cached) == (False, False)
    assert second.text == first.text and second.output_tokens == first.output_tokens
    assert server.count == 1
    engine.close()
    again = complete_sync(make_engine(), request("openai:m", "hi"))  # a later run
    assert again.cached and server.count == 1


def test_sqlite_entry_contents(make_engine, server, tmp_path):
    engine = make_engine()
    complete_sync(engine, request("anthropic:c", "hi", system="S"))
    engine.close()
    db = sqlite3.connect(tmp_path / "cache" / "weval-cache.sqlite")
    _key, model, summary, text, tokens_in, tokens_out, created = db.execute(
        "SELECT key, model, request, text, input_tokens, output_tokens, created FROM responses"
    ).fetchone()
    assert model == "anthropic:c" and text == "echo: hi" and (tokens_in, tokens_out) == (1, 2)
    summary = json.loads(summary)
    assert summary["messages"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]
    assert summary["provider"] == "anthropic" and summary["model"] == "c" and created > 0
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_replay_with_the_server_stopped(tmp_path):
    from pytest_weval.engine import Engine, EngineSettings

    with FakeServer() as fake:
        env = fake.env()
        with Engine(EngineSettings(cache_dir=tmp_path, env=env)) as engine:
            complete_sync(engine, request("google:g", "recorded"))
    # The server is gone; replay needs no key either.
    replay_env = {k: v for k, v in env.items() if not k.endswith("_KEY")}
    with Engine(EngineSettings(cache_dir=tmp_path, env=replay_env, cache_mode="ro", timeout_s=1)) as engine:
        assert complete_sync(engine, request("google:g", "recorded")).text == "echo: recorded"
        with pytest.raises(ReplayMissError) as info:
            complete_sync(engine, request("google:g", "never seen"))
        message = str(info.value)
        assert "never recorded" in message and "google:g" in message and "--weval-cache=rw" in message
        with pytest.raises(ReplayMissError, match="noCache"):
            complete_sync(engine, request("google:g", "recorded", no_cache=True))
        assert engine.stats["http_requests"] == 0


def test_refresh_resends_and_overwrites(make_engine, server):
    complete_sync(make_engine(), request("openai:m", "hi"))
    server.rules.append(Rule(reply="new answer"))
    refreshed = complete_sync(make_engine(cache_mode="refresh"), request("openai:m", "hi"))
    assert refreshed.text == "new answer" and not refreshed.cached and server.count == 2
    assert complete_sync(make_engine(), request("openai:m", "hi")).text == "new answer"
    assert server.count == 2


def test_off_neither_reads_nor_writes(make_engine, server, tmp_path):
    complete_sync(make_engine(), request("openai:m", "hi"))
    engine = make_engine(cache_mode="off")
    assert not complete_sync(engine, request("openai:m", "hi")).cached
    assert not complete_sync(engine, request("openai:m", "other")).cached
    assert server.count == 3
    assert complete_sync(make_engine(), request("openai:m", "hi")).cached  # the rw entry is still there
    assert server.count == 3
    db = sqlite3.connect(tmp_path / "cache" / "weval-cache.sqlite")
    assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 1


def test_no_cache_bypasses_read_and_write(make_engine, server, tmp_path):
    engine = make_engine()
    complete_sync(engine, request("openai:m", "hi"))
    assert not complete_sync(engine, request("openai:m", "hi", no_cache=True)).cached
    complete_sync(engine, request("openai:m", "fresh", no_cache=True))
    assert server.count == 3
    # Not written: the next run finds nothing recorded for it.
    assert not complete_sync(make_engine(), request("openai:m", "fresh")).cached
    assert server.count == 4


def test_blank_replies_are_not_recorded(make_engine, server):
    server.rules.append(Rule(reply=" ", times=1))
    engine = make_engine()
    assert complete_sync(engine, request("openai:m")).text == ""
    assert complete_sync(engine, request("openai:m")).text == "echo: hello"
    assert server.count == 2


def test_files_store_round_trip(make_engine, server, tmp_path):
    engine = make_engine(cache_store="files")
    complete_sync(engine, request("openai:m", "héllo", system="S"))
    key = engine.key_for(request("openai:m", "héllo", system="S"))
    engine.close()
    path = tmp_path / "cache" / key[:2] / f"{key}.json"
    assert path.exists()
    text = path.read_text(encoding="utf-8")
    assert "héllo" in text and text.endswith("}\n") and "\n  " in text  # pretty, readable
    document = json.loads(text)
    assert document["key"] == key and document["model"] == "openai:m"
    assert document["reply"] == {"text": "echo: héllo", "usage": {"input_tokens": 1, "output_tokens": 2}}
    assert document["request"]["messages"][0] == {"role": "system", "content": "S"}
    assert not list((tmp_path / "cache").glob("*/.tmp-*"))
    assert not (tmp_path / "cache" / "weval-cache.sqlite").exists()
    replay = make_engine(cache_store="files", cache_mode="ro")
    assert complete_sync(replay, request("openai:m", "héllo", system="S")).cached
    assert server.count == 1


def test_key_covers_what_changes_the_answer():
    spec = ModelSpec(id="openai:m")
    adapter = adapter_for(spec, frozenset())

    def key(**kw):
        base = dict(model=spec, messages=(ChatMessage("user", "hi"),), temperature=0)
        base.update(kw)
        return cache_key(adapter.identity(), ModelRequest(**base))[0]

    assert key() == key(temperature=0.0) == key(priority=5, purpose="judge", no_cache=True, timeout_s=3)
    assert key() != key(temperature=0.5)
    assert key() != key(max_tokens=10)
    assert key() != key(messages=(ChatMessage("system", "S"), ChatMessage("user", "hi")))
    other = cache_key(
        adapter_for(ModelSpec(id="openai:n"), frozenset()).identity(),
        ModelRequest(model=spec, messages=(ChatMessage("user", "hi"),), temperature=0),
    )[0]
    assert other != key()
    assert len(key()) == 64


def test_identical_requests_in_flight_are_sent_once(make_engine, server):
    server.latency_ms = 200
    engine = make_engine()
    futures = [engine.run_coroutine(engine.complete(request("openai:m", "same"))) for _ in range(10)]
    replies = [f.result() for f in futures]
    assert {r.text for r in replies} == {"echo: same"}
    assert server.count == 1
    assert engine.stats["coalesced"] == 9


def test_a_caller_that_leaves_leaves_the_request_and_its_other_callers_alone(make_engine, server, tmp_path):
    server.latency_ms = 300
    engine = make_engine()
    first = engine.run_coroutine(engine.complete(request("openai:m", "shared")))
    others = [engine.run_coroutine(engine.complete(request("openai:m", "shared"))) for _ in range(2)]
    lone = engine.run_coroutine(engine.complete(request("openai:m", "nobody waits")))
    wait_until(lambda: server.count == 2)  # both on the wire
    first.cancel()
    lone.cancel()
    assert [f.result(10).text for f in others] == ["echo: shared"] * 2
    wait_until(lambda: engine.in_flight == 0)
    engine.close()
    assert server.count == 2
    # The reply nobody waited for any more was still received and stored: a later run replays it.
    replay = make_engine(cache_mode="ro")
    assert complete_sync(replay, request("openai:m", "nobody waits")).cached
    assert complete_sync(replay, request("openai:m", "shared")).cached
    assert server.count == 2


def test_each_caller_gets_a_reply_of_its_own(make_engine, server):
    server.latency_ms = 200
    engine = make_engine()
    futures = [engine.run_coroutine(engine.complete(request("openai:m", "same"))) for _ in range(2)]
    one, two = (f.result() for f in futures)
    assert one == two and one is not two and one.tool_calls is not two.tool_calls
    assert server.count == 1


def test_a_reply_copy_keeps_every_field():
    values = {
        field.name: {"text": "t", "cached": True, "tool_calls": [{"name": "f"}], "billing": {"u": 1}}.get(
            field.name, index + 1
        )
        for index, field in enumerate(dataclasses.fields(ModelReply))
    }
    reply = ModelReply(**values)
    copy = reply.copy()
    assert dataclasses.asdict(copy) == values and copy.tool_calls is not reply.tool_calls
    assert dataclasses.asdict(reply.copy(cached=False)) == dict(values, cached=False)


@pytest.mark.parametrize(
    "options",
    [
        dict(sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        dict(ensure_ascii=False, separators=(",", ":"), allow_nan=False),
        dict(sort_keys=True, default=str),
    ],
)
def test_the_engines_json_is_json_dumps_text(options):
    values = [
        {"z": 1, "a": [0.1, 1e21, -0.0, 3, True, None], "é": "ü \u2028 \"q\" \\ \n"},
        [{"role": "user", "content": "日本語 and emoji 🙂"}],
        "a string alone",
        {"nested": {"b": {"c": [1, 2, {"d": 1.5}]}, "a": 2}},
        {"when": dataclasses.fields(ModelReply)[0].name, "n": 10**30},
    ]
    if "default" in options:
        values.append({"object": ModelSpec(id="openai:m")})
    encode = json_encoder(**options)
    for value in values:
        assert encode(value) == json.dumps(value, **options)
    if options.get("allow_nan") is False:
        with pytest.raises(ValueError):
            encode({"x": float("nan")})


def test_complete_from_another_thread_and_loop(make_engine, server):
    import asyncio

    engine = make_engine()
    assert engine.loop is not None and engine._thread is not threading.current_thread()

    async def elsewhere():
        return await engine.complete(request("openai:m", "from another loop"))

    assert asyncio.run(elsewhere()).text == "echo: from another loop"


@pytest.mark.parametrize("mode", ["off", "refresh"])
def test_a_run_answers_each_request_once_in_every_mode(make_engine, server, mode):
    engine = make_engine(cache_mode=mode)
    first = complete_sync(engine, request("openai:m", "hi"))
    second = complete_sync(engine, request("openai:m", "hi"))
    assert first.text == second.text and not second.cached
    assert server.count == 1 and engine.stats["memo_hits"] == 1
    complete_sync(make_engine(cache_mode=mode), request("openai:m", "hi"))  # a new run asks again
    assert server.count == 2


@pytest.mark.parametrize("size", [0, 1, 2046, 2047, 2048, 4094, 4095, 9000])
def test_a_key_is_hashed_as_hashlib_hashes_it_whatever_its_size(size):
    """The key's hash is fed in pieces below hashlib's size for letting go of the GIL: the
    digest is the one sha256 gives the whole text, so every recorded key still replays."""
    import hashlib

    from pytest_weval.engine.store.cache import sha256_holding_gil

    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    assert sha256_holding_gil(data) == hashlib.sha256(data).hexdigest()
