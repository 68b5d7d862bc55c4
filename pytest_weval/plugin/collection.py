"""Collection: which files become blueprint or agent eval collectors, and what those
collectors ask of the run while they build items (``collect.BlueprintSource``)."""

from __future__ import annotations

import gc
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_weval.blueprint.model import Blueprint
from pytest_weval.plugin.blueprint_paths import is_blueprint_path
from pytest_weval.plugin.collect import BlueprintFile
from pytest_weval.plugin.items import ResultSource
from pytest_weval.plugin.run_state import Blueprints, RunInputs
from pytest_weval.plugin.running import settle_collected_objects
from pytest_weval.plugin.settings import WevalSettings

if TYPE_CHECKING:
    from pytest_weval.plugin.agent_items import AgentEvalFile
    from pytest_weval.plugin.promptfoo_items import PromptfooFile


class Collection:
    def __init__(self, config: pytest.Config, inputs: RunInputs, blueprints: Blueprints, results: ResultSource):
        self._config = config
        self._inputs = inputs
        self._blueprints = blueprints
        self.results = results  # what the items built here ask for their results
        self._markers: set[str] = set()
        self._said_once: set[str] = set()  # findings shared by many blueprints, said at the first
        self._holding = False  # collection froze what it built (hold_collected)

    @property
    def settings(self) -> WevalSettings:
        return self._inputs.settings

    @property
    def named_files(self) -> frozenset[Path]:
        return self._inputs.named_files

    @property
    def custom_models(self) -> dict[str, dict[str, Any]]:
        return self._inputs.custom_models

    def load(self, path: Path) -> Blueprint:
        return self._blueprints.load(path)

    def first_time(self, message: str) -> bool:
        """True the first time a finding shared by many blueprints is met in this process."""
        if message in self._said_once:
            return False
        self._said_once.add(message)
        return True

    def register_marker(self, tag: str) -> str:
        if tag not in self._markers:
            self._markers.add(tag)
            self._config.addinivalue_line("markers", f"{tag}: blueprint tag")
        return tag

    def hold_collected(self) -> None:
        """What a file's collection built lives until collection is final: out of the garbage
        collector's sight meanwhile, or each full collection walks every item built so far
        again (2.4 s of a 164k-item collection). Told apart from garbage once collection is
        final (``pytest_collection_finish``)."""
        gc.freeze()
        self._holding = True

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> BlueprintFile | AgentEvalFile | PromptfooFile | None:
        settings = self.settings
        named = file_path in self.named_files
        # promptfoo-shaped first: an AgentV v5 `*.eval.yaml` is a promptfoo suite, not an agent suite.
        # Each format's collector (and the code of its items) is loaded at its first file: a run
        # of blueprints alone never loads them (docs/engine.md, 'A process's start').
        if settings.is_promptfoo_file(file_path, named=named):
            from pytest_weval.plugin.promptfoo_items import PromptfooFile

            return PromptfooFile.from_parent(parent, path=file_path, source=self)
        # Agent eval files first: a `*.eval.yaml` below `blueprints/` is still an agent suite.
        if settings.is_agent_eval_file(file_path, named=named):
            from pytest_weval.plugin.agent_items import AgentEvalFile

            return AgentEvalFile.from_parent(parent, path=file_path, source=self)
        if is_blueprint_path(file_path, settings, self.named_files):
            return BlueprintFile.from_parent(parent, path=file_path, source=self)
        return None

    # A wrapper: the deselected items are let go of before the run's start (a plain hook) holds
    # the selection for the rest of the session.
    @pytest.hookimpl(wrapper=True)
    def pytest_collection_finish(self, session: pytest.Session) -> Generator[None, None, None]:
        if self._holding:  # deselected items are garbage now (an item and its keywords are a cycle)
            self._holding = False
            gc.unfreeze()
            settle_collected_objects()
        return (yield)
