"""Blueprint files become collectors, and prompt x model x temperature x system become items."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Iterator

import pytest

from pytest_weval.blueprint.ids import js_number_str
from pytest_weval.blueprint.model import Blueprint, BlueprintError, ModelSpec, Prompt
from pytest_weval.plugin.state import WevalState, state_of

BLUEPRINT_SUFFIXES = (".yml", ".yaml", ".json")


# Findings worth a warning on every run: a placeholder with no models (rulings 5), and the
# authoring mistakes whose items will error (rulings 3 and 9), so the file and line are shown.
ALWAYS_WARN = frozenset({
    "empty-collection", "unknown-function", "undefined-ref", "invalid-point", "invalid-prompt",
})


class WevalWarning(UserWarning):
    """A finding about a blueprint: it runs, but probably not as its author meant."""


def is_blueprint_path(file_path: Path, config: pytest.Config, state: WevalState) -> bool:
    if file_path.suffix.lower() not in BLUEPRINT_SUFFIXES:
        return False
    if file_path in state.named_files:
        return True
    rel = _rel(file_path, state.settings.rootdir)
    if any(fnmatch.fnmatch(rel, glob) for glob in state.settings.globs):
        return True
    # The configs-repository layout: anything below a folder named `blueprints`.
    return "blueprints" in _project_folders(file_path, state.settings.rootdir)


def _project_folders(path: Path, root: Path) -> tuple[str, ...]:
    """The folders holding ``path`` from the rootdir (its own name included) down. Folders
    above the rootdir do not count: a checkout in ``~/blueprints/repo`` must not turn every
    YAML file of the repository into a blueprint."""
    try:
        return path.parent.relative_to(root.parent).parts
    except ValueError:
        return path.parent.parts


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def blueprint_rel_path(path: Path, root: Path) -> str:
    """The path a blueprint id derives from: relative to its `blueprints/` folder, as Weval's
    GitHub runs do, else relative to the rootdir."""
    folders = _project_folders(path, root)
    if "blueprints" in folders:
        last = len(folders) - 1 - folders[::-1].index("blueprints")
        return Path(*folders[last + 1 :], path.name).as_posix()
    return _rel(path, root)


class BlueprintFile(pytest.File):
    blueprint: Blueprint | None = None

    def collect(self) -> Iterator[pytest.Item]:
        state = state_of(self.config)
        try:
            blueprint = state.load(self.path)
        except BlueprintError as exc:
            raise self.CollectError(str(exc)) from None
        self.blueprint = blueprint
        settings = state.settings
        from pytest_weval.plugin import lint

        if settings.lint or settings.lint_strict:
            findings = lint.lint_findings(self.path, blueprint, settings.max_file_mb)
            if settings.lint_strict:  # findings fail this file's lint item instead
                lint.register_marker(self.config)
                yield lint.LintItem.from_parent(self, name=lint.LINT_ITEM_NAME, findings=findings)
                findings = [f for f in findings if f.code in ALWAYS_WARN or f.code in lint.ALWAYS_WARN]
            lint.warn_findings(findings, self.path, WevalWarning)
        else:
            findings = [f for f in blueprint.findings if f.code in ALWAYS_WARN] + lint.invalid_regexes(blueprint)
            lint.warn_findings(findings, self.path, WevalWarning, with_code=False)
        yield from make_items(self, blueprint, state)


def marker_name(tag: str) -> str:
    """pytest refuses marker names that start with "_"; Weval keeps such tags (`_featured`)
    as they are, so they become markers without the leading underscores."""
    return tag.lstrip("_")


def variant_label(model: ModelSpec, temperature: float | None, system_index: int,
                  blueprint: Blueprint) -> str:
    label = model.id
    if blueprint.sets_temperature:
        label += f",temp={js_number_str(temperature if temperature is not None else 0)}"
    if blueprint.multi_system:
        label += f",sp={system_index}"
    return label


def make_items(parent: BlueprintFile, blueprint: Blueprint, state: WevalState) -> Iterator[pytest.Item]:
    # Marks go on the file node once: `-m` and keywords see a parent's marks on every item, and
    # adding them per item dominated collection time on a 164k-item corpus.
    names = [state.register_marker(name) for name in map(marker_name, blueprint.tags) if name]
    for mark in [pytest.mark.weval] + [getattr(pytest.mark, name) for name in names]:
        parent.add_marker(mark)
    variants = [
        (model, temperature, system_index, variant_label(model, temperature, system_index, blueprint))
        for model in blueprint.models
        for temperature in blueprint.temperatures
        for system_index in range(len(blueprint.systems))
    ]
    seen: dict[str, int] = {}
    for prompt in blueprint.prompts:
        count = seen.get(prompt.id, 0) + 1
        seen[prompt.id] = count
        # Weval keys results by prompt id, so a repeated id collides there; here each copy
        # keeps its own node id (the parser reports the repeat as a finding).
        base = prompt.id if count == 1 else f"{prompt.id}~{count}"
        for model, temperature, system_index, label in variants:
            item = WevalItem.from_parent(
                parent, name=f"{base}[{label}]", blueprint=blueprint, prompt=prompt, model=model,
                temperature=temperature, system_index=system_index,
            )
            item.extra_keyword_matches.update((blueprint.id, model.id, prompt.id))
            yield item


class WevalItem(pytest.Item):
    def __init__(self, *, blueprint: Blueprint, prompt: Prompt, model: ModelSpec,
                 temperature: float | None, system_index: int, **kwargs):
        if "nodeid" not in kwargs and "[" in kwargs.get("name", ""):
            # pytest 9 keeps node ids structured: from `name` alone it would make the bracket
            # part of the name, while the ids it reads back (--lf, --ff, --sw) are parsed into
            # name and params, so "p[model]" would never match itself. Built from the string,
            # the id is parsed the same way both times (and pytest 8 takes the string as is).
            kwargs["nodeid"] = f"{kwargs['parent'].nodeid}::{kwargs['name']}"
        super().__init__(**kwargs)
        self.blueprint = blueprint
        self.prompt = prompt
        self.model = model
        self.temperature = temperature
        self.system_index = system_index
        self.weval_result = None

    def reportinfo(self):
        return self.path, self.prompt.location.line - 1 if self.prompt.location.line else None, self.name

    def setup(self) -> None:
        from pytest_weval.plugin.running import wait_for_result

        wait_for_result(self)

    def runtest(self) -> None:
        from pytest_weval.plugin.running import check_outcome

        check_outcome(self)

    def repr_failure(self, excinfo, style=None):
        from pytest_weval.plugin.running import describe_failure

        text = describe_failure(self, excinfo)
        if text is not None:
            return text
        return super().repr_failure(excinfo, style=style)

    def _repr_failure_py(self, excinfo, style=None):
        # pytest renders a *setup* error with this, not repr_failure. An item error is said in
        # words (decorate_report replaces the report's longrepr), so skip building a traceback
        # that would be thrown away: it ast-parses every frame's source, about 0.2 s per error,
        # which made an offline `--weval-models=ideal` corpus run (5,000+ errors) take 12 minutes.
        from pytest_weval.plugin.running import describe_failure

        text = describe_failure(self, excinfo)
        if text is not None:
            return text
        return super()._repr_failure_py(excinfo, style=style)
