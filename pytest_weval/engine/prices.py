"""What a model's tokens cost: ini ``weval_prices`` first, else genai-prices (a maintained price
database for LLM APIs). Used for the run's spend, its budget and the plan's estimate
(docs/engine.md, 'Prices, spend and the budget')."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import datetime
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Protocol

from pytest_weval.engine.errors import BudgetReached
from pytest_weval.engine.request import ModelReply, ModelRequest
from pytest_weval.engine.store.claims_store import admits

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
# How genai-prices reads each provider's reply body (``extract_usage``'s api_flavor).
GENAI_FLAVORS = {"openai": "chat"}
MILLION = 1_000_000
# Rates per million tokens are read off the price of this many, times MILLION / SAMPLE: a million
# tokens at once would be a prompt past every long-context tier (Claude Sonnet 4.5 above 200k).
SAMPLE = 1000
# What a provider's batch API charges, as a share of its live price, where genai-prices cannot say
# (it prices batches itself where it can: ``processing: batch``): a model it has no price of (one
# priced by a ``weval_prices`` line), and a model it prices live but not batched (older Anthropic
# ones such as Claude Haiku 3.5, every Together model, in genai-prices 0.2.3). Each provider's
# discount applies to every model its batch API takes, as its page says (docs/batch.md, 'Money'):
# OpenAI https://platform.openai.com/docs/guides/batch, Anthropic
# https://docs.anthropic.com/en/docs/build-with-claude/batch-processing#pricing, Gemini
# https://ai.google.dev/gemini-api/docs/batch-api, xAI https://docs.x.ai/docs/guides/batch-api,
# Mistral https://docs.mistral.ai/studio-api/batch-processing. Together takes half for the
# serverless models it lists as discounted and its live price for the others
# (https://docs.together.ai/docs/inference/batch/overview, 'Discounted models').
BATCH_SHARE = {"openai": 0.5, "anthropic": 0.5, "google": 0.5, "xai": 0.5, "mistral": 0.5}
TOGETHER_BATCH_DISCOUNTED = frozenset(
    {
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "meta-llama/Llama-3-70b-chat-hf",
        "Qwen/Qwen2.5-7B-Instruct-Turbo",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "zai-org/GLM-4.5-Air-FP8",
    }
)


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

    def cost(self, model_id: str, input_tokens: float, output_tokens: float, *, batch: bool = False) -> float | None:
        """A list price: every input token at the input rate (no cache), so an upper bound of
        what the provider bills (the plan's estimate and the budget's reservations)."""
        price = self.price(model_id)
        if price is None:
            return None
        cost = price.cost(input_tokens, output_tokens)
        if not batch:
            return cost
        if price.source == "genai-prices":
            usage = _usage(input_tokens=round(input_tokens), output_tokens=round(output_tokens))
            batched = _genai_batch_cost(model_id, usage, {}, None)
            if batched is not None:
                return batched
            return cost * batch_share(model_id)
        return cost * batch_share(model_id)

    def cache_rates(self, model_id: str) -> tuple[float, float, float] | None:
        """USD per million input tokens: uncached, read from the provider's prompt cache, and
        written to it, as genai-prices has them (None for a ``weval_prices`` line, which has no
        cached rate, or an unknown model)."""
        price = self.price(model_id)
        if price is None or price.source != "genai-prices":
            return None
        import genai_prices

        provider, _, name = model_id.partition(":")
        provider_id = GENAI_PROVIDERS[provider.lower()]
        try:
            read, write = (
                float(genai_prices.calc_price(usage, name, provider_id=provider_id).input_price) * MILLION / SAMPLE
                for usage in (
                    genai_prices.Usage(input_tokens=SAMPLE, cache_read_tokens=SAMPLE),
                    genai_prices.Usage(input_tokens=SAMPLE, cache_write_tokens=SAMPLE),
                )
            )
        except LookupError:
            return None
        return price.input_per_mtok, read, write

    def batch_ratio(self, model_id: str) -> float:
        """What a batched request of ``model_id`` costs as a share of its live price (1 where
        it has no price, or no batch price)."""
        live = self.cost(model_id, SAMPLE, SAMPLE)
        batched = self.cost(model_id, SAMPLE, SAMPLE, batch=True)
        return batched / live if live and batched is not None else 1.0

    def reply_cost(self, model_id: str, reply: ModelReply, *, batch: bool = False) -> float | None:
        """What the provider bills for ``reply``: its own usage (cached reads and cache writes
        at their rates, long-prompt tiers, the service tier that answered) priced by genai-prices,
        at the batch price when it was batched. A model priced in ini ``weval_prices`` is priced
        by that line, which has no cached rate: every input token at its input price."""
        price = self.price(model_id)
        if price is None:
            return None
        if price.source != "genai-prices":
            return self.cost(model_id, reply.input_tokens, reply.output_tokens, batch=batch)
        billed = _genai_reply_cost(model_id, reply, batch=batch)
        if billed is None:  # the library cannot read this body: its token counts at list price
            return self.cost(model_id, reply.input_tokens, reply.output_tokens, batch=batch)
        return billed


def batch_share(model_id: str) -> float:
    """The share of the live price a batched request of ``model_id`` costs, by its provider's
    page (``BATCH_SHARE``; 1 where it has no batch API), for a price genai-prices does not have."""
    provider, _, name = model_id.partition(":")
    provider = provider.strip().lower()
    if provider == "together":
        return 0.5 if name.strip() in TOGETHER_BATCH_DISCOUNTED else 1.0
    return BATCH_SHARE.get(provider, 1.0)


def _genai_price(model_id: str) -> Price | None:
    provider, _, name = model_id.partition(":")
    provider_id = GENAI_PROVIDERS.get(provider.lower())
    if provider_id is None or not name:
        return None
    # Imported here, not at the top: its price tables take ~0.2 s to load, which every pytest
    # process would pay, and only a run that prices a reply needs them.
    import genai_prices

    try:
        per_in = genai_prices.calc_price(genai_prices.Usage(input_tokens=SAMPLE), name, provider_id=provider_id)
        per_out = genai_prices.calc_price(genai_prices.Usage(output_tokens=SAMPLE), name, provider_id=provider_id)
    except LookupError:
        return None
    scale = MILLION / SAMPLE
    return Price(float(per_in.total_price) * scale, float(per_out.total_price) * scale, source="genai-prices")


def billed_usage(model_id: str, reply: ModelReply) -> Any:
    """``reply``'s usage as genai-prices counts it (``extract_usage`` over the body's usage, by
    provider), or its input and output counts where the library cannot read the body."""
    import genai_prices

    provider, _, name = model_id.partition(":")
    provider_id = GENAI_PROVIDERS.get(provider.lower(), provider.lower())
    body = dict(reply.billing or {})
    if body and "model" not in body and "modelVersion" not in body:
        body["model"] = name
    if body.get("usage") or body.get("usageMetadata"):
        with contextlib.suppress(Exception):  # an unreadable body falls back to the counts
            flavor = GENAI_FLAVORS.get(provider_id, "default")
            return genai_prices.extract_usage(body, provider_id=provider_id, api_flavor=flavor).usage
    return genai_prices.Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)


def _usage(**counts: int) -> Any:
    import genai_prices

    return genai_prices.Usage(**counts)


def request_time(reply: ModelReply) -> datetime.datetime | None:
    """When ``reply``'s request was made (a dated price applies from its day), if known."""
    if reply.requested_at is None:
        return None
    return datetime.datetime.fromtimestamp(reply.requested_at, tz=datetime.timezone.utc)


