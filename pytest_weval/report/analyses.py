"""Analyses over the recorded runs, as the reference runs them over its stored results.

``regressions``: per blueprint x model, each prompt's and each rubric point's score in the newer
run against the older one's; a drop of at least ``min_delta`` is a regression, graded by its size. The records are
the history's typed records (``report/history_record.py``); nothing here reads a store itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from pytest_weval.report.history_record import ItemRecord, RunRecord

MIN_SCORE_DELTA = 0.05
MAJOR = 0.15
MODERATE = 0.08


def severity(drop: float) -> str:
    """How bad a drop is: the reference's three grades."""
    if drop >= MAJOR:
        return "major"
    if drop >= MODERATE:
        return "moderate"
    return "minor"


def _score(item: ItemRecord) -> float:
    """A scored item's score (``ItemRecord.scored``)."""
    assert item.score is not None, item.nodeid
    return float(item.score)


def _point_scores(item: ItemRecord) -> dict[str, float]:
    """Each scored point of an item by its text (a point that errored has no score to compare)."""
    return {p.text: float(p.score) for p in item.detail.points if p.score is not None and not p.error}


def _regression_key(change: Mapping[str, Any]) -> tuple[Any, ...]:
    """Largest change first; a total order (a node id's prompt and its points are each one)."""
    return (-abs(float(change["delta"])), change["type"] != "prompt", change["nodeid"], change.get("point", ""))


def moves(old: ItemRecord, new: ItemRecord, *, min_delta: float = MIN_SCORE_DELTA) -> Iterator[dict[str, Any]]:
    """What moved by at least ``min_delta`` from one item's ``old`` record to its ``new`` one
    (the same node id): its score (``type: prompt``), and each of its points found by text in
    both (``type: point``); nothing unless both are scored, of the same blueprint and model."""
    if not (old.scored and new.scored and old.blueprint == new.blueprint and old.model == new.model):
        return
    where = {"blueprint": new.blueprint, "model": new.model, "prompt": new.prompt, "nodeid": new.nodeid}
    found = [({"type": "prompt"} | where, _score(old), _score(new))]
    old_points = _point_scores(old)
    found += [
        ({"type": "point"} | where | {"point": text}, old_points[text], score)
        for text, score in _point_scores(new).items()
        if text in old_points
    ]
    for moved, was, now in found:
        change = moved | _scores(was, now)
        if abs(change["delta"]) >= min_delta:
            yield change


def regressions(
    older: Sequence[ItemRecord],
    newer: Sequence[ItemRecord],
    *,
    min_delta: float = MIN_SCORE_DELTA,
) -> dict[str, list[dict[str, Any]]]:
    """What moved by at least ``min_delta`` from the ``older`` run's items to the ``newer`` run's:
    ``regressions`` (worse) and ``improvements`` (better), the largest change first.

    As the reference: per blueprint x model, each prompt both runs scored (its item's score,
    ``type: prompt``), and each of its points found by text in both (``type: point``)."""
    worse: list[dict[str, Any]] = []
    better: list[dict[str, Any]] = []
    old_by_id = {i.nodeid: i for i in older}
    for new in newer:
        old = old_by_id.get(new.nodeid)
        for change in moves(old, new, min_delta=min_delta) if old is not None else ():
            (worse if change["delta"] < 0 else better).append(change)
    for listing in (worse, better):
        listing.sort(key=_regression_key)
    return {"regressions": worse, "improvements": better}


class Worst:
    """The ``limit`` first of a stream in ``key``'s order, and how many came: a run's thousands
    of findings are never all kept. ``key`` must order them totally (as each listing's does), so
    that the result is the whole stream's sorted and cut, whatever order it came in."""

    def __init__(self, key: Callable[[Any], Any], limit: int):
        self._key = key
        self._limit = limit
        self._kept: list[dict[str, Any]] = []
        self.total = 0

    def add(self, found: Iterable[dict[str, Any]]) -> None:
        for item in found:
            self.total += 1
            self._kept.append(item)
        if len(self._kept) > 2 * self._limit:
            self._cut()

    def _cut(self) -> None:
        self._kept.sort(key=self._key)
        del self._kept[self._limit :]

    def first(self) -> list[dict[str, Any]]:
        self._cut()
        return list(self._kept)


def _scores(old: float, new: float) -> dict[str, Any]:
    # Rounded so that 0.6 - 0.75 is the -0.15 it reads as (major), not -0.1499999 (moderate).
    delta = round(new - old, 9)
    return {"older": old, "newer": new, "delta": delta, "severity": severity(abs(delta))}


