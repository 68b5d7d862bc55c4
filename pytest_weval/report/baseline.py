"""``--weval-baseline=DIR``: this run's item scores against an earlier run's, model by model.

``read_baseline`` reads the ``--weval-out`` folder of the earlier run: ``summary.json`` says
which items were scored and their scores; each blueprint's comparison file says the system
prompt every item was sent (its conversation history). A folder of Weval comparison files
without ``summary.json`` works too (the scores are then each prompt's ``avgCoverageExtent``).

``compare`` pairs items by blueprint id, prompt id, model id, temperature and system prompt.
Items that do not pair (new, gone, or without a score in one of the runs) are counted and listed,
never silently dropped. Per model: the mean paired difference (this run minus the baseline), its
95% interval clustered as the means are (``report.stats``), a one-sided p-value for a drop,
Holm-adjusted across the models tested, the verdict, and the smallest drop the test could see
with 80% power. docs/statistics.md explains it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest_weval.defaults as defaults
from pytest_weval.errors import WevalError
from pytest_weval.report._fmt import fmt_p, fmt_score, fmt_signed, plural
from pytest_weval.report.stats import LEVEL, MeanInterval, detectable_drop, holm, paired_test
from pytest_weval.results import Result
from pytest_weval.scoring.aggregate import prompt_weight
from pytest_weval.scoring.similarity import IDEAL_MODEL_ID  # the reference's pseudo-model, never a tested one

MOVED_LIMIT = 20  # prompts listed as the ones that moved most (summary.json and terminal)
# A drop of five points of mean score is one a gate should see: a "not significant" verdict whose
# smallest detectable drop is larger (and larger than --weval-max-drop) blames the suite's size.
NOTICEABLE_DROP = 0.05
_EFFECTIVE = re.compile(r"^(?P<model>.*?)(?:\[temp:(?P<temp>[^\]]*)\])?(?:\[sp_idx:(?P<sp>\d+)\])?$")
_SCORED = ("passed", "failed")

# (blueprint id, prompt id, model id, temperature, system prompt)
PairKey = tuple[str, str, str, float | None, str | None]
UnpairedKind = Literal["only-current", "only-baseline", "unscored"]


class BaselineError(WevalError):
    """The baseline folder cannot be read: the message says what is wrong, and where."""


def split_effective_id(effective_model_id: str) -> tuple[str, float | None]:
    """``openai:gpt-4o[temp:0.7][sp_idx:1]`` -> (``openai:gpt-4o``, 0.7)."""
    match = _EFFECTIVE.match(effective_model_id)
    assert match is not None  # every part is optional
    temp = match.group("temp")
    try:
        temperature = float(temp) if temp is not None else None
    except ValueError:
        temperature = None
    return match.group("model"), temperature


def pair_key(
    blueprint_id: str, prompt_id: str, model_id: str, effective_model_id: str, system_prompt: str | None
) -> PairKey:
    _, temperature = split_effective_id(effective_model_id)
    return (blueprint_id, prompt_id, model_id, temperature, system_prompt or None)


@dataclasses.dataclass(frozen=True)
class BaselineItem:
    """One item of the earlier run, as its files recorded it."""

    blueprint_id: str
    blueprint_path: str  # the file it came from in that run ("" when unknown)
    prompt_id: str
    model_id: str
    effective_model_id: str
    system_prompt: str | None
    outcome: str  # passed, failed, error, skipped ("scored" for a comparison file's score)
    score: float | None
    nodeid: str = ""

    @property
    def scored(self) -> bool:
        return self.score is not None and self.outcome in (*_SCORED, "scored")

    @property
    def key(self) -> PairKey:
        return pair_key(self.blueprint_id, self.prompt_id, self.model_id, self.effective_model_id, self.system_prompt)


@dataclasses.dataclass(frozen=True)
class Baseline:
    directory: str
    items: tuple[BaselineItem, ...]
    run_label: str | None = None
    timestamp: str | None = None


# ---------------------------------------------------------------- reading the earlier run


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not a JSON file ({exc})") from None


def _comparison_files(folder: Path) -> dict[str, dict[str, Any]]:
    """Every Weval comparison file in the folder, by file name."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")):
        if path.name in ("summary.json", "plan.json"):
            continue
        data = _load_json(path)
        if isinstance(data, dict) and isinstance(data.get("configId"), str):
            found[path.name] = data
    return found


