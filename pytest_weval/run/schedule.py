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
import contextlib
import dataclasses
import enum
import logging
import time
from collections.abc import Sequence

from pytest_weval.engine import Engine
from pytest_weval.engine.claims import ROLE_PREFIX, Coordinator, Landed
from pytest_weval.engine.store.sqlite_health import is_full, is_unwritable
from pytest_weval.results import ItemResult
from pytest_weval.run.pipeline import Pipeline, Work

log = logging.getLogger("pytest_weval.run")

_CLAIM_RUN = 32  # items claimed per transaction when the window has room for several


class Phase(enum.Enum):
    """Where one item's evaluation stands, in this process.

    ``WAITING`` -> ``CLAIMING`` -> one of:
      ``LOCAL``     claimed here: evaluating here, then ``DONE``;
      ``ELSEWHERE`` another worker holds it: its published result makes it ``DONE``, or, if
                    that worker gives it up, it goes back to ``WAITING`` for whoever asks;
      ``DONE``      its result is on the item's future (evaluated here or received).
    A local evaluation that is cancelled or raises also goes back to ``WAITING``.
    """

    WAITING = "waiting"
    CLAIMING = "claiming"
    LOCAL = "local"
    ELSEWHERE = "elsewhere"
    DONE = "done"


# Phases whose item needs no hurrying: its evaluation here resolves its future (``_settle`` would
# return at once), or its result was received.
_RESOLVING = (Phase.LOCAL, Phase.DONE)


@dataclasses.dataclass(eq=False)
class ScheduledItem:
    """One item of the run and everything the scheduler knows of it."""

    work: Work
    position: int  # in the run's order; the request priority of an item started ahead
    # Resolved with the result, on the engine loop; waited on from pytest's thread.
    future: concurrent.futures.Future[ItemResult]
    phase: Phase = Phase.WAITING
    decided: asyncio.Event | None = None  # set when a claim attempt ends (``CLAIMING`` only)
    evaluation: asyncio.Task[None] | None = None  # ``LOCAL`` only
    follower: asyncio.Task[None] | None = None  # ``ELSEWHERE``: takes the result in when it lands
    urgent: bool = False  # pytest is about to ask for it

    def decide(self) -> None:
        """Its claim attempt ended: wake whoever waits for the outcome."""
        decided, self.decided = self.decided, None
        if decided is not None:
            decided.set()


