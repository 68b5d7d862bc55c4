"""The pre-flight: once per run, after collection and before any request, every model id of the
selection is checked and so are the provider keys its items need (docs/rulings.md, ruling 13).

A bad model id (unknown provider, malformed id, or a name its provider does not list) stops the
run. A missing key is said once,
naming the variable, the models and judges that need it, and the fix; by default it stops the
run too, else the items that need it become one-line errors or skips (``--weval-missing-keys``),
and nothing is sent for them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from pytest_weval import judges as judging
from pytest_weval.blueprint.fixtures import ResponseFixtures
from pytest_weval.blueprint.model import ModelSpec, Prompt
from pytest_weval.engine.errors import ConfigError, MissingKeyError
from pytest_weval.engine.prices import PriceBook
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.providers import adapter_for
from pytest_weval.run.pipeline import (
    BUILTIN_MODELS,
    ItemWork,
    Work,
    asks_tested_model,
    missing_fixture,
    sends_nothing,
)

if TYPE_CHECKING:
    from pytest_weval.run.agent import AgentWork
    from pytest_weval.run.promptfoo import PromptfooWork


class ModelLists(Protocol):
    """The models a provider lists (``engine.transport.model_lists.ModelLists``)."""

    def unlisted(self, provider: str, names: Collection[str]) -> dict[str, str | None] | None:
        """The names the provider does not have, each with its closest listed name; None when
        the provider cannot be checked."""
        ...


@dataclasses.dataclass
class MissingKey:
    variable: str
    models: set[str] = dataclasses.field(default_factory=set)  # tested models that need it
    judges: set[str] = dataclasses.field(default_factory=set)  # judges and key-point extractors
    item_ids: set[str] = dataclasses.field(default_factory=set)

    @property
    def items(self) -> int:
        return len(self.item_ids)

    def describe(self) -> list[str]:
        needs = []
        if self.models:
            needs.append(f"model{'s' if len(self.models) > 1 else ''} {_some(self.models)}")
        if self.judges:
            needs.append(f"judge{'s' if len(self.judges) > 1 else ''} {_some(self.judges)}")
        fixes = [f"export {self.variable.split(' or ')[0]}=..."]
        if self.judges:
            fixes.append("or judge with a model you have a key for: --weval-judges=<model id>")
        if self.models:
            fixes.append("or leave those models out with --weval-models=<model ids>")
        return [
            f"{self.variable} is not set; needed by {' and '.join(needs)} "
            f"({self.items} item{'s' if self.items != 1 else ''})",
            "    fix: " + "  ".join(fixes),
        ]


@dataclasses.dataclass
class Preflight:
    bad_models: dict[str, str] = dataclasses.field(default_factory=dict)  # model id -> why
    unpriced: set[str] = dataclasses.field(default_factory=set)  # models with no known price, under a budget
    missing: dict[str, MissingKey] = dataclasses.field(default_factory=dict)  # by variable
    blocked: dict[str, str] = dataclasses.field(default_factory=dict)  # node id -> the one-line reason
    asked: set[str] = dataclasses.field(default_factory=set)  # every model id the run would send to

    def unbatched(self, custom_models: Mapping[str, dict]) -> list[str]:
        """Under --weval-batch: the providers (and custom models) the run asks that have no batch
        API, whose requests go live (docs/batch.md)."""
        from pytest_weval.engine.transport.batch_api import BATCH_APIS  # loaded by a --weval-batch run only

        live = set()
        for model_id in self.asked - set(self.bad_models):
            if model_id in custom_models:
                live.add(f"custom model {model_id}")
            elif (provider := model_id.partition(":")[0].strip().lower()) not in BATCH_APIS:
                live.add(provider)
        return sorted(live)

    def without_tier(self, tier: str, custom_models: Mapping[str, dict]) -> list[str]:
        """Under --weval-service-tier=flex or priority: the models the run asks that are not
        served at that tier (sent at the provider's default tier, and priced so)."""
        if tier not in ("flex", "priority"):
            return []
        left: set[str] = set()
        for model_id in self.asked - set(self.bad_models):
            if model_id in custom_models or model_id in BUILTIN_MODELS:
                continue
            try:
                adapter = adapter_for(ModelSpec(id=model_id), frozenset())
            except ConfigError:
                continue
            adapter.service_tier = tier
            if adapter.tier_sent() != tier:
                left.add(model_id)
        return sorted(left)

    @property
    def must_stop(self) -> bool:
        """Whatever --weval-missing-keys says: the run cannot go as asked."""
        return bool(self.bad_models or self.unpriced)

    def report(self) -> str:
        lines: list[str] = []
        if self.bad_models:
            lines.append("weval pre-flight: these model ids cannot be used:")
            lines += [f"  {why}" for why in self.bad_models.values()]
        for model_id in sorted(self.unpriced):
            lines.append(
                f"weval pre-flight: {model_id} has no known price, so it cannot run under --weval-budget: add it "
                f"to ini weval_prices as '{model_id} <USD per 1M input tokens> <USD per 1M output tokens>'"
            )
        if self.missing:
            lines.append("weval pre-flight: this run needs API keys that are not set:")
            for missing in sorted(self.missing.values(), key=lambda m: m.variable):
                lines += [f"  {line}" for line in missing.describe()]
        return "\n".join(lines)


def needs_judges(prompt: Prompt) -> bool:
    """The prompt's items ask judges: a judged point, or no point but an ideal answer (its key
    points are extracted, then judged)."""
    if any(not (p.is_function or p.authoring_error) for p in prompt.points):
        return True
    return not prompt.points and bool(prompt.ideal)


class _Checker:
    """Each model id checked once: a bad id, a missing variable, or fine."""

    def __init__(self, env: Mapping[str, str], allowed_env: frozenset[str], custom: Mapping[str, dict]):
        self.env = env
        self.allowed_env = allowed_env
        self.custom = custom
        self.bad: dict[str, str] = {}
        self.asked: set[str] = set()  # every model id the run would send to
        self.named: dict[str, str] = {}  # provider:model id -> where it is first named, for messages
        self._missing: dict[str, str | None] = {}
        self._specs: dict[str, ModelSpec] = {}
        # the reasons an item is blocked -> the line that says so: items blocked for the same
        # reasons share it (a configs repository without keys blocks 164k items)
        self.block_lines: dict[tuple[tuple[str, tuple[str, ...]], ...], str] = {}

    def variable_missing(self, model: ModelSpec) -> str | None:
        if model.id in BUILTIN_MODELS and model.custom is None:
            return None
        if model.id not in self._missing:
            self._missing[model.id] = None
            self.asked.add(model.id)
            try:
                adapter_for(model, self.allowed_env).connect(self.env, Redactor())
            except MissingKeyError as exc:
                self._missing[model.id] = exc.variable or str(exc)
            except ConfigError as exc:
                self.bad[model.id] = str(exc)
        return self._missing[model.id]

    def check_id(self, model: ModelSpec) -> None:
        """A model the run sends nothing to (its answers are canned): only its id's form is
        checked, which needs no key."""
        if model.id in self.bad or (model.id in BUILTIN_MODELS and model.custom is None):
            return
        try:
            adapter_for(model, self.allowed_env)
        except ConfigError as exc:
            self.bad[model.id] = str(exc)

    def located_bad(self) -> dict[str, str]:
        """Each bad model id's reason, after where the id is written (the blueprint's line, or
        the option)."""
        return {
            model_id: f"{self.named[model_id]}: {why}" if model_id in self.named else why
            for model_id, why in self.bad.items()
        }

    def spec(self, model_id: str) -> ModelSpec:
        spec = self._specs.get(model_id)
        if spec is None:
            spec = self._specs[model_id] = ModelSpec(id=model_id, custom=self.custom.get(model_id))
        return spec

    def note_named(self, model: ModelSpec, where: str) -> None:
        """A provider's model id (not a custom model or a built-in) and where it is named."""
        if model.custom is None and model.id not in BUILTIN_MODELS and model.id not in self.named:
            self.named[model.id] = where

    def unlisted(self, model_lists: ModelLists) -> dict[str, str]:
        """One located line per model id its provider does not list (ids whose key is set only:
        the others are said missing a key, and their provider cannot be asked)."""
        by_provider: dict[str, dict[str, str]] = {}  # provider -> name -> model id
        for model_id in sorted(self.named):
            if model_id in self.bad or self._missing.get(model_id, "") is not None or ":" not in model_id:
                continue
            provider, name = model_id.split(":", 1)
            by_provider.setdefault(provider.strip().lower(), {})[name.strip()] = model_id
        lines: dict[str, str] = {}
        for provider, names in sorted(by_provider.items()):
            unknown = model_lists.unlisted(provider, list(names))
            for name, close in sorted((unknown or {}).items()):
                model_id = names[name]
                hint = f"; did you mean '{provider}:{close}'?" if close else ""
                lines[model_id] = f"{self.named[model_id]}: {model_id} is not among the models {provider} lists{hint}"
        return lines


def preflight(
    works: Sequence[Work],
    *,
    judges: Sequence[str] | None,
    env: Mapping[str, str],
    allowed_env: frozenset[str],
    custom_models: Mapping[str, dict],
    keys_needed: bool,
    prices: PriceBook | None = None,
    model_lists: ModelLists | None = None,
    fixtures: ResponseFixtures | None = None,
) -> Preflight:
    """Check the selection. ``keys_needed`` is False when nothing will be sent (replay only);
    ``prices`` is given under a budget: then every model asked must have a known price;
    ``model_lists`` checks each provider model id whose key is set against its provider's list
    (docs/engine.md, 'Model lists'). Only what the pipeline will send is checked: an item that
    ends before sending (nothing to score, a mistake in its prompt) needs no key, and a tested
    model whose every answer comes from ``fixtures`` needs no key, no price and no place in its
    provider's list (docs/fixtures.md); under --weval-fixtures-strict an item with an answer the
    file lacks errors unsent, so it needs nothing either."""
    checker = _Checker(env, allowed_env, custom_models)
    result = Preflight()
    panels: dict[str, judging.JudgePanel] = {}
    # Items of one blueprint asking one model are checked alike (the same keys, the same line
    # when blocked): each kind is checked once, and its notes applied to the others.
    kinds: dict[tuple[int, int, bool, bool, bool], _Kind] = {}
    alike: dict[_Kind, _Kind] = {}  # most kinds come to the same notes: held once
    prompts: dict[int, tuple[bool, bool] | None] = {}  # None: its items send nothing
    asks: dict[tuple[int, str], bool] = {}  # (prompt, model id or "") -> the tested model is sent a request
    applied: set[int] = set()  # ids of the notes whose models and judges are in ``result`` already
    for work in works:
        if not isinstance(work, ItemWork):  # an agent eval case or a promptfoo row
            reasons: dict[str, list[str]] = {}  # variable -> who needs it, for this item
            _format_keys(result, checker, work, judges or (), custom_models, reasons)
            _block(result, checker, work, reasons, keys_needed)
            continue
        if id(work.prompt) in prompts:
            prompt = prompts[id(work.prompt)]
        else:
            prompt = prompts[id(work.prompt)] = (
                None if sends_nothing(work.prompt) else (needs_judges(work.prompt), not work.prompt.points)
            )
        if prompt is None or (fixtures is not None and missing_fixture(work, fixtures) is not None):
            continue  # it ends before sending: no key, no price, no judge
        # Without fixtures only a built-in model changes the answer: asked once per prompt.
        model_key = work.model.id if fixtures is not None or work.model.id in BUILTIN_MODELS else ""
        asked = asks.get((id(work.prompt), model_key))
        if asked is None:
            asked = asks[id(work.prompt), model_key] = asks_tested_model(work, fixtures)
        kind = (id(work.blueprint), id(work.model), *prompt, asked)
        notes = kinds.get(kind)
        if notes is None:
            checked = Preflight()
            _check_item(checked, checker, panels, work, judges, keys_needed, asked)
            notes = (
                tuple((v, tuple(m.models), tuple(m.judges)) for v, m in checked.missing.items()),
                next(iter(checked.blocked.values()), None),
            )
            notes = kinds[kind] = alike.setdefault(notes, notes)
        if notes[0]:
            if id(notes) in applied:  # a corpus blocks 164k items alike: each adds only its id
                for variable, _, _ in notes[0]:
                    result.missing[variable].item_ids.add(work.nodeid)
            else:
                applied.add(id(notes))
                for variable, models, judging_models in notes[0]:
                    missing = _note(result, variable, work)
                    missing.models.update(models)
                    missing.judges.update(judging_models)
        if notes[1] is not None:
            result.blocked[work.nodeid] = notes[1]
    result.bad_models = checker.located_bad()
    if model_lists is not None and keys_needed:
        result.bad_models.update(checker.unlisted(model_lists))
    result.asked = checker.asked
    if prices is not None and keys_needed:
        result.unpriced = {m for m in checker.asked if m not in checker.bad and prices.price(m) is None}
    if not keys_needed:
        result.missing.clear()
        result.blocked.clear()
    return result


# What one kind of item notes: (variable, models, judges) per missing key, and its blocked line.
_Kind = tuple[tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...], str | None]


