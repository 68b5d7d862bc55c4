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
        self._urgent: asyncio.Queue[str] | None = None
        self._started: set[str] = set()
        self._feeder = self.engine.run_coroutine(self._feed())

    def _work(self, item: "WevalItem", priority: int) -> ItemWork:
        return ItemWork(
            nodeid=item.nodeid, blueprint=item.blueprint, prompt=item.prompt, model=item.model,
            temperature=item.temperature, system_index=item.system_index, priority=priority,
        )

    async def _feed(self) -> None:
        self._urgent = asyncio.Queue()
        slots = asyncio.Semaphore(self._window)
        pending = iter(self._items)
        running: set[asyncio.Task] = set()
        while True:
            await slots.acquire()
            item = None
            while not self._urgent.empty():
                nodeid = self._urgent.get_nowait()
                if nodeid not in self._started:
                    item = self._items[self._order[nodeid]]
                    priority = -1
                    break
            if item is None:
                item = next((i for i in pending if i.nodeid not in self._started), None)
                priority = self._order[item.nodeid] if item is not None else 0
            if item is None:
                slots.release()
                nodeid = await self._urgent.get()
                await self._urgent.put(nodeid)
                continue
            self._started.add(item.nodeid)
            task = asyncio.ensure_future(self._evaluate(item, priority))
            running.add(task)
            task.add_done_callback(lambda t: (running.discard(t), slots.release()))

    async def _evaluate(self, item: "WevalItem", priority: int) -> None:
        future = self._futures[item.nodeid]
        try:
            result = await self.pipeline.evaluate(self._work(item, priority))
        except BaseException as exc:  # noqa: BLE001 - surfaced on the waiting item
            future.set_exception(exc)
            return
        future.set_result(result)

    def result_for(self, item: "WevalItem") -> ItemResult:
        future = self._futures.get(item.nodeid)
        if future is None:  # an item the session did not select up front (should not happen)
            return self.engine.run_coroutine(self.pipeline.evaluate(self._work(item, -1))).result()
        if item.nodeid not in self._started and self._urgent is not None:
            self.engine.loop.call_soon_threadsafe(self._urgent.put_nowait, item.nodeid)
        return future.result()

    def close(self) -> None:
        self._feeder.cancel()


def wait_for_result(item: "WevalItem") -> None:
    state = state_of(item.config)
    if state.runner is None:
        from pytest_weval.plugin.collect import WevalItem

        selected = [i for i in item.session.items if isinstance(i, WevalItem)]
        state.runner = Runner(state, selected)
    result = state.runner.result_for(item)
    item.weval_result = result
    item.user_properties.extend(junit_properties(result))
    if result.outcome == "error":
        raise WevalItemError(result)
    if result.outcome == "skipped":
        pytest.skip(result.error or "nothing to score")


def check_outcome(item: "WevalItem") -> None:
    result = item.weval_result
    for point in result.point_errors:
        warnings.warn(WevalPointError(
            f"{result.blueprint_path}: prompt '{result.prompt_id}' [{result.effective_model_id}]: "
            f"point '{point.key_point_text}' errored and was left out of the score: {point.error}"
        ))
    if result.outcome == "failed":
        raise WevalScoreFailure(result)


def describe_failure(item: "WevalItem", excinfo: pytest.ExceptionInfo) -> str | None:
    verbose = item.config.getoption("verbose", 0) > 0
    if isinstance(excinfo.value, WevalScoreFailure):
        return explain_failure(excinfo.value.result, verbose=verbose)
    if isinstance(excinfo.value, WevalItemError):
        return explain_error(excinfo.value.result)
    return None
