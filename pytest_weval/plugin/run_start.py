"""The run's start, once collection is final: the pre-flight (keys, model ids, prices), the
plan of what will be sent, and the engine set evaluating the selected items."""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_weval.api import Weval
from pytest_weval.blueprint.fixtures import ResponseFixtures
from pytest_weval.blueprint.model import Blueprint
from pytest_weval.engine.store.backends import StoreError, is_postgres
from pytest_weval.files import each_file_tried
from pytest_weval.plugin.collect import collector_paused
from pytest_weval.plugin.items import WevalItem
from pytest_weval.plugin.notices import Notices
from pytest_weval.plugin.role import Role
from pytest_weval.plugin.run_engine import RunEngine, store_error
from pytest_weval.plugin.run_state import Blueprints, RunInputs, RunOutputs
from pytest_weval.plugin.running import settle_collected_objects
from pytest_weval.plugin.warning_types import WevalWarning
from pytest_weval.report._fmt import visible
from pytest_weval.run.embedding import embedding_problems
from pytest_weval.run.pipeline import Work
from pytest_weval.run.preflight import Preflight
from pytest_weval.run.programs.runner import provider_key_reason

if TYPE_CHECKING:
    from pytest_weval.run.plan import Plan


@dataclasses.dataclass(frozen=True, eq=False)
class RunStart:
    config: pytest.Config
    role: Role
    inputs: RunInputs
    blueprints: Blueprints
    engine: RunEngine
    notices: Notices
    outputs: RunOutputs

    @pytest.hookimpl(tryfirst=True)  # before xdist's, which sends the collected ids
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Collection is final: the pre-flight, then start evaluating the selected items (not
        for --collect-only)."""
        try:
            self.start(session)
        except pytest.UsageError as exc:
            if not self.role.is_worker:
                raise
            self._hand_stop_to_controller(session, str(exc))

    def _hand_stop_to_controller(self, session: pytest.Session, message: str) -> None:
        """An xdist worker runs nothing (every worker decides the same) and tells the
        controller, which ends the session with the message and a usage error."""
        session.items[:] = []
        self.outputs.stop_message = message

    def start(self, session: pytest.Session) -> None:
        selected = [i for i in session.items if isinstance(i, WevalItem)]
        if not selected:
            return
        settings = self.inputs.settings
        option = self.config.option
        with collector_paused():  # objects per item, held until the plan is made, in no cycle
            works = [item.work() for item in selected]  # the pre-flight's, then the plan's
            checked = settings.preflight(
                works,
                custom_models=self.inputs.custom_models,
                fixtures=self.inputs.fixtures,
                model_lists=None
                if self.role.dry_run
                else settings.model_lists(self.role.run_started or self.inputs.started),
            )
            if self.role.makes_plan and self.inputs.fixtures is not None:
                warn_unused_fixtures(self.inputs.fixtures, self.blueprints.parsed.values())
            if self.role.makes_plan and (option.collectonly or (option.verbose > 0 and not self.role.dry_run)):
                self._make_plan(works, checked)
        if self.role.dry_run:
            return
        if checked.must_stop or (checked.missing and settings.missing_keys == "stop"):
            self._stop_before_any_item(session, checked)
            return
        for notice in start_notices(self.inputs, checked, batch_checked=self.role.makes_plan):
            self.notices.hold(notice)
        if settings.embeds and self.role.makes_plan:  # what keeps the answers from being embedded at the end
            for notice in embedding_problems(self.blueprints.parsed.values(), settings.engine_settings(self.role)):
                self.notices.hold(notice)
        settle_collected_objects()
        self.engine.run(selected, blocked=checked.blocked, maxfail=option.maxfail)

    def _make_plan(self, works: list[Work], checked: Preflight) -> None:
        """What the run would send (--collect-only, and the header of a run at -v): said on
        the terminal, and written to ``plan.json`` with --weval-out. It never stops a run."""
        settings = self.inputs.settings
        dry = self.config.option.collectonly
        weval = self._plan_engine() if dry else self.engine.weval()
        try:
            plan = self.outputs.plan = settings.make_plan(weval, _handed_over(works), checked)
        finally:
            if dry:
                weval.close()
        with each_file_tried() as unwritten:
            settings.write_plan(plan)
        self.outputs.unwritten += unwritten
        if not dry:  # a worker's is said by the controller, with gw0's first report
            self.notices.announce(plan_header(plan))

    def _plan_engine(self) -> Weval:
        """A dry run's own engine: it reads the cache, if there is one, and writes nothing."""
        settings = self.inputs.settings
        has_cache = Path(settings.cache_dir).exists() or is_postgres(settings.cache_store)
        try:
            return Weval(
                engine_settings=settings.plan_engine_settings(has_cache=has_cache),
                pipeline_settings=settings.pipeline_settings(self.inputs.custom_models, self.inputs.fixtures),
            )
        except StoreError as exc:
            raise store_error(settings, exc) from None

    def _stop_before_any_item(self, session: pytest.Session, checked: Preflight) -> None:
        message = (
            checked.report()
            + "\nNothing was sent. To run the items that need no missing key and report the others in one "
            "line each: --weval-missing-keys=error (or skip)."
        )
        if checked.must_stop:
            message = checked.report() + "\nNothing was sent."
        if self.role.is_worker:
            self._hand_stop_to_controller(session, message)
            return
        raise pytest.UsageError(visible(message))  # model ids from the blueprints


