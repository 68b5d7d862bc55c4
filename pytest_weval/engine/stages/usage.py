"""What the run's requests used: the engine's counts (``Engine.stats``) and each model's usage,
every distinct request counted once a run, where it was answered (docs/engine.md, 'Stats')."""

from __future__ import annotations

import dataclasses
from array import array
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
        self._counted = CountedKeys()

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
        if not self._counted.add(key):
            return
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


class CountedKeys:
    """The distinct requests already in the run's usage: a set of cache keys that keeps each
    sha256 key as its first 64 bits in one array (16-32 bytes a key, where a set of the keys'
    digests took ~100: the configs repository's ~2 million requests are ~50 MB, not 200).
    Two distinct requests share their first 64 bits about once in 10 million runs of that
    size; the second would then go uncounted. Keys that are not a digest are kept whole."""

    __slots__ = ("_others", "_size", "_slots")

    def __init__(self) -> None:
        self._slots = array("Q", bytes(8 * 1024))  # open addressing; 0 is an empty slot
        self._size = 0
        self._others: set[str] = set()

    def __len__(self) -> int:
        return self._size + len(self._others)

    def add(self, key: str) -> bool:
        """Keep ``key``; True when it was not kept yet."""
        try:
            digest = bytes.fromhex(key)
        except ValueError:
            digest = b""
        fingerprint = int.from_bytes(digest[:8], "big") if len(digest) == 32 else 0
        if not fingerprint:  # not a digest (or its first 64 bits are zero)
            if key in self._others:
                return False
            self._others.add(key)
            return True
        slots = self._slots
        mask = len(slots) - 1
        slot = fingerprint & mask  # a digest's bits are uniform
        while True:
            held = slots[slot]
            if held == fingerprint:
                return False
            if not held:
                break
            slot = (slot + 1) & mask
        slots[slot] = fingerprint
        self._size += 1
        if self._size * 2 > len(slots):
            self._grow()
        return True

    def _grow(self) -> None:
        held = [f for f in self._slots if f]
        slots = self._slots = array("Q", bytes(16 * len(self._slots)))
        mask = len(slots) - 1
        for fingerprint in held:
            slot = fingerprint & mask
            while slots[slot]:
                slot = (slot + 1) & mask
            slots[slot] = fingerprint
