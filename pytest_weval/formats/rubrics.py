"""The keys of ``llm_judge`` and ``rubric`` evaluators: the judge target, the prompt (inline or a
file), the rubrics and their score ranges (docs/agent-formats.md §1.6, §1.7, §2.6, §2.7, §4).

Rubric ``required`` (docs/agent-formats.md §2.11, item 2): a string rubric is required in
every dialect (AgentV; the spec does not say). A checklist rubric object without ``required``
is required in AgentV files (classic and transitional) and not required in AgentEvals files
(the spec's default, false). A score-range rubric is required only when it says so:
``required_min_score: n``, or ``required: true``, which means ``required_min_score: 10`` (as
AgentV reads it).

Inline ``rubrics`` of a case are read here too (:func:`parse_rubrics`).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from pytest_weval.formats.context import (
    Context,
    Problem,
    describe,
    first_text,
    is_number,
    join_field,
    parse_weight,
    text_value,
)
from pytest_weval.formats.model import Rubric, ScoreRange

LLM_JUDGE_KEYS = frozenset(("prompt", "rubrics", "target"))
RUBRIC_KEYS = frozenset(("rubrics", "criteria", "target"))
_PROMPT_SUFFIXES = (".md", ".markdown", ".txt", ".prompt", ".j2", ".jinja", ".jinja2", ".tmpl", ".hbs", ".mustache")


# --- the judge and the prompt ---------------------------------------------------------------------


def judge_fields(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> dict[str, Any]:
    """The fields an ``llm_judge`` or a ``rubric`` evaluator reads beyond the common keys."""
    fields: dict[str, Any] = {}
    if raw.get("target") is not None:
        judge = text_value(raw["target"])
        if not judge:
            raise ctx.problem_key(
                raw,
                "target",
                join_field(field, "target"),
                f"`target` must name a target, not {describe(raw['target'])}",
            )
        fields["judge"] = judge
    if kind == "llm_judge" and raw.get("prompt") is not None:
        fields["prompt"], fields["prompt_path"] = _prompt(ctx, raw, join_field(field, "prompt"))
    rubrics_key = "rubrics" if raw.get("rubrics") is not None else "criteria" if kind == "rubric" else None
    if rubrics_key is not None and raw.get(rubrics_key) is not None:
        fields["rubrics"] = parse_rubrics(ctx, raw, rubrics_key, join_field(field, rubrics_key), inline=False)
    elif kind == "rubric":
        raise ctx.problem_at(
            raw,
            field,
            "the rubric evaluator has no `rubrics`",
            hint="list the criteria under `rubrics:` (or `criteria:` with `type: rubrics`)",
        )
    return fields


def _prompt(ctx: Context, raw: dict[str, Any], field: str) -> tuple[str, str | None]:
    """``prompt``: inline text, or a path to a file (found like a file block). A path that
    names no file is the case's problem, where AgentV would quietly judge with the path text."""
    prompt = raw["prompt"]
    if isinstance(prompt, dict):
        raise ctx.problem_key(
            raw,
            "prompt",
            field,
            "a prompt given as a program (`script` / `command`) is not supported",
            hint="write the prompt inline, or in a file named by `prompt: path/to/prompt.md`",
        )
    if not isinstance(prompt, str):
        raise ctx.problem_key(raw, "prompt", field, f"`prompt` must be text or a file path, not {describe(prompt)}")
    if not _looks_like_path(prompt):
        return prompt, None
    path, why = ctx.find_file(prompt.strip(), ancestors=True)
    if path is None:
        raise ctx.problem_key(
            raw,
            "prompt",
            field,
            f"prompt file {prompt.strip()!r} cannot be used: {why}",
            hint="add the file, or fix the path (relative to the eval file's folder or one above it; "
            "a leading / is the rootdir)",
        )
    text, why = ctx.read_text(path)
    if text is None:
        raise ctx.problem_key(raw, "prompt", field, f"prompt file {prompt.strip()!r} {why}")
    return text, str(path)


