"""Evaluating a run's items ahead of the thread that consumes their results.

pytest runs items one at a time on its main thread; evaluations run on the engine's loop. The
scheduler starts every item in a fixed order (a bounded window in flight, request priority by
position) and ``result(nodeid)`` blocks only on the item asked for, starting it at once if it
has not started yet.

Under pytest-xdist (``exchange=True``) every worker holds the same list of items, but xdist
decides which worker reports which item, a few at a time. So items are shared out through the
engine's claims store (docs/engine.md): a worker claims an item before evaluating it and
publishes the ``ItemResult`` when done; a worker asked for an item another one claimed waits for
the published result instead of evaluating it again. Each item is evaluated once, by whichever
worker got to it first, and every worker's share of the provider caps stays busy.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
from typing import Literal, Sequence

from pytest_weval.engine.claims import Coordinator, Landed
from pytest_weval.engine.pipeline import ItemWork, Pipeline
from pytest_weval.results import ItemResult

log = logging.getLogger("pytest_weval.engine")

State = Literal["claiming", "local", "elsewhere", "done"]
_CLAIM_RUN = 32  # items claimed per transaction when the window has room for several


class ItemScheduler:
    def __init__(
        self,
        engine,
        pipeline: Pipeline,
        works: Sequence[ItemWork],
        *,
        window: int,
        exchange: bool = False,
    ):
        self.engine = engine
        self.pipeline = pipeline
        self._works = {work.nodeid: work for work in works}
        self._order = list(self._works)
        self._position = {nodeid: index for index, nodeid in enumerate(self._order)}
        self._futures: dict[str, concurrent.futures.Future[ItemResult]] = {
            nodeid: concurrent.futures.Future() for nodeid in self._order
        }
        self._window = max(1, window)
        coordinator: Coordinator | None = engine.coordinator
        self._coordinator = coordinator if exchange else None
        self._item_prefix = f"item:{engine.run_id}:"
        # Touched on the engine loop only.
        self._state: dict[str, State] = {}
        self._decided: dict[str, asyncio.Event] = {}
        self._local: dict[str, asyncio.Task[None]] = {}
        self._urgent: set[str] = set()
        self._followers: dict[str, asyncio.Task[None]] = {}
        self.evaluated_here = 0
        self.received = 0
        self._feeder = engine.run_coroutine(self._feed())
        self._feeder.add_done_callback(_log_failure)

    # -- called from pytest's thread ------------------------------------------------------
    def hurry(self, nodeid: str) -> None:
        """``nodeid`` is about to be asked for: start it now if nobody has."""
        if nodeid in self._futures and not self._futures[nodeid].done():
            self.engine.loop.call_soon_threadsafe(self._start_urgent, nodeid)

    def result(self, nodeid: str) -> ItemResult:
        self.hurry(nodeid)
        return self._futures[nodeid].result()

    def __contains__(self, nodeid: str) -> bool:
        return nodeid in self._futures

    def close(self, *, drain: bool, drain_s: float = 60.0) -> None:
        """Stop starting items. With ``drain`` (a run that was not interrupted), let this
        process's claimed evaluations finish and publish first: another worker may be about
        to report them (xdist stops a worker as soon as it has nothing left to run, while the
        others still run theirs). Whatever is left is cancelled and its claims released, so
        another worker takes it over."""
        self._feeder.cancel()
        log.debug("weval: %s evaluated %d items, received %d from other workers",
                  self.engine.settings.worker_id, self.evaluated_here, self.received)
        if self.engine.loop is None:
            return

        async def stop() -> None:
            # Interrupted: requests still queued for a slot need not go out; a few seconds for
            # those on the wire, then the engine releases the rest of its claims.
            deadline = time.monotonic() + (drain_s if drain else 5.0)
            if drain and self._coordinator is not None:
                running = [task for task in self._local.values() if not task.done()]
                if running:
                    await asyncio.wait(running, timeout=drain_s)
            for task in list(self._local.values()):
                task.cancel()  # the engine's requests are shielded: they go on
            coordinator = self.engine.coordinator
            # Requests this process holds claims on: another worker may be waiting for them.
            while coordinator is not None and coordinator.held and time.monotonic() < deadline:
                if not any(not key.startswith(self._item_prefix) for key in coordinator.held):
                    break
                await asyncio.sleep(0.02)

        try:
            self.engine.run_coroutine(stop()).result(drain_s + 10)
        except Exception as exc:  # noqa: BLE001 - closing goes on; the engine abandons the rest
            log.warning("weval: stopping the item scheduler: %s", exc)

    # -- on the engine loop -----------------------------------------------------------------
    async def _feed(self) -> None:
        """Start items in order, at most ``window`` of this process's evaluations at a time."""
        slots = asyncio.Semaphore(self._window)
        order = iter(self._order)
        while True:
            await slots.acquire()
            batch = [next(order, None)]
            while batch[-1] is not None and len(batch) < _CLAIM_RUN and not slots.locked():
                await slots.acquire()  # free at once: the window has room for more
                batch.append(next(order, None))
            taken = [nodeid for nodeid in batch if nodeid is not None and nodeid not in self._state]
            for _ in range(len(batch) - len(taken)):
                slots.release()
            if taken:
                decisions = await self._claim(taken)
                for nodeid in taken:
                    if decisions[nodeid] == "local":
                        self._evaluate_here(nodeid, self._position[nodeid], slots)
                    else:
                        slots.release()
            if batch[-1] is None:
                return

    async def _claim(self, nodeids: list[str]) -> dict[str, State]:
        """Decide who evaluates each item: here (claimed), done (published already) or
        elsewhere (another worker holds it)."""
        for nodeid in nodeids:
            self._state[nodeid] = "claiming"
            self._decided[nodeid] = asyncio.Event()
        try:
            if self._coordinator is None:
                outcomes: dict[str, Landed | bool] = {nodeid: True for nodeid in nodeids}
            else:
                keys = {self._item_prefix + nodeid: nodeid for nodeid in nodeids}
                claimed = await self._coordinator.claim_many(list(keys))
                outcomes = {keys[key]: outcome for key, outcome in claimed.items()}
        except BaseException:
            for nodeid in nodeids:
                del self._state[nodeid]
                self._decided.pop(nodeid).set()
            raise
        decisions: dict[str, State] = {}
        for nodeid, outcome in outcomes.items():
            if outcome is True:
                decisions[nodeid] = "local"
            elif isinstance(outcome, Landed):
                self._receive(nodeid, outcome)
                decisions[nodeid] = "done"
            else:
                decisions[nodeid] = "elsewhere"
            self._state[nodeid] = decisions[nodeid]
            self._decided.pop(nodeid).set()
            if decisions[nodeid] == "elsewhere":
                self._follow(nodeid)
        return decisions

    def _follow(self, nodeid: str) -> asyncio.Task[None]:
        """Take in ``nodeid``'s result as soon as its holder publishes it, so it is at hand
        when pytest asks here (one poll serves every followed item). Bounded by the items the
        other workers have in flight: a published result stops being followed."""
        task = self._followers.get(nodeid)
        if task is None:
            task = self._followers[nodeid] = asyncio.ensure_future(self._await_elsewhere(nodeid))
            task.add_done_callback(lambda _: self._followers.pop(nodeid, None))
        return task

    async def _await_elsewhere(self, nodeid: str) -> None:
        assert self._coordinator is not None
        landed = await self._coordinator.wait(self._item_prefix + nodeid)
        if self._state.get(nodeid) != "elsewhere":
            return
        if landed is not None:
            self._receive(nodeid, landed)
            self._state[nodeid] = "done"
        else:  # the holder gave it up without a result: whoever asks for it claims it
            del self._state[nodeid]

    def _evaluate_here(self, nodeid: str, priority: int, slots: asyncio.Semaphore | None) -> None:
        self._state[nodeid] = "local"
        task = asyncio.ensure_future(self._evaluate(nodeid, priority))
        self._local[nodeid] = task

        def done(_: asyncio.Task) -> None:
            self._local.pop(nodeid, None)
            if slots is not None:
                slots.release()

        task.add_done_callback(done)

    async def _evaluate(self, nodeid: str, priority: int) -> None:
        work = dataclasses.replace(self._works[nodeid], priority=priority)
        future = self._futures[nodeid]
        try:
            result = await self.pipeline.evaluate(work)
        except BaseException as exc:
            # Surfaced first: pytest may be waiting on it. Then (cancelled while closing, or a
            # bug) the item goes back so another worker can take it.
            self._state.pop(nodeid, None)
            if not isinstance(exc, asyncio.CancelledError) and not future.done():
                future.set_exception(exc)
            if self._coordinator is not None and self._item_prefix + nodeid in self._coordinator.held:
                try:
                    await asyncio.shield(self._coordinator.abandon(self._item_prefix + nodeid))
                except Exception as release_error:  # noqa: BLE001 - the lease runs out instead
                    log.warning("weval: could not release the claim on %s: %s", nodeid, release_error)
            if not isinstance(exc, Exception):  # cancelled, or an interpreter exit
                raise
            return  # the error is on the item's future
        self.evaluated_here += 1
        self._state[nodeid] = "done"
        if not future.done():
            future.set_result(result)
        if self._coordinator is not None:
            try:
                await asyncio.shield(self._coordinator.finish(self._item_prefix + nodeid, text=result.model_dump_json()))
            except Exception as exc:  # noqa: BLE001 - a worker waiting for it takes the item over
                log.warning("weval: could not publish the result of %s: %s", nodeid, exc)

    def _receive(self, nodeid: str, landed: Landed) -> None:
        future = self._futures[nodeid]
        if future.done():
            return
        self.received += 1
        try:
            future.set_result(ItemResult.model_validate_json(landed.text or ""))
        except ValueError as exc:
            future.set_exception(RuntimeError(f"the result another worker published for {nodeid} is unreadable: {exc}"))

    def _start_urgent(self, nodeid: str) -> None:
        if nodeid not in self._urgent and not self._futures[nodeid].done():
            self._urgent.add(nodeid)
            task = asyncio.ensure_future(self._settle(nodeid))
            task.add_done_callback(lambda _: self._urgent.discard(nodeid))

    async def _settle(self, nodeid: str) -> None:
        """Get ``nodeid``'s result soon: evaluate it here at the top priority, or wait for the
        worker that claimed it (and take it over if that worker gives it up)."""
        future = self._futures[nodeid]
        try:
            while not future.done():
                state = self._state.get(nodeid)
                if state == "claiming":
                    await self._decided[nodeid].wait()
                elif state in ("local", "done"):
                    return  # the running evaluation resolves the future
                elif state is None:
                    if (await self._claim([nodeid]))[nodeid] == "local":
                        self._evaluate_here(nodeid, -1, None)
                else:  # elsewhere: its follower takes the result in, or gives the item back
                    await asyncio.shield(self._follow(nodeid))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - surfaced on the item that asked
            if not future.done():
                future.set_exception(exc)


def _log_failure(future: concurrent.futures.Future) -> None:
    # Items the feeder did not start are still started when asked for (``result``).
    if not future.cancelled() and future.exception() is not None:
        log.warning("weval: starting items ahead stopped: %s", future.exception())
