"""Evaluators and rubrics of agent eval files (docs/agent-formats.md §1.5-§1.7, §2.4, §2.6, §2.7, §4).

Types are read with ``-`` as ``_`` (v2.14 kebab-case), ``rubrics`` as ``rubric`` (with its
``criteria`` list), and v3's ``*_grader`` as ``*_judge``. Keys a type does not name, and a
``config`` mapping, become the evaluator's ``config``. Every mistake is a located ``Problem``
of the case that uses the evaluator.

Rubric ``required`` (docs/agent-formats.md §2.11, item 2): a string rubric is required in
every dialect (AgentV; the spec does not say). A checklist rubric object without ``required``
is required in AgentV files (classic and transitional) and not required in AgentEvals files
(the spec's default, false). A score-range rubric is required only when it says so:
``required_min_score: n``, or ``required: true``, which means ``required_min_score: 10`` (as
AgentV reads it).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, cast

from pytest_weval.formats.context import (
    Context,
    Problem,
    describe,
    finite_number,
    first_text,
    is_number,
    join_field,
    text_value,
)
from pytest_weval.formats.model import Aggregator, Evaluator, ExpectedToolCall, Rubric, ScoreRange
from pytest_weval.scoring.regex_js import check_pattern_syntax

SUPPORTED_TYPES = (
    "llm_judge",
    "rubric",
    "code_judge",
    "tool_trajectory",
    "composite",
    "contains",
    "regex",
    "equals",
    "is_json",
)
TYPE_ALIASES = {"rubrics": "rubric", "code_grader": "code_judge", "llm_grader": "llm_judge"}
# AgentV / AgentEvals types this plugin does not run (a case using one is an error that says so).
NOT_RUN_TYPES = (
    "field_accuracy",
    "latency",
    "cost",
    "token_usage",
    "execution_metrics",
    "skill_trigger",
    "agent_judge",
)
TRAJECTORY_MODES = ("any_order", "in_order", "exact", "subset", "superset")
ARGS_MATCH_MODES = ("exact", "superset", "subset", "ignore")
AGGREGATORS = ("weighted_average", "minimum", "maximum", "safety_gate", "all_or_nothing", "threshold")

_COMMON_KEYS = frozenset(("name", "type", "weight", "required", "negate", "config"))
_TYPE_KEYS: dict[str, frozenset[str]] = {
    "contains": frozenset(("value",)),
    "regex": frozenset(("value",)),
    "equals": frozenset(("value",)),
    "is_json": frozenset(),
    "llm_judge": frozenset(("prompt", "rubrics", "target")),
    "rubric": frozenset(("rubrics", "criteria", "target")),
    "code_judge": frozenset(("command", "script", "cwd", "timeout_seconds", "timeout_ms")),
    "tool_trajectory": frozenset(("mode", "minimums", "expected", "args_match", "argsMatch")),
    "composite": frozenset(("evaluators", "assert", "aggregator")),
}
_PROMPT_SUFFIXES = (".md", ".markdown", ".txt", ".prompt", ".j2", ".jinja", ".jinja2", ".tmpl", ".hbs", ".mustache")
_SCRIPT_SUFFIXES = (".py", ".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".sh", ".bash", ".rb", ".pl", ".php", ".lua")
_TYPE_SPELLING = re.compile(r"[-\s]+")


def normalise_type(written: str) -> str:
    kind = _TYPE_SPELLING.sub("_", written.strip().lower())
    return TYPE_ALIASES.get(kind, kind)


def default_args_match(ctx: Context) -> str:
    """``exact`` for AgentV v2.7-style files, ``superset`` (partial) for classic and AgentEvals
    files (docs/agent-formats.md §5.4)."""
    return "exact" if ctx.dialect == "agentv" else "superset"


def parse_evaluator_list(ctx: Context, owner: Any, key: str, field: str) -> tuple[Evaluator, ...]:
    value = owner[key]
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ctx.problem_key(
            owner,
            key,
            field,
            f"`{key}` must be a list of evaluators, not {describe(value)}",
            hint="write `- type: ...` entries",
        )
    return tuple(parse_evaluator(ctx, value, index, join_field(field, index)) for index in range(len(value)))


def parse_evaluator(ctx: Context, seq: list[Any], index: int, field: str) -> Evaluator:
    raw = seq[index]
    if not isinstance(raw, dict):
        raise ctx.problem_item(
            seq,
            index,
            field,
            f"an evaluator must be a mapping with `type`, not {describe(raw)}",
            hint="write `- type: llm_judge` (or contains, regex, code_judge, ...) with its fields",
        )
    written_type = raw.get("type")
    if not isinstance(written_type, str) or not written_type.strip():
        if "type" not in raw:
            raise ctx.problem_at(
                raw, field, "an evaluator has no `type`", hint=f"add `type:` ({', '.join(SUPPORTED_TYPES)})"
            )
        raise ctx.problem_key(
            raw, "type", join_field(field, "type"), f"`type` must be text, not {describe(written_type)}"
        )
    kind = normalise_type(written_type)
    if kind not in SUPPORTED_TYPES:
        known = kind in NOT_RUN_TYPES
        raise ctx.problem_key(
            raw,
            "type",
            join_field(field, "type"),
            f"evaluator type {written_type!r} is {'an AgentV type this plugin does not run' if known else 'unknown'}",
            hint=f"use one of {', '.join(SUPPORTED_TYPES)}"
            + ("" if known else " (kebab-case and `rubrics` are read too)"),
        )
    name = _name(ctx, raw, kind, field)
    common: dict[str, Any] = {
        "name": name,
        "type": kind,
        "weight": parse_weight(ctx, raw, field),
        "required": _required(ctx, raw, field),
        "negate": _negate(ctx, raw, field),
        "config": _config(ctx, raw, kind, field),
        "location": ctx.where.at(raw, field),
    }
    if kind in ("contains", "regex", "equals"):
        common["value"] = _value(ctx, raw, kind, field)
    elif kind in ("llm_judge", "rubric"):
        common.update(_judge_fields(ctx, raw, kind, field))
    elif kind == "code_judge":
        common.update(_code_judge_fields(ctx, raw, field))
    elif kind == "tool_trajectory":
        common.update(_trajectory_fields(ctx, raw, field))
    elif kind == "composite":
        common.update(_composite_fields(ctx, raw, field))
    return Evaluator(**common)


# --- common keys -----------------------------------------------------------------------------------


def _name(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> str:
    if raw.get("name") is not None:
        name = text_value(raw["name"])
        if not name or not name.strip():
            raise ctx.problem_key(
                raw, "name", join_field(field, "name"), f"`name` must be text, not {describe(raw['name'])}"
            )
        return name
    value = text_value(raw.get("value"))
    if kind in ("contains", "equals"):
        return f"{kind}-{value}" if value else kind
    if kind == "regex":
        return f"regex-{value[:30]}" if value else kind
    if kind == "rubric":
        return "rubrics"  # as AgentV names it; inline `rubrics` make the evaluator named "rubric"
    return kind


def parse_weight(ctx: Context, raw: dict[str, Any], field: str) -> float:
    """``weight``: a finite number >= 0, 1 when absent (0 keeps an evaluator as information)."""
    weight = raw.get("weight")
    if weight is None:
        return 1.0
    if not finite_number(weight) or weight < 0:
        why = (
            "must be a number"
            if not is_number(weight)
            else "must be finite"
            if not finite_number(weight)
            else "must be >= 0"
        )
        raise ctx.problem_key(
            raw,
            "weight",
            join_field(field, "weight"),
            f"`weight` {why} (got {describe(weight)})",
            hint="write a number >= 0, e.g. `weight: 2` (0 keeps it as information only)",
        )
    return float(weight)


def _required(ctx: Context, raw: dict[str, Any], field: str) -> float | None:
    """``required: true`` is 0.8; a number in (0, 1] is the score the evaluator must reach."""
    required = raw.get("required")
    if required is None or required is False:
        return None
    if required is True:
        return 0.8
    if finite_number(required) and 0 < required <= 1:
        return float(required)
    raise ctx.problem_key(
        raw,
        "required",
        join_field(field, "required"),
        f"`required` must be true, false or a score in (0, 1], not {describe(required)}",
        hint="`required: true` means the evaluator must score at least 0.8",
    )


def _negate(ctx: Context, raw: dict[str, Any], field: str) -> bool:
    negate = raw.get("negate")
    if negate is None:
        return False
    if not isinstance(negate, bool):
        raise ctx.problem_key(
            raw, "negate", join_field(field, "negate"), f"`negate` must be true or false, not {describe(negate)}"
        )
    return negate


def _config(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if raw.get("config") is not None:
        if not isinstance(raw["config"], dict):
            raise ctx.problem_key(
                raw, "config", join_field(field, "config"), f"`config` must be a mapping, not {describe(raw['config'])}"
            )
        config.update(raw["config"])
    known = _COMMON_KEYS | _TYPE_KEYS[kind]
    config.update({key: value for key, value in raw.items() if key not in known})
    return config


def _value(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> str:
    if raw.get("value") is None:
        raise ctx.problem_at(
            raw, field, f"the {kind} evaluator has no `value`", hint="write `value:` with the text to look for"
        )
    value = text_value(raw["value"])
    if value is None:
        raise ctx.problem_key(
            raw, "value", join_field(field, "value"), f"`value` must be text, not {describe(raw['value'])}"
        )
    if kind == "regex":
        error = check_pattern_syntax(value)
        if error:
            raise ctx.problem_key(
                raw,
                "value",
                join_field(field, "value"),
                f"invalid regular expression {value!r}: {error}",
                hint="the pattern is an ECMAScript (JavaScript) regular expression",
            )
    return value


# --- llm_judge and rubric --------------------------------------------------------------------------


def _judge_fields(ctx: Context, raw: dict[str, Any], kind: str, field: str) -> dict[str, Any]:
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


# --- code_judge ------------------------------------------------------------------------------------


def _code_judge_fields(ctx: Context, raw: dict[str, Any], field: str) -> dict[str, Any]:
    key = "command" if raw.get("command") is not None else "script" if raw.get("script") is not None else None
    if key is None:
        raise ctx.problem_at(
            raw,
            field,
            "the code_judge has no `command` (or `script`)",
            hint='write the program as a list, e.g. `command: ["python", "judges/check.py"]`',
        )
    written = raw[key]
    command: tuple[str, ...] | str
    if isinstance(written, str):
        if not written.strip():
            raise ctx.problem_key(raw, key, join_field(field, key), f"`{key}` is empty")
        command = written.strip()
    elif isinstance(written, list) and written and all(isinstance(a, str) and a.strip() for a in written):
        command = tuple(written)
    else:
        raise ctx.problem_key(
            raw,
            key,
            join_field(field, key),
            f"`{key}` must be a list of non-empty arguments (argv) or a shell command line, not {describe(written)}",
            hint='e.g. `command: ["python", "judges/check.py"]`',
        )
    cwd = ctx.file_dir
    if raw.get("cwd") is not None:
        written_cwd = text_value(raw["cwd"])
        found, why = ctx.find_dir(written_cwd) if written_cwd else (None, f"it is {describe(raw['cwd'])}")
        if found is None:
            raise ctx.problem_key(
                raw,
                "cwd",
                join_field(field, "cwd"),
                f"cwd {raw['cwd']!r} cannot be used: {why}",
                hint="name a folder relative to the eval file",
            )
        cwd = found
    if isinstance(command, tuple):
        _check_script(ctx, raw, key, join_field(field, key), command, cwd)
    return {"command": command, "cwd": str(cwd), "timeout_s": _timeout(ctx, raw, field)}


def _check_script(ctx: Context, raw: dict[str, Any], key: str, field: str, argv: tuple[str, ...], cwd: Path) -> None:
    """A script file the argv names (``check.py``, ``../scripts/x.ts``, ``./judge.sh``) must
    exist below ``cwd``: a missing one is the case's problem now, not a failed run later."""
    for position, arg in enumerate(argv):
        looks_like_script = not arg.startswith("-") and " " not in arg and arg.lower().endswith(_SCRIPT_SUFFIXES)
        if position == 0:
            looks_like_script = looks_like_script or arg.startswith(("./", "../"))
        if not looks_like_script:
            continue
        if position > 0 and argv[position - 1] in ("-c", "-e", "--eval"):
            continue
        path = (cwd / arg).resolve() if not Path(arg).is_absolute() else Path(arg)
        if not path.is_file():
            raise ctx.problem_key(
                raw,
                key,
                field,
                f"the code judge's script {arg!r} does not exist (looked for {ctx.display(path)})",
                hint="add the script, or fix its path (relative to the judge's cwd, by default the eval file's folder)",
            )