def _check_item(
    result: Preflight,
    checker: _Checker,
    panels: dict[str, judging.JudgePanel],
    work: ItemWork,
    judges: Sequence[str] | None,
    keys_needed: bool,
    asks_model: bool,
) -> None:
    reasons: dict[str, list[str]] = {}  # variable -> who needs it, for this item
    if work.model.id not in checker.named:
        checker.note_named(work.model, _where_named(work))
    if not asks_model:
        checker.check_id(work.model)
    else:
        variable = checker.variable_missing(work.model)
        if variable is not None:
            _note(result, variable, work).models.add(work.model.id)
            reasons.setdefault(variable, []).append(f"model {work.model.id}")
    if needs_judges(work.prompt):
        panel = panels.get(work.blueprint.path)
        if panel is None:
            try:
                panel = panels[work.blueprint.path] = judging.select_judges(
                    list(judges) if judges else None, work.blueprint.evaluation_config
                )
            except judging.JudgeConfigError:
                return  # the item says so when it runs (a located blueprint mistake)
        for variable, who in _judge_keys(result, checker, panel, work, judges):
            reasons.setdefault(variable, []).append(who)
    _block(result, checker, work, reasons, keys_needed)


def _block(result: Preflight, checker: _Checker, work: Work, reasons: dict[str, list[str]], keys_needed: bool) -> None:
    if reasons and keys_needed:
        why = tuple((variable, tuple(who)) for variable, who in sorted(reasons.items()))
        line = checker.block_lines.get(why)
        if line is None:
            missing = "; ".join(f"{variable} (for {_who(list(who))})" for variable, who in why)
            line = checker.block_lines[why] = f"not run, a key it needs is not set: {missing}; nothing was sent"
        result.blocked[work.nodeid] = line