def _looks_like_path(text: str) -> bool:
    """One line, no spaces, no template, and a file suffix or a folder in it."""
    stripped = text.strip()
    if not stripped or "\n" in stripped or " " in stripped or "{{" in stripped:
        return False
    if stripped.startswith("file://"):
        return True
    return stripped.lower().endswith(_PROMPT_SUFFIXES) or ("/" in stripped and "." in stripped.rsplit("/", 1)[-1])


# --- rubrics and score ranges ---------------------------------------------------------------------


def parse_rubrics(ctx: Context, owner: Any, key: str, field: str, *, inline: bool) -> tuple[Rubric, ...]:
    value = owner[key]
    if not isinstance(value, list) or not value:
        raise ctx.problem_key(
            owner,
            key,
            field,
            f"`{key}` must be a non-empty list of rubrics, not {describe(value)}",
            hint="list criteria as text (`- Mentions X`) or objects with `id`, `outcome`, `weight`",
        )
    rubrics = [_rubric(ctx, value, index, join_field(field, index)) for index in range(len(value))]
    seen: dict[str, int] = {}
    for index, rubric in enumerate(rubrics):
        if rubric.id in seen:
            raise ctx.problem_item(
                value,
                index,
                join_field(field, index),
                f"rubric id {rubric.id!r} is used twice (also item {seen[rubric.id] + 1})",
                hint="give each rubric its own `id`: the judge answers per id",
            )
        seen[rubric.id] = index
    return tuple(rubrics)


def _rubric(ctx: Context, seq: list[Any], index: int, field: str) -> Rubric:
    raw = seq[index]
    default_id = f"rubric-{index + 1}"
    if isinstance(raw, str):
        if not raw.strip():
            raise ctx.problem_item(seq, index, field, "a rubric is empty", hint="write what the answer must do")
        return Rubric(id=default_id, outcome=raw, required=True, location=ctx.where.item(seq, index, field))
    if not isinstance(raw, dict):
        raise ctx.problem_item(seq, index, field, f"a rubric must be text or a mapping, not {describe(raw)}")
    rubric_id = text_value(raw.get("id")) or default_id
    outcome = first_text(raw, ("outcome", "expected_outcome", "description"))
    weight = parse_weight(ctx, raw, field)
    required = raw.get("required")
    if required is not None and not isinstance(required, bool):
        raise ctx.problem_key(
            raw,
            "required",
            join_field(field, "required"),
            f"a rubric's `required` must be true or false, not {describe(required)}",
        )
    min_score = raw.get("required_min_score")
    if min_score is not None and not (is_number(min_score) and float(min_score).is_integer() and 0 <= min_score <= 10):
        raise ctx.problem_key(
            raw,
            "required_min_score",
            join_field(field, "required_min_score"),
            f"`required_min_score` must be a whole number 0..10, not {describe(min_score)}",
        )
    minimum = int(min_score) if min_score is not None else None
    location = ctx.where.at(raw, field)
    if raw.get("score_ranges") is not None:
        ranges = _score_ranges(ctx, raw, join_field(field, "score_ranges"))
        if minimum is None and required is True:
            minimum = 10
        return Rubric(
            id=rubric_id,
            outcome=outcome or "",
            weight=weight,
            required=minimum is not None,
            required_min_score=minimum,
            score_ranges=ranges,
            location=location,
        )
    if not outcome.strip():
        raise ctx.problem_at(
            raw,
            field,
            f"rubric {rubric_id!r} says nothing to check",
            hint="write the criterion under `outcome:` (or `expected_outcome:`), or give `score_ranges`",
        )
    if required is None:
        required = ctx.dialect != "agentevals"
    return Rubric(
        id=rubric_id,
        outcome=outcome,
        weight=weight,
        required=required,
        required_min_score=minimum,
        location=location,
    )


