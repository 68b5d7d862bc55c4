"""What a model's tokens cost: ini ``weval_prices`` first, else genai-prices (a maintained price
database for LLM APIs). Used for the run's spend, its budget and the plan's estimate
(docs/engine.md, 'Prices, spend and the budget')."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping

from pytest_weval.engine.errors import BudgetReached
from pytest_weval.engine.request import ModelRequest

# Our provider prefixes -> genai-prices' provider ids.
GENAI_PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "mistral": "mistral",
    "together": "together",
    "xai": "x-ai",
    "openrouter": "openrouter",
}
MILLION = 1_000_000


@dataclasses.dataclass(frozen=True)
class Price:
    """US dollars per million input and per million output tokens."""

    input_per_mtok: float
    output_per_mtok: float
    source: str = "weval_prices"

    def cost(self, input_tokens: float, output_tokens: float) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / MILLION


def parse_price_lines(lines: Iterable[str]) -> dict[str, Price]:
    """``<model id> <USD per 1M input tokens> <USD per 1M output tokens>`` per line; blank lines
    and ``#`` comments are skipped. Raises ``ValueError`` naming the line."""
    prices: dict[str, Price] = {}
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        try:
            if len(parts) != 3:
                raise ValueError
            model_id, per_in, per_out = parts[0], float(parts[1]), float(parts[2])
            if per_in < 0 or per_out < 0 or per_in != per_in or per_out != per_out:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"line {number} {line.strip()!r}: expected '<model id> <USD per 1M input tokens> "
                "<USD per 1M output tokens>', e.g. 'openai:gpt-4o-mini 0.15 0.60'"
            ) from None
        prices[model_id] = Price(per_in, per_out)
    return prices


class PriceBook:
    """Prices by model id, looked up once each."""

    def __init__(self, overrides: Mapping[str, Price] | None = None):
        self._known: dict[str, Price | None] = dict(overrides or {})

    def price(self, model_id: str) -> Price | None:
        if model_id not in self._known:
            self._known[model_id] = _genai_price(model_id)
        return self._known[model_id]

    def cost(self, model_id: str, input_tokens: float, output_tokens: float) -> float | None:
        price = self.price(model_id)
        return None if price is None else price.cost(input_tokens, output_tokens)


def _genai_price(model_id: str) -> Price | None:
    provider, _, name = model_id.partition(":")
    provider_id = GENAI_PROVIDERS.get(provider.lower())
    if provider_id is None or not name:
        return None
    # Imported here, not at the top: its price tables take ~0.2 s to load, which every pytest
    # process would pay, and only a run that prices a reply needs them.
    import genai_prices

    try:
        per_in = genai_prices.calc_price(genai_prices.Usage(input_tokens=MILLION), name, provider_id=provider_id)
        per_out = genai_prices.calc_price(genai_prices.Usage(output_tokens=MILLION), name, provider_id=provider_id)
    except LookupError:
        return None
    return Price(float(per_in.total_price), float(per_out.total_price), source="genai-prices")


class Budget:
    """``--weval-budget``: the run's spend, counted as replies arrive and reserved for requests
    in flight; once it reaches the limit no further request is sent. Under xdist every worker
    adds the others' spend, which they share through the claims store."""

    def __init__(self, limit_usd: float | None, prices: PriceBook, on_spend: Callable[[float], None] | None = None):
        self.limit_usd = limit_usd
        self.prices = prices
        self.on_spend = on_spend  # (this process's spend so far): tell the other workers
        self.spent_here = 0.0
        self._elsewhere: dict[str, float] = {}
        self._reserved = 0.0
        self._in_flight = 0
        self._landed = asyncio.Event()  # a reservation was released

    @property
    def spent(self) -> float:
        return self.spent_here + sum(self._elsewhere.values())

    async def reserve(self, request: ModelRequest, max_output_tokens: int | None) -> float:
        """Room for one attempt of ``request`` (what to ``release`` after), or ``BudgetReached``
        once the spend has reached the limit. A request that would take the spend past the
        limit with what is in flight waits for those replies (their real cost replaces what
        was reserved for them) and looks again; alone in flight, it goes."""
        if self.limit_usd is None:
            return 0.0
        model_id = request.model.id
        price = self.prices.price(model_id)
        if price is None:
            raise BudgetReached(
                f"{model_id} has no known price, so it cannot run under --weval-budget: add it to ini "
                f"weval_prices as '{model_id} <USD per 1M input tokens> <USD per 1M output tokens>'",
                model_id=model_id,
            )
        amount = price.cost(estimate_input_tokens(request), max_output_tokens or 1000)
        while True:
            if self.spent >= self.limit_usd:
                raise BudgetReached(
                    f"budget reached (${self.spent:.4f} of ${self.limit_usd:g}): {model_id} not asked; replies "
                    "received so far are in the cache, so a larger --weval-budget continues from here",
                    model_id=model_id,
                )
            if self._in_flight == 0 or self.spent + self._reserved + amount <= self.limit_usd:
                self._reserved += amount
                self._in_flight += 1
                return amount
            self._landed.clear()
            await self._landed.wait()

    def release(self, amount: float) -> None:
        if self.limit_usd is None:
            return
        self._reserved = max(0.0, self._reserved - amount)
        self._in_flight -= 1
        self._landed.set()

    def spend(self, cost: float) -> None:
        self.spent_here += cost
        if self.on_spend is not None and self.limit_usd is not None:
            self.on_spend(self.spent_here)

    def spent_elsewhere(self, worker: str, amount: float) -> None:
        self._elsewhere[worker] = max(amount, self._elsewhere.get(worker, 0.0))


def estimate_input_tokens(request: ModelRequest) -> float:
    """About four characters a token, as tokenizers average on English text."""
    return 10 + sum(len(message.content or "") for message in request.messages) / 4
