"""The engine: an asyncio loop on its own thread that sends model requests.

pytest runs items one at a time on the main thread; the plugin schedules every item's
pipeline on this loop up front (``run_coroutine``) and blocks only on the item being run.
``complete`` is the one way a request goes out: adapter -> cache key -> in-flight dedup ->
cache read -> breaker -> (cross-process claim) -> priority slot -> HTTP with retries ->
cache write. Every error leaving it is a ``ModelCallError`` whose text went through the
redactor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import datetime as _dt
import json
import logging
import random
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import httpx

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine.batching import Batcher
from pytest_weval.engine.claims import Coordinator, Landed, SpendLedger
from pytest_weval.engine.errors import (
    BudgetReached,
    ModelCallError,
    ProviderError,
    ReplayMissError,
    ReplyTooLargeError,
    RunInterrupted,
    StoreDamagedError,
    StoreDownError,
    StoreFullError,
    StoreReadOnlyError,
    StoreStoppedError,
    UnknownModelError,
    rebuild_error,
)
from pytest_weval.engine.prices import Budget, PriceBook
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.store.backends import backend_for, batch_store, scrub, store_shown
from pytest_weval.engine.store.cache import (
    ResponseCache,
    StopReason,
    StoreFaults,
    cache_key,
    make_entry,
    reply_from_entry,
    stop_advice,
    stop_reason,
)
from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.store.outage import Outage
from pytest_weval.engine.store.sqlite_health import fix_command
from pytest_weval.engine.transport.http import ReplyTooLarge, Wire, async_client
from pytest_weval.engine.transport.limits import Limits, Priority
from pytest_weval.engine.transport.providers import (
    Adapter,
    BodyError,
    HttpCall,
    MalformedReply,
    adapter_for,
    error_message,
)
from pytest_weval.engine.transport.ratelimit import (
    Pacer,
    RateInfo,
    RateLimitWaitExceeded,
    pace_group,
    parse_retry_after,
)
from pytest_weval.engine.transport.retry import RETRY_STATUSES, Breaker, Failure, is_rate_limited, retry_delay
from pytest_weval.results import Usage

log = logging.getLogger("pytest_weval.engine")
T = TypeVar("T")

# The error each request gets once the store keeps no more replies.
_STOPPED: dict[StopReason, type[StoreStoppedError]] = {
    "disk full": StoreFullError,
    "read-only": StoreReadOnlyError,
    "damaged": StoreDamagedError,
}


@dataclasses.dataclass
class _Usage:
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


class Engine:
    def __init__(self, settings: EngineSettings | None = None):
        self.settings = settings or EngineSettings()
        self.redactor = Redactor()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._http: httpx.AsyncClient | None = None  # the batch APIs' (engine/batching.py)
        self._wire = Wire()  # model requests (transport/http.py)
        self._adapters: dict[str, Adapter] = {}
        self._flights: dict[tuple[str, bool], tuple[asyncio.Task[ModelReply], Priority]] = {}
        # Replies the persistent cache does not serve (modes refresh/off, no_cache requests):
        # a run answers each distinct request once (docs/engine.md).
        self._memo: dict[str, ModelReply] = {}
        self._rng = random.Random()
        self.limits = Limits(
            concurrency=self.settings.concurrency,
            overrides=self.settings.provider_concurrency,
            workers=self.settings.worker_count,
            adaptive=self.settings.adaptive,
        )
        self.breaker = Breaker(self.settings.breaker_threshold, self.settings.breaker_cooldown_s)
        self._unknown_models: dict[str, UnknownModelError] = {}  # model id -> the provider's 404
        self._close_store: Callable[[], Awaitable[None]] = _nothing_to_close
        self.cache = ResponseCache(None, self.settings.cache_mode)
        self.coordinator: Coordinator | None = None
        self.batcher: Batcher | None = None  # --weval-batch (engine/batching.py)
        self.outage: Outage | None = None  # a store server's reachability (store/outage.py)
        self.run_id = self.settings.run_id or f"local-{uuid.uuid4().hex}"
        self.run_started = self.settings.run_started or time.time()
        self._counts = {
            "http_requests": 0,
            "cache_hits": 0,
            "coalesced": 0,
            "from_other_workers": 0,
            "memo_hits": 0,
            "errors": 0,
        }
        self._usage: dict[str, _Usage] = {}
        self._pacers: dict[str, Pacer] = {}
        self._counted: set[str] = set()  # keys of the distinct requests already in the run's usage
        self.prices = PriceBook(self.settings.prices)
        self.budget = Budget(
            self.settings.budget_usd, self.prices, keeps_replies=self.settings.cache_mode != "off"
        )  # shared through the claims file under xdist
        self._stores: set[asyncio.Task[bool]] = set()  # cache writes: finished even on Ctrl-C
        self._interrupted = False
        self._cancel_at: float | None = None  # interrupted: when the requests in flight are given up
        # Lines for the person watching the run (a provider started throttling), taken by the
        # plugin as they come; appended on the engine's loop, taken from pytest's thread.
        self._notices: list[str] = []
        self._noticed: set[str] = set()
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
        self.outage = opened.outage
        if opened.responses is not None:
            self.cache = ResponseCache(
                opened.responses, settings.cache_mode, where=store_shown(settings), spool=opened.spool
            )
        claims = opened.claims
        if settings.coordinating:
            assert claims is not None  # a coordinating run's backend opens its claims
            self.coordinator = Coordinator(
                claims,
                run_id=self.run_id,
                worker_id=settings.worker_id,
                lease_s=settings.claim_lease_s,
                poll_s=settings.poll_interval_s,
                on_signal=self._on_signal,
                shares_outcomes=settings.shares_items,
            )
            await self.coordinator.start()
            if settings.budget_usd is not None:
                self.budget.use_ledger(SpendLedger(self.coordinator), poll_s=settings.poll_interval_s)
            if settings.batch != "off":
                self.batcher = Batcher(
                    store=batch_store(claims),
                    cache=self.cache,
                    settings=settings,
                    redactor=self.redactor,
                    http=self._client,
                    coordinator=self.coordinator,
                    budget=self.budget,
                    prices=self.prices,
                    adapter_of=lambda model_id: self.adapter(ModelSpec(id=model_id)),
                    on_reply=lambda key, model_id, reply: self._count(key, model_id, reply, sent=True, batch=True),
                    interrupted=lambda: self._interrupted,
                    notice=self._notice_once,
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
        if self._cancel_at is not None and self._flights:  # interrupted: the grace for replies on the wire
            flights = [task for task, _priority in self._flights.values()]
            await asyncio.wait(flights, timeout=max(0.0, self._cancel_at - time.monotonic()))
        if self._stores:  # replies received are written before anything is cancelled
            await asyncio.wait(list(self._stores), timeout=self.settings.store_retry_s + 30)
        self._write_spool()
        current = asyncio.current_task()
        others = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=10)
        if self.coordinator is not None:
            await self.coordinator.close()
        if self._http is not None:
            await self._http.aclose()
        await self._wire.aclose()
        if self.cache.store is not None:
            self.cache.store.close()
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

    def complete_sync(self, request: ModelRequest, timeout: float | None = None) -> ModelReply:
        return self.run_coroutine(self.complete(request)).result(timeout)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One reply for ``request``; raises a ``ModelCallError`` subclass."""
        if self.loop is None:
            self.start()
        if asyncio.get_running_loop() is not self.loop:  # called from another loop: hop over
            return await asyncio.wrap_future(self.run_coroutine(self.complete(request)))
        try:
            return await self._complete(request)
        except ModelCallError as exc:
            self._counts["errors"] += 1
            raise exc.scrub(self.redactor.redact) from None
        except StoreDown as exc:  # a store call on the way (a lookup, a forget) met the given-up store
            self._counts["errors"] += 1
            raise StoreDownError(
                f"not sent: {exc}; replies already received are kept for the next run", model_id=request.model.id
            ) from None

    @property
    def stats(self) -> dict[str, Any]:
        """Counts so far: HTTP requests sent, cache hits, coalesced requests, replies obtained
        from other workers, and per model usage."""
        data: dict[str, Any] = dict(self._counts)
        data["usage"] = {model: dataclasses.asdict(u) for model, u in list(self._usage.items())}
        data["limits"] = self.limits.snapshot()
        return data

    # -- interruption, rate limits, notices ----------------------------------------------------
    def interrupt(self) -> None:
        """The run was interrupted (Ctrl-C, SIGTERM, a stop signal in the claims store): from now
        on no request starts; the requests in flight have ``stop_grace_s`` to bring their replies
        in (stored, so the next run does not buy them again), then they are cancelled and their
        claims released. Safe from any thread, and to call twice."""
        if self._interrupted:
            return
        self._interrupted = True
        self._cancel_at = time.monotonic() + self.settings.stop_grace_s
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.call_later, self.settings.stop_grace_s, self._cancel_flights)

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    @property
    def in_flight(self) -> int:
        """Distinct requests under way (waiting for a slot, on the wire or between retries)."""
        return len(self._flights)

    def _cancel_flights(self) -> None:
        for task, _priority in list(self._flights.values()):
            task.cancel()

    def _check_running(self) -> None:
        if self._interrupted:
            raise RunInterrupted("the run was interrupted before this request was sent")

    def pacer(self, group: str) -> Pacer:
        pacer = self._pacers.get(group)
        if pacer is None:
            pacer = self._pacers[group] = Pacer(group, share=self.settings.worker_count, on_pause=self._share_pause)
        return pacer

    def _share_pause(self, group: str, until: float) -> None:
        """Tell the other workers of this run (xdist) to hold ``group`` back until ``until``."""
        if self.coordinator is not None:
            self.coordinator.signal(f"pause:{group}", until)

    def _on_signal(self, name: str, until: float) -> None:
        # "stop": the whole run; "stop:<session>": the processes of one pytest session (an
        # interrupted xdist controller's), not the other machines of a shared run.
        if name == "stop" or (self.settings.session_id is not None and name == f"stop:{self.settings.session_id}"):
            self.interrupt()
        elif name.startswith("pause:"):
            self.pacer(name[len("pause:") :]).pause_until_wall(until)

    def _notice_throttling(self, pacer: Pacer) -> None:
        provider = pacer.name.split(":", 1)[0]
        if provider in self._noticed:
            return
        self._noticed.add(provider)
        pace = f"about {pacer.learned_pace:.1f} requests/s" if pacer.learned_pace else "its pace is being learned"
        self._notices.append(
            f"weval: {provider} is rate limiting this run ({pace}); requests now wait as it asks "
            f"(up to {self.settings.rate_limit_wait_s:g} s each, --weval-rate-limit-wait)"
        )

    def _notice_once(self, tag: str, text: str) -> None:
        if tag not in self._noticed:
            self._noticed.add(tag)
            self._notices.append(text)

    def _client(self) -> httpx.AsyncClient:
        """The HTTP client, made when the first request is sent: a run that sends nothing (a
        cached replay, built-in models) never loads aiohttp (~0.2 s of a one-item run)."""
        if self._http is None:
            self._http = async_client(timeout=httpx.Timeout(self.settings.timeout_s), follow_redirects=False)
        return self._http

    def take_notices(self) -> list[str]:
        notices, self._notices = self._notices, []
        return notices

    # -- the request path -------------------------------------------------------------------
    def adapter(self, model: ModelSpec) -> Adapter:
        ident = (
            model.id
            if model.custom is None
            else model.id + "\x00" + json.dumps(model.custom, sort_keys=True, default=str)
        )
        adapter = self._adapters.get(ident)
        if adapter is None:
            adapter = adapter_for(model, self.settings.allowed_env)
            self._adapters[ident] = adapter
        return adapter

    def holding(self, request: ModelRequest, count: int) -> contextlib.AbstractAsyncContextManager[None]:
        """``HoldsBudget``: room for an item's ``count`` generations of ``request``. None is held
        where nothing is sent live (``--weval-cache=ro``, a run under ``--weval-batch``, whose
        batches are cut to the budget's room instead)."""
        if self.budget.limit_usd is None or self.settings.cache_mode == "ro" or self.settings.batch != "off":
            return contextlib.nullcontext()
        try:
            max_tokens = self.adapter(request.model).max_tokens(request)
        except ModelCallError:  # a model id that cannot be sent: its generation says so
            return contextlib.nullcontext()
        return self.budget.holding(request, max_tokens, count)

    async def cached_reply(self, request: ModelRequest) -> ModelReply | None:
        """The reply the cache held for ``request`` when this run began, without sending or
        counting anything (the plan asks this of every request it can foresee; under xdist
        another worker may already have stored replies of this very run)."""
        if not self.cache.readable(request):
            return None
        entry = await self.cache.get(self.key_for(request))
        if entry is None or _created_at(entry) >= self.run_started:
            return None
        return reply_from_entry(entry)

    def key_for(self, request: ModelRequest) -> str:
        """The cache key of ``request`` (for tests and tools)."""
        return cache_key(self.adapter(request.model).identity(), request)[0]

    def _count(self, key: str, model_id: str, reply: ModelReply, *, sent: bool, batch: bool = False) -> None:
        """One distinct request answered: sent by this process (it costs), or from the cache;
        counted once a run, however many items ask it."""
        if key in self._counted:
            return
        self._counted.add(key)
        usage = self._usage_of(model_id)
        usage.responses += 1
        usage.input_tokens += reply.input_tokens
        usage.output_tokens += reply.output_tokens
        if not sent:
            usage.cache_hits += 1
            return
        if batch:
            usage.batched += 1
        cost = self.prices.cost(model_id, reply.input_tokens, reply.output_tokens, batch=batch)
        if cost is None:
            usage.unpriced += 1
        else:
            usage.cost_usd += cost

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
            for model_id, u in list(self._usage.items())
            if u.responses or u.refused
        }

    def _usage_of(self, model_id: str) -> _Usage:
        usage = self._usage.get(model_id)
        if usage is None:
            usage = self._usage[model_id] = _Usage()
        return usage

    async def _complete(self, request: ModelRequest) -> ModelReply:
        adapter = self.adapter(request.model)
        key, summary = cache_key(adapter.identity(), request)
        flight_key = (key, request.no_cache)
        flight = self._flights.get(flight_key)
        if flight is not None:
            task, priority = flight
            priority.lower(request.priority)  # an earlier item now waits for it too
            self._counts["coalesced"] += 1
        else:
            priority = Priority(request.priority)
            task = asyncio.get_running_loop().create_task(self._obtain(adapter, request, key, summary, priority))
            self._flights[flight_key] = (task, priority)

            def done(t: asyncio.Task, fk=flight_key) -> None:
                self._flights.pop(fk, None)
                if not t.cancelled():
                    t.exception()  # retrieved: no "never retrieved" warning when all waiters left

            task.add_done_callback(done)
        try:
            reply = await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._interrupted and task.cancelled():
                raise RunInterrupted("the run was interrupted while this request was in flight") from None
            raise
        return dataclasses.replace(reply, tool_calls=list(reply.tool_calls))

    async def _obtain(
        self, adapter: Adapter, request: ModelRequest, key: str, summary: dict, priority: Priority
    ) -> ModelReply:
        """The reply to one distinct request. The run's usage counts each distinct request once,
        where it was answered: from the cache of an earlier run, or sent by this process (a
        reply another worker sent, or this run stored before, is counted there)."""
        model_id = request.model.id
        if self.cache.readable(request):
            entry = await self.cache.get(key)
            if entry is not None:
                if _created_at(entry) < self.run_started:
                    self._counts["cache_hits"] += 1
                    reply = reply_from_entry(entry)
                    self._count(key, model_id, reply, sent=False)
                    return reply
                # Recorded during this run (by another worker, or by an identical request of
                # ours): the fresh response it is, counted where it was sent.
                return reply_from_entry(entry, cached=False)
        memo = self._memo.get(key)
        if memo is not None:
            self._counts["memo_hits"] += 1
            return dataclasses.replace(memo, cached=False, tool_calls=list(memo.tool_calls))
        if self.settings.cache_mode == "ro":
            why = " (the prompt is marked noCache, so it is never recorded)" if request.no_cache else ""
            raise ReplayMissError(
                f"response was never recorded{why} (cache key {key[:16]}…, model {model_id}); "
                f"re-record with --weval-cache=rw",
                model_id=model_id,
            )
        self._notice_store_faults()
        self._check_storable(request)
        await self._store_answers(request)
        self._unknown_model(model_id)
        self.breaker.check(model_id)
        adapter.connect(self.settings.environ, self.redactor)  # MissingKeyError before any claim
        if self.batcher is not None and self.batcher.batchable(adapter, request):
            return await self.batcher.obtain(adapter, request, key, summary)
        if self.coordinator is None:
            reply = await self._send(adapter, request, key, priority)
            await self._store(request, key, summary, reply)
        else:
            reply = await self._coordinated(adapter, request, key, summary, priority)
        if not self.cache.readable(request) and reply.text.strip():
            self._memo[key] = reply
        return reply

    async def _store(self, request: ModelRequest, key: str, summary: dict, reply: ModelReply) -> bool:
        # A blank reply is an error for the caller; it is not worth replaying.
        if not self.cache.writable(request) or not reply.text.strip():
            return False
        entry = make_entry(key, request.model.id, summary, reply)
        # A reply that arrived is kept whatever happens next (Ctrl-C cancels its caller):
        # the write goes on as a task of its own, which closing waits for.
        write = asyncio.ensure_future(self.cache.put(entry))
        self._stores.add(write)
        write.add_done_callback(self._stores.discard)
        stored = await asyncio.shield(write)
        if not stored:
            self._notice_store_faults()
        return stored

    def _check_storable(self, request: ModelRequest) -> None:
        """No request is sent once the store cannot keep replies: each would be paid for and lost
        (and bought again by the next run). ``--weval-cache=off`` stores nothing, so never stops."""
        if self.outage is not None and self.outage.gave_up and self._needs_store(request):
            raise StoreDownError(
                f"not sent: {self.outage.gave_up}; replies already received are kept for the next run",
                model_id=request.model.id,
            )
        stopped = self.cache.stopped
        if self.cache.writable(request) and stopped:
            raise _STOPPED[stopped](
                f"not sent: the cache at {self.cache.faults.where} cannot store replies ({stopped}), "
                f"so this reply would be paid for and lost; {stop_advice(stopped)}, or run with --weval-cache=off",
                model_id=request.model.id,
            )

    def _needs_store(self, request: ModelRequest) -> bool:
        """Its reply goes into the store, or is claimed and shared through it."""
        return self.cache.writable(request) or self.coordinator is not None

    async def _store_answers(self, request: ModelRequest) -> None:
        """While the store server does not answer, no request starts: its reply might not be
        storable, and its claim not shareable. Returns when the store answers again; raises
        ``StoreDownError`` when it was given up (``--weval-store-retry``)."""
        outage = self.outage
        if outage is None or not outage.down or not self._needs_store(request):
            return
        self._notice_store_faults()
        with contextlib.suppress(StoreDown):
            await outage.wait_up()
        self._check_storable(request)

    def _store_broke(self, exc: BaseException, request: ModelRequest) -> bool:
        """A write of the shared store (a claim, an outcome) failed for want of space or
        permission: from now on nothing is sent (``_check_storable``). True when it was that."""
        if isinstance(exc, StoreDown):  # given up: ``_check_storable`` stops the sending
            self._notice_store_faults()
            return True
        reason = stop_reason(exc)
        if reason is None or not self.cache.writable(request):
            return False
        faults = self.cache.faults
        faults.stop = faults.stop or reason
        self._notice_store_faults()
        return True

    def _notice_store_faults(self) -> None:
        """Say at once (not only in a log) that the store stopped keeping replies or is damaged."""
        faults = self.cache.faults
        outage = self.outage
        if outage is not None and outage.gave_up and "store-down" not in self._noticed:
            self._noticed.add("store-down")
            last = f" (last: {outage.last_error})" if outage.last_error else ""
            self._notices.append(
                f"weval: {outage.gave_up}{last}: no new request is sent; replies received are kept for the next run"
            )
        elif outage is not None and outage.since is not None and f"store-outage-{outage.outages}" not in self._noticed:
            self._noticed.add(f"store-outage-{outage.outages}")
            self._notices.append(
                f"weval: the cache store {outage.where} does not answer: sending paused, retrying for up to "
                f"{outage.retry_s:g} s (--weval-store-retry)"
            )
        if faults.stop and "store-stop" not in self._noticed:
            self._noticed.add("store-stop")
            self._notices.append(
                f"weval: the cache at {faults.where} cannot store replies ({faults.stop}): no new request is "
                f"sent, as each would be paid for and lost; {stop_advice(faults.stop)}, or run with --weval-cache=off"
            )
        if faults.damaged and "store-damaged" not in self._noticed:
            self._noticed.add("store-damaged")
            self._notices.append(
                f"weval: the cache at {faults.where} is damaged ({faults.damaged}): its unreadable entries are "
                f"bought again; after the run, {fix_command(self.settings.cache_dir)} keeps every entry it can "
                "still read"
            )

    def store_faults(self) -> StoreFaults:
        """What went wrong with the store in this process (nothing: no line at the end)."""
        if self.outage is not None and self.outage.gave_up:
            self.cache.faults.down = self.cache.faults.down or self.outage.gave_up
        return self.cache.faults

    def _write_spool(self) -> None:
        """The replies a given-up store could not take, into the spool for the next run."""
        spool = self.cache.spool
        if spool is None or not spool.entries:
            return
        try:
            spool.write()
        except OSError as exc:
            log.error("weval: could not write the spool %s: %s", spool.path, exc)
            self.cache.faults.unstored += len(spool.entries)
            self.cache.faults.spooled = 0

    async def _coordinated(
        self, adapter: Adapter, request: ModelRequest, key: str, summary: dict, priority: Priority
    ) -> ModelReply:
        """Claim, then send; or wait for the process holding the claim. The claim is taken
        before a concurrency slot, so the slot covers the HTTP exchange only (a claim is a
        database round trip). Under xdist items are shared out first (schedule.py), so a
        worker claims only requests of items it evaluates."""
        coordinator = self.coordinator
        assert coordinator is not None
        while True:
            self._check_storable(request)
            try:
                outcome = await coordinator.claim(key)
            except Exception as exc:
                if self._store_broke(exc, request):
                    self._check_storable(request)
                raise
            if outcome is True:
                stored = await self._stored_meanwhile(request, key)
                if stored is not None:
                    return stored
                try:
                    reply = await self._send(adapter, request, key, priority)
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
                    in_store = await self._store(request, key, summary, reply)
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
                    if not self._store_broke(exc, request):
                        raise
                return reply
            landed = outcome if isinstance(outcome, Landed) else await coordinator.wait(key)
            if landed is not None:
                replayed = await self._from_landed(landed, key, request.model.id)
                if replayed is not None:
                    return replayed
                # Recorded as in the store, but the entry cannot be read here (pruned, corrupt):
                # forget the outcome, or every claim would find it again; then ask afresh.
                await coordinator.forget(key)
            # The claim lapsed without an outcome: maybe another session cached it; else claim.
            if self.cache.readable(request):
                entry = await self.cache.get(key)
                if entry is not None:
                    self._counts["cache_hits"] += 1
                    reply = reply_from_entry(entry)
                    self._count(key, request.model.id, reply, sent=False)
                    return reply

    async def _stored_meanwhile(self, request: ModelRequest, key: str) -> ModelReply | None:
        """Another session (a second run on this cache, with its own run id) may have stored the
        reply between our look in the cache and our claim: its outcome is recorded under its run
        id, not ours, so only the store tells. Then the claim is dropped and nothing is sent."""
        coordinator = self.coordinator
        if coordinator is None or not self.cache.readable(request):
            return None
        entry = await self.cache.get(key)
        if entry is None:
            return None
        await coordinator.finish(key, in_store=True)
        if _created_at(entry) >= self.run_started and self.settings.shares_items:
            return reply_from_entry(entry, cached=False)  # this run's own (another worker's): counted there
        self._counts["cache_hits"] += 1
        reply = reply_from_entry(entry)
        self._count(key, request.model.id, reply, sent=False)
        return reply

    async def _from_landed(self, landed: Landed, key: str, model_id: str) -> ModelReply | None:
        if landed.error_kind is not None:
            raise rebuild_error(
                landed.error_kind,
                landed.error_message or "request failed in another worker",
                landed.error_status,
                model_id,
            )
        if landed.in_store:
            entry = await self.cache.get(key)
            if entry is None:
                return None
            reply = reply_from_entry(entry, cached=False)
        else:
            reply = ModelReply(
                text=landed.text or "", input_tokens=landed.input_tokens, output_tokens=landed.output_tokens
            )
        self._counts["from_other_workers"] += 1
        return reply

    async def _send(self, adapter: Adapter, request: ModelRequest, key: str, priority: Priority) -> ModelReply:
        """Send until a well-formed reply. A fault (5xx, malformed body, reset, timeout) spends
        one of ``max_attempts``; a refusal (rate limit) spends none: it waits as the provider
        says, its whole pace group with it, within the rate-limit wait budget."""
        settings = self.settings
        model_id = request.model.id
        usage = self._usage_of(model_id)
        attempts = request.max_attempts or settings.max_attempts
        timeout = request.timeout_s or settings.timeout_s
        deadline = time.monotonic() + settings.rate_limit_wait_s
        waited = 0.0
        refused = 0
        adapted = False
        attempt = 0
        while True:
            self._check_running()
            async with self.limits.provider_slot(adapter.provider, priority) as limiter:
                call = adapter.build(request, settings.environ, self.redactor)
                pacer = self.pacer(pace_group(adapter.provider, call))
                try:
                    paced = await pacer.ready(deadline)
                except RateLimitWaitExceeded as exc:
                    raise self._waited_too_long(model_id, waited, refused, str(exc)) from None
                waited += paced
                usage.rate_wait_s += paced
                self._check_running()
                self._check_storable(request)  # the store filled while this one waited for a slot
                await self._store_answers(request)  # or stopped answering
                try:
                    reserved = await self.budget.reserve(request, adapter.max_tokens(request))
                except StoreDown:
                    self._check_storable(request)  # raises: the run's shared spend is out of reach
                    raise
                cost = 0.0  # what the budget is charged for this attempt: its reply, if any
                try:
                    async with self.limits.global_slot(priority):
                        # Interrupted while this one waited for a slot: the slot it got was freed
                        # by a reply the stop's grace let in, not for a new request.
                        self._check_running()
                        if pacer.paused:  # told to wait while this one waited for a slot: wait too
                            continue
                        self._unknown_model(model_id)  # told while this one waited for a slot
                        await self._store_answers(request)  # the store went while it waited
                        outcome, info = await self._attempt(adapter, call, timeout, model_id)
                    if self.budget.limit_usd is not None and isinstance(outcome, ModelReply):
                        cost = self.prices.cost(model_id, outcome.input_tokens, outcome.output_tokens) or 0.0
                finally:
                    await self.budget.settle(reserved, cost)
            if isinstance(outcome, ModelReply):
                pacer.served(info)
                limiter.on_success()
                self.breaker.success(model_id)
                outcome.refused, outcome.rate_wait_s = refused, waited
                self._count(key, model_id, outcome, sent=True)
                return outcome
            failure = outcome
            if failure.rate_limited:
                refused += 1
                usage.refused += 1
                limiter.on_rate_limit()
                wait = pacer.refused(failure.retry_after, info)
                self._notice_throttling(pacer)
                if time.monotonic() + wait > deadline:
                    raise self._waited_too_long(model_id, waited, refused, f"told to wait {wait:.1f} s more")
                continue  # the pacer holds this request (and its group) back for ``wait``
            limiter.on_error()
            attempt += 1
            if failure.status == 400 and not adapted and adapter.adapt(400, failure.data):
                adapted = True
                attempt -= 1  # the adapted retry is not one of the attempts
                continue
            if not failure.retryable or attempt >= attempts:
                break
            delay = retry_delay(
                failure,
                attempt,
                base=settings.backoff_base_s,
                cap=settings.backoff_max_s,
                retry_after_cap=settings.retry_after_max_s,
                rng=self._rng,
            )
            log.info(
                "weval: %s attempt %d failed (%s); retrying in %.2fs",
                model_id,
                attempt,
                self.redactor.redact(failure.message),
                delay,
            )
            await asyncio.sleep(delay)
        self.breaker.failure(model_id, self.redactor.redact(failure.message))
        tries = f" after {attempt} attempt{'s' if attempt != 1 else ''}" if failure.retryable else ""
        if failure.status == 404 and "model" in failure.message.lower():
            # The provider names the model it does not have (a wrong path says "Not Found").
            unknown = UnknownModelError(
                404, f"{model_id}: the provider has no such model ({failure.message})", model_id=model_id
            )
            self._unknown_models[model_id] = unknown
            raise unknown
        raise ProviderError(
            failure.status,
            f"{model_id}: {failure.message}{tries}",
            model_id=model_id,
            rate_limited=failure.rate_limited,
            timed_out=failure.timed_out,
        )

    def _unknown_model(self, model_id: str) -> None:
        """The provider said it has no such model: asking again would cost a request and say the same."""
        unknown = self._unknown_models.get(model_id)
        if unknown is not None:
            raise UnknownModelError(unknown.status, unknown.message, model_id=model_id)

    def _waited_too_long(self, model_id: str, waited: float, refused: int, why: str) -> ProviderError:
        self.breaker.release_probe(model_id)
        budget = self.settings.rate_limit_wait_s
        return ProviderError(
            429,
            f"{model_id}: rate limited: the provider refused the request {refused} time"
            f"{'s' if refused != 1 else ''} and it waited {waited:.1f} s; waiting on ({why}) would pass "
            f"the {budget:g} s allowed (--weval-rate-limit-wait)",
            model_id=model_id,
            rate_limited=True,
        )

    async def _attempt(
        self, adapter: Adapter, call: HttpCall, timeout: float, model_id: str
    ) -> tuple[ModelReply | Failure, RateInfo | None]:
        """One HTTP exchange: a reply or a failure, and the provider's rate-limit headers."""
        started = time.monotonic()
        self._counts["http_requests"] += 1
        self._usage_of(model_id).http_requests += 1
        # As httpx encodes a json= body, so a request's bytes do not depend on the client.
        payload = json.dumps(call.body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        try:
            exchange = self._wire.post(
                call.url, call.headers, payload, timeout, int(self.settings.max_reply_mb * 1_000_000)
            )
            # The whole attempt is bounded. asyncio.timeout where there is one: wait_for runs
            # the request in a Task of its own (Python 3.11).
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(timeout):
                    response = await exchange
            else:
                response = await asyncio.wait_for(exchange, timeout)
        except ReplyTooLarge as exc:
            size = f" ({exc.announced / 1e6:.1f} MB announced)" if exc.announced is not None else ""
            raise ReplyTooLargeError(
                f"{model_id}: the reply is larger than {self.settings.max_reply_mb:g} MB{size} "
                "(--weval-max-reply-mb); it was not read further, stored or judged",
                model_id=model_id,
            ) from None
        except (asyncio.TimeoutError, TimeoutError, httpx.TimeoutException):
            return Failure(None, f"no reply within {timeout:g} s (timeout)", retryable=True, timed_out=True), None
        except httpx.TransportError as exc:
            detail = self.redactor.redact(str(exc)) or type(exc).__name__
            return Failure(None, f"connection failed ({type(exc).__name__}: {detail})", retryable=True), None
        body = response.body
        now = time.time()
        info = RateInfo.from_headers(response.headers, now)
        status = response.status
        if status >= 400:
            text = body.decode(response.charset or "utf-8", errors="replace")
            try:
                data = json.loads(body)
            except ValueError:
                data = None
            message = self.redactor.redact(error_message(text))
            limited = is_rate_limited(status, data)
            return Failure(
                status,
                f"HTTP {status}: {message}",
                retryable=limited or status in RETRY_STATUSES,
                rate_limited=limited,
                retry_after=parse_retry_after(response.headers, now),
                data=data,
            ), info
        try:
            data = json.loads(body)
        except ValueError:
            return Failure(status, "malformed reply (the body is not JSON)", retryable=True), info
        del body  # the decoded reply is all that is kept
        try:
            reply = adapter.parse(data)
        except MalformedReply as exc:
            return Failure(status, f"malformed reply ({exc})", retryable=True), info
        except BodyError as exc:
            limited = is_rate_limited(exc.status, None)
            return Failure(
                exc.status,
                f"error in reply: {self.redactor.redact(exc.message)}",
                retryable=limited or exc.status in RETRY_STATUSES,
                rate_limited=limited,
            ), info
        reply.latency_s = time.monotonic() - started
        return reply, info


def _created_at(entry: dict) -> float:
    """An entry's creation time in seconds (the files store keeps it as ISO text)."""
    created = entry.get("created")
    if isinstance(created, (int, float)):
        return float(created)
    try:
        return _dt.datetime.fromisoformat(str(created)).timestamp()
    except ValueError:
        return 0.0


async def _nothing_to_close() -> None:
    return None
