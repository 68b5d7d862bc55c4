"""Run roll-up: mean scores per blueprint x model and up the folder tree, usage, agreement.

Reads ``ItemResult`` records only. Under xdist they arrive in any order, so everything here is
order-free: means use ``math.fsum`` (exactly rounded, hence independent of summation order),
lists are sorted, and the judge agreement pools points in a fixed item order.

Means follow Weval's per-model run average (docs/scoring.md, 'Prompt weights and roll-ups'): each item's score counts
with its prompt's ``weight`` when that is a number > 0, else with 1 (so an unweighted blueprint
is a plain mean). Errored and skipped items are counted but have no score to average.

Each mean carries its 95% confidence interval (``report.stats``), clustered by blueprint when
its items come from two or more blueprints, else by prompt (docs/statistics.md).
"""

from __future__ import annotations

import itertools
import math
import posixpath
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_weval.errors import ErrorKind
from pytest_weval.judges.agreement import judge_agreement
from pytest_weval.report.stats import MeanInterval, clustered_mean
from pytest_weval.results import Point, Result, Usage, weval_kept
from pytest_weval.scoring.aggregate import prompt_weight

ROOT = ""  # the folder that holds the whole run

Agreement = Callable[[list[Point]], Any] | Mapping[str, Any] | None


@dataclass(frozen=True)
class Tally:
    """Scores and outcomes of a set of items."""

    mean: float | None  # prompt-weighted mean of the scored items; None when none scored
    weighted: bool  # some prompt among the items sets a weight
    items: int
    passed: int
    failed: int
    errors: int
    skipped: int
    scored: int  # items whose score entered the mean
    total_weight: float
    # The mean's 95% interval, cut to [0, 1]; None with fewer than two clusters (docs/statistics.md)
    ci95: tuple[float, float] | None = None
    interval: MeanInterval | None = field(default=None, compare=False, repr=False)
    # --weval-repeat: the mean over scored items of the variance of their samples' scores
    within_item_variance: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "mean": self.mean,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "weighted": self.weighted,
            "items": self.items,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "skipped": self.skipped,
            "scored": self.scored,
            "totalWeight": self.total_weight,
        }
        if self.within_item_variance is not None:
            data["withinItemVariance"] = self.within_item_variance
        return data


def cluster_of(results: Sequence[Result]) -> Callable[[Result], Hashable]:
    """How a set of items is clustered for its interval: by blueprint when they come from two or
    more blueprints, else by prompt (the variants of one prompt, temperatures and system prompts,
    stay together)."""
    if len({r.blueprint_path for r in results}) >= 2:
        return lambda r: r.blueprint_path
    return lambda r: (r.blueprint_path, r.prompt_id)


def mean_interval(results: Sequence[Result]) -> MeanInterval | None:
    """The prompt-weighted mean of the scored items, with its clustered interval."""
    scored = _scored(results)
    return _interval(scored, [_weight(r) for r in scored])


def _scored(results: Iterable[Result]) -> list[Result]:
    return [r for r in results if r.outcome in ("passed", "failed") and r.score is not None]


def _weight(result: Result) -> float:
    """What the item weighs in a mean: a prompt without a weight weighs 1 (docs/scoring.md,
    'Prompt weights and roll-ups')."""
    weight = result.prompt_weight
    return 1.0 if weight is None else prompt_weight(weight) or 1.0


def _interval(scored: Sequence[Result], weights: list[float]) -> MeanInterval | None:
    if not scored:
        return None
    cluster = cluster_of(scored)
    return clustered_mean(
        [r.score for r in scored],  # type: ignore[misc]
        [cluster(r) for r in scored],
        weights,
    )


def sample_variance(scores: Sequence[float]) -> float | None:
    """The variance of one item's sample scores (n - 1 in the denominator); None below 2."""
    if len(scores) < 2:
        return None
    mean = math.fsum(scores) / len(scores)
    return math.fsum((s - mean) ** 2 for s in scores) / (len(scores) - 1)


