"""The claim: under coordination (xdist workers, machines of one run, two runs on one store) a
request is claimed before it is sent, so no request is sent twice (docs/engine.md,
'Cross-process claims'). The holder sends, stores and records the outcome; a waiter takes the
outcome another process recorded."""

from __future__ import annotations

import asyncio
import contextlib

from pytest_weval.engine.claims import Coordinator, Landed
from pytest_weval.engine.errors import (
    BudgetReached,
    ModelCallError,
    RunInterrupted,
    StoreStoppedError,
    rebuild_error,
)
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.stages.caching import CacheStage, created_at
from pytest_weval.engine.stages.sending import Sender
from pytest_weval.engine.stages.store_health import StoreHealth
from pytest_weval.engine.stages.usage import RunUsage
from pytest_weval.engine.store.cache import reply_from_entry
from pytest_weval.engine.transport.limits import Priority
from pytest_weval.engine.transport.providers import Adapter


class ClaimStage:
    def __init__(
        self,
        coordinator: Coordinator,
        settings: EngineSettings,
        redactor: Redactor,
        *,
        caching: CacheStage,
        health: StoreHealth,
        sender: Sender,
        usage: RunUsage,
    ):
        self.coordinator = coordinator
        self.settings = settings
        self.redactor = redactor
        self.caching = caching
        self.health = health
        self.sender = sender
        self.usage = usage

    async def obtain(
        self, adapter: Adapter, request: ModelRequest, key: str, summary: dict, priority: Priority
    ) -> ModelReply:
        """Claim, then send; or wait for the process holding the claim. The claim is taken
        before a concurrency slot, so the slot covers the HTTP exchange only (a claim is a
        database round trip). Under xdist items are shared out first (schedule.py), so a
        worker claims only requests of items it evaluates."""
        coordinator = self.coordinator
        while True:
            self.health.check_storable(request)
            try:
                outcome = await coordinator.claim(key)
            except Exception as exc:
                if self.health.broke(exc, request):
                    self.health.check_storable(request)
                raise
            if outcome is True:
                return await self._hold(adapter, request, key, summary, priority)
            landed = outcome if isinstance(outcome, Landed) else await coordinator.wait(key)
            if landed is not None:
                replayed = await self._from_landed(landed, key, request.model.id)
                if replayed is not None:
                    return replayed
                # Recorded as in the store, but the entry cannot be read here (pruned, corrupt):
                # forget the outcome, or every claim would find it again; then ask afresh.
                await coordinator.forget(key)
            # The claim lapsed without an outcome: maybe another session cached it; else claim.
            entry = await self.caching.entry(request, key)
            if entry is not None:
                return self.usage.cache_hit(key, request.model.id, reply_from_entry(entry))

    async def _hold(
        self, adapter: Adapter, request: ModelRequest, key: str, summary: dict, priority: Priority
    ) -> ModelReply:
        """This process holds the claim: send, store, record the outcome for the others."""
        coordinator = self.coordinator
        stored = await self._stored_meanwhile(request, key)
        if stored is not None:
            return stored
        try:
            reply = await self.sender.send(adapter, request, key, priority)
        except (RunInterrupted, BudgetReached, StoreStoppedError):  # not an answer: asked again
            with contextlib.suppress(Exception):  # else its lease runs out (a full store)
                await asyncio.shield(coordinator.abandon(key))
            raise
        except ModelCallError as exc:
            await coordinator.finish(
                key,
                error_kind=exc.kind,
                error_status=getattr(exc, "status", None),
                error_message=self.redactor.redact(exc.message),
            )
            raise
        except BaseException:
            await asyncio.shield(coordinator.abandon(key))
            raise
        try:
            in_store = await self.caching.write(request, key, summary, reply)
            await coordinator.finish(
                key,
                in_store=in_store,
                text=None if in_store else reply.text,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
            )
        except BaseException as exc:
            if key in coordinator.held:
                with contextlib.suppress(Exception):
                    await asyncio.shield(coordinator.abandon(key))
            # A full store cannot share the outcome, but the reply is paid for: this
            # item keeps it (whoever else waits asks again, and is told not to send).
            if not self.health.broke(exc, request):
                raise
        return reply

    async def _stored_meanwhile(self, request: ModelRequest, key: str) -> ModelReply | None:
        """Another session (a second run on this cache, with its own run id) may have stored the
        reply between our look in the cache and our claim: its outcome is recorded under its run
        id, not ours, so only the store tells. Then the claim is dropped and nothing is sent."""
        entry = await self.caching.entry(request, key)
        if entry is None:
            return None
        await self.coordinator.finish(key, in_store=True)
        if created_at(entry) >= self.caching.run_started and self.settings.shares_items:
            return reply_from_entry(entry, cached=False)  # this run's own (another worker's): counted there
        return self.usage.cache_hit(key, request.model.id, reply_from_entry(entry))

    async def _from_landed(self, landed: Landed, key: str, model_id: str) -> ModelReply | None:
        if landed.error_kind is not None:
            raise rebuild_error(
                landed.error_kind,
                landed.error_message or "request failed in another worker",
                landed.error_status,
                model_id,
            )
        if landed.in_store:
            entry = await self.caching.cache.get(key)
            if entry is None:
                return None
            reply = reply_from_entry(entry, cached=False)
        else:
            reply = ModelReply(
                text=landed.text or "", input_tokens=landed.input_tokens, output_tokens=landed.output_tokens
            )
        self.usage.counts["from_other_workers"] += 1
        return reply
