"""A run's cost is what the provider bills for each reply's own usage (issue 45 item 1): against
the fake reporting cached prompt tokens, summary.json's cost equals genai-prices' price of every
reply body the fake sent, live and through OpenAI's Batch API (docs/engine.md, 'Prices, spend
and the budget'; docs/batch.md, 'Money')."""

from __future__ import annotations

import genai_prices
import pytest
from plugin_helpers import MODEL, MODEL_ID, Project, Rule

ITEMS = 8


def _suite(project: Project) -> None:
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(ITEMS):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer it.", "  should:", "    - $icontains: answer"]
    project.write("blueprints/suite.yml", "\n".join(lines) + "\n")
    project.rules(Rule(model=MODEL, reply="Here is my answer."))
    project.server.prompt_cache.read_share = 0.5
    project.server.prompt_cache.prompt_scale = 1000


def _library_price(sent: list[dict], *, batch: bool) -> float:
    total = 0.0
    for body in sent:
        usage = genai_prices.extract_usage({"model": MODEL, **body}, provider_id="openai", api_flavor="chat").usage
        context = {"processing": "batch"} if batch else None
        total += float(genai_prices.calc_price(usage, MODEL, provider_id="openai", price_context=context).total_price)
    return total


@pytest.mark.parametrize("batch", [False, True], ids=["live", "batch"])
def test_the_run_costs_the_library_price_of_every_reply_s_own_usage(project: Project, batch: bool):
    _suite(project)
    args = ["--weval-out=out", "--weval-check-models=off"]
    if batch:
        args += ["--weval-batch=wait", "--weval-batch-poll=0.2"]
    result = project.run(*args, sub=batch, timeout=300)
    result.assert_outcomes(passed=ITEMS)
    sent = project.server.prompt_cache.sent
    assert len(sent) == ITEMS
    assert all(body["usage"]["prompt_tokens_details"]["cached_tokens"] for body in sent)
    cost = float(project.json("out/summary.json")["usageTotal"]["costUsd"])
    assert cost == pytest.approx(_library_price(sent, batch=batch), rel=0.01)