class PytestLead:
    """How far past the furthest item pytest asked for the feeder may start items (``ahead``;
    None: no bound). ``asked`` is called on pytest's thread, the rest on the engine's loop."""

    def __init__(self, engine: Engine, ahead: int | None):
        self._engine = engine
        self._ahead = ahead
        # A feeder that waits is woken once pytest made room for this many items, not one:
        # where pytest takes results faster than one a loop turn (a replay), a wake-up an item
        # was a hand-over of the GIL each way an item. A thirty-second of the lead, so the
        # results waiting for pytest stay within it.
        self._run = max(1, (ahead or 0) // 32)
        self._asked = -1  # written by pytest's thread only
        self._taken: asyncio.Event | None = None  # set when pytest asks further (on the engine loop)
        self._feeder_waits = False
        self._wake_at = 0  # how far pytest must ask before the waiting feeder is woken

    def asked(self, position: int) -> None:
        """pytest took the item at ``position``: the loop is woken only when the feeder waits for
        pytest to come closer and pytest came close enough for a run of items, not once an item."""
        if position > self._asked:
            self._asked = position
            loop = self._engine.loop
            # Read after ``_asked`` is written: see ``room_for``.
            if self._feeder_waits and position >= self._wake_at and loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits any more
                    loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if self._taken is not None:
            self._taken.set()

    def has_room(self, position: int) -> bool:
        return self._ahead is None or position <= self._asked + self._ahead

    async def room_for(self, position: int) -> None:
        """Wait until pytest has come within ``ahead`` of ``position``."""
        while not self.has_room(position):
            if self._taken is None:
                self._taken = asyncio.Event()
            self._taken.clear()
            # Room for ``position`` and the run of items after it (``has_room`` of the run's last).
            assert self._ahead is not None  # has_room is always true without a bound
            self._wake_at = position - self._ahead + self._run - 1
            # Said before ``_asked`` is read again, and pytest's thread writes ``_asked`` before
            # it reads this: either it sees the feeder waiting and wakes it, or the feeder sees
            # the room it made. No wake-up is lost (pytest asks for ``position`` itself at the
            # latest, and the run's start is below it).
            self._feeder_waits = True
            try:
                if self.has_room(position):
                    return
                await self._taken.wait()
            finally:
                self._feeder_waits = False


class ItemScheduler:
    def __init__(
        self,
        engine: Engine,
        pipeline: Pipeline,
        works: Sequence[Work],
        *,
        window: int,
        exchange: bool = False,
        stop_after_failures: int | None = None,
    ):
        self.engine = engine
        # pytest's -x / --maxfail: once this many evaluations failed or errored, pytest stops at
        # one of them (the items start in its order), so no item after them is started.
        self._stop_after_failures = stop_after_failures
        self._failures = 0
        self.pipeline = pipeline
        # Touched on the engine loop only, but for each future's result.
        self._items = {
            work.nodeid: ScheduledItem(work, position, concurrent.futures.Future())
            for position, work in enumerate(works)
        }
        self._window = max(1, window)
        # Serial: results wait for pytest to take them (a cached run evaluates far faster than
        # pytest reports: its results would all wait in memory). Under xdist another worker may
        # report what is evaluated here: the window alone bounds it.
        self._lead = PytestLead(engine, None if exchange else 2 * self._window)
        coordinator: Coordinator | None = engine.coordinator
        self._coordinator = coordinator if exchange else None
        self._item_prefix = f"item:{engine.run_id}:"
        self.evaluated_here = 0
        self.received = 0
        self._write_failures_said: set[str] = set()
        self._feeder = engine.run_coroutine(self._feed())
        self._feeder.add_done_callback(_log_failure)

    # -- called from pytest's thread ------------------------------------------------------
    def hurry(self, nodeid: str) -> None:
        """``nodeid`` is about to be asked for: start it now if nobody has."""
        item = self._items.get(nodeid)
        # Its phase read from this thread: hurrying what needs none would wake the loop per item.
        if item is not None and not item.future.done() and item.phase not in _RESOLVING:
            loop = self.engine.loop
            assert loop is not None  # started when __init__ scheduled the feeder, never unset
            loop.call_soon_threadsafe(self._start_urgent, item)

    def result(self, nodeid: str) -> ItemResult:
        """The item's result, once: the scheduler lets go of it then, so a run holds no item's
        answers beyond the one pytest is reporting (a rerun is evaluated anew, ``Runner``)."""
        self.hurry(nodeid)
        item = self._items[nodeid]
        result = item.future.result()
        # Let go of it here, on this thread (the loop never writes ``future`` once it is done),
        # rather than waking the loop once an item.
        item.future = _TAKEN
        self._lead.asked(item.position)
        return result

    def __contains__(self, nodeid: str) -> bool:
        return nodeid in self._items

    def close(self, *, drain: bool, drain_s: float = 60.0) -> None:
        """Stop starting items. With ``drain`` (a run that was not interrupted), let this
        process's claimed evaluations finish and publish first: another worker may be about
        to report them (xdist stops a worker as soon as it has nothing left to run, while the
        others still run theirs). Whatever is left is cancelled and its claims released, so
        another worker takes it over."""
        self._feeder.cancel()
        log.debug(
            "weval: %s evaluated %d items, received %d from other workers",
            self.engine.settings.worker_id,
            self.evaluated_here,
            self.received,
        )
        if self.engine.loop is None:
            return

        async def stop() -> None:
            # Interrupted: requests still queued for a slot need not go out; a few seconds for
            # those on the wire, then the engine releases the rest of its claims.
            deadline = time.monotonic() + (drain_s if drain else 5.0)
            evaluations = [i.evaluation for i in self._items.values() if i.evaluation is not None]
            if drain and self._coordinator is not None:
                running = [task for task in evaluations if not task.done()]
                if running:
                    await asyncio.wait(running, timeout=drain_s)
            for task in evaluations:
                task.cancel()  # the engine's requests are shielded: they go on
            coordinator = self.engine.coordinator
            # Requests this process holds claims on: another worker may be waiting for them.
            while (
                coordinator is not None
                and coordinator.held
                and not self.engine.interrupted
                and time.monotonic() < deadline
            ):
                if not any(not key.startswith((self._item_prefix, ROLE_PREFIX)) for key in coordinator.held):
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
        order = iter(self._items.values())
        while True:
            await slots.acquire()
            if self._stop_after_failures is not None and self._failures >= self._stop_after_failures:
                return  # pytest will not ask for what follows; an item it does ask for is hurried
            batch = [next(order, None)]
            if batch[0] is not None:
                await self._lead.room_for(batch[0].position)
            while (
                batch[-1] is not None
                and len(batch) < _CLAIM_RUN
                and not slots.locked()
                and self._lead.has_room(batch[-1].position + 1)
            ):
                await slots.acquire()  # free at once: the window has room for more
                batch.append(next(order, None))
            taken = [item for item in batch if item is not None and item.phase is Phase.WAITING]
            for _ in range(len(batch) - len(taken)):
                slots.release()
            if taken:
                await self._claim(taken)
                for item in taken:
                    if item.phase is Phase.LOCAL:
                        self._evaluate_here(item, item.position, slots)
                    else:
                        slots.release()
            if batch[-1] is None:
                return

    async def _claim(self, items: list[ScheduledItem]) -> None:
        """Decide who evaluates each item: here (``LOCAL``), nobody (``DONE``: published
        already) or another worker (``ELSEWHERE``)."""
        if self._coordinator is None:  # claimed here at once: nobody can see it claiming, nor wait
            for item in items:
                item.phase = Phase.LOCAL
            return
        for item in items:
            item.phase = Phase.CLAIMING
            item.decided = asyncio.Event()
        try:
            keys = {self._item_prefix + item.work.nodeid: item.work.nodeid for item in items}
            claimed = await self._coordinator.claim_many(list(keys))
            outcomes: dict[str, Landed | bool] = {keys[key]: outcome for key, outcome in claimed.items()}
        except BaseException:
            for item in items:
                item.phase = Phase.WAITING
                item.decide()
            raise
        for item in items:
            outcome = outcomes[item.work.nodeid]
            if outcome is True:
                item.phase = Phase.LOCAL
            elif isinstance(outcome, Landed):
                self._receive(item, outcome)
                item.phase = Phase.DONE
            else:
                item.phase = Phase.ELSEWHERE
            item.decide()
            if item.phase is Phase.ELSEWHERE:
                self._follow(item)

    async def _claim_or_keep(self, item: ScheduledItem) -> None:
        """Claim one item; when the shared store takes no claim (disk full, read-only), the item
        is evaluated here unclaimed, where the engine sends nothing it could not store, so it
        ends in one line instead of a store traceback."""
        try:
            await self._claim([item])
        except Exception as exc:
            if not (is_full(exc) or is_unwritable(exc)):
                raise
            item.phase = Phase.LOCAL

    def _follow(self, item: ScheduledItem) -> asyncio.Task[None]:
        """Take in the item's result as soon as its holder publishes it, so it is at hand
        when pytest asks here (one poll serves every followed item). Bounded by the items the
        other workers have in flight: a published result stops being followed."""
        if item.follower is None:
            item.follower = asyncio.ensure_future(self._await_elsewhere(item))

            def forget(_: asyncio.Task[None]) -> None:
                item.follower = None

            item.follower.add_done_callback(forget)
        return item.follower

    async def _await_elsewhere(self, item: ScheduledItem) -> None:
        assert self._coordinator is not None
        while True:
            landed = await self._coordinator.wait(self._item_prefix + item.work.nodeid)
            if item.phase is not Phase.ELSEWHERE:
                return
            if landed is not None:
                self._receive(item, landed)
                item.phase = Phase.DONE
                return
            # The holder gave it up without a result (it died, or was interrupted). The feeder
            # has passed this item, so claim it again now: left for pytest to ask, the items of
            # a dead peer would be evaluated one at a time, at the end of the run.
            item.phase = Phase.WAITING
            if self._coordinator.outcomes_lost():
                # The store takes no more writes: the holder can neither publish nor give the
                # item up, so it is evaluated here (its reply from the cache, or the store's error).
                self._evaluate_here(item, item.position, None)
                return
            await self._claim_or_keep(item)  # ELSEWHERE again: this task goes on following it
            if item.phase is Phase.LOCAL:
                self._evaluate_here(item, item.position, None)
            if item.phase is not Phase.ELSEWHERE:
                return

    def _evaluate_here(self, item: ScheduledItem, priority: int, slots: asyncio.Semaphore | None) -> None:
        item.phase = Phase.LOCAL
        item.evaluation = asyncio.ensure_future(self._evaluate(item, priority))

        def done(_: asyncio.Task[None]) -> None:
            item.evaluation = None
            if slots is not None:
                slots.release()

        item.evaluation.add_done_callback(done)

    async def _evaluate(self, item: ScheduledItem, priority: int) -> None:
        nodeid = item.work.nodeid
        work = dataclasses.replace(item.work, priority=priority)
        future = item.future
        try:
            result = await self.pipeline.evaluate(work)
        except BaseException as exc:
            # Surfaced first: pytest may be waiting on it. Then (cancelled while closing, or a
            # bug) the item goes back so another worker can take it.
            item.phase = Phase.WAITING
            if not isinstance(exc, asyncio.CancelledError) and not future.done():
                future.set_exception(exc)
            if self._coordinator is not None and self._item_prefix + nodeid in self._coordinator.held:
                try:
                    await asyncio.shield(self._coordinator.abandon(self._item_prefix + nodeid))
                except Exception as release_error:  # noqa: BLE001 - the lease runs out instead
                    self._store_write_failed("release the claim on", nodeid, release_error)
            if not isinstance(exc, Exception):  # cancelled, or an interpreter exit
                raise
            return  # the error is on the item's future
        self.evaluated_here += 1
        if result.outcome in ("failed", "error"):
            self._failures += 1
        item.phase = Phase.DONE
        if not future.done():
            future.set_result(result)
        if self._coordinator is not None:
            try:
                await asyncio.shield(
                    self._coordinator.finish(self._item_prefix + nodeid, text=result.model_dump_json())
                )
            except Exception as exc:  # noqa: BLE001 - a worker waiting for it takes the item over
                self._store_write_failed("publish the result of", nodeid, exc)
                # Given up at once, not when this process ends: the worker waiting for it
                # takes it over now.
                try:
                    await asyncio.shield(self._coordinator.abandon(self._item_prefix + nodeid))
                except Exception as release_error:  # noqa: BLE001 - the lease runs out instead
                    self._store_write_failed("release the claim on", nodeid, release_error)

    def _store_write_failed(self, what: str, nodeid: str, exc: BaseException) -> None:
        """Said once per kind: on a full disk every item's write fails alike, and a line per
        item (a hundred, under xdist) would bury the one that says why (the engine's notice)."""
        if what in self._write_failures_said:
            log.debug("weval: could not %s %s: %s", what, nodeid, exc)
            return
        self._write_failures_said.add(what)
        log.warning("weval: could not %s %s: %s (further such failures are not repeated)", what, nodeid, exc)

    def _receive(self, item: ScheduledItem, landed: Landed) -> None:
        if item.future.done():
            return
        self.received += 1
        try:
            item.future.set_result(ItemResult.model_validate_json(landed.text or ""))
        except ValueError as exc:
            item.future.set_exception(
                RuntimeError(f"the result another worker published for {item.work.nodeid} is unreadable: {exc}")
            )

    def _start_urgent(self, item: ScheduledItem) -> None:
        if item.phase not in _RESOLVING and not item.urgent and not item.future.done():
            item.urgent = True
            task = asyncio.ensure_future(self._settle(item))

            def calm(_: asyncio.Task[None]) -> None:
                item.urgent = False

            task.add_done_callback(calm)

    async def _settle(self, item: ScheduledItem) -> None:
        """Get the item's result soon: evaluate it here at the top priority, or wait for the
        worker that claimed it (and take it over if that worker gives it up)."""
        future = item.future
        try:
            while not future.done():
                if item.phase is Phase.CLAIMING:
                    assert item.decided is not None
                    await item.decided.wait()
                elif item.phase in (Phase.LOCAL, Phase.DONE):
                    return  # the running evaluation resolves the future
                elif item.phase is Phase.WAITING:
                    await self._claim_or_keep(item)
                    if item.phase is Phase.LOCAL:
                        self._evaluate_here(item, -1, None)
                else:  # elsewhere: its follower takes the result in, or gives the item back
                    await asyncio.shield(self._follow(item))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - surfaced on the item that asked
            if not future.done():
                future.set_exception(exc)


# What a taken item's future becomes: done, holding no result (nothing asks it again).
_TAKEN: concurrent.futures.Future[ItemResult] = concurrent.futures.Future()
_TAKEN.cancel()


def _log_failure(future: concurrent.futures.Future[None]) -> None:
    # Items the feeder did not start are still started when asked for (``result``).
    if not future.cancelled() and future.exception() is not None:
        log.warning("weval: starting items ahead stopped: %s", future.exception())
