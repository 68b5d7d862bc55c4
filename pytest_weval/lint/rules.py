"""The linter's rules: each takes a parsed blueprint (and, for a few, its raw source) and
returns Findings located at the point, prompt or header key concerned.

Pure: no pytest, no network. Regex syntax and `$js` run in the scoring layer's V8 isolates.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from pytest_weval.blueprint.loader import RawSource
from pytest_weval.blueprint.model import Blueprint, EvalPoint, Finding, Location, Prompt
from pytest_weval.jsvalues import js_json
from pytest_weval.lint.static import base_name, score_range
from pytest_weval.scoring import (
    PATTERN_FUNCTIONS,
    PointContext,
    call_point_function,
    check_pattern_syntax,
    score_function_point_sync,
    subject_text,
)
from pytest_weval.scoring.aggregate import fmt_score
from pytest_weval.scoring.functions import FnError, patterns_of
from pytest_weval.scoring.regex_dialect import dialect_problems

# Functions with a `$not_` twin (the registry's negations, by positive base name).
_NEGATABLE = frozenset(
    {
        "contains",
        "icontains",
        "contains_any_of",
        "icontains_any_of",
        "contains_all_of",
        "icontains_all_of",
        "matches",
        "imatches",
        "starts_with",
        "istarts_with",
        "ends_with",
        "iends_with",
        "contains_word",
        "icontains_word",
    }
)
# Never run by the linter: they reach the network or always error here (reported apart).
_NOT_RUN = frozenset({"call", "external", "factcheck"})
# Probe texts for "this point errors whatever the response is".
_PROBES = (
    "",
    "The quick brown fox jumps over the lazy dog.\nTOOL_CALL {\"name\":\"search\",\"arguments\":{\"q\":\"x\"}}",
    '{"answer": 42, "items": [1, 2, 3]}',
)


def _shown(point: EvalPoint) -> str:
    if point.fn is None:
        return repr(point.text)
    return f"${point.fn}: {js_json(point.fn_args) if point.has_args else ''}".rstrip(": ")


def _where(point: EvalPoint, prompt: Prompt) -> Location:
    return point.location or prompt.location


def _finding(code: str, message: str, location: Location) -> Finding:
    return Finding(code=code, message=message, location=location)


def _ctx(blueprint: Blueprint, prompt: Prompt, text: str = "") -> PointContext:
    messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
    return PointContext(
        messages=messages + [{"role": "assistant", "content": text}],
        model_id="lint",
        prompt_id=prompt.id,
        config=blueprint.config,
    )


# --- alternative paths -------------------------------------------------------------------------


def single_element_paths(blueprint: Blueprint) -> Iterator[Finding]:
    """Nested lists that each hold one point: OR between single points, where the author
    almost always meant a flat list (the format guide's "common pitfall")."""
    for prompt in blueprint.prompts:
        for inverted, block in ((False, "should"), (True, "should_not")):
            paths: dict[str, list[EvalPoint]] = defaultdict(list)
            for point in prompt.points:
                if point.is_inverted == inverted and point.path_id:
                    paths[point.path_id].append(point)
            if not paths or any(len(members) > 1 for members in paths.values()):
                continue
            first = next(iter(paths.values()))[0]
            if len(paths) == 1:
                message = (
                    f"'{block}' has a nested list holding one point ({_shown(first)}): as an "
                    "alternative path it is scored apart from the other points and counts for "
                    "half of the score; write it as a plain list item"
                )
            else:
                message = (
                    f"'{block}' has {len(paths)} nested lists of one point each: that makes them "
                    "alternatives (only the best one counts), not requirements; if every point "
                    "is required, write a flat list (`- point`, not `- - point`)"
                )
            yield _finding("single-element-paths", message, _where(first, prompt))


# --- regexes -----------------------------------------------------------------------------------


def regexes(blueprint: Blueprint) -> Iterator[Finding]:
    for prompt in blueprint.prompts:
        for point in prompt.points:
            if point.fn not in PATTERN_FUNCTIONS or point.authoring_error:
                continue
            flags = PATTERN_FUNCTIONS[point.fn]
            for pattern in patterns_of(point.fn_args):
                problems = dialect_problems(pattern, flags)
                error = check_pattern_syntax(pattern, flags)
                if error:
                    message = (
                        f"${point.fn} pattern {pattern!r} is not a valid JavaScript regex ({error}); "
                        "the point errors on every response"
                    )
                    if problems:
                        message += ": " + "; ".join(problems)
                    yield _finding("invalid-regex", message, _where(point, prompt))
                elif problems:
                    yield _finding(
                        "regex-dialect",
                        f"${point.fn} pattern {pattern!r}: " + "; ".join(problems),
                        _where(point, prompt),
                    )


# --- should_not --------------------------------------------------------------------------------

# A rule for the response ("Response should not ..."): inverted, it punishes the behaviour it asks for.
_RULE_TEXT = (
    "should not",
    "shouldn't",
    "must not",
    "mustn't",
    "do not",
    "don't",
    "should never",
    "must never",
    "never ",
)
# A negated description of a failure ("Fails to mention ..."): right in effect, a double negative.
_NEGATED_TEXT = (
    "not ",
    "no ",
    "does not",
    "doesn't",
    "did not",
    "didn't",
    "is not",
    "isn't",
    "fail to",
    "fails to",
    "failed to",
    "without ",
    "avoid",
    "refrain",
)
_SUBJECTS = ("the response ", "response ", "the model ", "the answer ", "the assistant ", "it ")


def _negation(text: str) -> str | None:
    """'rule', 'negated' or None, from how the criterion begins."""
    lowered = " ".join(text.strip().lower().split())
    for subject in _SUBJECTS:
        if lowered.startswith(subject):
            lowered = lowered[len(subject) :]
            break
    if lowered.startswith(_RULE_TEXT):
        return "rule"
    if lowered.startswith(_NEGATED_TEXT):
        return "negated"
    return None


def should_not_usage(blueprint: Blueprint) -> Iterator[Finding]:
    """`should_not` points the guide would write as negative functions in `should`."""
    for prompt in blueprint.prompts:
        for point in prompt.points:
            if not point.is_inverted or point.authoring_error:
                continue
            if point.fn is not None:
                name, negated = base_name(point.fn)
                args = js_json(point.fn_args) if point.has_args else ""
                if negated:
                    yield _finding(
                        "should-not-double-negative",
                        f"${point.fn} in should_not is a double negative (it scores when the response "
                        f"DOES match); write `${name}: {args}` in should",
                        _where(point, prompt),
                    )
                elif name in _NEGATABLE and not point.path_id:
                    yield _finding(
                        "should-not-function",
                        f"${point.fn} in should_not: write `$not_{name}: {args}` in should instead "
                        "(the same score; the format guide deprecates should_not)",
                        _where(point, prompt),
                    )
            elif point.text and (kind := _negation(point.text)) is not None:
                if kind == "rule":
                    yield _finding(
                        "should-not-rule",
                        f"should_not point {point.text!r} states a rule the response should follow; "
                        "should_not inverts it, so a response that follows it scores 0 on this point: "
                        "move it to should",
                        _where(point, prompt),
                    )
                else:
                    yield _finding(
                        "should-not-double-negative",
                        f"should_not point {point.text!r} is a double negative (it scores 1 when the judge "
                        "finds it NOT met); state it positively in should, e.g. 'fails to mention X' in "
                        "should_not -> 'mentions X' in should",
                        _where(point, prompt),
                    )


# --- points that cannot score --------------------------------------------------------------------


def _always_errors(point: EvalPoint, blueprint: Blueprint, prompt: Prompt) -> str | None:
    """The message when the point errors the same way on every probe response."""
    messages: set[str] = set()
    for probe in _PROBES:
        raw = call_point_function(point.fn or "", point.fn_args, probe, _ctx(blueprint, prompt, probe), point.has_args)
        if not isinstance(raw, FnError) or raw.authoring:
            return None
        messages.add(raw.message)
        if len(messages) > 1:
            return None
    return messages.pop() if messages else None


def unscorable_points(blueprint: Blueprint) -> Iterator[Finding]:
    """Points whose arguments decide the score (or an error) whatever the model answers."""
    for prompt in blueprint.prompts:
        for point in prompt.points:
            if point.fn is None or point.authoring_error:
                continue
            where = _where(point, prompt)
            if point.fn == "factcheck":
                yield _finding(
                    "unsupported-function",
                    "$factcheck calls a service hosted by Weval itself and always errors here; "
                    "use a judged point or $call with a fact-checking service of your own",
                    where,
                )
                continue
            if point.fn in _NOT_RUN:
                continue
            error = _always_errors(point, blueprint, prompt)
            if error is not None:
                yield _finding("invalid-args", f"{_shown(point)} errors on every response: {error}", where)
                continue
            found = score_range(point.fn, point.fn_args)
            if found is None:
                continue
            low, high = (1.0 - found[1], 1.0 - found[0]) if point.is_inverted else found
            block = "should_not" if point.is_inverted else "should"
            if high == 0:
                yield _finding(
                    "never-scores", f"{_shown(point)} in {block} can never score: it is 0 for every response", where
                )
            elif high < 1:
                yield _finding(
                    "capped-score",
                    f"{_shown(point)} in {block} can score at most {fmt_score(high)}: it asks for more matches than it lists",
                    where,
                )
            elif low == 1:
                yield _finding(
                    "constant-point",
                    f"{_shown(point)} in {block} scores 1 for every response, so it tests nothing",
                    where,
                )


# --- weights -----------------------------------------------------------------------------------


def weights(blueprint: Blueprint) -> Iterator[Finding]:
    """Point weights that change nothing: the only point of its group, or all equal."""
    for prompt in blueprint.prompts:
        groups: dict[str | None, list[EvalPoint]] = defaultdict(list)
        for point in prompt.points:
            groups[point.path_id or None].append(point)
        for path_id, members in groups.items():
            weighted = {p.multiplier for p in members}
            if len(weighted) != 1 or members[0].multiplier == 1:
                continue
            group = f"alternative path {path_id}" if path_id else "the required points"
            if len(members) == 1:
                message = (
                    f"the weight {members[0].multiplier:g} of {_shown(members[0])} has no effect: it is "
                    f"the only point in {group}, and weights only compare points within a group"
                )
            else:
                message = (
                    f"every point in {group} has weight {members[0].multiplier:g}, so the weights "
                    "have no effect (they only compare points within a group)"
                )
            yield _finding("weight-no-effect", message, _where(members[0], prompt))
    prompt_weights = [p.weight for p in blueprint.prompts]
    given = [w for w in prompt_weights if w is not None and w > 0]
    if given and len(given) == len(prompt_weights) and len(set(given)) == 1 and given[0] != 1:
        first = blueprint.prompts[0]
        yield _finding(
            "weight-no-effect",
            f"every prompt has weight {given[0]:g}, so the prompt weights have no effect "
            "(they only compare prompts with each other)",
            first.location,
        )


# --- the prompt's own ideal --------------------------------------------------------------------


def _ideal_text(prompt: Prompt) -> str:
    """What the `ideal` model's answer is scored as: the ideal once per generated turn."""
    assert prompt.ideal is not None
    turns = sum(1 for m in prompt.messages if m.role == "assistant" and m.content is None)
    if prompt.messages and prompt.messages[-1].role == "user":
        turns += 1
    return subject_text([prompt.ideal] * max(turns, 1), prompt.ideal)


def ideal_answers(blueprint: Blueprint) -> Iterator[Finding]:
    """Deterministic points that fail on the prompt's own `ideal` answer (after `should_not`
    inversion). A point in an alternative path is reported only when no path accepts it."""
    for prompt in blueprint.prompts:
        if not prompt.ideal or prompt.validation_error:
            continue
        text = _ideal_text(prompt)
        ctx = _ctx(blueprint, prompt, text)
        failing_paths: dict[str, list[tuple[EvalPoint, float]]] = defaultdict(list)
        path_ids: list[str] = []
        for point in prompt.points:
            if point.path_id and point.path_id not in path_ids:
                path_ids.append(point.path_id)
            if point.fn is None or point.authoring_error or point.fn in _NOT_RUN:
                continue
            assessment = score_function_point_sync(point, text, ctx)
            where = _where(point, prompt)
            if assessment.coverage_extent is None:
                if not point.path_id:
                    yield _finding(
                        "ideal-errors",
                        f"{_shown(point)} errors on the prompt's own ideal answer: {assessment.error}",
                        where,
                    )
                continue
            if assessment.coverage_extent < 1 - 1e-9:
                if point.path_id:
                    failing_paths[point.path_id].append((point, assessment.coverage_extent))
                else:
                    block = "should_not" if point.is_inverted else "should"
                    yield _finding(
                        "ideal-fails",
                        f"{_shown(point)} in {block} scores "
                        f"{fmt_score(assessment.coverage_extent)} on the prompt's own ideal "
                        "answer",
                        where,
                    )
        if path_ids and all(pid in failing_paths for pid in path_ids):
            first_point, _ = failing_paths[path_ids[0]][0]
            details = "; ".join(
                f"{pid}: {_shown(p)} scores {fmt_score(score)}"
                for pid in path_ids
                for p, score in failing_paths[pid][:1]
            )
            yield _finding(
                "ideal-fails",
                "no alternative path accepts the prompt's own ideal answer (" + details + ")",
                _where(first_point, prompt),
            )


# --- tools -------------------------------------------------------------------------------------


def _tool_names(fn: str, args: Any) -> list[str]:
    if fn == "tool_called" and isinstance(args, str):
        return [args]
    if fn == "tool_args_match" and isinstance(args, dict) and isinstance(args.get("name"), str):
        return [args["name"]]
    if fn == "tool_call_count_between" and isinstance(args, list) and len(args) > 2 and isinstance(args[2], str):
        return [args[2]]
    if fn == "tool_call_order" and isinstance(args, list):
        return [a for a in args if isinstance(a, str)]
    return []


def tools(blueprint: Blueprint) -> Iterator[Finding]:
    """Tool checks naming a tool the header's `tools` does not declare."""
    declared = blueprint.config.get("tools")
    if not isinstance(declared, list) or not declared:
        return
    names = {t.get("name") for t in declared if isinstance(t, dict)}
    for prompt in blueprint.prompts:
        for point in prompt.points:
            if point.fn is None or not point.fn.startswith("tool_"):
                continue
            for name in _tool_names(point.fn, point.fn_args):
                if name not in names:
                    yield _finding(
                        "undeclared-tool",
                        f"${point.fn} names tool '{name}', which the header's `tools` does not "
                        f"declare ({', '.join(sorted(map(str, names)))})",
                        _where(point, prompt),
                    )


# --- point_defs (needs the raw source) -----------------------------------------------------------


def _header(source: RawSource) -> dict[str, Any] | None:
    first = source.documents[0] if source.documents else None
    return first if isinstance(first, dict) else None


def _walk(value: Any, skip: set[int]) -> Iterator[dict[str, Any]]:
    stack = [value]
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _ref_name(node: dict[str, Any]) -> Any:
    if "$ref" in node:
        ref = node["$ref"]
    elif node.get("fn") in ("ref", "$ref"):
        ref = node.get("fnArgs", node.get("arg"))
    else:
        return None
    if isinstance(ref, dict):
        ref = ref.get("name")
    return ref if isinstance(ref, str) else None


def _location(source: RawSource, node: Any, key: str | None, field: str) -> Location:
    line, column = source.key_position(node, key) if key else source.position(node)
    return Location(path=source.path, line=line, column=column, field=field)


def point_defs(blueprint: Blueprint, source: RawSource) -> Iterator[Finding]:
    """Unused or shadowed `point_defs`, and `$ref` weights the reference drops."""
    header = _header(source)
    if header is None:
        return
    defs_key = "point_defs" if header.get("point_defs") else ("defs" if header.get("defs") else None)
    if header.get("point_defs") and "defs" in header:
        yield _finding(
            "shadowed-defs",
            "both `point_defs` and `defs` are set: Weval reads `point_defs` only, "
            "so every `defs` entry is ignored; merge them into `point_defs`",
            _location(source, header, "defs", "defs"),
        )
    if defs_key is None or not isinstance(header[defs_key], dict):
        return
    defs = header[defs_key]
    skip = {id(header.get("point_defs")), id(header.get("defs"))}
    used: set[str] = set()
    for node in _walk(source.documents, skip):
        name = _ref_name(node)
        if name is None:
            continue
        used.add(name)
        weight_key = next((k for k in ("weight", "multiplier") if k in node), None)
        if weight_key and isinstance(defs.get(name), dict):
            yield _finding(
                "ref-weight-ignored",
                f"the {weight_key} on `$ref: {name}` is ignored: Weval uses an object definition "
                f"as written; put the weight inside `{defs_key}.{name}`",
                _location(source, node, weight_key, weight_key),
            )
    for name in defs:
        if name not in used:
            yield _finding(
                "unused-point-def",
                f"`{defs_key}.{name}` is never used by a `$ref`",
                _location(source, defs, name, f"{defs_key}.{name}"),
            )


def weight_and_multiplier(blueprint: Blueprint, source: RawSource) -> Iterator[Finding]:
    """A point object giving both `weight` and `multiplier`: `weight` wins, `multiplier` is ignored."""
    header = _header(source)
    skip = {id(header.get("point_defs")), id(header.get("defs"))} if header else set()
    for node in _walk(source.documents, skip):
        if (
            "weight" in node
            and "multiplier" in node
            and node.get("weight") is not None
            and (any(isinstance(k, str) and k.startswith("$") for k in node) or {"text", "point", "fn"} & node.keys())
        ):
            yield _finding(
                "ignored-key",
                f"point sets both weight ({node['weight']}) and multiplier "
                f"({node['multiplier']}): the multiplier is ignored",
                _location(source, node, "multiplier", "multiplier"),
            )


BlueprintRule = Callable[[Blueprint], Iterator[Finding]]
SourceRule = Callable[[Blueprint, RawSource], Iterator[Finding]]

BLUEPRINT_RULES: tuple[BlueprintRule, ...] = (
    single_element_paths,
    regexes,
    should_not_usage,
    unscorable_points,
    weights,
    ideal_answers,
    tools,
)
SOURCE_RULES: tuple[SourceRule, ...] = (point_defs, weight_and_multiplier)
