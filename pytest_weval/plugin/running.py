"""Running items: every selected item's evaluation is in flight before pytest asks for it.

As soon as collection is final, the selected items are handed to the item scheduler
(``run/schedule.py``); an item's ``setup`` only waits for its own result. Under xdist every
worker holds the whole selection and the workers share the evaluations out through the claims
store, so each item is evaluated once and no request is sent twice (docs/engine.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pytest

from pytest_weval.plugin.collect import collector_paused
from pytest_weval.plugin.items import WevalItem
from pytest_weval.plugin.terminal_lines import write_lines
from pytest_weval.report._fmt import plural
from pytest_weval.results import ItemResult, Outcome

if TYPE_CHECKING:  # they use the Runner
    from pytest_weval.api import Weval
    from pytest_weval.plugin.item_results import ItemResults
    from pytest_weval.plugin.run_engine import RunEngine


class Runner:
    """The items of this process's selection, evaluated ahead on ``weval``'s engine."""

    def __init__(
        self,
        weval: Weval,
        items: Sequence[WevalItem],
        *,
        blocked: Mapping[str, str] | None = None,
        blocked_outcome: Outcome = "error",
        maxfail: int = 0,
    ):
        self.engine = weval.engine
        self.pipeline = weval.pipeline
        self.blocked = dict(blocked or {})
        self.blocked_outcome = blocked_outcome
        workers = self.engine.settings.worker_count
        # xdist workers, or machines joined by --weval-run-id: items are shared out through the claims
        exchange = self.engine.coordinator is not None and self.engine.settings.shares_items
        cap = self.engine.settings.concurrency or 64  # --weval-concurrency, as engine_settings made it
        if exchange:
            # Small: a worker claims only what its share of the caps can start soon, so the
            # workers split the items evenly however their start-up times differ.
            window = max(16, 6 * max(1, cap // workers))
        else:
            # Enough evaluations in flight to keep every provider's cap busy, few enough that
            # a 100k-item run does not hold 100k coroutines.
            window = max(256, 8 * cap)
        # -x / --maxfail: no further ahead than the requests in flight need, so that the items
        # started when the last failure comes are few (docs/options.md, -x).
        stop_after_failures = maxfail if maxfail and not exchange else None
        if stop_after_failures:
            window = cap
        if self.engine.settings.batch != "off":
            # Every item at once: each waits on a batch, and a round holds what has been asked
            # when it is submitted (docs/batch.md).
            window = max(window, len(items))
        # The engine's code, by a process that runs items (never the xdist controller).
        from pytest_weval.run.schedule import ItemScheduler

        # An item's work and its place in the scheduler (~15 objects an item) live for the run:
        # built without the collector's passes over them, then frozen as collection's are.
        with collector_paused():
            self.scheduler = ItemScheduler(
                self.engine,
                self.pipeline,
                [item.work(0, self.blocked.get(item.nodeid), blocked_outcome) for item in items],
                window=window,
                exchange=exchange,
                stop_after_failures=stop_after_failures,
            )
        settle_collected_objects()

    def hurry(self, item: WevalItem) -> None:
        self.scheduler.hurry(item.nodeid)

    def result_for(self, item: WevalItem, sample: int = 0) -> ItemResult:
        if sample == 0 and item.nodeid in self.scheduler:
            return self.scheduler.result(item.nodeid)
        # A rerun (sample 1, 2, ...) is asked for when pytest reruns the item, not ahead; its
        # requests still go through the engine's cache and, under xdist, its claims.
        return self.engine.run_coroutine(
            self.pipeline.evaluate(item.work(-1, self.blocked.get(item.nodeid), self.blocked_outcome, sample))
        ).result()

    def close(self, *, drain: bool) -> None:
        self.scheduler.close(drain=drain)


def settle_collected_objects() -> None:
    """Move what collection built (blueprints, items, imported modules) out of the garbage
    collector's sight: it lives until the session ends. Each full collection otherwise walks
    pydantic's and httpx's object graphs again, ~0.1 s a time holding the GIL, during the run
    and three times more at interpreter exit (measured: 0.4 s off the end of every run). Only the
    young generations are collected first: a full collection here walks every imported module
    (~0.05-0.08 s, a tenth of a one-item run), and the older garbage is small."""
    gc.collect(1)
    gc.freeze()


class KeptSettler:
    """Moves what a run keeps per finished item (its compact record, pytest's reports) out of
    the garbage collector's sight every ``every`` items, as ``settle_collected_objects`` does
    for collection's: they only pile up, and each of the collector's full passes (one whenever
    the survivors grow by a quarter) walked every one kept so far. At 16,000 replayed items
    that was 12-19 full passes taking 2.6-4.2 s of CPU in the items, per item seven times the
    4,000 items' (docs/engine.md, 'A replay, by phase and by thread'). The results
    pytest has not taken yet are frozen with them and freed as usual when let go of; only
    garbage in a cycle that had already outlived two young collections would stay (at the
    run's end as many objects as before: none of a replay's)."""

    def __init__(self, every: int = 512):
        self._every = every
        self._since = 0

    def kept(self) -> None:
        self._since += 1
        if self._since >= self._every:
            self._since = 0
            if gc.isenabled():  # else the user's choice: no pass walks them anyway
                settle_collected_objects()


@contextlib.contextmanager
def building_long_lived() -> Iterator[None]:
    """Many objects built at once that live until the session ends (the run's blueprints, as
    the xdist controller receives them): the collector would otherwise walk all those built so
    far again and again on the way (the corpus's 196 blueprints: 3.6 s, 1.1 s without). Frozen
    after, as collection's are."""
    try:
        with collector_paused():
            yield
    finally:
        gc.freeze()


class ItemRunning:
    """The hooks that drive the process's engine: items are hurried as pytest reaches them, and
    the engine is closed once the session ends."""

    def __init__(self, config: pytest.Config, engine: RunEngine, results: ItemResults, *, stop_grace_s: float):
        self._config = config
        self._engine = engine
        self._results = results
        self._stop_grace_s = stop_grace_s

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """pytest is about to run ``item``: start it and the item after it if not yet under way
        (under xdist they may belong to another worker's share)."""
        if not isinstance(item, WevalItem) or self._engine.dry_run:
            return
        self._engine.hurry(item)
        if isinstance(nextitem, WevalItem):
            self._engine.hurry(nextitem)

    # A wrapper: the engine is closed (its usage and store faults counted) before any plain
    # hook of the session's end reads them (the summary, the transfer to the xdist controller).
    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        ran_items = self._engine.running or bool(self._results.results)
        self._say_waiting()
        self._engine.close(drain=not was_interrupted(session))
        if not ran_items:
            return (yield)
        # The results held here stay until exit, where each full collection of the heap
        # costs ~0.1 s, several times (settle_collected_objects froze what collection
        # built; the xdist controller collects nothing).
        gc.freeze()
        # The files written now (the roll-up, the history's comparison, the Weval JSON, the
        # page, the run's record) build their objects and let go of them, in no cycle: the
        # collector's full passes over them were 15 at 16,000 items (1.7 s of CPU), 4 at 4,000.
        with collector_paused():
            return (yield)

    def _say_waiting(self) -> None:
        weval = self._engine.started
        if weval is not None and weval.engine.interrupted and weval.engine.in_flight:
            write_lines(
                self._config,
                f"weval: interrupted: waiting up to {self._stop_grace_s:g} s for "
                f"{plural(weval.engine.in_flight, 'reply', 'replies')} on the way "
                "(--weval-stop-grace; Ctrl-C again stops at once)",
                yellow=True,
            )

    @pytest.hookimpl(tryfirst=True)  # before the store is marked checked: every writer done
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._engine.close()


def was_interrupted(session: pytest.Session) -> bool:
    """Ctrl-C, SIGTERM, -x: the session stopped before every selected item ran."""
    return bool(session.shouldstop or session.shouldfail) or session.exitstatus == pytest.ExitCode.INTERRUPTED