def _genai_reply_cost(model_id: str, reply: ModelReply, *, batch: bool) -> float | None:
    import genai_prices

    provider, _, name = model_id.partition(":")
    provider_id = GENAI_PROVIDERS[provider.lower()]
    usage = billed_usage(model_id, reply)
    context: dict[str, str] = {}
    tier = reported_tier(reply)
    if tier:
        context["service_tier"] = tier
    when = request_time(reply)
    try:
        live = float(
            genai_prices.calc_price(
                usage, name, provider_id=provider_id, price_context=context or None, genai_request_timestamp=when
            ).total_price
        )
    except LookupError:
        return None
    if not batch:
        return live
    batched = _genai_batch_cost(model_id, usage, context, when)
    # No batch price of this model in the library: its provider's published share.
    return batched if batched is not None else live * batch_share(model_id)


def _genai_batch_cost(
    model_id: str, usage: Any, context: Mapping[str, str], when: datetime.datetime | None
) -> float | None:
    """The library's batch price of ``usage`` (``processing: batch``), or None where it has
    none for this model (it then answers the live price)."""
    import genai_prices

    provider, _, name = model_id.partition(":")
    provider_id = GENAI_PROVIDERS[provider.lower()]
    try:
        live, batched = (
            genai_prices.calc_price(
                usage, name, provider_id=provider_id, price_context=ctx or None, genai_request_timestamp=when
            ).total_price
            for ctx in (dict(context), {**context, "processing": "batch"})
        )
    except LookupError:
        return None
    return float(batched) if batched < live else None


