"""Send and retry: the transport stage (docs/engine.md, 'Faults', 'Rate limits', 'HTTP').

A request is sent until a well-formed reply. Each attempt waits for its provider's slot, its
pace group's pacer, its budget reservation and the global slot, in that order. A fault (5xx,
malformed body, reset, timeout) spends one of ``max_attempts``; a refusal (rate limit) spends
none: it waits as the provider says, its whole pace group with it, within the rate-limit wait
budget. Which failures are retried is ``transport/retry.py``'s ``Failure``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import random
import time

import httpx

import pytest_weval.defaults as defaults
from pytest_weval.engine.errors import ProviderError, ReplyTooLargeError, UnknownModelError
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.stages.budgeting import BudgetStage
from pytest_weval.engine.stages.pacing import Pacing
from pytest_weval.engine.stages.stopping import Stopping
from pytest_weval.engine.stages.store_health import StoreHealth
from pytest_weval.engine.stages.usage import RunUsage
from pytest_weval.engine.store.cache import json_encoder
from pytest_weval.engine.transport.http import Exchange, ReplyTooLarge, Wire
from pytest_weval.engine.transport.limits import AdaptiveLimiter, Priority
from pytest_weval.engine.transport.providers import Adapter, BodyError, HttpCall, MalformedReply, error_message
from pytest_weval.engine.transport.ratelimit import Pacer, RateInfo, RateLimitWaitExceeded, parse_retry_after
from pytest_weval.engine.transport.retry import Breaker, Failure, retry_delay

log = logging.getLogger("pytest_weval.engine")

Outcome = tuple[ModelReply | Failure, RateInfo | None]
# As httpx encodes a json= body, so a request's bytes do not depend on the client.
_body_json = json_encoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@dataclasses.dataclass
class _Tries:
    """One request's attempts so far, and its rate-limit waiting."""

    deadline: float  # when its rate-limit wait budget runs out (monotonic)
    attempt: int = 0
    adapted: bool = False
    waited: float = 0.0
    refused: int = 0