def _leading_system(messages: Any) -> str | None:
    """The content of a conversation's first message when it is a system message, in the
    role/content form or the authored ``{system: ...}`` shorthand."""
    first = messages[0] if isinstance(messages, list) and messages else None
    if not isinstance(first, Mapping):
        return None
    content = first.get("content") if first.get("role") == "system" else first.get("system")
    return content if isinstance(content, str) and content else None


def _system_prompt(comparison: Mapping[str, Any] | None, prompt_id: str, effective_model_id: str) -> str | None:
    """The system prompt an item was sent, from its comparison file (for summaries that do not
    say it): the recorded conversation's leading system turn, unless the prompt's own messages
    begin with it; else the model's entry in ``modelSystemPrompts``."""
    if not comparison:
        return None
    histories = comparison.get("fullConversationHistories")
    if isinstance(histories, Mapping):
        history = (histories.get(prompt_id) or {}).get(effective_model_id)
        if isinstance(history, list):
            sent = _leading_system(history)
            authored = (comparison.get("promptContexts") or {}).get(prompt_id)
            if sent is not None and sent == _leading_system(authored) and _leading_system(history[1:]) is None:
                return None  # the prompt's own system message, not a system prompt
            return sent
    systems = comparison.get("modelSystemPrompts")
    if isinstance(systems, Mapping):
        value = systems.get(effective_model_id)
        return value if isinstance(value, str) and value else None
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def read_baseline(directory: str | Path) -> Baseline:
    """The items of the ``--weval-out`` folder of an earlier run (or a folder of Weval
    comparison files). Raises ``BaselineError`` naming the file and the problem."""
    folder = Path(directory)
    if not folder.is_dir():
        raise BaselineError(f"{folder}: no such folder (give the --weval-out folder of an earlier run)")
    comparisons = _comparison_files(folder)
    summary_path = folder / "summary.json"
    if summary_path.exists():
        summary = _load_json(summary_path)
        if not isinstance(summary, dict) or not isinstance(summary.get("items"), list):
            raise BaselineError(f"{summary_path}: not a pytest-weval summary (it has no 'items' list)")
        return Baseline(
            directory=str(folder),
            items=tuple(_summary_items(summary, comparisons, summary_path)),
            run_label=summary.get("runLabel"),
            timestamp=summary.get("timestamp"),
        )
    if not comparisons:
        raise BaselineError(
            f"{folder}: neither summary.json nor any Weval comparison file (give the --weval-out folder of an earlier run)"
        )
    return Baseline(directory=str(folder), items=tuple(_comparison_items(comparisons)))


def _summary_items(
    summary: Mapping[str, Any], comparisons: Mapping[str, dict[str, Any]], where: Path
) -> Iterable[BaselineItem]:
    files = summary.get("files") if isinstance(summary.get("files"), Mapping) else {}
    by_id = {data["configId"]: data for data in comparisons.values()}
    for number, entry in enumerate(summary["items"]):
        if not isinstance(entry, Mapping):
            raise BaselineError(f"{where}: items[{number}] is not an object")
        try:
            blueprint_id, prompt_id = str(entry["blueprintId"]), str(entry["promptId"])
            model_id, effective = str(entry["model"]), str(entry["effectiveModel"])
        except KeyError as exc:
            raise BaselineError(f"{where}: items[{number}] has no {exc.args[0]!r}") from None
        path = str(entry.get("file") or "")
        name = files.get(path) if isinstance(files, Mapping) else None
        comparison = comparisons.get(name) if isinstance(name, str) else None
        if comparison is None:
            comparison = by_id.get(blueprint_id)
        if "systemPrompt" in entry:  # said by the summary (written since --weval-baseline exists)
            system = entry["systemPrompt"] if isinstance(entry["systemPrompt"], str) else None
        else:
            system = _system_prompt(comparison, prompt_id, effective)
        yield BaselineItem(
            blueprint_id=blueprint_id,
            blueprint_path=path,
            prompt_id=prompt_id,
            model_id=model_id,
            effective_model_id=effective,
            system_prompt=system,
            outcome=str(entry.get("outcome") or ""),
            score=_number(entry.get("score")),
            nodeid=str(entry.get("nodeid") or ""),
        )