def tier_priced(model_id: str, tier: str) -> bool:
    """genai-prices has a price of ``model_id`` at service tier ``tier`` (one that differs from
    its default tier's)."""
    provider, _, name = model_id.partition(":")
    provider_id = GENAI_PROVIDERS.get(provider.strip().lower())
    if provider_id is None or not name:
        return False
    import genai_prices

    usage = genai_prices.Usage(input_tokens=SAMPLE, output_tokens=SAMPLE)
    try:
        default, tiered = (
            genai_prices.calc_price(usage, name, provider_id=provider_id, price_context=context).total_price
            for context in (None, {"service_tier": tier})
        )
    except LookupError:
        return False
    return tiered != default


def reported_tier(reply: ModelReply) -> str | None:
    """The service tier the reply says answered it, in genai-prices' terms: OpenAI's
    ``service_tier``, Gemini's ``usageMetadata.serviceTier`` ('standard' is the default tier)."""
    billing = reply.billing or {}
    tier = billing.get("service_tier")
    if not tier:
        meta = billing.get("usageMetadata")
        tier = meta.get("serviceTier") if isinstance(meta, dict) else None
    if not isinstance(tier, str) or not tier:
        return None
    tier = tier.lower()
    return "default" if tier in ("standard", "unspecified") else tier


class Verdict(Protocol):
    """A ledger's answer to a reservation: added or not, and the run's spend it saw."""

    @property
    def admitted(self) -> bool: ...

    @property
    def spent(self) -> float: ...


class Tally(Protocol):
    """The run's spend and what its live processes hold reserved."""

    @property
    def spent(self) -> float: ...

    @property
    def reserved(self) -> float: ...

    @property
    def in_flight(self) -> int: ...


class Ledger(Protocol):
    """Where the processes of one run keep its spend (``claims.SpendLedger``, under xdist)."""

    async def reserve(self, amount: float, limit: float) -> Verdict: ...

    async def settle(self, reserved: float, cost: float) -> None: ...

    async def total(self) -> Tally: ...


