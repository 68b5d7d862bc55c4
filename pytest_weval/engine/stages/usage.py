"""What the run's requests used: the engine's counts (``Engine.stats``) and each model's usage,
every distinct request counted once a run, where it was answered (docs/engine.md, 'Stats')."""

from __future__ import annotations

import dataclasses
from typing import Any

from pytest_weval.engine.prices import PriceBook
from pytest_weval.engine.request import ModelReply
from pytest_weval.results import Usage


@dataclasses.dataclass
class ModelUsage:
    http_requests: int = 0  # attempts sent over the network
    responses: int = 0  # replies obtained (network, cache or another worker)
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    refused: int = 0  # rate-limit refusals
    rate_wait_s: float = 0.0  # request-seconds spent waiting on rate limits
    cost_usd: float = 0.0  # of the replies sent by this process, where the price is known
    unpriced: int = 0  # replies sent whose model has no known price
    batched: int = 0  # replies collected from a batch (priced at the batch price)


class RunUsage:
    def __init__(self, prices: PriceBook):
        self.prices = prices
        self.counts = {
            "http_requests": 0,
            "cache_hits": 0,
            "coalesced": 0,
            "from_other_workers": 0,
            "memo_hits": 0,
            "errors": 0,
        }
        self._models: dict[str, ModelUsage] = {}
        # The distinct requests already in the run's usage, by key: the configs repository's
        # ~2 million, each as its digest's 32 bytes (65 B) rather than its 64 hex digits (113 B).
        self._counted: set[bytes | str] = set()

    def of(self, model_id: str) -> ModelUsage:
        usage = self._models.get(model_id)
        if usage is None:
            usage = self._models[model_id] = ModelUsage()
        return usage

    def cache_hit(self, key: str, model_id: str, reply: ModelReply) -> ModelReply:
        """A reply from the cache of an earlier run: it costs nothing."""
        self.counts["cache_hits"] += 1
        self.answered(key, model_id, reply, sent=False)
        return reply

    def answered(self, key: str, model_id: str, reply: ModelReply, *, sent: bool, batch: bool = False) -> None:
        """One distinct request answered: sent by this process (it costs what its own usage is billed, ``PriceBook.reply_cost``),
        or from the cache; counted once a run, however many items ask it."""
        counted = _compact(key)
        if counted in self._counted:
            return
        self._counted.add(counted)
        usage = self.of(model_id)
        usage.responses += 1
        usage.input_tokens += reply.input_tokens
        usage.output_tokens += reply.output_tokens
        if not sent:
            usage.cache_hits += 1
            return
        if batch:
            usage.batched += 1
        cost = self.prices.reply_cost(model_id, reply, batch=batch)
        if cost is None:
            usage.unpriced += 1
        else:
            usage.cost_usd += cost

    def stats(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.counts)
        data["usage"] = {model: dataclasses.asdict(u) for model, u in list(self._models.items())}
        return data

    def run_usage(self) -> dict[str, Usage]:
        """What this process's distinct requests used, per model: the run's usage table."""
        return {
            model_id: Usage(
                requests=u.responses,
                cache_hits=u.cache_hits,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                refused=u.refused,
                rate_wait_s=u.rate_wait_s,
                cost_usd=None if u.unpriced and not u.cost_usd else u.cost_usd,
            )
            for model_id, u in list(self._models.items())
            if u.responses or u.refused
        }


def _compact(key: str) -> bytes | str:
    """A key as it is kept: a digest's bytes (every cache key is a sha256 in hex), or itself."""
    try:
        return bytes.fromhex(key)
    except ValueError:
        return key
