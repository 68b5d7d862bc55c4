"""Whether the store can keep replies (docs/engine.md, 'When the store fails', 'When the store
is unreachable'). No request is sent once it cannot: each would be paid for and lost, and bought
again by the next run. That rule is ``check_storable``, asked before a request is claimed and
before each attempt; ``wait_until_up`` pauses sending while a store server does not answer;
``broke`` says when a write of the shared store showed it cannot keep replies; ``catch_up``
holds the sending back while replies wait for their write."""

from __future__ import annotations

import asyncio
import contextlib

from pytest_weval.engine.errors import (
    StoreDamagedError,
    StoreDownError,
    StoreFullError,
    StoreReadOnlyError,
    StoreStoppedError,
)
from pytest_weval.engine.request import EngineSettings, ModelRequest
from pytest_weval.engine.stages.notices import Notices
from pytest_weval.engine.store.cache import ResponseCache, StopReason, StoreFaults, stop_advice, stop_reason
from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.store.outage import Outage
from pytest_weval.engine.store.sqlite_health import fix_command

# How many received replies may wait for their write before no request is sent, at the least:
# as many as may be in flight (a whole wave of replies arriving together) may always wait. A
# full disk (or a read-only one) shows only when a write fails, so a store that falls behind
# its replies (its thread short of the CPU, its lock held by another process) let the sending
# run on blind: with the store's thread 50-80 ms behind (a loaded machine), up to 98 of 120
# replies were bought and lost after the disk was full. Once the store can keep nothing, at
# most these and the requests on the wire are bought and lost; a store that keeps up never has
# more waiting than were in flight. (Held at 8 whatever the concurrency, the sending waited
# for the writes after each wave of 32 replies: 2.5% on a judged run at 32 in flight.)
UNSTORED_MAX = 8

# The error each request gets once the store keeps no more replies.
_STOPPED: dict[StopReason, type[StoreStoppedError]] = {
    "disk full": StoreFullError,
    "read-only": StoreReadOnlyError,
    "damaged": StoreDamagedError,
}


class StoreHealth:
    def __init__(self, settings: EngineSettings, notices: Notices):
        self.settings = settings
        self.notices = notices
        self.cache = ResponseCache(None, settings.cache_mode)
        self.outage: Outage | None = None  # a store server's reachability (store/outage.py)
        self.shares_store = False  # replies are claimed and shared through the store (coordinating)
        self.unstored = 0  # received replies whose write has not ended
        self.unstored_max = UNSTORED_MAX  # how many may, as ``behind`` was last told
        self._caught_up: list[asyncio.Future[None]] = []  # requests waiting for fewer of them

    def open(self, cache: ResponseCache, outage: Outage | None, *, shares_store: bool) -> None:
        self.cache = cache
        self.outage = outage
        self.shares_store = shares_store

    async def before_send(self, request: ModelRequest) -> None:
        """Said, refused or paused before anything is claimed or sent."""
        self.notice_faults()
        self.check_storable(request)
        if self.outage is not None:  # only a store server can be down
            await self.wait_until_up(request)

    def check_storable(self, request: ModelRequest) -> None:
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

    def behind(self, request: ModelRequest, in_flight_most: int) -> bool:
        """As many replies wait for their write as may be in flight (``in_flight_most``, at least
        ``UNSTORED_MAX``), and the reply of ``request`` would be one more: it is not sent
        before ``catch_up``."""
        self.unstored_max = max(UNSTORED_MAX, in_flight_most)
        return self.unstored >= self.unstored_max and self.cache.writable(request)

    async def catch_up(self) -> None:
        """Returns once fewer than ``unstored_max`` replies wait for their write (each ends, kept
        or not: a failed one stops the sending, ``check_storable``)."""
        while self.unstored >= self.unstored_max:
            waiter = asyncio.get_running_loop().create_future()
            self._caught_up.append(waiter)
            await waiter

    def write_began(self) -> None:
        self.unstored += 1

    def write_ended(self) -> None:
        self.unstored -= 1
        if self._caught_up and self.unstored < self.unstored_max:
            waiters, self._caught_up = self._caught_up, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def _needs_store(self, request: ModelRequest) -> bool:
        """Its reply goes into the store, or is claimed and shared through it."""
        return self.cache.writable(request) or self.shares_store

    async def wait_until_up(self, request: ModelRequest) -> None:
        """While the store server does not answer, no request starts: its reply might not be
        storable, and its claim not shareable. Returns when the store answers again; raises
        ``StoreDownError`` when it was given up (``--weval-store-retry``)."""
        outage = self.outage
        if outage is None or not outage.down or not self._needs_store(request):
            return
        self.notice_faults()
        with contextlib.suppress(StoreDown):
            await outage.wait_up()
        self.check_storable(request)

    def broke(self, exc: BaseException, request: ModelRequest) -> bool:
        """A write of the shared store (a claim, an outcome) failed for want of space or
        permission: from now on nothing is sent (``check_storable``). True when it was that."""
        if isinstance(exc, StoreDown):  # given up: ``check_storable`` stops the sending
            self.notice_faults()
            return True
        reason = stop_reason(exc)
        if reason is None or not self.cache.writable(request):
            return False
        faults = self.cache.faults
        faults.stop = faults.stop or reason
        self.notice_faults()
        return True

    def notice_faults(self) -> None:
        """Say at once (not only in a log) that the store stopped keeping replies or is damaged."""
        faults = self.cache.faults
        outage = self.outage
        if outage is not None and outage.gave_up and not self.notices.said("store-down"):
            last = f" (last: {outage.last_error})" if outage.last_error else ""
            self.notices.once(
                "store-down",
                f"weval: {outage.gave_up}{last}: no new request is sent; replies received are kept for the next run",
            )
        elif outage is not None and outage.since is not None:
            # Numbered from the second: the terminal says a line once, and each outage is news.
            again = f" again (outage {outage.outages} of this run)" if outage.outages > 1 else ""
            self.notices.once(
                f"store-outage-{outage.outages}",
                f"weval: the cache store {outage.where} does not answer{again}: sending paused, retrying for up to "
                f"{outage.retry_s:g} s (--weval-store-retry)",
            )
        if faults.stop:
            self.notices.once(
                "store-stop",
                f"weval: the cache at {faults.where} cannot store replies ({faults.stop}): no new request is "
                f"sent, as each would be paid for and lost; {stop_advice(faults.stop)}, or run with --weval-cache=off",
            )
        if faults.damaged:
            self.notices.once(
                "store-damaged",
                f"weval: the cache at {faults.where} is damaged ({faults.damaged}): its unreadable entries are "
                f"bought again; after the run, {fix_command(self.settings.cache_dir)} keeps every entry it can "
                "still read",
            )

    def faults(self) -> StoreFaults:
        """What went wrong with the store in this process (nothing: no line at the end)."""
        if self.outage is not None and self.outage.gave_up:
            self.cache.faults.down = self.cache.faults.down or self.outage.gave_up
        return self.cache.faults
