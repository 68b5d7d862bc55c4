"""promptfoo-shaped suites (``promptfooconfig.yaml``, AgentV v5 ``suite.yaml``) as collectors;
test row x prompt x provider as items (docs/promptfoo.md).

Loading is ``pytest_weval.formats.promptfoo`` (pure); the items are ``WevalItem``s evaluated by
``run/promptfoo.py`` into the same result records as a blueprint's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.promptfoo.model import PfPrompt, PfTest, PromptfooSuite
from pytest_weval.plugin.collect import marker_name
from pytest_weval.plugin.items import ResultSource, WevalItem
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.results import Outcome
from pytest_weval.run.promptfoo import PromptfooWork, RunnableProvider, metric_names, prepare_test, providers_for


class PromptfooSource(Protocol):
    settings: WevalSettings
    custom_models: dict[str, dict[str, Any]]
    results: ResultSource

    def register_marker(self, tag: str) -> str: ...


class PromptfooFile(pytest.File):
    def __init__(self, *, source: PromptfooSource, **kwargs: Any):
        super().__init__(**kwargs)
        self.source = source

    def collect(self) -> Iterator[pytest.Item]:
        settings = self.source.settings
        try:
            suite = settings.load_promptfoo_suite(self.path)
        except BlueprintError as exc:
            raise self.CollectError(str(exc)) from None
        providers = providers_for(suite, models=list(settings.models or ()), custom_models=self.source.custom_models)
        if not providers:
            raise self.CollectError(
                f"{suite.path}: the suite names no `providers` and no --weval-models were given: "
                "add `providers: [openai:chat:<model>]` or pass --weval-models=<provider:model>"
            )
        names = [self.source.register_marker(name) for name in map(marker_name, suite.tags) if name]
        for mark in [pytest.mark.weval] + [getattr(pytest.mark, name) for name in names]:
            self.add_marker(mark)
        used: dict[str, int] = {}
        for test in suite.tests:
            prepared = prepare_test(test, suite)
            label = _unique(test.node_label, used)
            for prompt in suite.prompts:
                for provider in providers:
                    item = PromptfooItem.from_parent(
                        self,
                        name=f"{label}[{prompt.node_label}][{provider.label}]",
                        suite=suite,
                        test=test,
                        prompt=prompt,
                        provider=provider,
                        prepared=prepared,
                        source=self.source.results,
                    )
                    item.extra_keyword_matches.update(
                        k
                        for k in (
                            suite.id,
                            test.description,
                            test.written_id,
                            prompt.label,
                            provider.label,
                            provider.written_id,
                            *metric_names(prepared),
                        )
                        if k
                    )
                    yield item


def _unique(label: str, used: dict[str, int]) -> str:
    """A row's label once per file: a matrix of one description gets ``#2``, ``#3``, ..."""
    used[label] = used.get(label, 0) + 1
    return label if used[label] == 1 else f"{label}#{used[label]}"


class PromptfooItem(WevalItem):
    """One test row of a promptfoo-shaped suite, under one prompt, against one provider."""

    def __init__(
        self,
        *,
        suite: PromptfooSuite,
        test: PfTest,
        prompt: PfPrompt,
        provider: RunnableProvider,
        prepared: Any,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.suite = suite
        self.test = test
        self.prompt = prompt
        self.provider = provider
        self.prepared = prepared

    @property
    def line(self) -> int | None:
        if self.test.location.path == self.suite.path:
            return self.test.location.line or None
        return None

    def work(
        self, priority: int = 0, blocked: str | None = None, blocked_outcome: Outcome = "error", sample: int = 0
    ) -> PromptfooWork:
        return PromptfooWork(
            nodeid=self.nodeid,
            suite=self.suite,
            test=self.test,
            prompt=self.prompt,
            provider=self.provider,
            prepared=self.prepared,
            priority=priority,
            blocked=blocked,
            blocked_outcome=blocked_outcome,
            sample=sample,
        )
