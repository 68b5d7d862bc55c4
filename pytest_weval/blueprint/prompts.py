"""Prompts (docs/format.md, 'Prompts'): messages and their shorthand, ids, fields, points, plus the findings the
reference has no words for (ignored keys, shadowed aliases, repeated ids)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_weval.jsvalues import ABSENT, is_number, js_json, js_nullish, js_or, js_string, js_trim, js_typeof, truthy

from .functions import did_you_mean
from .header import RENDER_AS_VALUES
from .ids import generated_prompt_id
from .locate import Locator
from .model import BlueprintError, EvalPoint, Finding, Location
from .points import PointContext, PointError, evaluator_points, expand_refs, normalize_points

# Keys the reference reads from a prompt (anything else is dropped), plus our `threshold`.
AtKey = Callable[[str], Location]  # where a key of the prompt being read is written

PROMPT_KEYS = frozenset((
    "prompt", "promptText", "messages", "id", "description", "ideal", "idealResponse", "system",
    "noCache", "citation", "reference", "weight", "importance", "multiplier", "render_as",
    "temperature", "requiredTools", "prohibitedTools", "maxCalls", "should", "points", "expect",
    "expects", "expectations", "should_not", "threshold",
))  # fmt: skip


@dataclass
class ParsedPrompt:
    raw: dict[str, Any]  # normalized prompt, reference shape
    index: int
    location: Location
    points: list[EvalPoint]  # evaluator view: should, then should_not
    threshold: float | None = None


def normalize_prompt(
    p: Any,
    index: int,
    where: Location,
    config: dict[str, Any],
    defs: dict[str, Any],
    loc: Locator,
    findings: list[Finding],
) -> ParsedPrompt:
    """One raw prompt -> the reference's normalized prompt, its evaluator view and findings."""
    field = f"prompts[{index}]"
    where = Location(path=where.path, line=where.line, column=where.column, field=field)
    if p is None:
        raise BlueprintError(f"prompt {index + 1} is empty (null)", where, hint="remove the empty list item")
    if not isinstance(p, dict):
        # JS reads no fields from a string or number: an empty prompt, which validation rejects.
        findings.append(
            Finding(
                message=f"prompt {index + 1} is a {js_typeof(p)}, not a mapping",
                location=where,
                code="prompt-not-object",
            )
        )
        p = {}
    pid = p.get("id", ABSENT)
    shown_id = js_string(pid)  # the reference interpolates p.id as is: 'undefined' when absent
    id_or_unknown = shown_id if truthy(pid) else "unknown"

    def at_key(key: str) -> Location:
        return loc.key(p, key, f"{field}.{key}")

    body: dict[str, Any] = {}  # the normalized prompt without `id`, in the reference's key order
    messages = p.get("messages", ABSENT)
    prompt_source = js_or(p.get("prompt", ABSENT), p.get("promptText", ABSENT))
    if truthy(messages):
        if not isinstance(messages, list):
            raise BlueprintError(
                f"'messages' must be a list of messages in prompt '{shown_id}'.",
                at_key("messages"),
                hint="write messages as a list, e.g. - user: Hello",
            )
        body["messages"] = [_normalize_message(m, i, shown_id, messages, loc, field) for i, m in enumerate(messages)]
    elif truthy(prompt_source):
        body["messages"] = [{"role": "user", "content": prompt_source}]

    body["description"] = p.get("description", ABSENT)
    body["idealResponse"] = js_or(p.get("ideal", ABSENT), p.get("idealResponse", ABSENT))
    _read_system_and_cache(p, body, config, id_or_unknown, at_key)
    _read_citation(p, body, shown_id, at_key)
    _read_weight(p, body, id_or_unknown, at_key)
    _read_render_as(p, body, config, id_or_unknown, at_key)
    _read_generation_fields(p, body, id_or_unknown, at_key)

    ctx = PointContext(prompt_id=pid, defs=defs, locate=lambda seq, i, name: loc.item(seq, i, f"{field}.{name}"))
    should_locations, not_locations = _read_points(p, body, ctx, at_key, findings)

    body = {k: v for k, v in body.items() if v is not ABSENT}
    prompt_id = pid if truthy(pid) else generated_prompt_id(body)
    raw = {"messages": body.pop("messages")} if "messages" in body else {}
    raw["id"] = prompt_id
    raw.update(body)

    view_id = js_string(prompt_id)
    view = evaluator_points(raw.get("points", []), should_locations, inverted=False, ctx=ctx, prompt_id=view_id)
    view += evaluator_points(raw.get("should_not", []), not_locations, inverted=True, ctx=ctx, prompt_id=view_id)
    findings.extend(ctx.findings)
    _report_ignored_keys(p, field, at_key, findings)
    return ParsedPrompt(
        raw=raw,
        index=index,
        location=where,
        points=view,
        threshold=_threshold(p, at_key("threshold") if "threshold" in p else where),
    )


