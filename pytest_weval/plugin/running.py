"""Running items: every selected item's evaluation is in flight before pytest asks for it.

pytest runs items one at a time on the main thread. The engine runs on its own thread; when
the first item is set up, every selected item of this process is handed to it in collection
order (a bounded window of evaluations in flight, request priority by position), and an item's
``setup`` only waits for its own result. Under xdist every worker does the same over the whole
collection; the shared store makes sure no request is sent twice (docs/engine.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import warnings
from typing import TYPE_CHECKING

import pytest

from pytest_weval.engine.pipeline import ItemWork
from pytest_weval.plugin.state import WevalState, state_of
from pytest_weval.report.failure import explain_error, explain_failure
from pytest_weval.report.junit import junit_properties
from pytest_weval.results import ItemResult

if TYPE_CHECKING:
    from pytest_weval.plugin.collect import WevalItem


class WevalItemError(Exception):
    """The item could not be scored (provider, key, replay miss, judges, blueprint mistake)."""

    def __init__(self, result: ItemResult):
        self.result = result
        super().__init__(result.error or "error")


class WevalScoreFailure(AssertionError):
    def __init__(self, result: ItemResult):
        self.result = result
        super().__init__(f"score {result.score} < threshold {result.threshold}")


class WevalPointError(UserWarning):
    """A point that errored on this response: excluded from the score, never silently."""


class Runner:
    def __init__(self, state: WevalState, items: list["WevalItem"]):
        settings = state.settings
        weval = state.weval()
        self.engine = weval.engine
        self.pipeline = weval.pipeline
        self._order = {item.nodeid: index for index, item in enumerate(items)}
        self._items = items
        self._futures: dict[str, concurrent.futures.Future[ItemResult]] = {
            item.nodeid: concurrent.futures.Future() for item in items
        }
        # Enough evaluations in flight to keep every provider's cap busy, few enough that a
        # 100k-item run does not hold 100k coroutines.
        self._window = max(256, 8 * (settings.concurrency or 64))
        self._urgent: asyncio.Queue[str] = asyncio.Queue()  # bound to the engine loop on first use
        self._started: set[str] = set()  # touched on the engine loop only
        self._running: set[asyncio.Task] = set()
        self._feeder = self.engine.run_coroutine(self._feed())

    def _work(self, item: "WevalItem", priority: int) -> ItemWork:
        return ItemWork(
            nodeid=item.nodeid, blueprint=item.blueprint, prompt=item.prompt, model=item.model,
            temperature=item.temperature, system_index=item.system_index, priority=priority,
        )

    async def _feed(self) -> None:
        """Start every item in collection order, a bounded window at a time; items pytest is
        about to run start at once, ahead of the window, at the top priority. Under xdist every
        worker does this over the whole collection (an evaluation ahead only of the items xdist
        has handed out would keep too little in flight); the shared store and the engine's
        claims make sure no request is sent twice (docs/engine.md)."""
        urgent = asyncio.ensure_future(self._feed_urgent())
        slots = asyncio.Semaphore(self._window)
        try:
            for item in self._items:
                await slots.acquire()
                if item.nodeid in self._started:
                    slots.release()
                    continue
                self._start(item, self._order[item.nodeid], slots)
            await urgent
        finally:
            urgent.cancel()

    async def _feed_urgent(self) -> None:
        while True:
            nodeid = await self._urgent.get()
            if nodeid not in self._started:
                self._start(self._items[self._order[nodeid]], -1, None)

    def _start(self, item: "WevalItem", priority: int, slots: asyncio.Semaphore | None) -> None:
        self._started.add(item.nodeid)
        task = asyncio.ensure_future(self._evaluate(item, priority))
        self._running.add(task)

        def done(t: asyncio.Task) -> None:
            self._running.discard(t)
            if slots is not None:
                slots.release()

        task.add_done_callback(done)

    async def _evaluate(self, item: "WevalItem", priority: int) -> None:
        future = self._futures[item.nodeid]
        try:
            result = await self.pipeline.evaluate(self._work(item, priority))
        except BaseException as exc:  # noqa: BLE001 - surfaced on the waiting item
            future.set_exception(exc)
            return
        future.set_result(result)

    def hurry(self, item: "WevalItem") -> None:
        """Start ``item`` now if it is not running yet (it is next, or about to be)."""
        if item.nodeid in self._futures and item.nodeid not in self._started:
            self.engine.loop.call_soon_threadsafe(self._urgent.put_nowait, item.nodeid)

    def result_for(self, item: "WevalItem") -> ItemResult:
        future = self._futures.get(item.nodeid)
        if future is None:  # an item the session did not select up front (should not happen)
            return self.engine.run_coroutine(self.pipeline.evaluate(self._work(item, -1))).result()
        self.hurry(item)
        return future.result()

    def close(self, drain_s: float = 30.0) -> None:
        """Stop evaluating. Under xdist, first let the requests this process holds claims on
        finish: another worker may be waiting for them (xdist stops a worker as soon as it has
        nothing left to run, while the others still run theirs), and an abandoned claim would be
        sent again by the waiter."""
        self._feeder.cancel()
        coordinator = getattr(self.engine, "coordinator", None)
        if coordinator is None or self.engine.loop is None:
            return

        async def drain() -> None:
            for task in list(self._running):
                task.cancel()  # the engine's requests are shielded: they go on
            deadline = time.monotonic() + drain_s
            while coordinator.held and time.monotonic() < deadline:
                await asyncio.sleep(0.02)

        try:
            self.engine.run_coroutine(drain()).result(drain_s + 5)
        except Exception:  # noqa: BLE001 - closing goes on; the engine abandons what is left
            pass


def runner_for(item: pytest.Item) -> Runner:
    state = state_of(item.config)
    if state.runner is None:
        from pytest_weval.plugin.collect import WevalItem

        selected = [i for i in item.session.items if isinstance(i, WevalItem)]
        state.runner = Runner(state, selected)
    return state.runner


def announce(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """pytest is about to run ``item``: start it and the item after it if not yet under way
    (under xdist they may belong to another worker's share)."""
    from pytest_weval.plugin.collect import WevalItem

    if not isinstance(item, WevalItem):
        return
    runner = runner_for(item)
    runner.hurry(item)
    if isinstance(nextitem, WevalItem):
        runner.hurry(nextitem)


def wait_for_result(item: "WevalItem") -> None:
    result = runner_for(item).result_for(item)
    item.weval_result = result
    item.user_properties.extend(junit_properties(result))
    if result.outcome == "error":
        raise WevalItemError(result)
    if result.outcome == "skipped":
        # reported at the prompt's line in the blueprint, not at this line of the plugin
        raise pytest.skip.Exception(result.error or "nothing to score", _use_item_location=True)


def check_outcome(item: "WevalItem") -> None:
    result = item.weval_result
    for point in result.point_errors:
        # located at the prompt in the blueprint (not at this line of the plugin)
        warnings.warn_explicit(
            WevalPointError(
                f"{result.blueprint_path}: prompt '{result.prompt_id}' [{result.effective_model_id}]: "
                f"point '{point.key_point_text}' errored and was left out of the score: {point.error}"
            ),
            category=WevalPointError,
            filename=str(item.path),
            lineno=item.prompt.location.line or 1,
        )
    if result.outcome == "failed":
        raise WevalScoreFailure(result)


def describe_failure(item: "WevalItem", excinfo: pytest.ExceptionInfo) -> str | None:
    verbose = item.config.getoption("verbose", 0) > 0
    if isinstance(excinfo.value, WevalScoreFailure):
        return explain_failure(excinfo.value.result, verbose=verbose)
    if isinstance(excinfo.value, WevalItemError):
        return explain_error(excinfo.value.result)
    return None
