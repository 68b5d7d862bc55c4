"""Requests through the providers' batch APIs, at half the price (docs/batch.md).

Under ``--weval-batch=wait|submit`` a request to a provider with a batch API is not sent: it is
written to the store as a line (``store/batches.py``) and waited for. One process at a time (the
holder of a claim on ``SUBMITTER`` in the claims store) submits and collects for every process
and machine sharing the store:

- **Rounds.** Queued lines go out once no line has joined the queue for ``batch_round_s`` (the
  pipelines that could ask have asked: every candidate answer first, then the judges of the
  answers that came back, then later turns), as one batch per provider account, cut at the
  provider's line and byte limits and at what the budget has room for.
- **Collecting.** Each open batch's status is asked every ``--weval-batch-poll`` seconds (and
  once at the start of each process). An ended batch's replies are parsed by the live adapter
  and stored in the cache under the live request's key; lines that expired or met a passing
  fault are queued again, lines that failed for good keep the provider's message.
- **Waiting.** Every process looks up the lines it waits for: a line gone from the store has its
  reply in the cache; a failed one is its request's error. Under ``submit`` a line inside a
  batch that has not ended is ``BatchPending`` (its item is skipped), once the batch's status
  was asked during this run.

A reply is counted and priced (at the batch price) where it is collected.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from pytest_weval.engine.claims import ROLE_PREFIX, Coordinator
from pytest_weval.engine.errors import (
    BatchPending,
    BudgetReached,
    ModelCallError,
    ProviderError,
    RunInterrupted,
    StoreDownError,
)
from pytest_weval.engine.prices import Budget, PriceBook, batch_share, estimate_input_tokens
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.store.backends import backend_for, batch_store
from pytest_weval.engine.store.batches import (
    BUDGET_STATUS,
    DONE,
    FAILED,
    OPEN,
    SUBMITTED,
    SUBMITTING,
    Batch,
    BatchStore,
    Line,
)
from pytest_weval.engine.store.cache import ResponseCache, make_entry, reply_from_entry
from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.transport.batch_api import AGAIN, BATCH_APIS, DROPPED, OK, BatchAPI
from pytest_weval.engine.transport.http import async_client
from pytest_weval.engine.transport.providers import Adapter, BodyError, MalformedReply
from pytest_weval.engine.transport.providers.anthropic import Anthropic
from pytest_weval.engine.transport.providers.openai_compat import OpenAICompat

log = logging.getLogger("pytest_weval.engine")

SUBMITTER = ROLE_PREFIX + "batch-submitter"  # the claim whose holder submits and collects
# OpenAI and Anthropic end every batch within 24 hours: a batch recorded without the provider's id
# that no process could look for by then has ended at the provider (collected by no one), so
# its lines may be queued again without buying any twice while it is still open.
PROVIDER_WINDOW_S = 25 * 3600


@dataclasses.dataclass
class _Wanted:
    line: Line
    future: asyncio.Future[ModelReply]


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
        self.store = store
        self.cache = cache
        self.settings = settings
        self.mode = settings.batch
        self.redactor = redactor
        self.http = http
        self.coordinator = coordinator
        self.budget = budget
        self.prices = prices
        self.adapter_of = adapter_of
        self.on_reply = on_reply
        self.interrupted = interrupted
        self.notice = notice
        self.run_started = run_started
        self.look_s = max(0.05, min(0.5, settings.batch_round_s / 4))
        self._wanted: dict[str, _Wanted] = {}
        self._apis: dict[str, BatchAPI] = {}
        self._asked: dict[str, float] = {}  # batch id -> when this process last asked its status
        self._held: dict[str, float] = {}  # batch id -> what the budget holds for it here
        self._uncollectable: dict[str, str] = {}  # batch id -> why this process cannot collect it
        self._queue: list[Line] = []
        self._queued = asyncio.Event()
        self._driver: asyncio.Task[None] | None = None
        self._next_claim = 0.0
        self._next_look = 0.0
        self._changes = 0  # what this process did to the store (queued, submitted, collected)

    # -- what goes through a batch ----------------------------------------------------------
    @staticmethod
    def batchable(adapter: Adapter, request: ModelRequest) -> bool:
        """A request to a provider with a batch API (not a custom model), whose reply goes to
        the cache (a ``noCache`` prompt's never does, so it is sent live)."""
        return (
            isinstance(adapter, (OpenAICompat, Anthropic)) and adapter.provider in BATCH_APIS and not request.no_cache
        )

    def api(self, provider: str) -> BatchAPI:
        """This process's batch API of ``provider`` (``MissingKeyError`` without a key)."""
        api = self._apis.get(provider)
        if api is None:
            api = self._apis[provider] = BATCH_APIS[provider](
                self.settings.environ, self.redactor, self.http(), backoff_s=self.settings.backoff_base_s
            )
        return api

    async def obtain(self, adapter: Adapter, request: ModelRequest, key: str, summary: dict[str, Any]) -> ModelReply:
        """The reply to ``request``, through a batch: queued in the store, then waited for."""
        api = self.api(adapter.provider)
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
            body=json.dumps(adapter.body(request), separators=(",", ":")),
            estimate=estimate,
        )
        future: asyncio.Future[ModelReply] = asyncio.get_running_loop().create_future()
        self._wanted[key] = _Wanted(line, future)
        self._queue.append(line)
        self._queued.set()
        if self._driver is None or self._driver.done():
            self._driver = asyncio.get_running_loop().create_task(self._drive())
        try:
            return await future
        finally:
            self._wanted.pop(key, None)

    # -- the loop every process runs ----------------------------------------------------------
    async def _drive(self) -> None:
        while True:
            try:
                await self._turn()
            except StoreDown as exc:
                self._fail_all(StoreDownError(f"not sent: {exc}", model_id=None))
                return
            except ModelCallError as exc:  # a batch API call failed after its retries: try next turn
                self.notice(f"batch-error:{exc.message}", f"weval: {exc.message}")
            except Exception:  # the loop must go on; the log says what broke
                log.exception("weval batches: a turn failed")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._queued.wait(), self.look_s)

    async def _turn(self) -> None:
        if self.interrupted():
            self._fail_all(RunInterrupted("the run was interrupted while this request waited for its batch"))
            return
        changes = self._changes
        if self._queue:
            self._queued.clear()
            lines, self._queue = self._queue, []
            await self.store.queue(lines)
            await self.store.requeue([line.key for line in lines], FAILED, before=self.run_started)
            self._changes += 1
        if await self._submitter():
            await self._collect_open()
            await self._submit_rounds()
        await self._release_held()
        # The lines waited for are looked up when this process changed something, else now and
        # then (another process may have collected them): not every turn, as they may be many.
        now = time.monotonic()
        if self._wanted and (self._changes != changes or now >= self._next_look):
            self._next_look = now + min(self.settings.batch_poll_s, 5.0)
            await self._answer_waiters()

    def _fail_all(self, exc: ModelCallError) -> None:
        for wanted in list(self._wanted.values()):
            if not wanted.future.done():
                wanted.future.set_exception(exc)

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

    # -- waiting ------------------------------------------------------------------------------
    async def _answer_waiters(self) -> None:
        keys = list(self._wanted)
        states = await self.store.look(keys)
        again: list[Line] = []
        lost: list[str] = []
        for key in keys:
            wanted = self._wanted.get(key)
            if wanted is None or wanted.future.done():
                continue
            state = states.get(key)
            line = wanted.line
            why = self._uncollectable.get(state.batch or "") if state is not None else None
            if why is not None and state is not None and state.state not in (DONE, FAILED):
                batch_name = state.provider_id or state.batch
                message = f"in {line.provider} batch {batch_name}, which this run cannot collect: {why}"
                if self.mode == "submit":
                    wanted.future.set_exception(
                        BatchPending(message, model_id=line.model, provider=line.provider, batch_id=batch_name or "")
                    )
                else:
                    wanted.future.set_exception(ProviderError(None, f"{line.model}: {message}", model_id=line.model))
            elif state is None or state.state == DONE:  # collected (or cancelled: state None)
                entry = await self.cache.get(key)
                if entry is not None:
                    wanted.future.set_result(reply_from_entry(entry, cached=False))
                elif state is None:
                    again.append(line)
                else:  # its reply left the cache since (pruned): bought again
                    lost.append(key)
            elif state.state == FAILED and state.updated >= self.run_started:
                where = f" (batch {state.provider_id})" if state.provider_id else ""
                if state.error_status == BUDGET_STATUS:
                    wanted.future.set_exception(BudgetReached(state.error_message or "budget", model_id=line.model))
                else:
                    wanted.future.set_exception(
                        ProviderError(
                            state.error_status,
                            f"{line.model}: {state.error_message}{where}",
                            model_id=line.model,
                        )
                    )
            elif (
                self.mode == "submit"
                and state.state == SUBMITTED
                and state.batch_checked is not None
                and state.batch_checked >= self.run_started
            ):
                wanted.future.set_exception(
                    BatchPending(
                        f"in batch {state.provider_id} at {line.provider}; collect with --weval-batch=wait",
                        model_id=line.model,
                        provider=line.provider,
                        batch_id=state.provider_id or "",
                    )
                )
        if again:
            await self.store.queue(again)
        if lost:
            await self.store.requeue(lost, DONE, before=time.time())

    # -- the submitter: collecting ------------------------------------------------------------
    async def _collect_open(self) -> None:
        now = time.time()
        batches = await self.store.open_batches()
        for batch in batches:
            asked = self._asked.get(batch.id)
            if asked is not None and now - asked < self.settings.batch_poll_s:
                continue  # recoveries are spaced like status checks (a provider may have no list)
            if batch.status == SUBMITTING:
                gone = batch.owner != self.coordinator.owner and self.coordinator.dead(batch.host, batch.pid)
                if (
                    gone or batch.created is None or now - batch.created > self.settings.claim_lease_s * 4
                ):  # on another machine, long gone
                    self._asked[batch.id] = now
                    await self._recover(batch, {b.provider_id for b in batches if b.provider_id})
                continue
            if batch.status != OPEN:
                self._cannot_collect(batch, f"its record in the store has an unknown status {batch.status!r}")
                continue
            api = self._collector(batch)
            if api is None:
                continue
            if batch.provider_id is None:  # a damaged record: nothing to ask the provider about
                self._cannot_collect(batch, "its record in the store has no provider id")
                continue
            self._asked[batch.id] = now
            try:
                status = await api.status(batch.provider_id)
            except ProviderError as exc:
                if exc.status != 404:
                    raise  # a passing fault: asked again after the poll interval
                # The account does not know it (deleted, or a store shared with another account
                # of the same name): kept, as its lines may be in it, but nobody waits on it here.
                self._cannot_collect(batch, f"the provider answers 404 for it ({exc.message})")
                continue
            if status.failed is not None:
                await self.store.fail_all(batch.id, None, f"the batch failed at {batch.provider}: {status.failed}")
                self._changes += 1
            elif status.ended:
                await self._collect(api, batch, status.status)
            else:
                await self.store.checked(batch.id, status.status)

    async def _recover(self, batch: Batch, known: set[str]) -> None:
        """A batch whose submitter died between asking the provider and recording its answer:
        if the provider has it, it is collected like any other; else its lines are queued again.
        A process that cannot look (no key, another account) leaves it as it is: the batch may
        exist, and queueing its lines again would buy them twice (docs/batch.md)."""
        api = self._collector(batch)
        if api is None:
            if batch.created is not None and time.time() - batch.created > PROVIDER_WINDOW_S:
                await self.store.unsubmit(batch.id)
            return
        if batch.created is None:  # what the provider is searched by: left for `batch cancel`/a person
            self._cannot_collect(batch, "its record in the store is damaged (its created is not a time)")
            return
        try:
            provider_id = await api.find(batch.id, batch.created, batch.lines, known)
        except ModelCallError as exc:  # e.g. no list endpoint: asked again after the poll interval
            self._cannot_collect(batch, f"it could not be looked for at the provider: {exc.message}")
            return
        if provider_id is None:
            await self.store.unsubmit(batch.id)
        else:
            await self.store.submitted(batch.id, provider_id)

    def _collector(self, batch: Batch) -> BatchAPI | None:
        try:
            api = self.api(batch.provider)
        except ModelCallError as exc:
            why = exc.message
        else:
            if api.account == batch.account:
                self._uncollectable.pop(batch.id, None)
                return api
            why = "it was submitted with another key or base URL"
        self._cannot_collect(batch, why)
        return None

    def _cannot_collect(self, batch: Batch, why: str) -> None:
        """Its waiters here end (skipped under ``submit``, errors under ``wait``) rather than wait
        for ever; the batch and its lines stay in the store for a process that can collect them."""
        self._uncollectable[batch.id] = why
        self.notice(
            f"batch-uncollectable:{batch.id}",
            f"weval: cannot collect {batch.provider} batch {batch.provider_id or batch.id} here: {why}; "
            "it is kept for a run that can",
        )

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
                entry = make_entry(result.key, model, json.loads(request), reply)
                await self.cache.put(entry)
                done.append(result.key)
                self.on_reply(result.key, model, reply)
                cost += self.prices.reply_cost(model, reply, batch=True) or 0.0
                wanted = self._wanted.get(result.key)
                if wanted is not None and not wanted.future.done():
                    wanted.future.set_result(reply)
            elif result.outcome == AGAIN:
                again.append(result.key)
            elif result.outcome == DROPPED:
                dropped.append(result.key)
            else:
                failed.append((result.key, result.status, self.redactor.redact(result.message)))
        await self.store.land(batch.id, done, again, dropped, failed, provider_status)
        self._changes += 1
        held = self._held.pop(batch.id, None)
        if held is not None:
            await self.budget.settle(held, cost)
        else:
            await self.budget.charge(cost)
        self.notice(
            f"batch-collected:{batch.id}",
            f"weval: collected {api.provider} batch {batch.provider_id}: {len(done)} replies"
            + (f", {len(again)} to send again" if again else "")
            + (f", {len(failed)} failed" if failed else "")
            + (f", {len(dropped)} cancelled (sent again if still needed)" if dropped else ""),
        )

    async def _release_held(self) -> None:
        """What the budget held for a batch this process submitted and another one collected."""
        if not self._held:
            return
        open_ids = {batch.id for batch in await self.store.open_batches()}
        for batch_id in [b for b in self._held if b not in open_ids]:
            await self.budget.settle(self._held.pop(batch_id), 0.0)

    # -- the submitter: rounds ----------------------------------------------------------------
    async def _submit_rounds(self) -> None:
        now = time.time()
        round_s = self.settings.batch_round_s
        for queue in await self.store.queues():
            try:
                api = self.api(queue.provider)
            except ModelCallError:
                continue
            if api.account != queue.account:
                continue
            settled = now - queue.newest >= round_s or now - queue.oldest >= 10 * round_s
            if settled or queue.lines >= api.max_lines:
                await self._submit(api, queue.provider, queue.account)

    async def _submit(self, api: BatchAPI, provider: str, account: str) -> None:
        while not self.interrupted():
            room = await self.budget.room()
            batch_id = f"wb-{uuid.uuid4().hex}"
            coordinator = self.coordinator
            taken, over = await self.store.take(
                batch_id,
                provider,
                account,
                api.max_lines,
                api.max_bytes,
                (coordinator.owner, coordinator.host, coordinator.pid),
                max_estimate=room,
            )
            if not taken:
                if over and not self._held:
                    await self._over_budget(provider, account)
                return
            amount = sum(estimate for _, _, _, estimate in taken)
            if not await self.budget.hold(amount):
                await self.store.unsubmit(batch_id)
                return
            try:
                provider_id = await api.submit([(key, body) for key, _, body, _ in taken], batch_id)
            except ProviderError as exc:
                await self.budget.settle(amount, 0.0)
                if exc.status in (400, 401, 403, 404, 413, 422):
                    await self.store.fail_all(batch_id, exc.status, exc.message)
                else:
                    await self.store.unsubmit(batch_id)
                raise
            except BaseException:
                await self.budget.settle(amount, 0.0)
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.store.unsubmit(batch_id))
                raise
            await self.store.submitted(batch_id, provider_id)
            self._changes += 1
            if amount:
                self._held[batch_id] = amount
            self._asked[batch_id] = time.time()
            self.notice(
                f"batch-submitted:{batch_id}",
                f"weval: submitted {len(taken)} request{'s' if len(taken) != 1 else ''} to {provider} as batch "
                f"{provider_id}",
            )
            if len(taken) < api.max_lines:
                return

    async def _over_budget(self, provider: str, account: str) -> None:
        """No room for even one more line and no batch of ours open that could free some: the
        queued lines fail as a live request would under a spent budget."""
        spent = self.budget.spent
        limit = self.budget.limit_usd
        message = (
            f"budget reached (${spent:.4f} of ${limit:g}): the next batch would pass it; "
            "the replies received are in the cache, so a larger --weval-budget continues from here"
        )
        await self.store.fail_queued(provider, account, BUDGET_STATUS, message)
        self._changes += 1