class Sender:
    def __init__(
        self,
        settings: EngineSettings,
        redactor: Redactor,
        *,
        pacing: Pacing,
        budgeting: BudgetStage,
        health: StoreHealth,
        stopping: Stopping,
        usage: RunUsage,
    ):
        self.settings = settings
        self.redactor = redactor
        self.pacing = pacing
        self.budgeting = budgeting
        self.health = health
        self.stopping = stopping
        self.usage = usage
        self.wire = Wire()  # model requests (transport/http.py)
        self.breaker = Breaker(settings.breaker_threshold, settings.breaker_cooldown_s)
        self._unknown_models: dict[str, UnknownModelError] = {}  # model id -> the provider's 404
        self._rng = random.Random()

    def before_send(self, adapter: Adapter, request: ModelRequest) -> None:
        """What fails before anything is claimed or sent: a model the provider said it does not
        have, an open circuit breaker, a missing key (``MissingKeyError``)."""
        self.known_unknown(request.model.id)
        self.breaker.check(request.model.id)
        adapter.connect(self.settings.environ, self.redactor)

    async def send(self, adapter: Adapter, request: ModelRequest, key: str, priority: Priority) -> ModelReply:
        model_id = request.model.id
        attempts = request.max_attempts or self.settings.max_attempts
        tries = _Tries(deadline=time.monotonic() + self.settings.rate_limit_wait_s)
        self.usage.of(model_id)  # in the stats from its first try
        while True:
            self.stopping.check()
            async with self.pacing.limits.provider_slot(adapter.provider, priority) as limiter:
                outcome, info, pacer = await self._paced_attempt(adapter, request, priority, tries)
            if outcome is None:  # told to wait while this one waited for a slot: wait too
                continue
            if isinstance(outcome, ModelReply):
                pacer.served(info)
                limiter.on_success()
                self.breaker.success(model_id)
                outcome.refused, outcome.rate_wait_s = tries.refused, tries.waited
                self.usage.answered(key, model_id, outcome, sent=True)
                return outcome
            failure = outcome
            if failure.rate_limited:
                self._refused(model_id, failure, info, limiter, pacer, tries)
                continue  # the pacer holds this request (and its group) back
            limiter.on_error()
            tries.attempt += 1
            if failure.status == 400 and not tries.adapted and adapter.adapt(400, failure.data):
                tries.adapted = True
                tries.attempt -= 1  # the adapted retry is not one of the attempts
                continue
            if not failure.retryable or tries.attempt >= attempts:
                raise self._failed(model_id, failure, tries.attempt)
            await self._back_off(model_id, failure, tries.attempt)

    async def _paced_attempt(
        self, adapter: Adapter, request: ModelRequest, priority: Priority, tries: _Tries
    ) -> tuple[ModelReply | Failure | None, RateInfo | None, Pacer]:
        """One attempt, its provider's slot held: its pacer, its budget reservation, the global
        slot, the exchange. No outcome when its pace group was paused meanwhile."""
        model_id = request.model.id
        call = adapter.build(request, self.settings.environ, self.redactor)
        pacer = self.pacing.pacer_of(adapter.provider, call)
        if not pacer.open:  # paused or paced: it may have to wait (most requests need not ask)
            try:
                paced = await pacer.ready(tries.deadline)
            except RateLimitWaitExceeded as exc:
                raise self._waited_too_long(model_id, tries, str(exc)) from None
            tries.waited += paced
            self.usage.of(model_id).rate_wait_s += paced
        self.stopping.check()
        self.health.check_storable(request)  # the store filled while this one waited for a slot
        if self.health.outage is not None:
            await self.health.wait_until_up(request)  # or stopped answering
        if not self.budgeting.limited:  # no budget: nothing to reserve, nothing to charge
            outcome, info = await self._slotted_attempt(adapter, call, request, priority, pacer)
            return outcome, info, pacer
        async with self.budgeting.attempt(request, adapter.max_tokens(request), self.health.check_storable) as charge:
            outcome, info = await self._slotted_attempt(adapter, call, request, priority, pacer)
            if isinstance(outcome, ModelReply):
                charge.reply(outcome)
        return outcome, info, pacer

    async def _slotted_attempt(
        self, adapter: Adapter, call: HttpCall, request: ModelRequest, priority: Priority, pacer: Pacer
    ) -> tuple[ModelReply | Failure | None, RateInfo | None]:
        """The exchange, in a slot of the global cap; no outcome when its pace group was paused
        while it waited for the slot."""
        async with self.pacing.limits.global_slot(priority):
            if self.health.behind(request, self.pacing.limits.most_in_flight()):  # replies wait for their write
                await self.health.catch_up()
            # Interrupted while this one waited for a slot: the slot it got was freed
            # by a reply the stop's grace let in, not for a new request.
            self.stopping.check()
            if pacer.paused:
                return None, None
            self.known_unknown(request.model.id)  # told while this one waited for a slot
            if self.health.outage is not None:
                await self.health.wait_until_up(request)  # the store went while it waited
            # A write failed while this one waited for its slot (or for the writes to end): the
            # requests queued for the slots passed the check before it, and were sent after it.
            self.health.check_storable(request)
            return await self._attempt(adapter, call, request)

    def _refused(
        self,
        model_id: str,
        failure: Failure,
        info: RateInfo | None,
        limiter: AdaptiveLimiter,
        pacer: Pacer,
        tries: _Tries,
    ) -> None:
        """A refusal: the pace group waits as the provider asks, unless that passes the wait budget."""
        tries.refused += 1
        self.usage.of(model_id).refused += 1
        limiter.on_rate_limit()
        wait = pacer.refused(failure.retry_after, info)
        self.pacing.notice_throttling(pacer)
        if time.monotonic() + wait > tries.deadline:
            raise self._waited_too_long(model_id, tries, f"told to wait {wait:.1f} s more")

    async def _back_off(self, model_id: str, failure: Failure, attempt: int) -> None:
        settings = self.settings
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

    def _failed(self, model_id: str, failure: Failure, attempt: int) -> ProviderError:
        """The request's error after its last attempt (the breaker counts it)."""
        self.breaker.failure(model_id, self.redactor.redact(failure.message))
        if failure.no_such_model:
            unknown = UnknownModelError(
                404, f"{model_id}: the provider has no such model ({failure.message})", model_id=model_id
            )
            self._unknown_models[model_id] = unknown
            return unknown
        tries = f" after {attempt} attempt{'s' if attempt != 1 else ''}" if failure.retryable else ""
        return ProviderError(
            failure.status,
            f"{model_id}: {failure.message}{tries}",
            model_id=model_id,
            rate_limited=failure.rate_limited,
            timed_out=failure.timed_out,
        )

    def known_unknown(self, model_id: str) -> None:
        """The provider said it has no such model: asking again would cost a request and say the same."""
        unknown = self._unknown_models.get(model_id)
        if unknown is not None:
            raise UnknownModelError(unknown.status, unknown.message, model_id=model_id)

    def _waited_too_long(self, model_id: str, tries: _Tries, why: str) -> ProviderError:
        self.breaker.release_probe(model_id)
        refused = tries.refused
        return ProviderError(
            429,
            f"{model_id}: rate limited: the provider refused the request {refused} time"
            f"{'s' if refused != 1 else ''} and it waited {tries.waited:.1f} s; waiting on ({why}) would pass "
            f"the {self.settings.rate_limit_wait_s:g} s allowed (--weval-rate-limit-wait)",
            model_id=model_id,
            rate_limited=True,
        )

    # -- one HTTP exchange -----------------------------------------------------------------
    async def _attempt(self, adapter: Adapter, call: HttpCall, request: ModelRequest) -> Outcome:
        """One HTTP exchange: a reply or a failure, and the provider's rate-limit headers."""
        model_id = request.model.id
        timeout = request.timeout_s or self.settings.timeout_s
        if adapter.tier_sent() == "flex":  # flex queues: OpenAI's guide waits 15 minutes for it
            timeout = max(timeout, defaults.FLEX_TIMEOUT_S)
        started, sent_at = time.monotonic(), time.time()
        self.usage.counts["http_requests"] += 1
        self.usage.of(model_id).http_requests += 1
        payload = _body_json(call.body).encode()
        try:
            # The whole attempt (connection, request, every read of the reply) is bounded by the
            # wire's one timeout: a second bound around it was a timer more for every request.
            response = await self.wire.post(
                call.url, call.headers, payload, timeout, int(self.settings.max_reply_mb * 1_000_000)
            )
        except ReplyTooLarge as exc:
            size = f" ({exc.announced / 1e6:.1f} MB announced)" if exc.announced is not None else ""
            raise ReplyTooLargeError(
                f"{model_id}: the reply is larger than {self.settings.max_reply_mb:g} MB{size} "
                "(--weval-max-reply-mb); it was not read further, stored or judged",
                model_id=model_id,
            ) from None
        except (asyncio.TimeoutError, TimeoutError, httpx.TimeoutException):
            return Failure.no_reply(f"no reply within {timeout:g} s (timeout)", timed_out=True), None
        except httpx.TransportError as exc:
            detail = self.redactor.redact(str(exc)) or type(exc).__name__
            return Failure.no_reply(f"connection failed ({type(exc).__name__}: {detail})"), None
        outcome, info = self._read(adapter, response, model_id)
        if isinstance(outcome, ModelReply):
            outcome.latency_s = time.monotonic() - started
            outcome.requested_at = sent_at
        return outcome, info

    def _read(self, adapter: Adapter, response: Exchange, model_id: str) -> Outcome:
        """The reply in ``response``, or why it is none."""
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
            retry_after = parse_retry_after(response.headers, now)
            return Failure.http(status, f"HTTP {status}: {message}", data, retry_after, _model_name(model_id)), info
        try:
            data = json.loads(body)
        except ValueError:
            return Failure.malformed(status, "malformed reply (the body is not JSON)"), info
        del body  # the decoded reply is all that is kept
        try:
            return adapter.parse(data), info
        except MalformedReply as exc:
            return Failure.malformed(status, f"malformed reply ({exc})"), info
        except BodyError as exc:
            return Failure.in_body(exc.status, f"error in reply: {self.redactor.redact(exc.message)}"), info

    async def aclose(self) -> None:
        await self.wire.aclose()


def _model_name(model_id: str) -> str:
    """The name a provider knows the model by (after ``provider:``), as its errors name it."""
    return model_id.partition(":")[2] or model_id