def regression_lines(found: Sequence[Mapping[str, Any]], older: str, newer: str) -> list[str]:
    """The terminal's table of :func:`regressions`."""
    if not found:
        return [f"no regressions from run {older} to run {newer}"]
    lines = [f"{len(found)} regression{'' if len(found) == 1 else 's'} from run {older} to run {newer}, worst first:"]
    for r in found:
        where = f"{r['blueprint']} x {r['model']} prompt {r['prompt']}"
        if r["type"] == "point":
            where += f", point: {r['point']}"
        lines.append(f"  {r['severity']:<8} {r['delta']:+.2f} ({r['older']:.2f} -> {r['newer']:.2f})  {where}")
    return lines


PAIN_MIN = 0.1
PAIN_MAX = 0.5
PAIN_LIMIT = 500
POINT_FAILED_BELOW = 0.5


def newest_per_blueprint(
    runs: Sequence[RunRecord], items_of: Callable[[str], Sequence[ItemRecord]]
) -> list[tuple[RunRecord, ItemRecord]]:
    """Each blueprint's items from the newest run that recorded it, with that run (as the
    reference reads each blueprint's latest run): a ``-k`` run of one blueprint does not hide the
    others' latest results."""
    seen: set[str] = set()
    found: list[tuple[RunRecord, ItemRecord]] = []
    for run in reversed(runs):
        fresh: set[str] = set()
        for item in items_of(run.id):
            if item.blueprint not in seen:
                fresh.add(item.blueprint)
                found.append((run, item))
        seen |= fresh
    return found


def pain_points(
    runs: Sequence[RunRecord],
    items_of: Callable[[str], Sequence[ItemRecord]],
    *,
    low: float = PAIN_MIN,
    high: float = PAIN_MAX,
    limit: int = PAIN_LIMIT,
) -> list[dict[str, Any]]:
    """Items of each blueprint's newest run scoring within ``[low, high]``: near failures, not
    total breakdowns; each with its points below 0.5; the worst first, at most ``limit``."""
    found: list[dict[str, Any]] = []
    for run, item in newest_per_blueprint(runs, items_of):
        if not item.scored or not low <= _score(item) <= high:
            continue
        failed = [
            {"point": p.text, "score": p.score}
            for p in item.detail.points
            if p.score is not None and p.score < POINT_FAILED_BELOW
        ]
        found.append(
            {
                "run": run.id,
                "blueprint": item.blueprint,
                "prompt": item.prompt,
                "model": item.model,
                "nodeid": item.nodeid,
                "score": item.score,
                "answer": item.answer,
                "failedPoints": failed,
            }
        )
    found.sort(key=_pain_key)
    return found[:limit]


def _pain_key(point: Mapping[str, Any]) -> tuple[Any, ...]:
    return (float(point["score"]), str(point["nodeid"]))


def pain_lines(found: Sequence[Mapping[str, Any]]) -> list[str]:
    """The terminal's list of :func:`pain_points`."""
    if not found:
        return ["no pain points: no item of the latest runs scores within the window"]
    lines = [f"{len(found)} pain point{'' if len(found) == 1 else 's'}, worst first:"]
    for p in found:
        lines.append(f"  {p['score']:.2f}  {p['nodeid']}  (run {p['run']})")
        lines += [f"        {point['score']:.2f}  {point['point']}" for point in p["failedPoints"]]
    return lines


def base_model(name: str) -> str:
    """The model a variant belongs to, as the reference groups peers: the name after the
    provider, in lower case (``openai:gpt-4o`` and ``openrouter:GPT-4o`` are one base)."""
    return name.split(":", 1)[1].lower() if ":" in name else name.lower()


def deltas(
    runs: Sequence[RunRecord],
    items_of: Callable[[str], Sequence[ItemRecord]],
    *,
    model: str | None = None,
    min_peers: int = 0,
) -> list[dict[str, Any]]:
    """Per prompt of each blueprint's newest run, a base model's score against the mean of its
    peers, worst (most below its peers) first.

    A base model's score on a prompt is the mean over its variants (temperatures, system
    prompts); each peer base is averaged over its variants first, so a peer run at three
    temperatures counts once. A blueprint whose run has fewer than ``min_peers`` other bases is
    left out for that model."""
    groups: dict[tuple[str, str], dict[str, list[float]]] = {}  # (blueprint, prompt) -> base -> scores
    where: dict[tuple[str, str], Any] = {}
    bases: dict[str, set[str]] = {}
    for run, item in newest_per_blueprint(runs, items_of):
        bases.setdefault(item.blueprint, set()).add(base_model(item.model))
        if item.scored:
            key = (item.blueprint, item.prompt)
            groups.setdefault(key, {}).setdefault(base_model(item.model), []).append(_score(item))
            where[key] = run.id
    wanted = None if model is None else base_model(model)
    found: list[dict[str, Any]] = []
    for (blueprint, prompt), per_base in sorted(groups.items()):
        means = {base: sum(scores) / len(scores) for base, scores in per_base.items()}
        for base, mean in sorted(means.items()):
            if wanted is not None and base != wanted:
                continue
            if len(bases[blueprint] - {base}) < min_peers:
                continue
            peers = [m for b, m in means.items() if b != base]
            if not peers:
                continue
            peer_mean = sum(peers) / len(peers)
            ranked = sorted(means.values(), reverse=True)
            found.append(
                {
                    "run": where[(blueprint, prompt)],
                    "blueprint": blueprint,
                    "prompt": prompt,
                    "model": base,
                    "score": mean,
                    "peerMean": peer_mean,
                    "peers": len(peers),
                    "delta": round(mean - peer_mean, 9),
                    "rank": ranked.index(mean) + 1,
                }
            )
    found.sort(key=_delta_key)
    return found