def tally(results: Iterable[Result]) -> Tally:
    results = list(results)
    outcomes = [r.outcome for r in results]
    # Each item is in a dozen tallies (the run, its blueprint, folders, models): the scored
    # items and their weights are found once a tally, for the mean and the interval alike.
    scored = _scored(weval_kept(results))
    weights = [_weight(r) for r in scored]
    total_weight = math.fsum(weights)
    mean = math.fsum(r.score * w for r, w in zip(scored, weights)) / total_weight if total_weight else None  # type: ignore[operator]
    interval = _interval(scored, weights)
    variances = [
        v for r in scored if len(r.sample_scores) >= 2 for v in [sample_variance(r.sample_scores)] if v is not None
    ]
    return Tally(
        mean=mean,
        weighted=any(r.prompt_weight is not None for r in results),
        items=len(results),
        passed=outcomes.count("passed"),
        failed=outcomes.count("failed"),
        errors=outcomes.count("error"),
        skipped=outcomes.count("skipped"),
        scored=len(scored),
        total_weight=total_weight,
        ci95=interval.bounded(0.0, 1.0) if interval is not None else None,
        interval=interval,
        within_item_variance=math.fsum(variances) / len(variances) if variances else None,
    )


def _by(
    results: Sequence[Result], key: Callable[[Result], str], of: Callable[[list[Result]], Tally] = tally
) -> dict[str, Tally]:
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(key(r), []).append(r)
    return {k: of(groups[k]) for k in sorted(groups)}


class _Tallies:
    """``tally`` once per list of items: a blueprint's models and its variants (a model with one
    variant), a folder and its one blueprint or its parent, group the same items alike."""

    def __init__(self) -> None:
        self._made: dict[tuple[int, ...], Tally] = {}  # by the items' ids (all alive till the roll-up is made)

    def of(self, results: list[Result]) -> Tally:
        key = tuple(map(id, results))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = tally(results)
        return made


@dataclass(frozen=True)
class BlueprintRollup:
    path: str
    id: str
    title: str
    overall: Tally
    by_model: dict[str, Tally]  # base model id -> tally (temperature/system variants merged)
    by_effective_model: dict[str, Tally]  # Weval's effective id -> tally

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "id": self.id,
            "title": self.title,
            **self.overall.to_dict(),
            "models": {m: t.to_dict() for m, t in self.by_model.items()},
            "effectiveModels": {m: t.to_dict() for m, t in self.by_effective_model.items()},
        }


@dataclass(frozen=True)
class FolderRollup:
    path: str  # "" for the whole run, else "a" / "a/b" (no trailing slash)
    overall: Tally
    by_model: dict[str, Tally]
    folders: tuple[str, ...]  # direct subfolders (full paths), sorted
    blueprints: tuple[str, ...]  # blueprint paths directly inside, sorted

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def depth(self) -> int:
        return 0 if self.path == ROOT else self.path.count("/") + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            **self.overall.to_dict(),
            "models": {m: t.to_dict() for m, t in self.by_model.items()},
            "folders": list(self.folders),
            "blueprints": list(self.blueprints),
        }


@dataclass(frozen=True)
class PointProblem:
    """A point that errored (left out of the score) or carries a warning (score kept)."""

    blueprint_path: str
    prompt_id: str
    model: str  # effective id
    point: str
    error: str
    score_kept: bool  # partial judge consensus: the error is a warning, the score stands
    nodeid: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.blueprint_path,
            "promptId": self.prompt_id,
            "model": self.model,
            "point": self.point,
            "error": self.error,
            "scoreKept": self.score_kept,
            "nodeid": self.nodeid,
        }


@dataclass(frozen=True)
class ItemProblem:
    """An item that errored: no score (provider, key, replay miss, judges, blueprint)."""

    blueprint_path: str
    prompt_id: str
    model: str
    error: str
    nodeid: str = ""
    kind: ErrorKind | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.blueprint_path,
            "promptId": self.prompt_id,
            "model": self.model,
            "error": self.error,
            "nodeid": self.nodeid,
        }


@dataclass(frozen=True)
class Rollup:
    overall: Tally
    blueprints: dict[str, BlueprintRollup]  # by blueprint path, sorted
    folders: dict[str, FolderRollup]  # by folder path ("" first), sorted
    by_model: dict[str, Tally]  # run-wide, per base model
    effective_models: dict[str, tuple[str, ...]]  # base model -> its effective ids
    usage: dict[str, Usage]  # per model that served requests (generation and judges)
    usage_total: Usage
    agreement: dict[str, Any] | None  # run-level judge agreement (the shape of docs/judges.md, 'Agreement'), pooled
    point_problems: tuple[PointProblem, ...]
    item_problems: tuple[ItemProblem, ...]
    models: tuple[str, ...] = field(default=())  # base model ids, sorted
    metrics: dict[str, MetricTally] = field(default_factory=dict)  # promptfoo suites' named metrics

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.to_dict(),
            **({"metrics": {name: m.to_dict() for name, m in self.metrics.items()}} if self.metrics else {}),
            "models": {m: t.to_dict() for m, t in self.by_model.items()},
            "effectiveModels": {m: list(v) for m, v in self.effective_models.items()},
            "blueprints": [b.to_dict() for b in self.blueprints.values()],
            "folders": [f.to_dict() for f in self.folders.values()],
            "usage": {m: usage_dict(u) for m, u in self.usage.items()},
            "usageTotal": usage_dict(self.usage_total),
            "judgeAgreement": self.agreement,
            "pointErrors": [p.to_dict() for p in self.point_problems],
            "itemErrors": [p.to_dict() for p in self.item_problems],
        }