def _comparison_items(comparisons: Mapping[str, dict[str, Any]]) -> Iterable[BaselineItem]:
    for name, data in comparisons.items():
        scores = (data.get("evaluationResults") or {}).get("llmCoverageScores") or {}
        for prompt_id, by_model in scores.items():
            if prompt_id.startswith("__") or not isinstance(by_model, Mapping):
                continue
            for effective, entry in by_model.items():
                model_id, _ = split_effective_id(effective)
                if model_id == IDEAL_MODEL_ID or not isinstance(entry, Mapping):
                    continue
                score = None if entry.get("error") else _number(entry.get("avgCoverageExtent"))
                yield BaselineItem(
                    blueprint_id=data["configId"],
                    blueprint_path=name,
                    prompt_id=prompt_id,
                    model_id=model_id,
                    effective_model_id=effective,
                    system_prompt=_system_prompt(data, prompt_id, effective),
                    outcome="scored" if score is not None else "error",
                    score=score,
                )


# ---------------------------------------------------------------- comparing


@dataclasses.dataclass(frozen=True)
class Pair:
    current: Result
    baseline: BaselineItem

    @property
    def scores(self) -> tuple[float, float]:
        """(this run's, the baseline's): paired items are scored on both sides."""
        assert self.current.score is not None and self.baseline.score is not None
        return self.current.score, self.baseline.score

    @property
    def delta(self) -> float:
        now, then = self.scores
        return now - then

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.current.blueprint_path,
            "blueprintId": self.current.blueprint_id,
            "promptId": self.current.prompt_id,
            "model": self.current.model_id,
            "effectiveModel": self.current.effective_model_id,
            "nodeid": self.current.nodeid,
            "baseline": self.baseline.score,
            "current": self.current.score,
            "delta": self.delta,
        }


@dataclasses.dataclass(frozen=True)
class Unpaired:
    kind: UnpairedKind
    blueprint_id: str
    prompt_id: str
    model_id: str
    effective_model_id: str
    why: str
    nodeid: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "blueprintId": self.blueprint_id,
            "promptId": self.prompt_id,
            "model": self.model_id,
            "effectiveModel": self.effective_model_id,
            "why": self.why,
            "nodeid": self.nodeid,
        }


@dataclasses.dataclass(frozen=True)
class ModelComparison:
    model: str
    items: int  # paired items
    baseline_mean: float  # over the paired items (prompt-weighted, as the run's means)
    current_mean: float
    interval: MeanInterval  # of the differences
    p: float | None  # one-sided, for a drop; None with fewer than two clusters
    p_holm: float | None  # Holm-adjusted across the models with a p
    regressed: bool
    verdict: str
    # The smallest drop this comparison would find with 80% power (stats.detectable_drop), at
    # alpha over the m models tested (Holm's first step: the bar a model's drop meets when no
    # other model dropped); None with one cluster or no spread.
    mde: float | None = None
    # "not significant" because the drop is small, or because the suite is (``small_because``).
    small_because: Literal["drop", "suite"] | None = None

    @property
    def delta(self) -> float:
        return self.interval.mean

    @property
    def blind(self) -> bool:
        """The smallest drop the test would see is larger than any drop can be (the paired
        items' baseline mean: scores are in [0, 1]): too few items to see any drop."""
        return self.mde is not None and self.mde > self.baseline_mean

    def why_not_significant(self) -> str | None:
        """The sentence the terminal adds to a "not significant" verdict."""
        if self.small_because is None or self.mde is None:
            return None
        if self.blind:
            return (
                f"the suite is too small to tell: too few items to see any drop "
                f"({plural(self.items, 'paired item')} in {plural(self.interval.clusters, 'cluster')}); "
                "more prompts or blueprints would let it"
            )
        # three decimals: a drop this test cannot see is often below what two would show
        seen = f"{self.mde:.3f} or more with 80% power"
        if self.small_because == "drop":
            return f"the drop ({-self.delta:.3f}) is small: this suite would see a drop of {seen}"
        return (
            f"the suite is too small to tell: it sees only drops of {seen} "
            f"({plural(self.interval.clusters, 'cluster')}); more prompts or blueprints would narrow that"
        )

    @property
    def ci95(self) -> tuple[float, float] | None:
        return self.interval.bounded(-1.0, 1.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "clusters": self.interval.clusters,
            "baselineMean": self.baseline_mean,
            "currentMean": self.current_mean,
            "delta": self.delta,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "p": self.p,
            "pHolm": self.p_holm,
            "regressed": self.regressed,
            "verdict": self.verdict,
            "mde": self.mde,
            "notSignificantBecause": self.small_because,
        }