def plan_header(plan: Plan) -> str:
    return "\n".join(["weval plan: the distinct requests this run needs", *("  " + x for x in plan.lines())])


def start_notices(inputs: RunInputs, checked: Preflight, *, batch_checked: bool) -> Iterator[str]:
    """What the person watching should know as the items start: keys withheld from programs,
    models with no batch API or not served at the asked service tier (said by the planning
    process only), missing keys."""
    settings = inputs.settings
    withheld = [name for name in sorted(settings.allow_env) if provider_key_reason(name)]
    if settings.allow_exec and withheld:
        yield (
            f"weval: {', '.join(withheld)} named by --weval-allow-env "
            "reach custom model addresses only: programs from eval files never get a provider key"
        )
    live = checked.unbatched(inputs.custom_models) if settings.batch != "off" and batch_checked else []
    if live:
        yield (
            f"weval: --weval-batch: no batch API for {', '.join(live)}: "
            f"{'its' if len(live) == 1 else 'their'} requests are sent live, at the live price"
        )
    untiered = checked.without_tier(settings.service_tier, inputs.custom_models) if batch_checked else []
    if untiered:
        yield (
            f"weval: --weval-service-tier={settings.service_tier}: not offered for {', '.join(untiered)}: "
            f"{'it is' if len(untiered) == 1 else 'they are'} sent at the default tier and priced so"
        )
    if checked.missing:
        yield (
            checked.report() + f"\nweval: --weval-missing-keys={settings.missing_keys}: "
            f"{_items_that_need(len(checked.blocked), settings.missing_keys)}; nothing is sent for them"
        )


def _items_that_need(count: int, missing_keys: str) -> str:
    if count == 1:
        return "the item that needs them " + ("errors" if missing_keys == "error" else "is skipped")
    return f"the {count} items that need them " + ("error" if missing_keys == "error" else "are skipped")


def _handed_over(works: list[Work]) -> Iterator[Work]:
    """The works, each let go of once the plan has it: a corpus's 164k are not all held while
    the plan's own counts grow."""
    works.reverse()
    while works:
        yield works.pop()


def warn_unused_fixtures(fixtures: ResponseFixtures, blueprints: Iterable[Blueprint]) -> None:
    """A fixture for a prompt id no collected blueprint has (a typo, or a renamed prompt) would
    silently leave that prompt to the live model: say so, at the fixture's line."""
    prompt_ids = {prompt.id for blueprint in blueprints for prompt in blueprint.prompts}
    for prompt_id, line in fixtures.lines.items():
        if prompt_id not in prompt_ids:
            close = difflib.get_close_matches(prompt_id, prompt_ids, n=1)
            hint = f" (did you mean '{visible(close[0])}'?)" if close else ""
            warnings.warn_explicit(
                WevalWarning(f"the fixture for prompt '{visible(prompt_id)}' matches no collected prompt{hint}"),
                category=WevalWarning,
                filename=fixtures.path,
                lineno=line or 1,
            )