@dataclass(frozen=True)
class MetricTally:
    """One named metric of promptfoo-shaped suites (an assertion's ``metric``): the mean of its
    score over the rows that have it (promptfoo's ``namedScores``), and in how many of them each
    assertion of that metric passed."""

    rows: int
    mean: float
    passed: int

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "mean": round(self.mean, 4), "passed": self.passed}


def _metrics(results: Sequence[Result]) -> dict[str, MetricTally]:
    scores: dict[str, list[float]] = {}
    passed: dict[str, int] = {}
    for r in results:
        row = r.promptfoo
        if not row or r.outcome == "error":
            continue
        components = (row.get("gradingResult") or {}).get("componentResults") or []
        failed = {(c.get("assertion") or {}).get("metric") or c.get("metric") for c in components if not c.get("pass")}
        for name, value in (row.get("namedScores") or {}).items():
            scores.setdefault(name, []).append(float(value))
            passed[name] = passed.get(name, 0) + (name not in failed)
    return {
        name: MetricTally(rows=len(values), mean=sum(values) / len(values), passed=passed[name])
        for name, values in sorted(scores.items())
    }


def usage_dict(usage: Usage) -> dict[str, float | None]:
    return {
        "requests": usage.requests,
        "cacheHits": usage.cache_hits,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "refused": usage.refused,
        "rateLimitWaitSeconds": round(usage.rate_wait_s, 3),
        "costUsd": None if usage.cost_usd is None else round(usage.cost_usd, 6),
    }


def item_key(result: Result) -> tuple:
    """A total, stable order for items (file, prompt, model variant)."""
    return (
        result.blueprint_path,
        result.blueprint_id,
        result.prompt_id,
        result.model_id,
        result.effective_model_id,
        result.nodeid,
        result.outcome,
        -1.0 if result.score is None else result.score,
    )


def folder_of(blueprint_path: str) -> str:
    parent = posixpath.dirname(posixpath.normpath(blueprint_path).strip("/"))
    return "" if parent in ("", ".") else parent


def _ancestors(folder: str) -> list[str]:
    """ "a/b" -> ["", "a", "a/b"]."""
    chain = [ROOT]
    if folder:
        parts = folder.split("/")
        chain += ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return chain


def _folders(
    results: Sequence[Result], made: _Tallies, run: tuple[Tally, dict[str, Tally]] | None = None
) -> dict[str, FolderRollup]:
    """The folders' roll-ups; ``run``: ``_tallies(results)`` made already."""
    members: dict[str, list[Result]] = {ROOT: []}
    subfolders: dict[str, set[str]] = {ROOT: set()}
    files: dict[str, set[str]] = {ROOT: set()}
    homes: dict[str, list[list[Result]]] = {}  # by blueprint path: its folders' members
    for r in results:
        lists = homes.get(r.blueprint_path)
        if lists is None:  # the file's first item: its folders, made known
            home = folder_of(r.blueprint_path)
            chain = _ancestors(home)
            for parent, child in itertools.pairwise(chain):
                subfolders.setdefault(parent, set()).add(child)
            for folder in chain:
                subfolders.setdefault(folder, set())
                files.setdefault(folder, set())
            files[home].add(r.blueprint_path)
            lists = homes[r.blueprint_path] = [members.setdefault(folder, []) for folder in chain]
        for held in lists:
            held.append(r)
    # A folder holds a subset of its parent's items, in the same order: one that holds as many
    # holds the same list (the root holds the run's; a suite's one top folder the root's), and
    # has the same tallies.
    tallies: dict[str, tuple[Tally, dict[str, Tally]]] = {}
    for path in sorted(members, key=lambda path: path.count("/") + 1 if path else 0):  # parents first
        parent = posixpath.dirname(path)
        if path == ROOT:
            tallies[path] = run if run is not None else _tallies(members[path], made)
        elif len(members[path]) == len(members[parent]):
            tallies[path] = tallies[parent]
        else:
            tallies[path] = _tallies(members[path], made)
    return {
        path: FolderRollup(
            path=path,
            overall=tallies[path][0],
            by_model=tallies[path][1],
            folders=tuple(sorted(subfolders[path])),
            blueprints=tuple(sorted(files[path])),
        )
        for path in sorted(members)
    }


