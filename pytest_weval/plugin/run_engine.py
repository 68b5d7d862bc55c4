"""The process's engine and its item runner: started on first use (never during collection),
shared by the items, the fixtures and the pre-flight's plan, closed once at the session's end."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pytest

from pytest_weval.engine.store.backends import StoreError, is_postgres
from pytest_weval.plugin.options import option_name
from pytest_weval.plugin.role import Role
from pytest_weval.plugin.run_state import EngineTally, RunInputs
from pytest_weval.plugin.running import Runner
from pytest_weval.plugin.settings import WevalSettings, samples_from_history
from pytest_weval.results import ItemResult
from pytest_weval.run.sampling import Past

if TYPE_CHECKING:
    from pytest_weval.api import Weval
    from pytest_weval.plugin.items import WevalItem


class RunEngine:
    """What items ask for their results (a ``ResultSource``), and what the fixtures send
    through."""

    def __init__(self, inputs: RunInputs, role: Role, tally: EngineTally):
        self._inputs = inputs
        self._role = role
        self._tally = tally
        self._weval: Weval | None = None
        self._runner: Runner | None = None

    @property
    def dry_run(self) -> bool:
        return self._role.dry_run

    @property
    def started(self) -> Weval | None:
        """The engine, if anything started it."""
        return self._weval

    @property
    def running(self) -> bool:
        return self._runner is not None

    def weval(self) -> Weval:
        """The process's engine and pipeline, started on first use."""
        if self._weval is None:
            # The engine's code is loaded by a process that makes one: never the xdist
            # controller, which runs no item (docs/engine.md, 'A process's start').
            from pytest_weval.api import Weval

            settings = self._inputs.settings
            try:
                self._weval = Weval(
                    engine_settings=settings.engine_settings(self._role),
                    pipeline_settings=settings.pipeline_settings(
                        self._inputs.custom_models, self._inputs.fixtures, _past_samples(settings)
                    ),
                )
            except StoreError as exc:  # checked at session start; gone since (or an xdist worker)
                raise store_error(settings, exc) from None
        return self._weval

    def run(self, items: Sequence[WevalItem], *, blocked: Mapping[str, str], maxfail: int) -> None:
        """Start evaluating ``items`` (once: collection is final)."""
        if self._runner is None:
            settings = self._inputs.settings
            self._runner = Runner(
                self.weval(),
                items,
                blocked=blocked,
                blocked_outcome=settings.blocked_outcome,
                maxfail=maxfail,
            )

    def _runner_for(self, item: WevalItem) -> Runner:
        if self._runner is None:  # not started at collection end (should not happen): this item alone
            self._runner = Runner(self.weval(), [item])
        return self._runner

    def hurry(self, item: WevalItem) -> None:
        self._runner_for(item).hurry(item)

    def result_for(self, item: WevalItem, sample: int = 0) -> ItemResult:
        return self._runner_for(item).result_for(item, sample)

    def interrupt(self) -> None:
        """No request starts from now on (called from a signal handler: it only flags)."""
        if self._weval is not None:
            self._weval.engine.interrupt()

    def take_notices(self) -> list[str]:
        return self._weval.engine.take_notices() if self._weval is not None else []

    def close(self, *, drain: bool = False) -> None:
        """``drain``: the run ended normally, so evaluations another xdist worker may be
        waiting for are finished first."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            runner.close(drain=drain)
        if self._weval is not None:
            weval, self._weval = self._weval, None
            # the fixtures' requests too
            self._tally.add(weval.engine.run_usage(), weval.engine.store_faults())
            weval.close()


def store_error(settings: WevalSettings, exc: StoreError) -> pytest.UsageError:
    """A store that cannot be used ends the session in one line, before anything is sent."""
    where = option_name("weval_cache_store") if is_postgres(settings.cache_store) else "weval cache"
    return pytest.UsageError(f"{where}: {exc}")


def _past_samples(settings: WevalSettings) -> dict[str, tuple[Past, ...]]:
    """The history's samples the items may start from; its reader (the history's records, the
    reports' code) is loaded only by a run that reads them, so an xdist worker loads no report."""
    if not samples_from_history(settings):
        return {}
    from pytest_weval.plugin.history import past_samples

    return past_samples(settings)
