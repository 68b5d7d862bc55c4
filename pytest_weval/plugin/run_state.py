"""The small records the plugin's concerns share, each passed to the concerns that need it
(``registration.register``): what the run reads before anything is collected, the parsed
blueprints, what the engines spent, and what the run's start leaves for its end."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_weval.blueprint.fixtures import ResponseFixtures
from pytest_weval.blueprint.model import Blueprint
from pytest_weval.engine.store.cache import StoreFaults
from pytest_weval.files import Unwritten
from pytest_weval.plugin.blueprint_paths import blueprint_rel_path, named_files
from pytest_weval.plugin.role import Role
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.results import Usage

if TYPE_CHECKING:
    from pytest_weval.run.plan import Plan


@dataclasses.dataclass(frozen=True)
class RunInputs:
    """The settings and the files they name, read once, before anything is collected or sent:
    a file that cannot be read stops the run first."""

    settings: WevalSettings
    custom_models: dict[str, dict[str, Any]]
    fixtures: ResponseFixtures | None
    named_files: frozenset[Path]  # blueprint-like files named on the command line
    started: float  # for the model lists' freshness and the HTML report's date and duration
    # Seen before anything makes the cache (the store's check at session start does, before
    # pytest writes the header that says whether the cache is new).
    cache_was_new: bool


def read_inputs(settings: WevalSettings, args: Iterable[str]) -> RunInputs:
    custom_models, fixtures = settings.read_files()
    return RunInputs(
        settings=settings,
        custom_models=custom_models,
        fixtures=fixtures,
        named_files=named_files(args),
        started=time.time(),
        cache_was_new=not Path(settings.cache_dir).exists(),
    )


class Blueprints:
    """The run's blueprints: parsed here (each file once per process), and, on the xdist
    controller, received from the workers that ran their items."""

    def __init__(self, inputs: RunInputs):
        self._inputs = inputs
        self.parsed: dict[Path, Blueprint] = {}
        self.received: dict[str, Blueprint] = {}  # by Blueprint.path

    def load(self, path: Path) -> Blueprint:
        if path not in self.parsed:
            root = self._inputs.settings.rootdir
            try:
                shown = path.relative_to(root).as_posix()
            except ValueError:
                shown = path.as_posix()
            self.parsed[path] = self._inputs.settings.load_blueprint(
                path,
                rel_path=blueprint_rel_path(path, root),
                display_path=shown,
                custom_models=self._inputs.custom_models,
            )
        return self.parsed[path]

    def by_path(self) -> dict[str, Blueprint]:
        """Every blueprint with results, by ``ItemResult.blueprint_path``."""
        blueprints = dict(self.received)
        blueprints.update((blueprint.path, blueprint) for blueprint in self.parsed.values())
        return blueprints


@dataclasses.dataclass
class EngineTally:
    """What this run's engines sent and failed to store: this process's, and on the xdist
    controller every worker's."""

    usage: dict[str, Usage] = dataclasses.field(default_factory=dict)  # per model, each distinct request once
    store_faults: StoreFaults = dataclasses.field(default_factory=StoreFaults)

    def add(self, usage: dict[str, Usage], faults: StoreFaults) -> None:
        for model, used in usage.items():
            self.usage.setdefault(model, Usage()).add(used)
        self.store_faults.add(faults)


@dataclasses.dataclass
class RunOutputs:
    """What the run's start leaves for its end to say."""

    plan: Plan | None = None
    unwritten: list[Unwritten] = dataclasses.field(default_factory=list)  # kept from being written (a full disk)
    # The pre-flight stopped the run: under xdist a worker's reason, said by the controller.
    stop_message: str | None = None
    # xdist controller: its place in the session its workers share, from what it hands them
    # (the embedding step at the end sends from here, on that session's claims and budget)
    session_role: Role | None = None