def _format_keys(
    result: Preflight,
    checker: _Checker,
    work: AgentWork | PromptfooWork,
    judges: Sequence[str],
    custom_models: Mapping[str, dict],
    reasons: dict[str, list[str]],
) -> None:
    # Their code is loaded by a run that has such items only (docs/engine.md, 'A process's start').
    from pytest_weval.run.agent import AgentWork

    if isinstance(work, AgentWork):
        _agent_keys(result, checker, work, judges, reasons)
    else:
        _promptfoo_keys(result, checker, work, judges, custom_models, reasons)


def _agent_keys(
    result: Preflight, checker: _Checker, work: AgentWork, judges: Sequence[str], reasons: dict[str, list[str]]
) -> None:
    """The keys of an agent case: its target's model (a cli target needs none) and its judges.
    A case that cannot run as written (a mistake in the file, an unusable target) sends nothing,
    so it needs no key: it says its own problem when it runs."""
    if work.case.problem or work.target.problem:
        return
    model = work.target.model
    where = work.nodeid.split("::")[0]
    if model is not None:
        checker.note_named(model, where)
        variable = checker.variable_missing(model)
        if variable is not None:
            _note(result, variable, work).models.add(model.id)
            reasons.setdefault(variable, []).append(f"model {model.id}")
    from pytest_weval.run.agent import judge_models

    for judge in sorted(judge_models(work, judges)):
        checker.note_named(checker.spec(judge), "--weval-judges" if judges else where)
        variable = checker.variable_missing(checker.spec(judge))
        if variable is not None:
            _note(result, variable, work).judges.add(judge)
            reasons.setdefault(variable, []).append(f"judge {judge}")