def _timeout(ctx: Context, raw: dict[str, Any], field: str) -> float | None:
    for key, scale in (("timeout_seconds", 1.0), ("timeout_ms", 0.001)):
        if raw.get(key) is not None:
            value = raw[key]
            if not finite_number(value) or value <= 0:
                raise ctx.problem_key(
                    raw, key, join_field(field, key), f"`{key}` must be a number > 0, not {describe(value)}"
                )
            return float(value) * scale
    return None


# --- tool_trajectory -------------------------------------------------------------------------------


def _trajectory_fields(ctx: Context, raw: dict[str, Any], field: str) -> dict[str, Any]:
    if raw.get("mode") is None:
        if ctx.dialect != "agentevals":
            raise ctx.problem_at(
                raw,
                field,
                "the tool_trajectory evaluator has no `mode`",
                hint=f"add `mode:` ({', '.join(TRAJECTORY_MODES)})",
            )
        mode = "any_order"  # the AgentEvals spec's default
    else:
        written = raw["mode"]
        mode = _TYPE_SPELLING.sub("_", written.strip().lower()) if isinstance(written, str) else ""
        if mode not in TRAJECTORY_MODES:
            raise ctx.problem_key(
                raw,
                "mode",
                join_field(field, "mode"),
                f"unknown tool_trajectory mode {written!r}",
                hint=f"a mode is one of {', '.join(TRAJECTORY_MODES)}",
            )
    minimums: dict[str, int] | None = None
    if raw.get("minimums") is not None:
        written_minimums = raw["minimums"]
        if not isinstance(written_minimums, dict):
            raise ctx.problem_key(
                raw,
                "minimums",
                join_field(field, "minimums"),
                f"`minimums` must map tool names to counts, not {describe(written_minimums)}",
            )
        minimums = {}
        for tool, count in written_minimums.items():
            if not (is_number(count) and float(count).is_integer() and count >= 0):
                raise Problem(
                    f"the minimum for tool {tool!r} must be a whole number >= 0, not {describe(count)}",
                    ctx.where.key(written_minimums, tool, join_field(join_field(field, "minimums"), str(tool))),
                )
            minimums[str(tool)] = int(count)
    expected: tuple[ExpectedToolCall, ...] | None = None
    if raw.get("expected") is not None:
        written_expected = raw["expected"]
        if not isinstance(written_expected, list):
            raise ctx.problem_key(
                raw,
                "expected",
                join_field(field, "expected"),
                f"`expected` must be a list of tool calls, not {describe(written_expected)}",
            )
        expected = tuple(
            _expected_call(ctx, written_expected, index, join_field(join_field(field, "expected"), index))
            for index in range(len(written_expected))
        )
    args_key = "args_match" if "args_match" in raw else "argsMatch"
    args_match = (
        _args_match(ctx, raw, args_key, join_field(field, args_key))
        if raw.get(args_key) is not None
        else default_args_match(ctx)
    )
    if mode == "any_order" and minimums is None:
        if expected and ctx.dialect == "agentevals":
            # The spec's any_order: every expected tool called (as often as it is listed).
            minimums = {}
            for call in expected:
                minimums[call.tool] = minimums.get(call.tool, 0) + 1
        else:
            raise ctx.problem_at(
                raw,
                field,
                "tool_trajectory mode any_order needs `minimums`",
                hint="e.g. `minimums: {search: 2}` (each tool and how often it must be called at least)",
            )
    if mode != "any_order" and expected is None:
        raise ctx.problem_at(
            raw,
            field,
            f"tool_trajectory mode {mode} needs `expected`",
            hint="list the calls: `expected: [{tool: search}, {tool: summarize}]`",
        )
    return {"mode": mode, "minimums": minimums or {}, "expected": expected or (), "args_match": args_match}


