"""What a reply costs is what the provider bills for its own usage (issue 45 item 1): cached
reads and cache writes at their rates and long-prompt tiers, priced through genai-prices from
the usage each provider's reply reports (docs/engine.md, 'Prices, spend and the budget')."""

from __future__ import annotations

import genai_prices
import pytest
from engine_helpers import request

from pytest_weval.engine.prices import Price
from tests.engine.engine_helpers import complete_sync

# provider prefix -> (genai-prices provider id, the fake's reply path)
PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "google": "google"}
QUESTIONS = [f"question number {n} about the shared transcript and its answer" for n in range(6)]


def _library_price(provider: str, model: str, sent: list[dict]) -> float:
    """genai-prices' own price of every reply body the fake sent."""
    total = 0.0
    for body in sent:
        body = {"model": model, **body}
        flavor = "chat" if provider == "openai" else "default"
        usage = genai_prices.extract_usage(body, provider_id=PROVIDERS[provider], api_flavor=flavor).usage
        total += float(genai_prices.calc_price(usage, model, provider_id=PROVIDERS[provider]).total_price)
    return total


def _run(make_engine, model_id: str, **settings) -> float | None:
    engine = make_engine(**settings)
    for question in QUESTIONS:
        complete_sync(engine, request(model_id, question))
    return engine.run_usage()[model_id].cost_usd


# Per million tokens, from each provider's pricing page: input, cached read, cache write, output.
#   OpenAI gpt-4o-mini: $0.15 input, $0.075 cached input, $0.60 output (https://openai.com/api/pricing)
#   Anthropic Claude Haiku 3.5: $0.80 input, $1 5-minute cache write, $0.08 cache hit, $4 output
#     (https://docs.anthropic.com/en/docs/about-claude/pricing)
#   Gemini 2.5 Flash: $0.30 input, $0.03 context caching, $2.50 output (https://ai.google.dev/gemini-api/docs/pricing)
PAGES = {
    "openai:gpt-4o-mini": (0.15, 0.075, 0.0, 0.60),
    "anthropic:claude-3-5-haiku-latest": (0.80, 0.08, 1.00, 4.00),
    "google:gemini-2.5-flash": (0.30, 0.03, 0.0, 2.50),
}


def _page_price(model_id: str, sent: list[dict]) -> float:
    per_in, per_read, per_write, per_out = PAGES[model_id]
    total = 0.0
    for body in sent:
        usage = body.get("usage") or {}
        meta = body.get("usageMetadata") or {}
        if "prompt_tokens" in usage:  # OpenAI: prompt_tokens includes the cached ones
            read, write = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0), 0
            fresh, out = usage["prompt_tokens"] - read, usage["completion_tokens"]
        elif usage:  # Anthropic: input_tokens are the uncached ones
            read, write = usage.get("cache_read_input_tokens", 0), usage.get("cache_creation_input_tokens", 0)
            fresh, out = usage["input_tokens"], usage["output_tokens"]
        else:  # Gemini: promptTokenCount includes the cached content
            read, write = meta.get("cachedContentTokenCount", 0), 0
            fresh, out = meta["promptTokenCount"] - read, meta["candidatesTokenCount"]
        total += (fresh * per_in + read * per_read + write * per_write + out * per_out) / 1_000_000
    return total


@pytest.mark.parametrize("model_id", list(PAGES))
def test_a_reply_with_cached_tokens_costs_what_the_provider_bills(make_engine, server, model_id):
    server.prompt_cache.read_share = 0.5
    server.prompt_cache.write_share = 0.25  # Anthropic's cache writes (the others have none)
    server.prompt_cache.prompt_scale = 1000  # prompts of thousands of tokens: cents, not rounding
    cost = _run(make_engine, model_id)
    sent = server.prompt_cache.sent
    assert len(sent) == len(QUESTIONS)
    provider, _, model = model_id.partition(":")
    assert cost == pytest.approx(_library_price(provider, model, sent), rel=0.01)
    assert cost == pytest.approx(_page_price(model_id, sent), rel=0.01)


def test_cached_reads_cost_less_than_the_list_price(make_engine, server):
    server.prompt_cache.read_share = 0.9
    server.prompt_cache.prompt_scale = 1000
    cost = _run(make_engine, "openai:gpt-4o-mini")
    sent = server.prompt_cache.sent
    prompt = sum(body["usage"]["prompt_tokens"] for body in sent)
    output = sum(body["usage"]["completion_tokens"] for body in sent)
    list_price = (prompt * 0.15 + output * 0.60) / 1_000_000
    assert cost is not None and cost < 0.6 * list_price