def _tallies(results: list[Result], made: _Tallies) -> tuple[Tally, dict[str, Tally]]:
    """The tally of ``results``, and their tallies by model."""
    return made.of(results), _by(results, lambda r: r.model_id, made.of)


def _problems(results: Sequence[Result]) -> tuple[tuple[PointProblem, ...], tuple[ItemProblem, ...]]:
    points, items = [], []
    for r in results:
        if r.outcome == "error":
            items.append(
                ItemProblem(
                    r.blueprint_path,
                    r.prompt_id,
                    r.effective_model_id,
                    r.error or "unknown error",
                    r.nodeid,
                    r.error_kind,
                )
            )
            if r.stopped:  # its points failed for the same reason: said once, by the item
                continue
        for p in r.points:
            if p.error and not p.authoring_error:  # an authoring mistake is the item's error
                score_kept = p.coverage_extent is not None
                error = p.error
                if score_kept and p.failed_judges:  # partial consensus: say which judges failed, and why
                    error = f"{error} Failed: {'; '.join(p.failed_judges)}."
                points.append(
                    PointProblem(
                        r.blueprint_path,
                        r.prompt_id,
                        r.effective_model_id,
                        p.key_point_text,
                        error,
                        score_kept,
                        r.nodeid,
                    )
                )
    return tuple(points), tuple(items)


def _agreement(results: Sequence[Result], agreement: Agreement) -> dict[str, Any] | None:
    if agreement is None:  # the judges layer owns Krippendorff's alpha
        agreement = judge_agreement
    if isinstance(agreement, Mapping):
        return dict(agreement) or None
    pooled = [p for r in results for p in r.points]  # ``results`` is already in item order
    value = agreement(pooled)
    if value is not None and hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(value) if value else None


def build_rollup(
    results: Iterable[Result], *, agreement: Agreement = None, usage: Mapping[str, Usage] | None = None
) -> Rollup:
    """Roll a run's item results up; the same output for any order of ``results``.

    ``agreement`` is a function of the pooled point assessments (``judges.judge_agreement``,
    used by default when it exists), or an already computed agreement dict. ``usage`` is the
    run's usage per model as the engine counted it (each distinct request once, with its
    cost); without it, the items' own usage is summed (a request shared by items counts once
    per item).
    """
    ordered = sorted(results, key=item_key)
    by_path: dict[str, list[Result]] = {}
    for r in ordered:
        by_path.setdefault(r.blueprint_path, []).append(r)
    made = _Tallies()
    blueprints = {
        path: BlueprintRollup(
            path=path,
            id=items[0].blueprint_id,
            title=items[0].blueprint_title or items[0].blueprint_id,
            overall=made.of(items),
            by_model=_by(items, lambda r: r.model_id, made.of),
            by_effective_model=_by(items, lambda r: r.effective_model_id, made.of),
        )
        for path, items in sorted(by_path.items())
    }

    effective: dict[str, set[str]] = {}
    per_model: dict[str, Usage] = {}
    for r in ordered:
        effective.setdefault(r.model_id, set()).add(r.effective_model_id)
        if usage is None:
            for model, used in r.usage.items():
                per_model.setdefault(model, Usage()).add(used)
    if usage is not None:
        per_model = {model: used.model_copy() for model, used in usage.items()}
    total = Usage()
    for used in per_model.values():
        total.add(used)

    points, items = _problems(ordered)
    run = _tallies(ordered, made)
    return Rollup(
        overall=run[0],
        blueprints=blueprints,
        folders=_folders(ordered, made, run),
        by_model=run[1],
        effective_models={m: tuple(sorted(v)) for m, v in sorted(effective.items())},
        usage={m: per_model[m] for m in sorted(per_model)},
        usage_total=total,
        agreement=_agreement(ordered, agreement),
        point_problems=points,
        item_problems=items,
        models=tuple(sorted(effective)),
        metrics=_metrics(ordered),
    )
