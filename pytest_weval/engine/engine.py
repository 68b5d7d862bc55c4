"""The engine: an asyncio loop on its own thread that sends model requests.

pytest runs items one at a time on the main thread; the plugin schedules every item's
pipeline on this loop up front (``run_coroutine``) and blocks only on the item being run.
``complete`` is the one way a request goes out, through the stages of ``engine/stages/``:
adapter -> cache key -> in-flight dedup (``flights``) -> cache read (``caching``) -> breaker and
key (``sending``) -> the batcher, or (the cross-process claim, ``claiming``) -> priority slots,
pacing and the budget around each attempt (``pacing``, ``budgeting``) -> HTTP with retries
(``sending``) -> cache write (``caching``). The engine composes the stages and runs the loop.
Every error leaving it is a ``ModelCallError`` whose text went through the redactor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine.claims import Coordinator, SpendLedger, handover_folder
from pytest_weval.engine.errors import ModelCallError, StoreDownError
from pytest_weval.engine.prices import Budget, PriceBook
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.stages.budgeting import BudgetStage
from pytest_weval.engine.stages.caching import CacheStage
from pytest_weval.engine.stages.claiming import ClaimStage
from pytest_weval.engine.stages.flights import Flights
from pytest_weval.engine.stages.notices import Notices
from pytest_weval.engine.stages.pacing import Pacing
from pytest_weval.engine.stages.sending import Sender
from pytest_weval.engine.stages.stopping import Stopping
from pytest_weval.engine.stages.store_health import StoreHealth
from pytest_weval.engine.stages.usage import RunUsage
from pytest_weval.engine.store.backends import backend_for, batch_store, scrub, store_shown
from pytest_weval.engine.store.cache import ResponseCache, StoreFaults, key_payload, request_key
from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.store.outage import Outage
from pytest_weval.engine.transport.http import LazyClient
from pytest_weval.engine.transport.limits import Limits, Priority
from pytest_weval.engine.transport.providers import Adapter, adapter_for
from pytest_weval.engine.transport.retry import Breaker
from pytest_weval.results import Usage

if TYPE_CHECKING:
    from pytest_weval.engine.batching import Batcher

log = logging.getLogger("pytest_weval.engine")
T = TypeVar("T")


class Engine:
    def __init__(self, settings: EngineSettings | None = None):
        self.settings = settings = settings or EngineSettings()
        self.redactor = Redactor()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._batch_http = LazyClient(settings.timeout_s)  # the batch APIs' (engine/batching/)
        self._adapters: dict[str, Adapter] = {}
        self._close_store: Callable[[], Awaitable[None]] = _nothing_to_close
        self.run_id = settings.run_id or f"local-{uuid.uuid4().hex}"
        self.run_started = settings.run_started or time.time()
        self.prices = PriceBook(settings.prices)
        # The stages (engine/stages/), in the order a request meets them.
        self.notices = Notices()
        self.stopping = Stopping(settings.stop_grace_s)
        self.usage = RunUsage(self.prices)
        self.flights = Flights(self.stopping, self.usage)
        self.health = StoreHealth(settings, self.notices)
        self.caching = CacheStage(settings, self.usage, self.health, self.run_started)
        self.pacing = Pacing(settings, self.notices)
        self.budgeting = BudgetStage(settings, self.prices)
        self.sender = Sender(
            settings,
            self.redactor,
            pacing=self.pacing,
            budgeting=self.budgeting,
            health=self.health,
            stopping=self.stopping,
            usage=self.usage,
        )
        self.claiming: ClaimStage | None = None  # coordinating runs (opened with the store)
        self.batcher: Batcher | None = None  # --weval-batch (engine/batching/)
        # What other layers and tools read; the stages own it.
        self.limits: Limits = self.pacing.limits
        self.breaker: Breaker = self.sender.breaker
        self.budget: Budget = self.budgeting.budget
        self.cache: ResponseCache = self.caching.cache  # the store's, once opened
        self.outage: Outage | None = None  # a store server's reachability (store/outage.py)
        self.coordinator: Coordinator | None = None  # cross-process claims (engine/claims.py)
        self._closed = False

    def __repr__(self) -> str:
        return f"Engine(settings={self.settings!r}, started={self.loop is not None})"

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> Engine:
        with self._lock:
            if self.loop is not None:
                return self
            if self._closed:
                raise RuntimeError("this engine was closed")
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()
                try:
                    loop.run_until_complete(loop.shutdown_asyncgens())
                finally:
                    loop.close()

            thread = threading.Thread(target=run, name="weval-engine", daemon=True)
            thread.start()
            ready.wait()
            self.loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self._open(), loop).result()
        except BaseException:
            self.close()
            raise
        return self

    async def _open(self) -> None:
        settings = self.settings
        # The one place the store is chosen (engine/store/backends.py); it opens what these
        # settings need: the replies' store, the claims' store, or neither.
        opened = await backend_for(settings.cache_store, settings.cache_dir).open(settings, self.redactor)
        self._close_store = opened.close
        cache = None
        if opened.responses is not None:
            cache = ResponseCache(
                opened.responses, settings.cache_mode, where=store_shown(settings), spool=opened.spool
            )
        self.caching.open(cache)
        self.cache, self.outage = self.caching.cache, opened.outage
        self.health.open(self.cache, opened.outage, shares_store=settings.coordinating)
        if not settings.coordinating:
            return
        # Claims, the shared budget and the batcher: what a coordinating run shares.
        assert opened.claims is not None  # a coordinating run's backend opens its claims
        self.coordinator = coordinator = Coordinator(
            opened.claims,
            run_id=self.run_id,
            worker_id=settings.worker_id,
            lease_s=settings.claim_lease_s,
            poll_s=settings.poll_interval_s,
            on_signal=self._on_signal,
            shares_outcomes=settings.shares_items,
            outcomes_lost=lambda: self.cache.stopped is not None,
            # One session's processes only: a folder kept past its run must never be read by a
            # later run of the same --weval-run-id (its outcomes and give-ups are that run's).
            handover=handover_folder(settings.coordination_dir, f"{self.run_id}:{settings.session_id}")
            if settings.session_id
            else None,
        )
        self.claiming = ClaimStage(
            coordinator,
            settings,
            self.redactor,
            caching=self.caching,
            health=self.health,
            sender=self.sender,
            usage=self.usage,
        )
        self.pacing.coordinator = coordinator
        await coordinator.start()
        if settings.budget_usd is not None:
            self.budget.use_ledger(SpendLedger(coordinator), poll_s=settings.poll_interval_s)
        if settings.batch != "off":
            # The batch APIs' code is loaded by a --weval-batch run only.
            from pytest_weval.engine.batching import Batcher

            self.batcher = Batcher(
                store=batch_store(opened.claims),
                cache=self.cache,
                settings=settings,
                redactor=self.redactor,
                http=self._batch_http,
                coordinator=coordinator,
                budget=self.budget,
                prices=self.prices,
                adapter_of=lambda model_id: self.adapter(ModelSpec(id=model_id)),
                on_reply=lambda key, model_id, reply: self.usage.answered(key, model_id, reply, sent=True, batch=True),
                interrupted=lambda: self.stopping.interrupted,
                notice=self.notices.once,
                run_started=self.run_started,
            )

    def close(self) -> None:
        """Cancel what is still running on the loop, release claims, close connections and
        stores, stop the thread. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self.loop, self._thread
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("Engine.close() must not be called from the engine's own thread")
        try:
            asyncio.run_coroutine_threadsafe(self._aclose(), loop).result(timeout=60)
        except Exception as exc:  # noqa: BLE001 - closing must go on
            log.warning(
                "weval engine: error while closing: %s",
                self.redactor.redact(scrub(str(exc), self.settings.cache_store)),
            )
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)

    async def _aclose(self) -> None:
        await self.flights.grace()  # interrupted: the grace for replies on the wire
        await self.caching.finish_writes()
        current = asyncio.current_task()
        others = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=10)
        if self.coordinator is not None:
            await self.coordinator.close()
        await self._batch_http.aclose()
        await self.sender.aclose()
        self.caching.close()
        await self._close_store()

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- entry points ----------------------------------------------------------------------
    def run_coroutine(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the engine loop from any thread."""
        if self.loop is None:
            self.start()
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One reply for ``request``; raises a ``ModelCallError`` subclass."""
        if self.loop is None:
            self.start()
        if asyncio.get_running_loop() is not self.loop:  # called from another loop: hop over
            return await asyncio.wrap_future(self.run_coroutine(self.complete(request)))
        try:
            adapter = self.adapter(request.model, request.endpoint)
            key = request_key(adapter.identity(), request)
            # A replay's hit read here and now (``CacheStage.read_now``): no flight, no task, no
            # future, the loop not turned, for what the flight's first step would have read the
            # same way. An identical request under way is joined as before.
            if not self.flights.flying(request, key):
                reply = self.caching.read_now(request, key)
                if reply is not None:
                    return reply
            return await self.flights.join(request, key, lambda priority: self._obtain(adapter, request, key, priority))
        except ModelCallError as exc:
            self.usage.counts["errors"] += 1
            raise exc.scrub(self.redactor.redact) from None
        except StoreDown as exc:  # a store call on the way (a lookup, a forget) met the given-up store
            self.usage.counts["errors"] += 1
            raise StoreDownError(
                f"not sent: {exc}; replies already received are kept for the next run", model_id=request.model.id
            ) from None

    async def _obtain(self, adapter: Adapter, request: ModelRequest, key: str, priority: Priority) -> ModelReply:
        """The reply to one distinct request, through the stages in order."""
        reply = await self.caching.read(request, key)
        if reply is not None:
            return reply
        # The request as the store keeps it beside its reply: made for a reply to store only.
        summary = key_payload(adapter.identity(), request)
        await self.health.before_send(request)
        self.sender.before_send(adapter, request)  # MissingKeyError before any claim
        if self.batcher is not None and self.batcher.batchable(adapter, request):
            return await self.batcher.obtain(adapter, request, key, summary)
        if self.claiming is None:
            reply = await self.sender.send(adapter, request, key, priority)
            await self.caching.write(request, key, summary, reply)
        else:
            reply = await self.claiming.obtain(adapter, request, key, summary, priority)
        self.caching.remember(request, key, reply)
        return reply

    @property
    def stats(self) -> dict[str, Any]:
        """Counts so far: HTTP requests sent, cache hits, coalesced requests, replies obtained
        from other workers, and per model usage."""
        data = self.usage.stats()
        data["limits"] = self.limits.snapshot()
        return data

    def run_usage(self) -> dict[str, Usage]:
        """What this process's distinct requests used, per model: the run's usage table."""
        return self.usage.run_usage()

    # -- interruption, rate limits, notices ----------------------------------------------------
    def interrupt(self) -> None:
        """The run was interrupted (Ctrl-C, SIGTERM, a stop signal in the claims store): from now
        on no request starts; the requests in flight have ``stop_grace_s`` to bring their replies
        in (stored, so the next run does not buy them again), then they are cancelled and their
        claims released. Safe from any thread, and to call twice."""
        if not self.stopping.interrupt():
            return
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.call_later, self.settings.stop_grace_s, self.flights.cancel)

    @property
    def interrupted(self) -> bool:
        return self.stopping.interrupted

    @property
    def in_flight(self) -> int:
        """Distinct requests under way (waiting for a slot, on the wire or between retries)."""
        return len(self.flights)

    def _on_signal(self, name: str, until: float) -> None:
        # "stop": the whole run; "stop:<session>": the processes of one pytest session (an
        # interrupted xdist controller's), not the other machines of a shared run.
        if name == "stop" or (self.settings.session_id is not None and name == f"stop:{self.settings.session_id}"):
            self.interrupt()
        elif name.startswith("pause:"):
            self.pacing.paused_elsewhere(name[len("pause:") :], until)

    def take_notices(self) -> list[str]:
        return self.notices.take()

    def store_faults(self) -> StoreFaults:
        """What went wrong with the store in this process (nothing: no line at the end)."""
        return self.health.faults()

    # -- requests ----------------------------------------------------------------------------
    def adapter(self, model: ModelSpec, endpoint: str = "chat") -> Adapter:
        ident = (
            model.id
            if model.custom is None
            else model.id + "\x00" + json.dumps(model.custom, sort_keys=True, default=str)
        )
        ident = ident if endpoint == "chat" else endpoint + "\x00" + ident
        adapter = self._adapters.get(ident)
        if adapter is None:
            adapter = adapter_for(model, self.settings.allowed_env, endpoint)
            adapter.service_tier = self.settings.service_tier
            adapter.prompt_cache = self.settings.prompt_cache
            self._adapters[ident] = adapter
        return adapter

    def holding(self, request: ModelRequest, count: int) -> contextlib.AbstractAsyncContextManager[None]:
        """``HoldsBudget``: room for an item's ``count`` generations of ``request``. None is held
        where nothing is sent live (``--weval-cache=ro``, a run under ``--weval-batch``, whose
        batches are cut to the budget's room instead)."""
        if not self.budgeting.holds_items():
            return contextlib.nullcontext()
        try:
            max_tokens = self.adapter(request.model).max_tokens(request)
        except ModelCallError:  # a model id that cannot be sent: its generation says so
            return contextlib.nullcontext()
        return self.budgeting.holding(request, max_tokens, count)

    async def cached_reply(self, request: ModelRequest) -> ModelReply | None:
        """The reply the cache held for ``request`` when this run began, without sending or
        counting anything (the plan asks this of every request it can foresee; under xdist
        another worker may already have stored replies of this very run)."""
        if not self.cache.readable(request):
            return None
        return await self.caching.cached_reply(request, self.key_for(request))

    def key_for(self, request: ModelRequest) -> str:
        """The cache key of ``request`` (for tests and tools)."""
        return request_key(self.adapter(request.model, request.endpoint).identity(), request)


async def _nothing_to_close() -> None:
    return None