def _read_system_and_cache(
    p: dict[str, Any], body: dict[str, Any], config: dict[str, Any], id_or_unknown: str, at_key: AtKey
) -> None:
    if "system" in p:
        system = p["system"]
        if isinstance(system, list):
            raise BlueprintError(
                f"Invalid 'system' field in prompt '{id_or_unknown}': Per-prompt 'system' must be a string or "
                "null, not an array. Did you mean to use 'systems' (plural) at the global config level instead?",
                at_key("system"),
                hint="put the variants in the header as `systems:`",
            )
        if system is not None and not isinstance(system, str):
            raise BlueprintError(
                f"Invalid 'system' field in prompt '{id_or_unknown}': Must be a string or null. Found: {js_typeof(system)}",
                at_key("system"),
                hint="quote the system prompt",
            )
        body["system"] = system
    if "noCache" in p:
        body["noCache"] = truthy(p["noCache"])
    elif "noCache" in config:
        body["noCache"] = truthy(config["noCache"])


def _read_citation(p: dict[str, Any], body: dict[str, Any], shown_id: str, at_key: AtKey) -> None:
    citation = js_or(p.get("citation", ABSENT), p.get("reference", ABSENT))
    if citation is not ABSENT:
        citation_key = "citation" if "citation" in p and truthy(p["citation"]) else "reference"
        if isinstance(citation, (dict, list)):
            title = (
                js_or(citation.get("title", ABSENT), citation.get("name", ABSENT))
                if isinstance(citation, dict)
                else ABSENT
            )
            if not isinstance(title, str) or js_trim(title) == "":
                raise BlueprintError(
                    f"Invalid 'citation'/'reference' object in prompt '{shown_id}': missing 'title' or 'name' string.",
                    at_key(citation_key),
                    hint="give the citation a `title:`",
                )
        elif not isinstance(citation, str):
            raise BlueprintError(
                f"Invalid 'citation'/'reference' field in prompt '{shown_id}': must be a string or an object with 'title'/'name'.",
                at_key(citation_key),
                hint="write a citation as text, or {title, url}",
            )
        body["citation"] = citation


def _read_weight(p: dict[str, Any], body: dict[str, Any], id_or_unknown: str, at_key: AtKey) -> None:
    weight = js_nullish(p.get("weight", ABSENT), p.get("importance", ABSENT), p.get("multiplier", ABSENT))
    if weight is not ABSENT:
        if not is_number(weight) or weight < 0.1 or weight > 10:
            weight_key = next((k for k in ("weight", "importance", "multiplier") if k in p), "weight")
            raise BlueprintError(
                f"Prompt weight must be a number between 0.1 and 10. Found {js_string(weight)}. Prompt ID: '{id_or_unknown}'",
                at_key(weight_key),
                hint="use a weight between 0.1 and 10",
            )
        body["weight"] = weight


def _read_render_as(
    p: dict[str, Any], body: dict[str, Any], config: dict[str, Any], id_or_unknown: str, at_key: AtKey
) -> None:
    render_as = p.get("render_as", ABSENT)
    if truthy(render_as):
        if render_as not in RENDER_AS_VALUES:
            raise BlueprintError(
                f"Invalid 'render_as' value on prompt '{id_or_unknown}'. Must be one of: {', '.join(RENDER_AS_VALUES)}.",
                at_key("render_as"),
                hint="use markdown, html or plaintext",
            )
        body["render_as"] = render_as
    else:
        body["render_as"] = js_or(config.get("render_as", ABSENT), "markdown")


def _read_generation_fields(p: dict[str, Any], body: dict[str, Any], id_or_unknown: str, at_key: AtKey) -> None:
    """temperature, requiredTools, prohibitedTools and maxCalls, each checked."""
    if "temperature" in p:
        if not is_number(p["temperature"]):
            raise BlueprintError(
                f"Prompt temperature must be a number. Found {js_typeof(p['temperature'])}. Prompt ID: '{id_or_unknown}'",
                at_key("temperature"),
                hint="write a number, e.g. temperature: 0.7",
            )
        body["temperature"] = p["temperature"]
    for key in ("requiredTools", "prohibitedTools"):
        if key in p:
            if not isinstance(p[key], list):
                raise BlueprintError(
                    f"Prompt '{key}' must be an array. Prompt ID: '{id_or_unknown}'",
                    at_key(key),
                    hint="write a list of tool names",
                )
            body[key] = p[key]
    if "maxCalls" in p:
        if not is_number(p["maxCalls"]) or p["maxCalls"] < 0:
            raise BlueprintError(
                f"Prompt 'maxCalls' must be a non-negative number. Found {js_string(p['maxCalls'])}. Prompt ID: '{id_or_unknown}'",
                at_key("maxCalls"),
                hint="write a whole number of 0 or more",
            )
        body["maxCalls"] = p["maxCalls"]


def _read_points(
    p: dict[str, Any], body: dict[str, Any], ctx: PointContext, at_key: AtKey, findings: list[Finding]
) -> tuple[list[Any], list[Any]]:
    """``points`` and ``should_not``, refs expanded; the points' locations, for the evaluator view."""
    should_key = next((k for k in ("should", "points", "expect", "expects", "expectations") if truthy(p.get(k))), None)
    should_locations: list[Any] = []
    not_locations: list[Any] = []
    try:
        if should_key is not None:
            points, should_locations = normalize_points(p[should_key], ctx, should_key)
            body["points"] = expand_refs(points, should_locations, ctx)
            _warn_not_a_list(p, should_key, at_key, findings)
        if truthy(p.get("should_not")):
            points, not_locations = normalize_points(p["should_not"], ctx, "should_not")
            body["should_not"] = expand_refs(points, not_locations, ctx)
            _warn_not_a_list(p, "should_not", at_key, findings)
    except PointError as exc:
        raise exc.as_blueprint_error() from None
    return should_locations, not_locations


