"""Rubric points: the parser's normalization (docs/format.md, 'Points'), `$ref` expansion (docs/format.md, 'Point definitions ($ref)') and the coverage
evaluator's flattened view (docs/format.md, 'Evaluator view of points'), with the source line of every point.

Normalized points keep the reference's exact shape (key order included: the run-label hash
serializes them), so they are built key by key in the order the reference assigns them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import ABSENT, is_number, js_json, js_nullish, js_or, js_string, truthy

from .functions import FUNCTION_NAMES, did_you_mean, pluralise_function_name, unknown_function_message
from .model import BlueprintError, EvalPoint, Finding, Location

# A point list mirrors its structure in locations: one Location per point, a list of them
# per alternative path.
Locations = list[Any]


class PointError(WevalError):
    """A point the reference rejects; the caller turns it into a located BlueprintError."""

    def __init__(self, message: str, location: Location, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def as_blueprint_error(self) -> BlueprintError:
        return BlueprintError(self.message, self.location, self.hint)


@dataclass
class PointContext:
    """What point normalization needs from its prompt: ids for messages and a way to locate."""

    prompt_id: Any  # raw `p.id` (messages print it as JS would: 'undefined' when absent)
    locate: Callable[[Any, int, str], Location]  # (list, index, field) -> Location
    defs: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    # id(point dict) -> authoring error, for refs to missing definitions (docs/rulings.md, ruling 9)
    ref_errors: dict[int, str] = field(default_factory=dict)

    @property
    def id_or_unknown(self) -> str:
        return js_string(self.prompt_id) if truthy(self.prompt_id) else "unknown"


# --- normalization (docs/format.md, 'Points') ------------------------------------------------------------------------


def normalize_points(items: Any, ctx: PointContext, field_name: str) -> tuple[list[Any], Locations]:
    """_normalizePointArray: a raw list -> normalized points and alternative paths."""
    if not isinstance(items, list):
        return [], []
    points: list[Any] = []
    locations: Locations = []
    for index, item in enumerate(items):
        where = ctx.locate(items, index, f"{field_name}[{index}]")
        if isinstance(item, list):
            path, path_locations = _normalize_path(item, ctx, where, f"{field_name}[{index}]")
            if path:  # an empty alternative path is dropped
                points.append(path)
                locations.append(path_locations)
            continue
        points.append(_normalize_single(item, ctx, where, allow_zero_arg=True))
        locations.append(where)
    return points, locations


def _normalize_path(item: list[Any], ctx: PointContext, where: Location, field_name: str) -> tuple[list, list]:
    if item and isinstance(item[0], list):
        raise PointError(
            f"Nested arrays within nested arrays are not supported in prompt '{js_string(ctx.prompt_id)}'. "
            f"Found: {js_json(item)}",
            where,
            hint="an alternative path is one list of points; a list inside it is not allowed",
        )
    kept = [(i, x) for i, x in enumerate(item) if x is not None and not (isinstance(x, list) and not x)]
    path: list[dict[str, Any]] = []
    path_locations: list[Location] = []
    for i, member in kept:
        member_where = ctx.locate(item, i, f"{field_name}[{i}]")
        if isinstance(member, list):
            raise PointError(
                f"Nested arrays within alternative paths are not supported in prompt '{js_string(ctx.prompt_id)}'. "
                f"Found: {js_json(member)}",
                member_where,
                hint="an alternative path is one list of points; a list inside it is not allowed",
            )
        if isinstance(member, str):
            # Inside a path a string is always text, even "$factcheck" (docs/format.md, 'Points').
            path.append({"text": member, "multiplier": 1})
        elif isinstance(member, dict):
            path.append(_normalize_single(member, ctx, member_where, allow_zero_arg=False))
        else:
            raise PointError(
                f"Invalid point format in alternative path in prompt '{js_string(ctx.prompt_id)}'. "
                f"Point must be a string or object. Found: {js_json(member)}",
                member_where,
                hint="quote the value to make it a text point",
            )
        path_locations.append(member_where)
    return path, path_locations


def _normalize_single(item: Any, ctx: PointContext, where: Location, *, allow_zero_arg: bool) -> dict[str, Any]:
    if isinstance(item, str):
        if allow_zero_arg and item.startswith("$") and len(item) > 1:
            # "$is_json": a zero-argument call, returned as is (no pluralisation, docs/format.md, 'Function names and pluralisation').
            return {"fn": item[1:], "multiplier": 1}
        return {"text": item, "multiplier": 1}
    if not isinstance(item, dict):
        raise PointError(
            f"Invalid point format in prompt '{js_string(ctx.prompt_id)}': Point must be a string, array, "
            f"or object. Found: {js_json(item)}",
            where,
            hint="write the point as text, a `$function: args` mapping, or a list (alternative path)",
        )
    point: dict[str, Any] = {}
    fn_key = next((k for k in item if k.startswith("$")), None)
    if fn_key is not None:
        # { $contains: "x", weight: 2 } — the first `$` key is the function (docs/format.md, 'Points').
        point["fn"] = fn_key[1:]
        point["fnArgs"] = item[fn_key]
        point["multiplier"] = js_nullish(item.get("weight", ABSENT), item.get("multiplier", ABSENT))
        point["citation"] = item.get("citation", ABSENT)
    elif truthy(item.get("text")) or truthy(item.get("point")) or truthy(item.get("fn")):
        point["text"] = js_or(item.get("text", ABSENT), item.get("point", ABSENT))
        point["fn"] = item.get("fn", ABSENT)
        point["fnArgs"] = js_or(item.get("fnArgs", ABSENT), item.get("arg", ABSENT))
        point["multiplier"] = js_nullish(item.get("weight", ABSENT), item.get("multiplier", ABSENT))
        point["citation"] = item.get("citation", ABSENT)
    elif len(item) == 1 and isinstance(next(iter(item.values())), str):
        # { "point text": "citation" } shorthand (docs/format.md, 'Points').
        text, citation = next(iter(item.items()))
        point["text"] = text
        point["citation"] = citation
    return _validated(point, item, ctx, where)


def _validated(point: dict[str, Any], raw: Any, ctx: PointContext, where: Location) -> dict[str, Any]:
    fn = point.get("fn", ABSENT)
    text = point.get("text", ABSENT)
    if truthy(fn) and truthy(text):
        raise PointError(
            f"Invalid point in prompt '{js_string(ctx.prompt_id)}': Point cannot have both 'text' and 'fn' "
            f"defined. Found: {js_json(raw)}",
            where,
            hint="split it into a text point and a function point",
        )
    if not truthy(fn) and not truthy(text):
        raise PointError(
            f"Invalid point object in prompt '{js_string(ctx.prompt_id)}': Point must define 'text', a "
            f"function ('fn' or '$...'), or a 'Point: Citation' pair. Found: {js_json(raw)}",
            where,
            hint="add `text:` or a `$function:` key",
        )
    if truthy(fn):
        if not isinstance(fn, str):
            raise PointError(
                f"Point function name must be a string. Found: {js_json(fn)}",
                where,
                hint="write the function as `$name: args`, e.g. $contains: word",
            )
        point["fn"] = pluralise_function_name(fn)
    multiplier = js_nullish(point.get("multiplier", ABSENT), 1)
    if not is_number(multiplier) or multiplier < 0.1 or multiplier > 10:
        raise PointError(
            f"Point multiplier must be a number between 0.1 and 10. Found {js_string(multiplier)}. "
            f"Prompt ID: '{ctx.id_or_unknown}'",
            where,
            hint="use a `weight` between 0.1 and 10",
        )
    point["multiplier"] = multiplier
    return {k: v for k, v in point.items() if v is not ABSENT}


# --- $ref expansion (docs/format.md, 'Point definitions ($ref)') -----------------------------------------------------------------------


def expand_refs(points: list[Any], locations: Locations, ctx: PointContext) -> list[Any]:
    """expandRefsInPoints: `{fn: 'ref'}` points become their definition (paths included)."""
    expanded: list[Any] = []
    for point, where in zip(points, locations):
        if isinstance(point, list):
            expanded.append([_expand_one(p, w, ctx) for p, w in zip(point, where)])
        else:
            expanded.append(_expand_one(point, where, ctx))
    return expanded


def _expand_one(point: Any, where: Location, ctx: PointContext) -> Any:
    if not isinstance(point, dict):
        return point
    if point.get("fn") != "ref":
        return dict(point)
    ref = point.get("fnArgs", ABSENT)
    name = ref if isinstance(ref, str) else (js_or(ref.get("name", ABSENT), ref) if isinstance(ref, dict) else ABSENT)
    if not truthy(name) or not isinstance(name, str):
        raise PointError(
            f"Invalid $ref usage in prompt '{ctx.id_or_unknown}'. Expected a string name.",
            where,
            hint="write `$ref: <name of a point_defs entry>`",
        )
    if name not in ctx.defs:
        # The reference rejects the file; we keep the point, and its items error (docs/rulings.md, ruling 9).
        message = f"Undefined definition '{name}' referenced in prompt '{ctx.id_or_unknown}'."
        suggestion = did_you_mean(name, ctx.defs)
        if suggestion:
            message += f" (did you mean '{suggestion}'?)"
        ctx.findings.append(Finding(message=message, location=where, code="undefined-ref"))
        kept = dict(point)
        ctx.ref_errors[id(kept)] = message
        return kept
    definition = ctx.defs[name]
    if isinstance(definition, str):
        return {
            k: v
            for k, v in (
                ("fn", "js"),
                ("fnArgs", definition),
                ("multiplier", js_nullish(point.get("multiplier", ABSENT), 1)),
                ("citation", point.get("citation", ABSENT)),
            )
            if v is not ABSENT
        }
    if isinstance(definition, dict):
        return dict(
            definition
        )  # raw: not normalized, the ref site's weight is lost (docs/format.md, 'Point definitions ($ref)')
    if isinstance(definition, list):
        return {str(i): v for i, v in enumerate(definition)}  # `{...array}`
    raise PointError(
        f"Definition '{name}' is of unsupported type.",
        where,
        hint="a point_defs entry is a JavaScript string or a point object",
    )


# --- evaluator view (docs/format.md, 'Evaluator view of points') ----------------------------------------------------------------------

_STANDARD_KEYS = frozenset(("text", "fn", "fnArgs", "arg", "multiplier", "citation"))


def evaluator_points(
    points: list[Any], locations: Locations, *, inverted: bool, ctx: PointContext, prompt_id: str
) -> list[EvalPoint]:
    """LLMCoverageEvaluator.normalizePoints: one flat list, alternative paths tagged by pathId.

    should paths are `path_<i>` and should_not paths `not_path_<i>`: the reference uses
    `path_<i>` for both, which merges should[i] and should_not[i] into one group (docs/rulings.md, ruling 15).
    """
    view: list[EvalPoint] = []
    for index, (point, where) in enumerate(zip(points, locations)):
        if isinstance(point, list):
            path_id = f"{'not_path' if inverted else 'path'}_{index}"
            for member, member_where in zip(point, where):
                view.append(_view_one(member, member_where, path_id, inverted, ctx, prompt_id))
        else:
            view.append(_view_one(point, where, None, inverted, ctx, prompt_id))
    return view


class _Common(TypedDict):
    """The EvalPoint fields every point of one place shares, whatever its form."""

    path_id: str | None
    is_inverted: bool
    location: Location


_text_point = EvalPoint.trusted_maker(
    "text", "display_text", "multiplier", "citation", "path_id", "is_inverted", "location"
)


def _view_one(
    point: Any, where: Location, path_id: str | None, inverted: bool, ctx: PointContext, prompt_id: str
) -> EvalPoint:
    # Fast path: the parser's own text points ({text, multiplier[, citation]}).
    if (
        type(point) is dict
        and type(point.get("text")) is str
        and point["text"]
        and "fn" not in point
        and len(point) <= 3
        and id(point) not in ctx.ref_errors
    ):
        multiplier = point.get("multiplier", 1)
        if is_number(multiplier) and 0.1 <= multiplier <= 10 and (len(point) < 3 or "citation" in point):
            # Every field's type is settled above: no validation (model.py, `trusted_maker`).
            return _text_point(
                point["text"], point["text"], float(multiplier), point.get("citation"), path_id, inverted, where
            )
    common: _Common = {"path_id": path_id, "is_inverted": inverted, "location": where}
    if isinstance(point, str):
        return EvalPoint(text=point, display_text=point, **common)
    if not isinstance(point, dict):
        return _authoring_error(
            f"Invalid nested point definition found in prompt '{prompt_id}': {js_json(point)}", point, common, ctx
        )
    text = point.get("text", ABSENT)
    fn = point.get("fn", ABSENT)
    multiplier = point.get("multiplier", ABSENT)
    citation = point.get("citation")
    fn_key = next((k for k in point if k not in _STANDARD_KEYS and k.startswith("$")), None)
    # Errors below come only from raw `$ref` object definitions; the reference aborts the whole
    # evaluation on them (docs/format.md, 'Point definitions ($ref)'), we error the prompt's items with the reason.
    if multiplier is not ABSENT and (not is_number(multiplier) or multiplier < 0.1 or multiplier > 10):
        return _authoring_error(
            f"Point multiplier must be a number between 0.1 and 10. Found {js_string(multiplier)}. "
            f"Prompt ID: '{prompt_id}'",
            point,
            common,
            ctx,
        )
    if truthy(text) and (truthy(fn) or fn_key is not None):
        return _authoring_error(
            f"Point object cannot have both 'text' and a function ('fn' or idiomatic). Prompt ID: '{prompt_id}'",
            point,
            common,
            ctx,
        )
    weight = 1 if multiplier is ABSENT or multiplier is None else multiplier
    if truthy(text):
        shown = js_string(text)
        return EvalPoint(
            text=shown,
            display_text=shown,
            multiplier=weight,
            citation=citation,
            authoring_error=ctx.ref_errors.get(id(point)),
            **common,
        )
    name = js_or(fn, fn_key[1:] if fn_key is not None else ABSENT)
    if not truthy(name):
        return _authoring_error(
            f"Point object must have 'text', 'fn', or an idiomatic function name (starting with $). "
            f"Found: {js_json(point)}",
            point,
            common,
            ctx,
        )
    name = js_string(name)
    args = js_nullish(
        point.get("fnArgs", ABSENT), point.get("arg", ABSENT), point[fn_key] if fn_key is not None else ABSENT
    )
    has_args = args is not ABSENT
    error = ctx.ref_errors.get(id(point))
    if error is None and name not in FUNCTION_NAMES:
        error = unknown_function_message(name)
        ctx.findings.append(Finding(message=error, location=where, code="unknown-function"))
    return EvalPoint(
        fn=name,
        fn_args=args if has_args else None,
        has_args=has_args,
        multiplier=weight,
        citation=citation,
        display_text=f"Function: {name}({js_json(args)})",
        authoring_error=error,
        **common,
    )


def _authoring_error(message: str, point: Any, common: _Common, ctx: PointContext) -> EvalPoint:
    ctx.findings.append(Finding(message=message, location=common["location"], code="invalid-point"))
    return EvalPoint(display_text=js_json(point), authoring_error=message, **common)
