"""Running items: every selected item's evaluation is in flight before pytest asks for it.

As soon as collection is final, the selected items are handed to the engine's item scheduler
(``engine/schedule.py``); an item's ``setup`` only waits for its own result. Under xdist every
worker holds the whole selection and the workers share the evaluations out through the claims
store, so each item is evaluated once and no request is sent twice (docs/engine.md).
"""

from __future__ import annotations

import gc
import warnings
from typing import TYPE_CHECKING

import pytest

from pytest_weval.engine.pipeline import ItemWork
from pytest_weval.engine.schedule import ItemScheduler
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


def item_work(item: "WevalItem", priority: int = 0) -> ItemWork:
    return ItemWork(
        nodeid=item.nodeid, blueprint=item.blueprint, prompt=item.prompt, model=item.model,
        temperature=item.temperature, system_index=item.system_index, priority=priority,
    )


class Runner:
    def __init__(self, state: WevalState, items: list["WevalItem"]):
        weval = state.weval()
        self.engine = weval.engine
        self.pipeline = weval.pipeline
        workers = self.engine.settings.worker_count
        exchange = workers > 1 and self.engine.coordinator is not None
        cap = state.settings.concurrency or 64
        if exchange:
            # Small: a worker claims only what its share of the caps can start soon, so the
            # workers split the items evenly however their start-up times differ.
            window = max(16, 6 * max(1, cap // workers))
        else:
            # Enough evaluations in flight to keep every provider's cap busy, few enough that
            # a 100k-item run does not hold 100k coroutines.
            window = max(256, 8 * cap)
        self.scheduler = ItemScheduler(
            self.engine, self.pipeline, [item_work(item) for item in items], window=window, exchange=exchange,
        )

    def hurry(self, item: "WevalItem") -> None:
        self.scheduler.hurry(item.nodeid)

    def result_for(self, item: "WevalItem") -> ItemResult:
        if item.nodeid not in self.scheduler:  # not in the selection (should not happen)
            return self.engine.run_coroutine(self.pipeline.evaluate(item_work(item, -1))).result()
        return self.scheduler.result(item.nodeid)

    def close(self, *, drain: bool) -> None:
        self.scheduler.close(drain=drain)


def start_runner(session: pytest.Session) -> None:
    """Collection is final: start evaluating the selected items (not for --collect-only, and
    not on the xdist controller, which runs nothing)."""
    from pytest_weval.plugin.collect import WevalItem

    config = session.config
    if config.option.collectonly or getattr(config.option, "setupplan", False):
        return
    state = state_of(config)
    if state.runner is None:
        selected = [i for i in session.items if isinstance(i, WevalItem)]
        if selected:
            settle_collected_objects()
            state.runner = Runner(state, selected)


def settle_collected_objects() -> None:
    """Move what collection built (blueprints, items, imported modules) out of the garbage
    collector's sight: it lives until the session ends. Each full collection otherwise walks
    pydantic's and httpx's object graphs again, ~0.1 s a time holding the GIL, during the run
    and three times more at interpreter exit (measured: 0.4 s off the end of every run)."""
    gc.collect()
    gc.freeze()


def runner_for(item: "WevalItem") -> Runner:
    state = state_of(item.config)
    if state.runner is None:  # not started at collection end (--setup-plan): this item alone
        state.runner = Runner(state, [item])
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