def _promptfoo_keys(
    result: Preflight,
    checker: _Checker,
    work: PromptfooWork,
    judges: Sequence[str],
    custom_models: Mapping[str, dict],
    reasons: dict[str, list[str]],
) -> None:
    """The keys of a promptfoo row: its provider's model and, when it has a model-graded
    assertion, its grader. A row that cannot run as written sends nothing and needs no key."""
    if work.prepared.problem or work.prompt.problem or work.provider.problem or work.provider.model is None:
        return
    from pytest_weval.run.promptfoo import grader_model, needs_grader

    where = work.nodeid.split("::")[0]
    models = [("model", work.provider.model)]
    if needs_grader(work.prepared):
        models.append(("judge", grader_model(work, judges, custom_models)))
    for role, model in models:
        checker.note_named(model, where)
        variable = checker.variable_missing(model)
        if variable is not None:
            missing = _note(result, variable, work)
            (missing.models if role == "model" else missing.judges).add(model.id)
            reasons.setdefault(variable, []).append(f"{role} {model.id}")


def _where_named(work: ItemWork) -> str:
    location = work.blueprint.model_locations.get(work.model.id)
    if location is None:
        return f"{work.blueprint.path} (models)"
    if location.field and location.field.startswith("--weval-models"):
        return "--weval-models"
    return str(location)


