"""Inter-judge agreement: Krippendorff's alpha, interval metric (docs/judges.md, 'Agreement')."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pytest_weval.results import Point

from .config import APPROACHES, BACKUP_JUDGE, DEFAULT_JUDGES, JudgeSpec

__all__ = ["judge_agreement", "krippendorff_interval", "run_judge_agreement"]

# Above this many pooled scores the expected disagreement uses the closed form instead of the
# reference's double loop (same value up to float rounding; the alpha is rounded to 3 places).
_PAIRWISE_LIMIT = 2000


def _round3(x: float) -> float:
    value = float(Decimal(x).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))
    return 0.0 if value == 0 else value  # JSON.stringify(-0) is "0"


def _split_label(label: str) -> tuple[str, str | None]:
    """``id(model)`` -> (``id``, ``model``); the judge id is the text before the first ``(``."""
    head, sep, rest = label.partition("(")
    if not sep:
        return head, None
    return head, rest[:-1] if rest.endswith(")") else rest


def _items(assessments: Iterable[Point]) -> list[list[tuple[float, str, str | None]]]:
    items = []
    for assessment in assessments:
        judgements = assessment.individual_judgements or []
        if len(judgements) < 2:
            continue
        scores = []
        for j in judgements:
            value = j.coverage_extent
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            judge_id, model = _split_label(j.judge_model_id)
            scores.append((float(value), judge_id, model))
        if len(scores) >= 2:
            items.append(scores)
    return items


def _pooled_pair_mean(values: Sequence[float]) -> tuple[float, int]:
    """(mean of (a-b)^2 over all unordered pairs, number of pairs)."""
    n = len(values)
    pairs = n * (n - 1) // 2
    if pairs == 0:
        return 0.0, 0
    if n <= _PAIRWISE_LIMIT:
        total = 0.0
        for i in range(n):
            a = values[i]
            for j in range(i + 1, n):
                d = a - values[j]
                total += d * d
        return total / pairs, pairs
    if max(values) == min(values):
        return 0.0, pairs
    mean = math.fsum(values) / n
    total = n * math.fsum((v - mean) ** 2 for v in values)  # = sum over pairs of (a-b)^2
    return total / pairs, pairs


def krippendorff_interval(items: Sequence[Sequence[float]]) -> tuple[float, str, int]:
    """(alpha rounded to 3 places, interpretation, within-item comparisons) for scored items."""
    observed = 0.0
    comparisons = 0
    for scores in items:
        for i in range(len(scores)):
            for j in range(i + 1, len(scores)):
                d = scores[i] - scores[j]
                observed += d * d
                comparisons += 1
    pooled = [v for scores in items for v in scores]
    expected, pairs = _pooled_pair_mean(pooled)
    if comparisons == 0 or pairs == 0 or expected == 0:
        return 1.0, "reliable", comparisons
    observed /= comparisons
    alpha = 1 - observed / expected
    mean = sum(pooled) / len(pooled)
    variance = sum((v - mean) ** 2 for v in pooled) / len(pooled)
    if alpha >= 0.8:
        interpretation = "reliable"
    elif alpha >= 0.667:
        interpretation = "tentative"
    elif abs(alpha) < 0.1 and variance < 0.02:
        interpretation = "unstable"  # judges agree closely but alpha is ill-conditioned
    else:
        interpretation = "unreliable"
    return _round3(alpha), interpretation, comparisons


def _describe_judge(judge_id: str, model: str | None, known: Sequence[JudgeSpec]) -> tuple[str, str]:
    for spec in known:
        if spec.id and spec.id == judge_id:
            return spec.model, spec.approach
    if judge_id in APPROACHES and model is not None:  # a judge without id: "approach(model)"
        return model, judge_id
    for spec in known:  # the reference's fallback: a model containing the id
        if judge_id and judge_id in spec.model:
            return spec.model, spec.approach
    # Not a known judge (e.g. --weval-judges without the panel): the label still names the
    # model, and ids made by select_judges start with the approach.
    approach = next((a for a in APPROACHES if judge_id.startswith(a + "-")), "unknown")
    return (model or "unknown"), approach


def judge_agreement(
    assessments: Iterable[Point],
    judges: Sequence[JudgeSpec] | None = None,
) -> dict[str, Any] | None:
    """Weval's ``judgeAgreement`` for one (prompt, model), or None when no point had 2+ judges.

    ``judges`` (the panel) helps fill ``judgesUsed``; the defaults and the backup judge are always
    known.
    """
    items = _items(assessments)
    if not items:
        return None
    alpha, interpretation, comparisons = krippendorff_interval([[v for v, _, _ in it] for it in items])

    judge_ids = sorted({judge_id for it in items for _, judge_id, _ in it})
    fingerprint = hashlib.sha256(",".join(judge_ids).encode("utf-8")).hexdigest()[:12]

    counts: dict[str, int] = {}
    models: dict[str, str | None] = {}
    for it in items:
        for _, judge_id, model in it:
            counts[judge_id] = counts.get(judge_id, 0) + 1
            models.setdefault(judge_id, model)
    known = list(judges or ()) + list(DEFAULT_JUDGES) + [BACKUP_JUDGE]
    used: list[dict[str, Any]] = []
    for judge_id, count in counts.items():  # first-seen order, then a stable sort by count
        model, approach = _describe_judge(judge_id, models[judge_id], known)
        used.append({"judgeId": judge_id, "model": model, "approach": approach, "assessmentCount": count})
    used.sort(key=lambda entry: -entry["assessmentCount"])

    return {
        "krippendorffsAlpha": alpha,
        "numItems": len(items),
        "numJudges": len(items[0]),
        "numComparisons": comparisons,
        "interpretation": interpretation,
        "judgeSetFingerprint": fingerprint,
        "judgesUsed": used,
    }


def run_judge_agreement(
    assessment_groups: Iterable[Iterable[Point]],
    judges: Sequence[JudgeSpec] | None = None,
) -> dict[str, Any] | None:
    """Agreement over a whole run: the items of every (prompt, model) pooled into one alpha.

    ``assessment_groups`` is one iterable of assessments per item (e.g. each ``ItemResult.points``).
    """
    pooled: list[Point] = []
    for group in assessment_groups:
        pooled.extend(group)
    return judge_agreement(pooled, judges)
