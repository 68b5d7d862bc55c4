"""A replay's hits (``--weval-cache=ro`` of a file no writer has open) are read where they are
asked: ``Engine.complete`` answers without waiting for anything (no flight, no task, the loop
not turned), counted as before; whatever the read cannot answer at once (a miss, an entry that
cannot be read) goes the usual way, so replay misses and damage are told as they were."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import pytest
from engine_helpers import complete_sync, request

from pytest_weval.engine import Engine, EngineSettings, ReplayMissError

ENTRIES = 200
PAGE = 4096


def record(tmp_path, server, count: int = 1) -> None:
    with Engine(EngineSettings(cache_dir=tmp_path / "cache", env=server.env())) as engine:
        for n in range(count):
            complete_sync(engine, request("openai:m", f"question {n} " + "with a long tail " * 40))


def replay(tmp_path, server) -> Engine:
    return Engine(EngineSettings(cache_dir=tmp_path / "cache", env=server.env(), cache_mode="ro")).start()


def at_once(engine: Engine, coro: Coroutine[Any, Any, Any]) -> tuple[bool, Any]:
    """(whether ``coro`` finished at its first step, without awaiting anything, and its result
    or exception), run on the engine's loop."""

    async def step() -> tuple[bool, Any]:
        try:
            coro.send(None)
        except StopIteration as done:
            return True, done.value
        except Exception as exc:  # noqa: BLE001 - raised at once: finished too
            return True, exc
        coro.close()
        return False, None

    return engine.run_coroutine(step()).result(30)


def test_a_replayed_hit_is_answered_without_waiting(tmp_path, server):
    record(tmp_path, server)
    engine = replay(tmp_path, server)
    try:
        finished, reply = at_once(
            engine, engine.complete(request("openai:m", "question 0 " + "with a long tail " * 40))
        )
        assert finished, "a replayed hit waited for something"
        assert reply.cached and reply.text.startswith("echo: question 0")
        again = complete_sync(engine, request("openai:m", "question 0 " + "with a long tail " * 40))
        assert again.cached and again.text == reply.text
        stats = engine.stats
        assert stats["cache_hits"] == 2 and stats["http_requests"] == 0 and engine.in_flight == 0
        usage = engine.run_usage()["openai:m"]  # one distinct request, counted once a run
        assert (usage.requests, usage.cache_hits, usage.input_tokens) == (1, 1, reply.input_tokens)
    finally:
        engine.close()
    assert server.count == 1


def test_a_replay_miss_is_still_an_error(tmp_path, server):
    record(tmp_path, server)
    engine = replay(tmp_path, server)
    try:
        with pytest.raises(ReplayMissError, match="never recorded"):
            complete_sync(engine, request("openai:m", "never asked"))
        assert engine.stats["errors"] == 1 and engine.stats["cache_hits"] == 0
    finally:
        engine.close()


def test_an_entry_damaged_during_a_replay_is_counted_once(tmp_path, server):
    """The read at once meets the damage and leaves it to the usual read, which notes it:
    one unreadable entry, the file said damaged, and (a replay) the request a replay miss."""
    record(tmp_path, server, ENTRIES)
    engine = replay(tmp_path, server)
    path = tmp_path / "cache" / "weval-cache.sqlite"
    try:
        complete_sync(engine, request("openai:m", "question 0 " + "with a long tail " * 40))  # opened, read
        size = path.stat().st_size
        with open(path, "r+b") as f:  # every page but the first two overwritten
            f.seek(2 * PAGE)
            f.write(b"\xa5" * (size - 2 * PAGE))
        with pytest.raises(ReplayMissError):
            complete_sync(engine, request("openai:m", f"question {ENTRIES - 1} " + "with a long tail " * 40))
        faults = engine.store_faults()
        assert faults.unreadable == 1 and faults.damaged
    finally:
        engine.close()