@pytest.mark.parametrize("long", [False, True], ids=["under 200k", "over 200k"])
def test_a_prompt_is_priced_at_its_own_context_tier(make_engine, server, long):
    # Gemini 2.5 Pro: $1.25 input / $10 output up to 200k prompt tokens, $2.50 / $15 above
    # (https://ai.google.dev/gemini-api/docs/pricing).
    server.prompt_cache.prompt_scale = 100_000 if long else 1000
    cost = _run(make_engine, "google:gemini-2.5-pro")
    per_in, per_out = (2.50, 15.0) if long else (1.25, 10.0)
    expected = 0.0
    for body in server.prompt_cache.sent:
        meta = body["usageMetadata"]
        assert (meta["promptTokenCount"] > 200_000) == long
        expected += (meta["promptTokenCount"] * per_in + meta["candidatesTokenCount"] * per_out) / 1_000_000
    assert cost == pytest.approx(expected, rel=0.01)


def _prompt_tokens(body: dict) -> int:
    usage = body["usage"]
    if "prompt_tokens" in usage:
        return usage["prompt_tokens"]
    return sum(usage.get(k, 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


@pytest.mark.parametrize("model_id", ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"])
def test_a_weval_prices_line_prices_every_input_token_at_its_input_price(make_engine, server, model_id):
    # Our own price lines have no cached rate: cached reads and writes are priced as any input token.
    server.prompt_cache.read_share = 0.6
    server.prompt_cache.write_share = 0.3
    server.prompt_cache.prompt_scale = 1000
    engine = make_engine(prices={model_id: Price(2.0, 8.0)})
    for question in QUESTIONS:
        complete_sync(engine, request(model_id, question))
    usage = engine.run_usage()[model_id]
    sent = server.prompt_cache.sent
    prompt = sum(_prompt_tokens(b) for b in sent)
    output = sum(b["usage"].get("completion_tokens", b["usage"].get("output_tokens", 0)) for b in sent)
    assert usage.input_tokens == prompt  # the usage table counts the whole prompt, cached or not
    assert usage.cost_usd == pytest.approx((prompt * 2.0 + output * 8.0) / 1e6, rel=1e-9)


def test_the_budget_settles_each_reply_at_its_billed_price(make_engine, server):
    server.prompt_cache.read_share = 0.5
    server.prompt_cache.prompt_scale = 1000
    model_id = "openai:gpt-4o-mini"
    engine = make_engine(budget_usd=100.0)
    for question in QUESTIONS:
        complete_sync(engine, request(model_id, question))
    expected = _library_price("openai", "gpt-4o-mini", server.prompt_cache.sent)
    assert engine.budget.spent == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize(
    ("model_id", "body", "library_has_batch"),
    [
        (
            "openai:gpt-4o-mini",
            {
                "usage": {
                    "prompt_tokens": 10_000,
                    "completion_tokens": 500,
                    "prompt_tokens_details": {"cached_tokens": 6000},
                }
            },
            True,
        ),
        (
            "google:gemini-2.5-flash",
            {
                "usageMetadata": {
                    "promptTokenCount": 10_000,
                    "candidatesTokenCount": 500,
                    "cachedContentTokenCount": 6000,
                }
            },
            True,
        ),
        (
            "anthropic:claude-sonnet-4-5",
            {
                "usage": {
                    "input_tokens": 3000,
                    "output_tokens": 500,
                    "cache_read_input_tokens": 6000,
                    "cache_creation_input_tokens": 1000,
                }
            },
            True,
        ),
        (
            "anthropic:claude-3-5-haiku-latest",
            {
                "usage": {
                    "input_tokens": 3000,
                    "output_tokens": 500,
                    "cache_read_input_tokens": 6000,
                    "cache_creation_input_tokens": 1000,
                }
            },
            False,
        ),
    ],
)
def test_a_batched_reply_costs_the_batch_price_of_its_own_usage(model_id, body, library_has_batch):
    # The library's batch price where it has one, cached reads and writes included; a model it
    # prices live but not batched, at its provider's published batch share of the live price
    # (Anthropic's Batch API bills every model at half).
    from pytest_weval.engine.prices import PriceBook
    from pytest_weval.engine.request import ModelReply

    provider, _, model = model_id.partition(":")
    reply = ModelReply(text="ok", billing=body)
    flavor = "chat" if provider == "openai" else "default"
    usage = genai_prices.extract_usage({"model": model, **body}, provider_id=provider, api_flavor=flavor).usage
    live = float(genai_prices.calc_price(usage, model, provider_id=provider).total_price)
    batch = float(
        genai_prices.calc_price(usage, model, provider_id=provider, price_context={"processing": "batch"}).total_price
    )
    assert (batch < live) == library_has_batch
    expected = batch if library_has_batch else live * 0.5
    prices = PriceBook()
    assert prices.reply_cost(model_id, reply) == pytest.approx(live, rel=1e-9)
    assert prices.reply_cost(model_id, reply, batch=True) == pytest.approx(expected, rel=1e-9)


def test_a_batched_reply_of_a_provider_the_library_has_no_batch_price_of_costs_its_published_share():
    # Together's Batch API bills half its serverless price (https://docs.together.ai/docs/batch-inference#pricing):
    # genai-prices has no batch price of any Together model, so BATCH_SHARE keeps that one number.
    from pytest_weval.engine.prices import PriceBook
    from pytest_weval.engine.request import ModelReply

    model_id = "together:meta-llama/Llama-3.3-70B-Instruct-Turbo"
    body = {"usage": {"prompt_tokens": 10_000, "completion_tokens": 500}}
    reply = ModelReply(text="ok", input_tokens=10_000, output_tokens=500, billing=body)
    usage = genai_prices.Usage(input_tokens=10_000, output_tokens=500)
    live = float(genai_prices.calc_price(usage, model_id.partition(":")[2], provider_id="together").total_price)
    prices = PriceBook()
    assert prices.reply_cost(model_id, reply) == pytest.approx(live, rel=1e-9)
    assert prices.reply_cost(model_id, reply, batch=True) == pytest.approx(live / 2, rel=1e-9)


def test_the_batch_estimate_is_the_library_batch_price():
    # The batcher's reservation and the plan's batch column: the library's batch price of the
    # estimated tokens (gpt-4o-mini: $0.075 / $0.30 per million through the Batch API).
    from pytest_weval.engine.prices import PriceBook

    prices = PriceBook()
    assert prices.cost("openai:gpt-4o-mini", 1_000_000, 1_000_000, batch=True) == pytest.approx(0.375)
    assert prices.batch_ratio("openai:gpt-4o-mini") == pytest.approx(0.5)
    # the library has no batch price of Claude Haiku 3.5: Anthropic's Batch API bills every model
    # at half (BATCH_SHARE), not the live price
    assert prices.batch_ratio("anthropic:claude-3-5-haiku-latest") == pytest.approx(0.5)


def test_a_reply_is_priced_at_the_price_of_the_day_its_request_was_made():
    # genai-prices dates its prices; a reply is priced at the one in force when its request was
    # sent (ModelReply.requested_at, stamped by the sending stage), not the day it is priced.
    # Claude Opus 4.6 billed prompts over 200k tokens at $10 per million until 2026-03-13, then
    # every prompt at $5 (https://docs.anthropic.com/en/docs/about-claude/pricing).
    import datetime

    from pytest_weval.engine.prices import PriceBook
    from pytest_weval.engine.request import ModelReply

    body = {"usage": {"input_tokens": 300_000, "output_tokens": 1_000}}
    days = [datetime.datetime(2026, 3, d, 12, tzinfo=datetime.timezone.utc) for d in (10, 16)]
    usage = genai_prices.Usage(input_tokens=300_000, output_tokens=1_000)
    then = [
        float(
            genai_prices.calc_price(
                usage, "claude-opus-4-6", provider_id="anthropic", genai_request_timestamp=day
            ).total_price
        )
        for day in days
    ]
    assert then[0] > then[1]
    got = [
        PriceBook().reply_cost(
            "anthropic:claude-opus-4-6", ModelReply(text="ok", billing=body, requested_at=day.timestamp())
        )
        for day in days
    ]
    assert got == pytest.approx(then, rel=1e-9)


def test_the_rates_per_million_are_not_a_long_context_tier():
    # Claude Sonnet 4.5: $3 / $15 per million tokens up to 200k prompt tokens, $6 / $22.50 above
    # (https://docs.anthropic.com/en/docs/about-claude/pricing). The estimates' rates are the
    # ordinary ones: a million tokens at once would be priced at the long-context tier.
    from pytest_weval.engine.prices import PriceBook

    prices = PriceBook()
    price = prices.price("anthropic:claude-sonnet-4-5")
    assert price is not None
    assert (price.input_per_mtok, price.output_per_mtok) == pytest.approx((3.0, 15.0))
    # and its prompt cache: reads at a tenth, 5-minute writes at 1.25 times the input price
    assert prices.cache_rates("anthropic:claude-sonnet-4-5") == pytest.approx((3.0, 0.3, 3.75))
