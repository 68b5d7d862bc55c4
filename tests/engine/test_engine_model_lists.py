"""The providers' model lists (engine/transport/model_lists.py) over real HTTP to the fake server:
what counts as listed, when a kept list is used and when it is asked for again."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from pytest_weval.engine.transport.model_lists import ModelLists
from tests.fakeserver import FakeServer


@pytest.fixture
def server():
    with FakeServer() as fake:
        fake.model_lists = {
            "openai": ["gpt-4o-mini", "gpt-4o"],
            "openrouter": ["openai/gpt-4o", "meta-llama/llama-3-8b-instruct"],
        }
        yield fake


def _lists(server: FakeServer, path: str) -> int:
    return sum(1 for r in server.listings if r["path"] == path)


def _checker(server: FakeServer, cache_file: Path | None, **kw) -> ModelLists:
    kw.setdefault("run_started", time.time())
    return ModelLists(server.env(), cache_file=cache_file, **kw)


def test_openrouter_variants_are_read_as_the_model_they_route(server: FakeServer):
    unknown = _checker(server, None).unlisted(
        "openrouter", ["openai/gpt-4o:nitro", "openai/gpt-4o", "meta-llama/llama-3-8b-instruct:free", "openai/gpt-4oo"]
    )
    assert unknown == {"openai/gpt-4oo": "openai/gpt-4o"}
    assert _lists(server, "/openrouter/api/v1/models") == 1  # nothing more to ask: OpenRouter has no such question


def test_a_second_process_reads_the_list_the_first_kept(server: FakeServer, tmp_path: Path):
    cache = tmp_path / "model-lists.json"
    assert _checker(server, cache).unlisted("openai", ["gpt-4o-mini"]) == {}
    assert _checker(server, cache).unlisted("openai", ["gpt-4o"]) == {}
    assert _lists(server, "/openai/v1/models") == 1


def test_a_list_older_than_its_age_is_asked_again(server: FakeServer, tmp_path: Path):
    cache = tmp_path / "model-lists.json"
    _checker(server, cache, max_age_s=0).unlisted("openai", ["gpt-4o"])
    _checker(server, cache, max_age_s=0).unlisted("openai", ["gpt-4o"])
    assert _lists(server, "/openai/v1/models") == 2


def test_refresh_asks_again_for_a_list_kept_before_the_run(server: FakeServer, tmp_path: Path):
    cache = tmp_path / "model-lists.json"
    _checker(server, cache).unlisted("openai", ["gpt-4o"])
    _checker(server, cache, reuse=False, run_started=time.time() + 1).unlisted("openai", ["gpt-4o"])
    _checker(server, cache, reuse=False, run_started=0).unlisted("openai", ["gpt-4o"])  # this run's: kept
    assert _lists(server, "/openai/v1/models") == 2


def test_a_model_said_missing_is_believed_for_its_run_only(server: FakeServer, tmp_path: Path):
    cache = tmp_path / "model-lists.json"
    started = time.time()
    assert _checker(server, cache, run_started=started).unlisted("openai", ["gpt-4o-mnii"]) == {
        "gpt-4o-mnii": "gpt-4o-mini"
    }
    _checker(server, cache, run_started=started).unlisted("openai", ["gpt-4o-mnii"])  # another worker
    assert _lists(server, "/openai/v1/models/gpt-4o-mnii") == 1
    server.unlisted_models = ["gpt-4o-mnii"]  # released since
    assert _checker(server, cache, run_started=time.time() + 1).unlisted("openai", ["gpt-4o-mnii"]) == {}
    assert _lists(server, "/openai/v1/models/gpt-4o-mnii") == 2


def test_a_file_that_cannot_be_read_is_replaced(server: FakeServer, tmp_path: Path):
    cache = tmp_path / "model-lists.json"
    cache.write_text("{not json")
    assert _checker(server, cache).unlisted("openai", ["gpt-4o-mnii"]) == {"gpt-4o-mnii": "gpt-4o-mini"}
    kept = json.loads(cache.read_text())
    assert [sorted(entry["ids"]) for entry in kept["lists"].values()] == [["gpt-4o", "gpt-4o-mini"]]


def test_nothing_is_asked_without_a_key_or_of_a_provider_that_lists_nothing(server: FakeServer):
    env = server.env(keys=False)
    assert ModelLists(env, cache_file=None, run_started=time.time()).unlisted("openai", ["gpt-4o"]) is None
    assert _checker(server, None).unlisted("mistral", ["mistral-large"]) is None
    assert server.listings == []


def test_a_list_of_another_shape_cannot_check(server: FakeServer, tmp_path: Path):
    """An OpenAI-compatible server whose /models answers something else: no check, nothing kept."""
    server.model_lists = {}
    server.list_status = 200  # answered as an error body with status 200
    cache = tmp_path / "model-lists.json"
    assert _checker(server, cache).unlisted("openai", ["gpt-4o"]) is None
    assert not cache.exists()


def test_a_list_can_be_asked_for_from_inside_a_running_loop(server: FakeServer):
    """The check asks on an event loop of its own: called where a loop already runs, it runs
    that loop beside it rather than failing."""

    async def inside() -> dict[str, str | None] | None:
        return _checker(server, None).unlisted("openai", ["gpt-4o-mnii", "gpt-4o"])

    assert asyncio.run(inside()) == {"gpt-4o-mnii": "gpt-4o-mini"}