@dataclasses.dataclass(frozen=True)
class Comparison:
    directory: str
    alpha: float
    max_drop: float
    models: dict[str, ModelComparison]  # by model id, sorted
    unpaired: tuple[Unpaired, ...]
    moved: tuple[Pair, ...]  # the pairs whose score moved most, largest change first
    paired: int

    @property
    def regressed(self) -> list[ModelComparison]:
        return [m for m in self.models.values() if m.regressed]

    def unpaired_counts(self) -> dict[str, int]:
        counts = {"onlyCurrent": 0, "onlyBaseline": 0, "unscored": 0}
        names = {"only-current": "onlyCurrent", "only-baseline": "onlyBaseline", "unscored": "unscored"}
        for u in self.unpaired:
            counts[names[u.kind]] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "alpha": self.alpha,
            "maxDrop": self.max_drop,
            "level": LEVEL,
            "paired": self.paired,
            "models": {m: c.to_dict() for m, c in self.models.items()},
            "unpaired": {**self.unpaired_counts(), "items": [u.to_dict() for u in self.unpaired]},
            "moved": [p.to_dict() for p in self.moved],
        }


def _scored(result: Result) -> bool:
    return result.outcome in _SCORED and result.score is not None


def _why_unscored(outcome: str, run: str) -> str:
    if outcome in ("error", "skipped"):
        return f"{'errored' if outcome == 'error' else 'skipped'} in {run}"
    return f"no score in {run}"


def _current_key(result: Result) -> PairKey:
    return pair_key(
        result.blueprint_id, result.prompt_id, result.model_id, result.effective_model_id, result.system_prompt
    )


def _unpaired(kind: UnpairedKind, item: Result | BaselineItem, why: str) -> Unpaired:
    return Unpaired(kind, item.blueprint_id, item.prompt_id, item.model_id, item.effective_model_id, why, item.nodeid)


def _pairs(results: Sequence[Result], baseline: Baseline) -> tuple[list[Pair], list[Unpaired]]:
    unpaired: list[Unpaired] = []
    twice = "its blueprint id, prompt, model, temperature and system prompt are those of another item"
    current: dict[PairKey, Result] = {}
    for r in sorted(results, key=lambda r: (r.blueprint_path, r.prompt_id, r.effective_model_id, r.nodeid)):
        key = _current_key(r)
        if key in current:
            unpaired.append(_unpaired("only-current", r, twice))
        else:
            current[key] = r
    earlier: dict[PairKey, BaselineItem] = {}
    for item in baseline.items:
        if item.key in earlier:
            unpaired.append(_unpaired("only-baseline", item, twice))
        else:
            earlier[item.key] = item
    pairs: list[Pair] = []
    for key, r in current.items():
        match = earlier.pop(key, None)
        if match is None:
            unpaired.append(_unpaired("only-current", r, "not in the baseline"))
        elif not _scored(r):
            unpaired.append(_unpaired("unscored", r, _why_unscored(r.outcome, "this run")))
        elif not match.scored:
            unpaired.append(_unpaired("unscored", r, _why_unscored(match.outcome, "the baseline")))
        else:
            pairs.append(Pair(r, match))
    unpaired += [_unpaired("only-baseline", gone, "not in this run") for gone in earlier.values()]
    order = {"only-current": 0, "only-baseline": 1, "unscored": 2}
    unpaired.sort(key=lambda u: (order[u.kind], u.blueprint_id, u.prompt_id, u.effective_model_id, u.nodeid))
    return pairs, unpaired


