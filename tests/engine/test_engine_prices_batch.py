"""The batch price of Gemini, xAI, Mistral and Together replies (docs/batch.md, 'Money'):
genai-prices' batch price where the library has one, else the provider's published share of the
live price (``BATCH_SHARE``; Together's only for the models its batch page lists as discounted)."""

from __future__ import annotations

import genai_prices
import pytest

from pytest_weval.engine.prices import GENAI_PROVIDERS, PriceBook
from pytest_weval.engine.request import ModelReply


@pytest.mark.parametrize(
    ("model_id", "library_has_batch", "share"),
    [
        ("google:gemini-2.5-flash", True, None),
        ("google:gemini-2.0-flash", False, 0.5),  # Gemini batch mode: 50% of the live price
        ("xai:grok-4", False, 0.5),  # xAI's Batch API: 50% off
        ("mistral:mistral-small-latest", True, None),
        ("mistral:mistral-large-latest", False, 0.5),  # Mistral's batch API: 50% discount
        ("together:meta-llama/Llama-3.3-70B-Instruct-Turbo", False, 0.5),  # on Together's discounted list
        ("together:meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", False, 1.0),  # not on it: standard rates
    ],
)
def test_a_batched_reply_of_each_new_batch_provider_costs_its_batch_price(model_id, library_has_batch, share):
    provider, _, model = model_id.partition(":")
    usage = genai_prices.Usage(input_tokens=10_000, output_tokens=500)
    provider_id = GENAI_PROVIDERS[provider]
    live = float(genai_prices.calc_price(usage, model, provider_id=provider_id).total_price)
    batch = float(
        genai_prices.calc_price(
            usage, model, provider_id=provider_id, price_context={"processing": "batch"}
        ).total_price
    )
    assert (batch < live) == library_has_batch
    reply = ModelReply(text="ok", input_tokens=10_000, output_tokens=500)
    expected = batch if library_has_batch else live * share
    assert PriceBook().reply_cost(model_id, reply, batch=True) == pytest.approx(expected, rel=1e-9)
