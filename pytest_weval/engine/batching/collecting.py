"""Polling the open batches and collecting the ended ones (docs/batch.md, 'Collecting').

An ended batch's replies are parsed by the live adapter and stored in the cache under the live
request's key; lines that expired or met a passing fault are queued again, lines that failed for
good keep the provider's message. A reply is counted and priced (at the batch price) here.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from pytest_weval.engine.batching.accounts import BatchApis, BudgetHolds, Changes, StatusClock
from pytest_weval.engine.batching.recovery import Recovery
from pytest_weval.engine.claims import Coordinator
from pytest_weval.engine.errors import ProviderError
from pytest_weval.engine.prices import PriceBook
from pytest_weval.engine.request import ModelReply
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.store.batches import OPEN, SUBMITTING, Batch, BatchStore
from pytest_weval.engine.store.cache import ResponseCache, make_entry
from pytest_weval.engine.transport.batch_api import AGAIN, DROPPED, OK, BatchAPI
from pytest_weval.engine.transport.providers import Adapter, BodyError, MalformedReply

log = logging.getLogger("pytest_weval.engine")


class Collector:
    def __init__(
        self,
        store: BatchStore,
        cache: ResponseCache,
        *,
        apis: BatchApis,
        recovery: Recovery,
        holds: BudgetHolds,
        clock: StatusClock,
        changes: Changes,
        coordinator: Coordinator,
        prices: PriceBook,
        redactor: Redactor,
        adapter_of: Callable[[str], Adapter],
        on_reply: Callable[[str, str, ModelReply], None],
        notice: Callable[[str, str], None],
    ):
        self.store = store
        self.cache = cache
        self.apis = apis
        self.recovery = recovery
        self.holds = holds
        self.clock = clock
        self.changes = changes
        self.coordinator = coordinator
        self.prices = prices
        self.redactor = redactor
        self.adapter_of = adapter_of
        self.on_reply = on_reply  # counts it, and hands it to its waiter here
        self.notice = notice

    async def poll(self) -> None:
        """Each open batch's status, asked at most every poll interval; ended ones collected."""
        now = time.time()
        batches = await self.store.open_batches()
        for batch in batches:
            if not self.clock.due(batch.id, now):
                continue  # recoveries are spaced like status checks (a provider may have no list)
            if batch.status == SUBMITTING:
                gone = batch.owner != self.coordinator.owner and self.coordinator.dead(batch.host, batch.pid)
                if self.recovery.abandoned(batch, now, gone):
                    self.clock.asked(batch.id, now)
                    await self.recovery.recover(batch, {b.provider_id for b in batches if b.provider_id})
                continue
            if batch.status != OPEN:
                self.apis.cannot_collect(batch, f"its record in the store has an unknown status {batch.status!r}")
                continue
            api = self.apis.collector(batch)
            if api is None:
                continue
            if batch.provider_id is None:  # a damaged record: nothing to ask the provider about
                self.apis.cannot_collect(batch, "its record in the store has no provider id")
                continue
            self.clock.asked(batch.id, now)
            await self._ask(api, batch)

    async def _ask(self, api: BatchAPI, batch: Batch) -> None:
        assert batch.provider_id is not None
        try:
            status = await api.status(batch.provider_id)
        except ProviderError as exc:
            if exc.status != 404:
                raise  # a passing fault: asked again after the poll interval
            # The account does not know it (deleted, or a store shared with another account
            # of the same name): kept, as its lines may be in it, but nobody waits on it here.
            self.apis.cannot_collect(batch, f"the provider answers 404 for it ({exc.message})")
            return
        if status.failed is not None:
            await self.store.fail_all(batch.id, None, f"the batch failed at {batch.provider}: {status.failed}")
            self.changes.made()
        elif status.ended:
            await self._collect(api, batch, status.status)
        else:
            await self.store.checked(batch.id, status.status)

    async def _collect(self, api: BatchAPI, batch: Batch, provider_status: str) -> None:
        assert batch.provider_id is not None
        lines = {key: (model, request) for key, model, request in await self.store.lines_of(batch.id)}
        done: list[str] = []
        again: list[str] = []
        dropped: list[str] = []
        failed: list[tuple[str, int | None, str]] = []
        cost = 0.0
        for result in await api.results(batch.provider_id):
            if result.key not in lines:
                continue
            model, request = lines[result.key]
            if result.outcome == OK:
                try:
                    reply = self.adapter_of(model).parse(result.body)
                except (MalformedReply, BodyError) as exc:
                    again.append(result.key)
                    log.info("weval batches: %s: malformed reply in batch %s (%s)", model, batch.provider_id, exc)
                    continue
                if not reply.text.strip():
                    failed.append((result.key, None, "the provider's reply was blank"))
                    continue
                await self.cache.put(make_entry(result.key, model, json.loads(request), reply))
                done.append(result.key)
                self.on_reply(result.key, model, reply)
                cost += self.prices.reply_cost(model, reply, batch=True) or 0.0
            elif result.outcome == AGAIN:
                again.append(result.key)
            elif result.outcome == DROPPED:
                dropped.append(result.key)
            else:
                failed.append((result.key, result.status, self.redactor.redact(result.message)))
        await self.store.land(batch.id, done, again, dropped, failed, provider_status)
        self.changes.made()
        await self.holds.settle(batch.id, cost)
        self.notice(
            f"batch-collected:{batch.id}",
            f"weval: collected {api.provider} batch {batch.provider_id}: {len(done)} replies"
            + (f", {len(again)} to send again" if again else "")
            + (f", {len(failed)} failed" if failed else "")
            + (f", {len(dropped)} cancelled (sent again if still needed)" if dropped else ""),
        )