def _cluster(pairs: Sequence[Pair]) -> list[Hashable]:
    """By blueprint when the pairs span two or more blueprints, else by prompt (as the means)."""
    if len({p.current.blueprint_path for p in pairs}) >= 2:
        return [p.current.blueprint_path for p in pairs]
    return [(p.current.blueprint_path, p.current.prompt_id) for p in pairs]


def _verdict(
    interval: MeanInterval, p_holm: float | None, alpha: float, max_drop: float, *, unchanged: bool
) -> tuple[bool, str]:
    if unchanged:
        return False, "unchanged"
    if p_holm is None:
        return False, "not tested (1 cluster)"
    drop = -interval.mean
    if drop <= 0:
        return False, "no drop"
    if p_holm > alpha:
        return False, "not significant"
    if drop <= max_drop:
        return False, "within max drop"
    return True, "REGRESSED"


def compare(
    results: Sequence[Result],
    baseline: Baseline,
    *,
    alpha: float = defaults.ALPHA,
    max_drop: float = defaults.MAX_DROP,
    moved_limit: int = MOVED_LIMIT,
) -> Comparison:
    """This run's items against the baseline's; the same output for any order of ``results``."""
    pairs, unpaired = _pairs(results, baseline)
    by_model: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_model.setdefault(pair.current.model_id, []).append(pair)
    stats: dict[str, tuple[MeanInterval, float, float, float | None]] = {}
    unchanged = {model: all(p.delta == 0 for p in group) for model, group in by_model.items()}
    for model in sorted(by_model):
        group = by_model[model]
        weights = [prompt_weight(p.current.prompt_weight) or 1.0 for p in group]
        total = math.fsum(weights)
        current, earlier = zip(*(p.scores for p in group))
        test = paired_test(current, earlier, _cluster(group), weights)
        base = math.fsum(w * b for w, b in zip(weights, earlier)) / total
        now = math.fsum(w * c for w, c in zip(weights, current)) / total
        stats[model] = (test.interval, base, now, test.p)
    adjusted = holm({model: s[3] for model, s in stats.items()})
    tested = sum(1 for s in stats.values() if s[3] is not None)
    models: dict[str, ModelComparison] = {}
    for model, (interval, base, now, p) in stats.items():
        regressed, verdict = _verdict(interval, adjusted[model], alpha, max_drop, unchanged=unchanged[model])
        mde = detectable_drop(interval, alpha / max(tested, 1))
        small: Literal["drop", "suite"] | None = None
        if verdict == "not significant" and mde is not None:
            small = "suite" if mde > max(max_drop, NOTICEABLE_DROP) else "drop"
        models[model] = ModelComparison(
            model=model,
            items=interval.n,
            baseline_mean=base,
            current_mean=now,
            interval=interval,
            p=p,
            p_holm=adjusted[model],
            regressed=regressed,
            verdict=verdict,
            mde=mde,
            small_because=small,
        )
    moved = sorted(
        (p for p in pairs if p.delta != 0),
        key=lambda p: (-abs(p.delta), p.current.blueprint_path, p.current.prompt_id, p.current.effective_model_id),
    )[:moved_limit]
    return Comparison(
        directory=baseline.directory,
        alpha=alpha,
        max_drop=max_drop,
        models=models,
        unpaired=tuple(unpaired),
        moved=tuple(moved),
        paired=len(pairs),
    )


def regression_lines(comparison: Comparison) -> list[str]:
    """One line per regressed model, for the gate (``--weval-baseline``)."""
    lines = []
    for m in comparison.regressed:
        lines.append(
            f"{m.model} regressed: {fmt_score(m.baseline_mean)} -> {fmt_score(m.current_mean)} on "
            f"{plural(m.items, 'paired item')}, difference {fmt_difference(m.delta, m.ci95)}, p {fmt_p(m.p_holm)} "
            f"(one-sided, Holm-adjusted; alpha {comparison.alpha:g}, max drop {comparison.max_drop:g})"
        )
    return lines


def fmt_difference(delta: float, ci95: tuple[float, float] | None) -> str:
    """``-0.15 (-0.20 to -0.10)``: signed, the interval with "to" (a hyphen would read as minus)."""
    if ci95 is None:
        return fmt_signed(delta)
    return f"{fmt_signed(delta)} ({fmt_signed(ci95[0])} to {fmt_signed(ci95[1])})"
