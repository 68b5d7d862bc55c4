"""The Gemini, xAI, Together and Mistral batch APIs as ``engine/transport/batch_api.py`` drives
them, against the loopback fake (docs/batch.md, 'Each provider's batch API'): each line's
outcome read from the provider's results by its id, a lost batch found by our id, a cancel."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.batch_api import AGAIN, BATCH_APIS, FAILED, OK, BatchAPI, BatchStatus
from tests.fakeserver import FakeServer, Rule

PROVIDERS = ["google", "xai", "together", "mistral"]


def _body(provider: str, text: str, model: str = "fake-model") -> str:
    if provider == "google":
        return json.dumps({"model": f"models/{model}", "contents": [{"role": "user", "parts": [{"text": text}]}]})
    return json.dumps({"model": model, "messages": [{"role": "user", "content": text}]})


async def _ended(api: BatchAPI, provider_id: str) -> BatchStatus:
    for _ in range(200):
        status = await api.status(provider_id)
        if status.ended:
            return status
        await asyncio.sleep(0.05)
    raise AssertionError(f"{provider_id} never ended")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_lines_outcome_is_read_by_its_id_and_a_lost_batch_is_found_by_ours(provider: str):
    rules = [
        Rule(contains="refused", status=400),  # a permanent error: the item errors
        Rule(contains="overloaded", status=500),  # a fault that passes: into the next batch
    ]
    lines = [("k-ok", _body(provider, "answer me")), ("k-400", _body(provider, "refused")),
             ("k-500", _body(provider, "overloaded"))]  # fmt: skip

    async def run(server: FakeServer) -> tuple[dict[str, Any], str | None, str]:
        async with httpx.AsyncClient(timeout=10) as http:
            api = BATCH_APIS[provider](server.env(), Redactor(), http)
            provider_id = await api.submit(lines, "wb-ours")
            await api.submit([("k-other", _body(provider, "another"))], "wb-another")
            found = await api.find("wb-ours", 0.0, len(lines), set())
            await _ended(api, provider_id)
            results = {r.key: r for r in await api.results(provider_id)}
            return results, found, provider_id

    with FakeServer(rules=rules, batch_delay_s=0.2) as server:
        results, found, provider_id = asyncio.run(run(server))
    assert found == provider_id
    assert results["k-ok"].outcome == OK
    assert api_text(provider, results["k-ok"].body) == "echo: answer me"
    assert results["k-400"].outcome == FAILED
    assert results["k-500"].outcome == AGAIN
    assert "k-other" not in results


def api_text(provider: str, body: Any) -> str:
    if provider == "google":
        return str(body["candidates"][0]["content"]["parts"][0]["text"])
    return str(body["choices"][0]["message"]["content"])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_cancelled_batch_ends_with_no_reply(provider: str):
    async def run(server: FakeServer) -> list[Any]:
        async with httpx.AsyncClient(timeout=10) as http:
            api = BATCH_APIS[provider](server.env(), Redactor(), http)
            provider_id = await api.submit([("k1", _body(provider, "one")), ("k2", _body(provider, "two"))], "wb-c")
            await api.cancel(provider_id)
            await _ended(api, provider_id)
            return await api.results(provider_id)

    with FakeServer(batch_delay_s=2.0) as server:
        results = asyncio.run(run(server))
        assert [job.cancel_initiated is not None for job in server.batches.values()] == [True]
    # Gemini and xAI say each line was cancelled (dropped); Together's and Mistral's files hold
    # none: the lines left out are queued again by the collector, never taken as answered.
    assert all(r.outcome != OK for r in results)


def test_a_gemini_round_of_two_models_is_one_batch_per_model_recorded_as_one():
    lines = [("k1", _body("google", "one", "gem-a")), ("k2", _body("google", "two", "gem-b"))]

    async def run(server: FakeServer) -> tuple[str, dict[str, Any]]:
        async with httpx.AsyncClient(timeout=10) as http:
            api = BATCH_APIS["google"](server.env(), Redactor(), http)
            provider_id = await api.submit(lines, "wb-two")
            await _ended(api, provider_id)
            return provider_id, {r.key: r for r in await api.results(provider_id)}

    with FakeServer(batch_delay_s=0.2) as server:
        provider_id, results = asyncio.run(run(server))
        assert sorted(job.model or "" for job in server.batches.values()) == ["gem-a", "gem-b"]
        assert sorted(provider_id.split(",")) == sorted(server.batches)
    assert {key: r.outcome for key, r in results.items()} == {"k1": OK, "k2": OK}