class Budget:
    """``--weval-budget``: the run's spend, counted as replies arrive and reserved for requests
    in flight; once it reaches the limit no further request is sent. One process keeps the
    count here; the processes of an xdist run keep it in a shared ledger (``use_ledger``), so
    the rule is the same over all of them."""

    def __init__(self, limit_usd: float | None, prices: PriceBook, *, keeps_replies: bool = True):
        self.limit_usd = limit_usd
        self.prices = prices
        self.keeps_replies = keeps_replies  # the cache keeps what was received (not --weval-cache=off)
        self.spent_here = 0.0  # by this process's replies
        self._run_spent = 0.0  # the whole run's, as the ledger last said
        self._reserved = 0.0  # by this process's attempts in flight
        self._in_flight = 0
        self._ledger: Ledger | None = None
        self._poll_s = 0.05
        self._releases = 0  # attempts settled here so far
        self._waiters: list[asyncio.Future[None]] = []  # reservations refused, waiting to look again

    def use_ledger(self, ledger: Ledger, poll_s: float) -> None:
        """Share the budget with the run's other processes: every reservation and every reply's
        cost goes through ``ledger``; a refused reservation looks again when an attempt of this
        process settles, or after ``poll_s`` (another process's may have)."""
        self._ledger = ledger
        self._poll_s = poll_s

    @property
    def spent(self) -> float:
        """The run's spend as far as this process knows it."""
        if self._ledger is None:
            return self.spent_here
        return max(self._run_spent, self.spent_here)

    async def reserve(self, request: ModelRequest, max_output_tokens: int | None) -> float:
        """Room for one attempt of ``request`` (what to ``settle`` after), or ``BudgetReached``
        once the spend has reached the limit. A request that would take the spend past the
        limit with what is in flight waits for those replies (their real cost replaces what
        was reserved for them) and looks again; alone in flight in the run, it goes."""
        limit = self.limit_usd
        if limit is None:
            return 0.0
        model_id = request.model.id
        amount = self.estimate(request, max_output_tokens)
        held = _HELD.get()
        if held is not None and request.purpose == "generate" and held.draw(amount, whole=True):
            await self._unreserved_attempt()  # its room was reserved with its item's
            return amount
        while True:
            releases = self._releases
            if self._ledger is None:
                spent = self.spent_here
                admitted = admits(spent, self._reserved, self._in_flight, amount, limit)
            else:
                verdict = await self._ledger.reserve(amount, limit)
                admitted, spent = verdict.admitted, verdict.spent
                self._run_spent = max(self._run_spent, spent)
            if admitted:
                self._reserved += amount
                self._in_flight += 1
                return amount
            if spent >= limit:
                raise self._reached(spent, model_id)
            if held is not None and not held.closed:
                # A request of an item that holds room (a judge's, or a sample's retry) never
                # waits: the item's own hold may be all that stands in its way, and it would
                # wait on itself. It takes what is left of the hold and goes, as a request
                # alone in flight goes.
                taken = held.draw(amount)
                await self._unreserved_attempt()
                return taken
            if self._releases == releases:  # else one settled while we looked: look again now
                await self._next_release(None if self._ledger is None else self._poll_s)

    async def room(self) -> float:
        """What may still be reserved: the limit less the run's spend and live reservations
        (infinite without a budget). A batch is cut to fit it (docs/batch.md, 'Money')."""
        if self.limit_usd is None:
            return float("inf")
        if self._ledger is None:
            return self.limit_usd - self.spent_here - self._reserved
        total = await self._ledger.total()
        self._run_spent = max(self._run_spent, total.spent)
        return self.limit_usd - total.spent - total.reserved

    async def hold(self, amount: float) -> bool:
        """Reserve ``amount`` (a whole batch) if it fits beside what is spent and reserved, never
        on the alone-in-flight rule of ``reserve``: a batch is sized to the budget instead."""
        if self.limit_usd is None:
            return True
        if await self.room() < amount:
            return False
        if self._ledger is not None and not (await self._ledger.reserve(amount, self.limit_usd)).admitted:
            return False
        self._reserved += amount
        self._in_flight += 1
        return True

    async def charge(self, cost: float) -> None:
        """A reply this process received without reserving for it (a batch another process
        submitted): its cost counts."""
        if self.limit_usd is None or cost <= 0:
            return
        await self._unreserved_attempt()
        await self.settle(0.0, cost)

    async def _unreserved_attempt(self) -> None:
        """An attempt that reserves nothing of its own is in flight (settled like any other)."""
        if self._ledger is not None:
            await self._ledger.reserve(0.0, float("inf"))
        self._in_flight += 1

    def estimate(self, request: ModelRequest, max_output_tokens: int | None) -> float:
        """The most one attempt of ``request`` may cost: its input and its whole output allowance."""
        model_id = request.model.id
        price = self.prices.price(model_id)
        if price is None:
            raise BudgetReached(
                f"{model_id} has no known price, so it cannot run under --weval-budget: add it to ini "
                f"weval_prices as '{model_id} <USD per 1M input tokens> <USD per 1M output tokens>'",
                model_id=model_id,
            )
        return price.cost(estimate_input_tokens(request), max_output_tokens or 1000)

    def _reached(self, spent: float, model_id: str) -> BudgetReached:
        kept = (
            "the replies received are in the cache, so a larger --weval-budget continues from here"
            if self.keeps_replies
            else "with --weval-cache=off the replies received are not kept: a larger --weval-budget asks again"
        )
        return BudgetReached(f"budget reached (${spent:.4f} of ${self.limit_usd:g}): {kept}", model_id=model_id)

    @contextlib.asynccontextmanager
    async def holding(self, request: ModelRequest, max_output_tokens: int | None, count: int) -> AsyncIterator[None]:
        """Room for ``count`` attempts of ``request`` (an item's most samples, docs/sampling.md,
        'The budget'), reserved at once before any is sent, or ``BudgetReached``: once the
        spend has reached the limit, or when nothing else is in flight to make room and it
        does not fit. Waits while other attempts are in flight. Inside the block, the item's
        generations draw their reservations from it; what they did not use is released at
        the end."""
        if self.limit_usd is None:
            yield
            return
        amount = self.estimate(request, max_output_tokens) * count
        await self._hold_whole(amount, request.model.id)
        held = Held(amount)
        token = _HELD.set(held)
        try:
            yield
        finally:
            _HELD.reset(token)
            held.closed = True  # a request still under way (cancelled with its item) reserves anew
            await self.settle(held.left, 0.0)

    async def _hold_whole(self, amount: float, model_id: str) -> None:
        while True:
            releases = self._releases
            if await self.hold(amount):
                return
            spent = self.spent
            if spent >= (self.limit_usd or 0.0):
                raise self._reached(spent, model_id)
            busy = self._in_flight if self._ledger is None else (await self._ledger.total()).in_flight
            if not busy:  # nothing will make room: waiting would be for ever
                raise BudgetReached(
                    f"budget: an item's most samples may cost ${amount:.4f}, more than the "
                    f"${max(0.0, self.limit_usd or 0.0) - spent:.4f} left of ${self.limit_usd:g}; not started "
                    "(a larger --weval-budget, or a lower --weval-max-repeat, lets it run)",
                    model_id=model_id,
                )
            if self._releases == releases:
                await self._next_release(None if self._ledger is None else self._poll_s)

    async def settle(self, reserved: float, cost: float) -> None:
        """One attempt is over: its reservation (what ``reserve`` returned) is replaced by what
        its reply cost (0 when nothing was answered)."""
        if self.limit_usd is None:
            return
        if self._ledger is None:
            self._settled(reserved, cost)
            return
        # Once sent, the write goes on even if the caller is cancelled (Ctrl-C): the spend counts.
        write = asyncio.ensure_future(self._ledger.settle(reserved, cost))
        write.add_done_callback(lambda _: self._settled(reserved, cost))
        await asyncio.shield(write)

    def _settled(self, reserved: float, cost: float) -> None:
        self.spent_here += cost
        self._in_flight -= 1
        self._reserved = 0.0 if self._in_flight == 0 else max(0.0, self._reserved - reserved)
        self._releases += 1
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _next_release(self, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        timer = None if timeout is None else loop.call_later(timeout, _wake, waiter)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            if waiter in self._waiters:
                self._waiters.remove(waiter)


@dataclasses.dataclass
class Held:
    """Room reserved for one item's generations (``Budget.holding``), drawn as they are sent."""

    left: float
    closed: bool = False

    def draw(self, amount: float, *, whole: bool = False) -> float:
        """Up to ``amount`` of what is left (all of it or nothing when ``whole``; nothing once
        the hold is over)."""
        taken = 0.0 if self.closed else min(amount, self.left)
        if whole and taken < amount:
            taken = 0.0
        self.left -= taken
        return taken


# The hold of the item whose task is running: its requests' tasks inherit it (contextvars).
_HELD: contextvars.ContextVar[Held | None] = contextvars.ContextVar("weval_budget_held", default=None)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def estimate_input_tokens(request: ModelRequest) -> float:
    """About four characters a token, as tokenizers average on English text."""
    return 10 + sum(len(message.content or "") for message in request.messages) / 4