def _normalize_message(msg: Any, index: int, shown_id: str, messages: list[Any], loc: Locator, field: str) -> Any:
    is_object = isinstance(msg, (dict, list))
    if not is_object or (isinstance(msg, dict) and (truthy(msg.get("role")) or truthy(msg.get("content")))):
        return msg  # passes through; prompt validation judges it later
    keys = list(msg) if isinstance(msg, dict) else [str(i) for i in range(len(msg))]
    where = loc.item(messages, index, f"{field}.messages[{index}]")
    if len(keys) != 1:
        raise BlueprintError(
            "Each message in the shorthand format must have exactly one key (e.g., 'user', 'assistant', 'ai', "
            f"'system'). Invalid message at index {index} in prompt '{shown_id}'. Found: {js_json(msg)}",
            where,
            hint="write one message per list item, e.g. - user: Hello",
        )
    role = keys[0]
    if role not in ("user", "assistant", "system", "ai"):
        raise BlueprintError(
            f"Invalid role '{role}' in message at index {index} in prompt '{shown_id}'.",
            where,
            hint="roles are user, assistant (or ai) and system",
        )
    content = msg[role] if isinstance(msg, dict) else msg[0]
    return {"role": "assistant" if role == "ai" else role, "content": content}


def _threshold(p: dict[str, Any], where: Location) -> float | None:
    """Our extension (docs/rulings.md, ruling 8): a pass mark in [0, 1], kept out of the normalized prompt."""
    value = p.get("threshold")
    if value is None:
        return None
    if not is_number(value) or not 0 <= value <= 1:
        raise BlueprintError(
            f"'threshold' must be a number between 0 and 1. Found {js_string(value)}.",
            where,
            hint="e.g. threshold: 0.7",
        )
    return float(value)


def _warn_not_a_list(p: dict[str, Any], key: str, at_key: Any, findings: list[Finding]) -> None:
    if not isinstance(p[key], list):
        findings.append(
            Finding(
                message=f"'{key}' is a {js_typeof(p[key])}, not a list, so it gives no points (as in Weval)",
                location=at_key(key),
                code="points-not-list",
            )
        )


# The first truthy key of each group wins (`a || b`, `a ?? b` for weights); the rest are unused.
_ALIAS_GROUPS = (
    ("messages", "prompt", "promptText"),
    ("ideal", "idealResponse"),
    ("citation", "reference"),
    ("should", "points", "expect", "expects", "expectations"),
)


_ALIAS_GROUP_SETS = tuple(frozenset(group) for group in _ALIAS_GROUPS)
_WEIGHT_KEYS = ("weight", "importance", "multiplier")


def _report_ignored_keys(p: dict[str, Any], field: str, at_key: Any, findings: list[Finding]) -> None:
    keys = p.keys()
    if not keys <= PROMPT_KEYS:
        for key in p:
            if key not in PROMPT_KEYS:
                suggestion = did_you_mean(key, PROMPT_KEYS)
                findings.append(
                    Finding(
                        message=f"prompt key '{key}' is ignored"
                        + (f" (did you mean '{suggestion}'?)" if suggestion else ""),
                        location=at_key(key),
                        code="ignored-key",
                    )
                )
    for group, group_set in zip(_ALIAS_GROUPS, _ALIAS_GROUP_SETS):
        if len(keys & group_set) < 2:
            continue
        used = next((k for k in group if truthy(p.get(k))), None)
        for key in group:
            if used is not None and key != used and truthy(p.get(key)):
                findings.append(
                    Finding(
                        message=f"prompt key '{key}' is ignored because '{used}' is set",
                        location=at_key(key),
                        code="ignored-key",
                    )
                )
    weights = [k for k in _WEIGHT_KEYS if p.get(k) is not None]
    for key in weights[1:]:
        findings.append(
            Finding(
                message=f"prompt key '{key}' is ignored because '{weights[0]}' is set",
                location=at_key(key),
                code="ignored-key",
            )
        )


def report_duplicate_ids(prompts: list[ParsedPrompt], findings: list[Finding]) -> None:
    first_seen: dict[str, ParsedPrompt] = {}
    for prompt in prompts:
        pid = js_string(prompt.raw["id"])
        if pid in first_seen:
            first = first_seen[pid]
            findings.append(
                Finding(
                    message=f"prompt id '{pid}' is used again (first at line {first.location.line}); "
                    "Weval keys results by prompt id: both run here, but the Weval JSON and the run "
                    f"averages keep only the later one (line {prompt.location.line})",
                    location=prompt.location,
                    code="duplicate-prompt-id",
                )
            )
        else:
            first_seen[pid] = prompt