def _expected_call(ctx: Context, seq: list[Any], index: int, field: str) -> ExpectedToolCall:
    raw = seq[index]
    if isinstance(raw, str) and raw.strip():
        return ExpectedToolCall(tool=raw)
    if not isinstance(raw, dict):
        raise ctx.problem_item(
            seq, index, field, f"an expected tool call must be a mapping with `tool`, not {describe(raw)}"
        )
    tool = text_value(raw.get("tool", raw.get("name")))
    if not tool:
        raise ctx.problem_at(raw, field, "an expected tool call has no `tool`", hint="write `- tool: <name>`")
    args = raw.get("args")
    if args is not None and not isinstance(args, dict) and args != "any":
        raise ctx.problem_key(
            raw, "args", join_field(field, "args"), f"`args` must be a mapping or `any`, not {describe(args)}"
        )
    duration = raw.get("max_duration_ms", raw.get("maxDurationMs"))
    if duration is not None and (not finite_number(duration) or duration < 0):
        raise ctx.problem_at(
            raw,
            join_field(field, "max_duration_ms"),
            f"`max_duration_ms` must be a number >= 0, not {describe(duration)}",
        )
    args_key = "args_match" if "args_match" in raw else "argsMatch"
    args_match = _args_match(ctx, raw, args_key, join_field(field, args_key)) if raw.get(args_key) is not None else None
    return ExpectedToolCall(
        tool=tool,
        args=args,
        max_duration_ms=float(duration) if duration is not None else None,
        args_match=args_match,
    )


