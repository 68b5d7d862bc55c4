"""AgentV eval YAML and AgentEvals ``EVAL.yaml`` files as collectors; case x target as items.

Discovery and loading are ``pytest_weval.formats`` (pure); the items are ``WevalItem``s like a
blueprint's, evaluated by the same run (``run/agent.py``) into the same result records.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.model import AgentCase, AgentSuite
from pytest_weval.plugin.collect import marker_name
from pytest_weval.plugin.items import ResultSource, WevalItem
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.results import Outcome
from pytest_weval.run.agent import AgentWork, ResolvedTarget, resolve_targets


class AgentSource(Protocol):
    settings: WevalSettings
    custom_models: dict[str, dict[str, Any]]
    results: ResultSource

    def register_marker(self, tag: str) -> str: ...


class AgentEvalFile(pytest.File):
    def __init__(self, *, source: AgentSource, **kwargs: Any):
        super().__init__(**kwargs)
        self.source = source

    def collect(self) -> Iterator[pytest.Item]:
        settings = self.source.settings
        try:
            suite = settings.load_agent_suite(self.path)
        except BlueprintError as exc:
            raise self.CollectError(str(exc)) from None
        if suite is None:  # a format out of scope (AgentV v5 / promptfoo): nothing, silently
            return
        names = [self.source.register_marker(name) for name in map(marker_name, suite.tags) if name]
        for mark in [pytest.mark.weval] + [getattr(pytest.mark, name) for name in names]:
            self.add_marker(mark)
        models = list(settings.models or ())
        for case in suite.cases:
            for target in resolve_targets(suite, case, models=models, custom_models=self.source.custom_models):
                item = AgentEvalItem.from_parent(
                    self,
                    name=f"{case.id}[{target.label}]",
                    suite=suite,
                    case=case,
                    target=target,
                    source=self.source.results,
                )
                for tag in (*case.tags, *((case.conversation_id,) if case.conversation_id else ())):
                    name = marker_name(tag)
                    if name:
                        item.add_marker(getattr(pytest.mark, self.source.register_marker(name)))
                item.extra_keyword_matches.update((suite.id, case.id, target.label))
                yield item


class AgentEvalItem(WevalItem):
    """One case of an agent eval file against one target."""

    def __init__(self, *, suite: AgentSuite, case: AgentCase, target: ResolvedTarget, **kwargs: Any):
        super().__init__(**kwargs)
        self.suite = suite
        self.case = case
        self.target = target

    @property
    def line(self) -> int | None:
        return self.case.location.line

    def work(
        self, priority: int = 0, blocked: str | None = None, blocked_outcome: Outcome = "error", sample: int = 0
    ) -> AgentWork:
        return AgentWork(
            nodeid=self.nodeid,
            suite=self.suite,
            case=self.case,
            target=self.target,
            priority=priority,
            blocked=blocked,
            blocked_outcome=blocked_outcome,
            sample=sample,
        )