# -- outside a run: python -m pytest_weval batch list|cancel --------------------------------------
@dataclasses.dataclass(frozen=True)
class BatchRow:
    provider: str
    id: str  # the provider's id (ours while it is being submitted)
    status: str  # ours: submitting, submitted, ended, cancelled
    provider_status: str | None  # as the provider last said
    lines: int
    waiting: int  # lines still in it (not collected)
    failed: int
    age_s: float | None  # None: its record's created is not a time (damaged)


async def _open_batches_of(settings: EngineSettings, redactor: Redactor) -> tuple[BatchStore, Callable[[], Any]]:
    opened = await backend_for(settings.cache_store, settings.cache_dir).open(settings, redactor)
    assert opened.claims is not None
    return batch_store(opened.claims), opened.close


def _admin_settings(cache_store: str, cache_dir: str, env: Any = None) -> EngineSettings:
    return EngineSettings(cache_mode="rw", cache_store=cache_store, cache_dir=cache_dir, coordinate=True, env=env)


async def list_batches(cache_store: str, cache_dir: str, *, include_ended: bool = False) -> list[BatchRow]:
    """The batches recorded in a store, oldest first (open ones, or all)."""
    store, close = await _open_batches_of(_admin_settings(cache_store, cache_dir), Redactor())
    try:
        batches = await store.batches(include_ended=include_ended)
        counts = await store.line_counts()
    finally:
        await close()
    now = time.time()
    return [
        BatchRow(
            provider=b.provider,
            id=b.provider_id or b.id,
            status=b.status,
            provider_status=b.provider_status,
            lines=b.lines,
            waiting=sum(n for state, n in counts.get(b.id, {}).items() if state not in (FAILED, DONE)),
            failed=counts.get(b.id, {}).get(FAILED, 0),
            age_s=None if b.created is None else now - b.created,
        )
        for b in batches
    ]


async def cancel_batches(cache_store: str, cache_dir: str, which: str, env: Any = None) -> list[str]:
    """Ask the provider to cancel open batch ``which`` (its id, or ``all``); the provider's ids of
    those cancelled. Their lines are dropped when the batch is next collected (a run that still
    needs them queues them again)."""
    settings = _admin_settings(cache_store, cache_dir, env)
    redactor = Redactor()
    store, close = await _open_batches_of(settings, redactor)
    http = async_client(timeout=httpx.Timeout(settings.timeout_s))
    cancelled: list[str] = []
    try:
        for batch in await store.batches():
            if which != "all" and which not in (batch.provider_id, batch.id):
                continue
            if batch.provider_id is None:
                continue
            api = BATCH_APIS[batch.provider](settings.environ, redactor, http)
            if api.account != batch.account:
                raise ModelCallError(
                    f"{batch.provider} batch {batch.provider_id} was submitted with another key or base URL"
                )
            await api.cancel(batch.provider_id)
            cancelled.append(batch.provider_id)
    finally:
        await http.aclose()
        await close()
    return cancelled