def _delta_key(delta: Mapping[str, Any]) -> tuple[Any, ...]:
    return (float(delta["delta"]), delta["model"], delta["blueprint"], delta["prompt"])


def delta_lines(found: Sequence[Mapping[str, Any]]) -> list[str]:
    """The terminal's list of :func:`deltas`."""
    if not found:
        return ["no deltas: no prompt of the latest runs was scored for a model and a peer"]
    lines = [f"{len(found)} prompt x model score{'' if len(found) == 1 else 's'} against the peers' mean, worst first:"]
    for d in found:
        lines.append(
            f"  {d['delta']:+.2f}  {d['model']} {d['score']:.2f} vs {d['peerMean']:.2f} ({d['peers']} peers, "
            f"rank {d['rank']})  {d['blueprint']} prompt {d['prompt']}"
        )
    return lines


@dataclasses.dataclass(frozen=True)
class RunAnalyses:
    """The analyses of one run against its store's history, as the HTML report shows them: the
    regressions since ``previous`` (the run recorded before it), and the run's own pain points
    and deltas (its blueprints' newest run is itself). Each list at most ``limit`` long, worst
    first, as the commands order them; ``totals`` says how many there were before the cap."""

    previous: RunRecord
    regressions: list[dict[str, Any]]
    pain_points: list[dict[str, Any]]
    deltas: list[dict[str, Any]]
    totals: Mapping[str, int]
    limit: int


class RunAnalysis:
    """``history regressions`` (the newest run against ``previous``), ``history pain-points``
    and ``history deltas`` with their defaults, for this run's blueprints, built as the run's
    items come: ``pair`` each item of ``previous`` with this run's of its node id, and
    give this run's items a blueprint at a time (``blueprint``: all of one blueprint id's), so
    neither run's items are ever all in memory. The same functions the commands call, and the
    same lists: each cut to ``limit``, worst first, as the commands order them."""

    def __init__(self, previous: RunRecord, *, limit: int = PAIN_LIMIT):
        self.previous = previous
        self.limit = limit
        self._regressions = Worst(_regression_key, limit)
        self._pains = Worst(_pain_key, limit)
        self._deltas = Worst(_delta_key, limit)

    def pair(self, old: ItemRecord, new: ItemRecord) -> None:
        self._regressions.add(change for change in moves(old, new) if change["delta"] < 0)

    def blueprint(self, current: RunRecord, items: Sequence[ItemRecord]) -> None:
        self._pains.add(pain_points([current], lambda _run_id: items, limit=len(items)))
        self._deltas.add(deltas([current], lambda _run_id: items))

    def analyses(self) -> RunAnalyses:
        return RunAnalyses(
            previous=self.previous,
            regressions=self._regressions.first(),
            pain_points=self._pains.first(),
            deltas=self._deltas.first(),
            totals={
                "regressions": self._regressions.total,
                "painPoints": self._pains.total,
                "deltas": self._deltas.total,
            },
            limit=self.limit,
        )


def run_analyses(
    previous: RunRecord,
    previous_items: Sequence[ItemRecord],
    current: RunRecord,
    current_items: Sequence[ItemRecord],
    *,
    limit: int = PAIN_LIMIT,
) -> RunAnalyses:
    """``RunAnalysis`` of two runs' items held whole."""
    analysis = RunAnalysis(previous, limit=limit)
    now = {item.nodeid: item for item in current_items}
    for old in previous_items:
        new = now.get(old.nodeid)
        if new is not None:
            analysis.pair(old, new)
    by_blueprint: dict[str, list[ItemRecord]] = {}
    for item in current_items:
        by_blueprint.setdefault(item.blueprint, []).append(item)
    for items in by_blueprint.values():
        analysis.blueprint(current, items)
    return analysis.analyses()