def _where_judges(work: ItemWork, judges: Sequence[str] | None) -> str:
    if judges:
        return "--weval-judges"
    if work.blueprint.evaluation_config:
        return f"{work.blueprint.path} (evaluationConfig)"
    return "the default judges"


def _judge_keys(
    result: Preflight,
    checker: _Checker,
    panel: judging.JudgePanel,
    work: ItemWork,
    judges: Sequence[str] | None,
) -> list[tuple[str, str]]:
    """(variable, who needs it) for the judges of one item whose key is missing."""
    reasons = []
    for judge in panel.judges:
        if judge.model in BUILTIN_MODELS and judge.model not in checker.custom:
            checker.bad[judge.model] = (
                f"'{judge.model}' cannot judge: it is a stand-in for a tested model (it answers with "
                "the ideal or the prompt, never a verdict); judge with a real model, --weval-judges=<provider:model>"
            )
            continue
        variable = checker.variable_missing(checker.spec(judge.model))
        if judge.model not in checker.named:
            checker.note_named(checker.spec(judge.model), _where_judges(work, judges))
        if variable is not None:
            _note(result, variable, work).judges.add(judge.model)
            reasons.append((variable, f"judge {judge.model}"))
    if not work.prompt.points and panel.extraction_models:
        # Key points come from the first extraction model that answers: one key is enough.
        missing = [checker.variable_missing(checker.spec(m)) for m in panel.extraction_models]
        if all(variable is not None for variable in missing):
            first = panel.extraction_models[0]
            variable = missing[0]
            assert variable is not None
            _note(result, variable, work).judges.add(first)
            reasons.append((variable, f"key-point extraction with {first}"))
    return reasons


def _some(names: set[str], shown: int = 4) -> str:
    """A few names and how many more: a configs repository names dozens of models."""
    ordered = sorted(names)
    more = f" and {len(ordered) - shown} more" if len(ordered) > shown else ""
    return ", ".join(ordered[:shown]) + more


def _who(needs: list[str]) -> str:
    """``model a, judges b, c`` from ``["model a", "judge b", "judge c"]``."""
    kinds: dict[str, list[str]] = {}
    for need in needs:
        kind, _, name = need.partition(" ")
        kinds.setdefault(kind, []).append(name)
    return ", ".join(
        f"{kind}{'s' if len(names) > 1 and kind in ('model', 'judge') else ''} {', '.join(names)}"
        for kind, names in kinds.items()
    )


def _note(result: Preflight, variable: str, work: Work) -> MissingKey:
    missing = result.missing.get(variable)
    if missing is None:
        missing = result.missing[variable] = MissingKey(variable)
    missing.item_ids.add(work.nodeid)
    return missing
