"""Blueprint files become collectors, and prompt x model x temperature x system become items."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_weval.blueprint.ids import js_number_str
from pytest_weval.blueprint.model import Blueprint, BlueprintError, ModelSpec
from pytest_weval.plugin import lint
from pytest_weval.plugin.items import BlueprintItem, ResultSource, bracketed_ids
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.plugin.warning_types import WevalWarning
from pytest_weval.report._fmt import visible


class BlueprintSource(Protocol):
    """What collection needs of the run (``collection.Collection``): its settings, parsed blueprints (each file parsed
    once per process), markers for blueprint tags, and where its items get their results."""

    settings: WevalSettings
    named_files: frozenset[Path]
    results: ResultSource

    def load(self, path: Path) -> Blueprint: ...

    def register_marker(self, tag: str) -> str: ...

    def first_time(self, message: str) -> bool: ...

    def hold_collected(self) -> None: ...


class BlueprintFile(pytest.File):
    def __init__(self, *, source: BlueprintSource, **kwargs: Any):
        super().__init__(**kwargs)
        self.source = source
        self.blueprint: Blueprint | None = None

    def collect(self) -> Iterator[pytest.Item]:
        with collector_paused():  # what is built here lives until collection is final: held at once
            built = self._build()
            self.source.hold_collected()
        yield from built

    def _build(self) -> list[pytest.Item]:
        try:
            blueprint = self.source.load(self.path)
        except BlueprintError as exc:
            raise self.CollectError(str(exc)) from None
        self.blueprint = blueprint
        settings = self.source.settings
        built: list[pytest.Item] = []
        # Ignored codes (ini and `# weval-lint:` comments) leave what is shown, never what runs:
        # an item with an authoring mistake still errors with its message.
        linting = settings.lint or settings.lint_strict
        if linting:
            findings = lint.lint_findings(self.path, blueprint, settings)
            findings = lint.select(self.config, self.path, blueprint.path, findings, linting=True)
            if settings.lint_strict:  # findings fail this file's lint item instead
                built.append(lint.LintItem.from_parent(self, name=lint.LINT_ITEM_NAME, findings=findings))
                findings = [f for f in findings if f.code in lint.ALWAYS_WARN]
            lint.warn_findings(findings, self.path, WevalWarning)
        else:
            findings = [f for f in blueprint.findings if f.code in lint.ALWAYS_WARN] + lint.invalid_regexes(blueprint)
            findings = lint.select(self.config, self.path, blueprint.path, findings, linting=False)
            # An empty collection is one mistake however many blueprints use it: said once, at
            # the first (a configs repository has a hundred blueprints naming an empty one).
            findings = [f for f in findings if f.code != "empty-collection" or self.source.first_time(f.message)]
            lint.warn_mistakes(findings, self.path, blueprint.path, WevalWarning)
        built += make_items(self, blueprint)
        return built


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Many objects built at once, in no cycle or kept: each pass of the garbage collector
    would walk all those built so far again (a corpus's collection: 0.2 s in its items, 0.2 s
    in the pre-flight's and the plan's per-item objects)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def marker_name(tag: str) -> str:
    """pytest refuses marker names that start with "_", and reads a marker's registration
    as ``name: description``, so a name cannot hold ":". Weval keeps such tags (`_featured`,
    `compass:agreeable`) as they are; their markers drop the leading underscores and spell
    ":" as "-" (`-m compass-agreeable`)."""
    return tag.lstrip("_").replace(":", "-")


def variant_label(model: ModelSpec, temperature: float | None, system_index: int, blueprint: Blueprint) -> str:
    label = model.id
    if blueprint.sets_temperature:
        label += f",temp={js_number_str(temperature if temperature is not None else 0)}"
    if blueprint.multi_system:
        label += f",sp={system_index}"
    return label


def make_items(parent: BlueprintFile, blueprint: Blueprint) -> Iterator[pytest.Item]:
    # Marks go on the file node once: `-m` and keywords see a parent's marks on every item, and
    # adding them per item dominated collection time on a 164k-item corpus.
    names = [parent.source.register_marker(name) for name in map(marker_name, blueprint.tags) if name]
    for mark in [pytest.mark.weval] + [getattr(pytest.mark, name) for name in names]:
        parent.add_marker(mark)
    # A prompt id may hold NUL or U+202E: shown, not acted on. Made visible once per prompt and
    # per variant (the translation works character by character), not once per item.
    variants = [
        (
            model,
            temperature,
            system_index,
            sys.intern(visible(variant_label(model, temperature, system_index, blueprint))),
        )
        for model in blueprint.models
        for temperature in blueprint.temperatures
        for system_index in range(len(blueprint.systems))
    ]
    seen: dict[str, int] = {}
    results = parent.source.results
    for prompt in blueprint.prompts:
        count = seen.get(prompt.id, 0) + 1
        seen[prompt.id] = count
        # Weval keys results by prompt id, so a repeated id collides there; here each copy
        # keeps its own node id (the parser reports the repeat as a finding).
        base = visible(prompt.id if count == 1 else f"{prompt.id}~{count}")
        item_id = bracketed_ids(parent, base)
        for variant in variants:
            label = variant[3]
            item = BlueprintItem.from_parent(
                parent,
                name=f"{base}[{label}]",
                nodeid=item_id(label),
                blueprint=blueprint,
                prompt=prompt,
                variant=variant,
                source=results,
            )
            item.extra_keyword_matches.update((blueprint.id, variant[0].id, prompt.id))
            yield item