def _args_match(ctx: Context, raw: dict[str, Any], key: str, field: str) -> str | tuple[str, ...]:
    value = raw[key]
    if isinstance(value, str) and value in ARGS_MATCH_MODES:
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ctx.problem_key(
        raw,
        key,
        field,
        f"`{key}` must be {', '.join(ARGS_MATCH_MODES)} or a list of argument paths, not {describe(value)}",
    )


# --- composite -------------------------------------------------------------------------------------


def _composite_fields(ctx: Context, raw: dict[str, Any], field: str) -> dict[str, Any]:
    key = "evaluators" if raw.get("evaluators") is not None else "assert"
    children_raw = raw.get(key)
    if not isinstance(children_raw, list) or not children_raw:
        raise ctx.problem_at(
            raw,
            field,
            "the composite evaluator has no `evaluators`",
            hint="list the evaluators it combines under `evaluators:`",
        )
    children = parse_evaluator_list(ctx, raw, key, join_field(field, key))
    names = {child.name for child in children}
    return {"evaluators": children, "aggregator": _aggregator(ctx, raw, names, join_field(field, "aggregator"))}


def _aggregator(ctx: Context, raw: dict[str, Any], names: set[str], field: str) -> Aggregator:
    written = raw.get("aggregator")
    if written is None:
        return Aggregator(type="weighted_average")
    if isinstance(written, str):
        written = {"type": written}
    if not isinstance(written, dict):
        raise ctx.problem_key(
            raw, "aggregator", field, f"`aggregator` must be a mapping with `type`, not {describe(written)}"
        )
    kind = normalise_type(str(written.get("type", "weighted_average")))
    if kind not in AGGREGATORS:
        unsupported = kind in ("code_judge", "llm_judge")
        raise Problem(
            f"aggregator type {written.get('type')!r} is {'not supported' if unsupported else 'unknown'}",
            ctx.where.key(written, "type", join_field(field, "type")),
            hint=f"use one of {', '.join(AGGREGATORS)}",
        )
    weights: dict[str, float] = {}
    if written.get("weights") is not None:
        written_weights = written["weights"]
        if not isinstance(written_weights, dict):
            raise Problem(
                f"aggregator `weights` must map evaluator names to weights, not {describe(written_weights)}",
                ctx.where.key(written, "weights", join_field(field, "weights")),
            )
        for name, weight in written_weights.items():
            where = ctx.where.key(written_weights, name, join_field(join_field(field, "weights"), str(name)))
            if str(name) not in names:
                raise Problem(
                    f"aggregator weight for {name!r}, which is not one of the composite's evaluators ({', '.join(sorted(names))})",
                    where,
                )
            if not finite_number(weight) or weight < 0:
                raise Problem(f"the weight of {name!r} must be a finite number >= 0, not {describe(weight)}", where)
            weights[str(name)] = float(weight)
    required: tuple[str, ...] = ()
    if written.get("required") is not None:
        written_required = written["required"]
        listed = [written_required] if isinstance(written_required, str) else written_required
        where = ctx.where.key(written, "required", join_field(field, "required"))
        if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
            raise Problem(f"aggregator `required` must list evaluator names, not {describe(written_required)}", where)
        unknown = [n for n in listed if n not in names]
        if unknown:
            raise Problem(
                f"aggregator `required` names {', '.join(map(repr, unknown))}, not among the composite's evaluators ({', '.join(sorted(names))})",
                where,
            )
        required = tuple(listed)
    threshold = written.get("threshold")
    if threshold is not None and (not finite_number(threshold) or not 0 <= threshold <= 1):
        raise Problem(
            f"aggregator `threshold` must be a score 0..1, not {describe(threshold)}",
            ctx.where.key(written, "threshold", join_field(field, "threshold")),
        )
    if kind == "threshold" and threshold is None:
        raise Problem(
            "the threshold aggregator needs `threshold`", ctx.where.at(written, field), hint="e.g. `threshold: 0.7`"
        )
    return Aggregator(
        type=cast(Any, kind),
        weights=weights,
        required=required,
        threshold=float(threshold) if threshold is not None else None,
    )