def _score_ranges(ctx: Context, rubric: dict[str, Any], field: str) -> tuple[ScoreRange, ...]:
    """The list form ``[{score_range: [lo, hi], outcome}]`` or the shorthand map
    ``{0: ..., 3: ..., 7: ..., 10: ...}`` (each key the lower bound of a band that ends before
    the next key, the last at 10; it must start at 0). Every integer 0..10 must be covered once."""
    value = rubric["score_ranges"]
    ranges: list[tuple[ScoreRange, Any]] = []  # with where it was written
    if isinstance(value, dict):
        bounds: list[tuple[int, str, str]] = []
        for key, text in value.items():
            where_key = join_field(field, str(key))
            if not re.fullmatch(r"\d+", str(key)) or int(key) > 10:
                raise Problem(
                    f"score_ranges key {key!r} is not a whole number 0..10",
                    ctx.where.key(value, key, where_key),
                    hint="each key is the lowest score of its band: `0: ...`, `5: ...`, `10: ...`",
                )
            described = text_value(text)
            if not described or not described.strip():
                raise Problem(f"score_ranges band {key} says nothing", ctx.where.key(value, key, where_key))
            bounds.append((int(key), described, str(key)))
        bounds.sort()
        if not bounds or bounds[0][0] != 0:
            raise ctx.problem_key(
                rubric,
                "score_ranges",
                field,
                f"the score_ranges shorthand must start at 0 (it starts at {bounds[0][0] if bounds else 'nothing'})",
                hint="add a `0:` band for the lowest scores",
            )
        for position, (low, described, key) in enumerate(bounds):
            high = bounds[position + 1][0] - 1 if position + 1 < len(bounds) else 10
            ranges.append((ScoreRange(low=low, high=high, outcome=described), key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            item_field = join_field(field, index)
            if not isinstance(item, dict):
                raise ctx.problem_item(
                    value, index, item_field, f"a score range must be a mapping, not {describe(item)}"
                )
            band = item.get("score_range")
            if (
                not isinstance(band, list)
                or len(band) != 2
                or not all(is_number(b) and float(b).is_integer() and 0 <= b <= 10 for b in band)
                or band[0] > band[1]
            ):
                raise ctx.problem_item(
                    value,
                    index,
                    item_field,
                    f"`score_range` must be [low, high], whole numbers 0..10 with low <= high (got {band!r})",
                )
            described = first_text(item, ("outcome", "expected_outcome", "description"))
            if not described.strip():
                raise ctx.problem_item(
                    value, index, item_field, f"score range {band!r} says nothing", hint="add `outcome:`"
                )
            ranges.append((ScoreRange(low=int(band[0]), high=int(band[1]), outcome=described), index))
    else:
        raise ctx.problem_key(
            rubric,
            "score_ranges",
            field,
            f"`score_ranges` must be a map of bands or a list of ranges, not {describe(value)}",
            hint="e.g. `score_ranges: {0: Wrong, 5: Partly right, 10: Fully right}`",
        )
    ordered = sorted(ranges, key=lambda pair: pair[0].low)
    for (previous, _), (current, place) in itertools.pairwise(ordered):
        if current.low <= previous.high:
            raise _range_problem(
                ctx,
                value,
                place,
                field,
                f"score ranges [{previous.low}, {previous.high}] and [{current.low}, {current.high}] overlap",
            )
    covered = {score for band, _ in ranges for score in range(band.low, band.high + 1)}
    missing = [score for score in range(11) if score not in covered]
    if missing:
        raise ctx.problem_key(
            rubric,
            "score_ranges",
            field,
            f"score_ranges leave scores {', '.join(map(str, missing))} uncovered; the bands must cover every whole score 0..10",
            hint="widen or add bands so that each score from 0 to 10 falls in exactly one",
        )
    return tuple(band for band, _ in ranges)


def _range_problem(ctx: Context, value: Any, place: Any, field: str, message: str) -> Problem:
    if isinstance(place, int):
        return ctx.problem_item(value, place, join_field(field, place), message)
    return Problem(message, ctx.where.key(value, place, join_field(field, place)))
