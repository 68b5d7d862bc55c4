"""The batcher: the stage that replaces "send" for the requests it takes (docs/batch.md).

A batched request passes through each piece once: ``Rounds.take`` (queued here, then in the
store), ``Rounds.submit_due`` (submitted in a round), ``Collector.poll`` (collected into the
cache, with ``Recovery`` for a batch whose submitter died), ``Waiters`` (its wait ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx

from pytest_weval.engine.batching.accounts import BatchApis, BudgetHolds, Changes, StatusClock
from pytest_weval.engine.batching.collecting import Collector
from pytest_weval.engine.batching.recovery import Recovery
from pytest_weval.engine.batching.rounds import Rounds
from pytest_weval.engine.batching.waiting import Waiters
from pytest_weval.engine.claims import ROLE_PREFIX, Coordinator
from pytest_weval.engine.errors import ModelCallError, RunInterrupted, StoreDownError
from pytest_weval.engine.prices import Budget, PriceBook, batch_share, estimate_input_tokens
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.store.batches import BatchStore, Line
from pytest_weval.engine.store.cache import ResponseCache
from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.transport.providers import Adapter

log = logging.getLogger("pytest_weval.engine")

SUBMITTER = ROLE_PREFIX + "batch-submitter"  # the claim whose holder submits and collects


class Batcher:
    def __init__(
        self,
        *,
        store: BatchStore,
        cache: ResponseCache,
        settings: EngineSettings,
        redactor: Redactor,
        http: Callable[[], httpx.AsyncClient],
        coordinator: Coordinator,
        budget: Budget,
        prices: PriceBook,
        adapter_of: Callable[[str], Adapter],
        on_reply: Callable[[str, str, ModelReply], None],
        interrupted: Callable[[], bool],
        notice: Callable[[str, str], None],
        run_started: float,
    ):
        self.coordinator = coordinator
        self.prices = prices
        self.interrupted = interrupted
        self.notice = notice
        self.look_s = max(0.05, min(0.5, settings.batch_round_s / 4))
        self.apis = BatchApis(settings, redactor, http, notice)
        self.changes = Changes()
        clock = StatusClock(settings.batch_poll_s)
        holds = BudgetHolds(budget)
        self.store = store
        self.holds = holds
        self.waiters = Waiters(
            store,
            cache,
            mode=settings.batch,
            poll_s=settings.batch_poll_s,
            run_started=run_started,
            uncollectable=self.apis.uncollectable,
        )
        self.rounds = Rounds(
            store,
            apis=self.apis,
            budget=budget,
            holds=holds,
            clock=clock,
            changes=self.changes,
            coordinator=coordinator,
            round_s=settings.batch_round_s,
            run_started=run_started,
            interrupted=interrupted,
            notice=notice,
        )

        def collected(key: str, model_id: str, reply: ModelReply) -> None:
            on_reply(key, model_id, reply)
            self.waiters.answer(key, reply)

        self.collector = Collector(
            store,
            cache,
            apis=self.apis,
            recovery=Recovery(store, self.apis, claim_lease_s=settings.claim_lease_s),
            holds=holds,
            clock=clock,
            changes=self.changes,
            coordinator=coordinator,
            prices=prices,
            redactor=redactor,
            adapter_of=adapter_of,
            on_reply=collected,
            notice=notice,
        )
        self._driver: asyncio.Task[None] | None = None
        self._next_claim = 0.0

    @staticmethod
    def batchable(adapter: Adapter, request: ModelRequest) -> bool:
        """A request to a provider with a batch API (its adapter says so; a custom model's never
        does), whose reply goes to the cache (a ``noCache`` prompt's never does: sent live)."""
        return adapter.has_batch_api and not request.no_cache

    async def obtain(self, adapter: Adapter, request: ModelRequest, key: str, summary: dict[str, Any]) -> ModelReply:
        """The reply to ``request``, through a batch: queued in the store, then waited for."""
        api = self.apis.api(adapter.provider)
        price = self.prices.price(request.model.id)
        estimate = 0.0
        if price is not None:
            output = adapter.max_tokens(request) or 1000
            estimate = price.cost(estimate_input_tokens(request), output) * batch_share(request.model.id)
        line = Line(
            key=key,
            provider=adapter.provider,
            account=api.account,
            model=request.model.id,
            request=json.dumps(summary, sort_keys=True, separators=(",", ":")),
            body=json.dumps(adapter.batch_body(request), separators=(",", ":")),
            estimate=estimate,
        )
        self.rounds.take(line)
        if self._driver is None or self._driver.done():
            self._driver = asyncio.get_running_loop().create_task(self._drive())
        return await self.waiters.wait(line)

    # -- the loop every process runs ----------------------------------------------------------
    async def _drive(self) -> None:
        while True:
            try:
                await self._turn()
            except StoreDown as exc:
                self.waiters.fail_all(StoreDownError(f"not sent: {exc}", model_id=None))
                return
            except ModelCallError as exc:  # a batch API call failed after its retries: try next turn
                self.notice(f"batch-error:{exc.message}", f"weval: {exc.message}")
            except Exception:  # the loop must go on; the log says what broke
                log.exception("weval batches: a turn failed")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.rounds.queued.wait(), self.look_s)

    async def _turn(self) -> None:
        if self.interrupted():
            self.waiters.fail_all(RunInterrupted("the run was interrupted while this request waited for its batch"))
            return
        changes = self.changes.count
        await self.rounds.flush()
        if await self._submitter():
            await self.collector.poll()
            await self.rounds.submit_due()
        await self.holds.release_collected(self.store)
        await self.waiters.look(changed=self.changes.count != changes)

    async def _submitter(self) -> bool:
        """This process holds the submitter's claim (taken when free; renewed with its other
        claims; released when the process closes, or taken over when it dies)."""
        if SUBMITTER in self.coordinator.held:
            return True
        now = time.monotonic()
        if now < self._next_claim:
            return False
        self._next_claim = now + 1.0
        return await self.coordinator.claim(SUBMITTER) is True
