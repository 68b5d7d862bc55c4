"""Raw documents -> the reference's normalized config (`parseAndNormalizeBlueprint`, §1.2-1.7).

The output dict equals what the reference's parser returns, serialized (absent keys dropped).
Every error the reference raises for the file is a BlueprintError located at the field that
caused it. Where the reference silently drops something (unknown prompt keys, a shadowed
alias, a points list that is not a list) or rejects the whole file for one point (a `$ref` to
a missing definition, rulings.md 9), we keep going and record a Finding instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .functions import did_you_mean
from .ids import generated_prompt_id
from .js import ABSENT, is_number, js_json, js_nullish, js_or, js_string, js_trim, js_typeof, truthy
from .loader import RawSource
from .model import BlueprintError, EvalPoint, Finding, Location
from .points import PointContext, PointError, evaluator_points, expand_refs, normalize_points

RENDER_AS_VALUES = ("markdown", "html", "plaintext")

# Keys the reference reads from a prompt (anything else is dropped), plus our `threshold`.
PROMPT_KEYS = frozenset((
    "prompt", "promptText", "messages", "id", "description", "ideal", "idealResponse", "system",
    "noCache", "citation", "reference", "weight", "importance", "multiplier", "render_as",
    "temperature", "requiredTools", "prohibitedTools", "maxCalls", "should", "points", "expect",
    "expects", "expectations", "should_not", "threshold",
))  # fmt: skip

# Header keys something reads (the reference passes every header key through untouched).
HEADER_KEYS = frozenset((
    "id", "configId", "title", "configTitle", "description", "author", "reference", "references",
    "citation", "citations", "tags", "models", "system", "systemPrompt", "systems", "temperature",
    "temperatures", "evaluationConfig", "point_defs", "defs", "tools", "toolUse", "context",
    "render_as", "noCache", "externalServices", "embeddingModel", "concurrency", "threshold",
    "prompts",
))  # fmt: skip

_PROMPT_LIKE_KEYS = ("prompt", "messages", "should", "ideal", "points")


@dataclass
class ParsedPrompt:
    raw: dict[str, Any]  # normalized prompt, reference shape
    index: int
    location: Location
    points: list[EvalPoint]  # evaluator view: should, then should_not
    threshold: float | None = None


@dataclass
class ParsedConfig:
    config: dict[str, Any]  # the reference parser's output
    header: dict[str, Any]  # the header as written (never modified), to locate its fields
    prompts: list[ParsedPrompt]
    findings: list[Finding] = field(default_factory=list)


class Locator:
    """Locations in one source file, from the loader's marks."""

    def __init__(self, source: RawSource):
        self.source = source

    def at(self, obj: Any, field: str | None = None) -> Location:
        line, column = self.source.position(obj)
        return Location(path=self.source.path, line=line, column=column, field=field)

    def key(self, obj: Any, key: str, field: str | None = None) -> Location:
        line, column = self.source.key_position(obj, key)
        return Location(path=self.source.path, line=line, column=column, field=field or key)

    def item(self, seq: Any, index: int, field: str | None = None) -> Location:
        line, column = self.source.item_position(seq, index)
        return Location(path=self.source.path, line=line, column=column, field=field)


def parse_config(source: RawSource) -> ParsedConfig:
    loc = Locator(source)
    findings: list[Finding] = []
    header, raw_prompts = _split_documents(source, loc, findings)
    defs = _definitions(header)
    config = normalize_header(header, loc, findings)
    prompts = [
        _normalize_prompt(p, index, where, config, header, defs, loc, findings)
        for index, (p, where) in enumerate(raw_prompts)
    ]
    config["prompts"] = [p.raw for p in prompts]
    _check_external_services(config, header, loc)
    _report_duplicate_ids(prompts, findings)
    return ParsedConfig(config=config, header=header, prompts=prompts, findings=findings)


# --- §1.2 structure ----------------------------------------------------------------------------


def _split_documents(source: RawSource, loc: Locator,
                     findings: list[Finding]) -> tuple[dict[str, Any], list[tuple[Any, Location]]]:
    docs = source.documents
    first = docs[0]
    if len(docs) == 1:
        if isinstance(first, list):
            return {}, _items(first, loc)
        if isinstance(first, dict) and isinstance(first.get("prompts"), list):
            return first, _items(first["prompts"], loc)
        if source.fmt == "json" and isinstance(first, dict):
            prompts = js_or(first.get("prompts", ABSENT), [])
            if not isinstance(prompts, list):
                raise BlueprintError(
                    f"'prompts' must be a list. Found: {js_typeof(prompts)}",
                    loc.key(first, "prompts"), hint="write the prompts as a JSON array",
                )
            return first, _items(prompts, loc)
        if isinstance(first, dict):
            if any(truthy(first.get(k)) for k in _PROMPT_LIKE_KEYS):
                return {}, [(first, loc.at(first))]  # a single prompt
            return first, []
        raise BlueprintError(
            f"Invalid YAML format: Document must be an object or array. Found: {js_typeof(first)}",
            Location(path=source.path, line=1, column=1),
            hint="a blueprint is a header mapping followed by prompts, or a list of prompts",
        )
    is_header = isinstance(first, dict) and not any(
        truthy(first.get(k)) for k in (*_PROMPT_LIKE_KEYS, "expect")
    )
    prompts: list[tuple[Any, Location]] = []
    for doc in docs[1:] if is_header else docs:
        if isinstance(doc, list):
            prompts.extend(_items(doc, loc))
        else:
            prompts.append((doc, loc.at(doc)))
    if not is_header:
        return {}, prompts
    # §1.2: a first document with only promptText/should_not/expects/... is read as the header.
    leaked = [k for k in ("promptText", "should_not", "expects", "expectations") if k in first]
    if leaked:
        findings.append(Finding(
            message=f"the first document has prompt keys ({', '.join(leaked)}) but is read as the "
                    "header, so that prompt is lost; add `prompt:` to it or move it after a header",
            location=loc.key(first, leaked[0]), code="prompt-in-header",
        ))
    return first, prompts


def _items(seq: list[Any], loc: Locator) -> list[tuple[Any, Location]]:
    return [(item, loc.item(seq, i)) for i, item in enumerate(seq)]


def _definitions(header: dict[str, Any]) -> dict[str, Any]:
    """defsMap = `{...(point_defs || defs)}`."""
    defs = js_or(header.get("point_defs", ABSENT), header.get("defs", ABSENT))
    if isinstance(defs, dict):
        return dict(defs)
    if isinstance(defs, (list, str)):
        return {str(i): v for i, v in enumerate(defs)}
    return {}


# --- §1.3 header -------------------------------------------------------------------------------


def _assign(config: dict[str, Any], key: str, value: Any) -> None:
    """`config[key] = value`, where assigning undefined removes the key from the JSON."""
    if value is ABSENT:
        config.pop(key, None)
    else:
        config[key] = value


def normalize_header(header: dict[str, Any], loc: Locator, findings: list[Finding]) -> dict[str, Any]:
    """The header as written (not modified) -> the config without prompts."""
    # `prompts` is replaced by the normalized list; `defs` (not `point_defs`) is dropped.
    config = {k: v for k, v in header.items() if k != "prompts" and not (k == "defs" and truthy(v))}
    _assign(config, "id", js_or(config.get("id", ABSENT), header.get("configId", ABSENT)))
    _assign(config, "title", js_or(config.get("title", ABSENT), header.get("configTitle", ABSENT)))
    _assign(config, "system", js_or(config.get("system", ABSENT), header.get("systemPrompt", ABSENT)))

    if "author" in config:
        author = config["author"]
        if isinstance(author, (dict, list)):  # any JS object, arrays included
            name = author.get("name") if isinstance(author, dict) else None
            if not isinstance(name, str) or js_trim(name) == "":
                raise BlueprintError("Invalid 'author' object: missing 'name' string.",
                                     loc.key(header, "author"), hint="give the author a `name:`")
        elif not isinstance(author, str):
            raise BlueprintError("Invalid 'author' field: must be a string or an object with 'name'.",
                                 loc.key(header, "author"), hint="write `author: Name` or `author: {name: ...}`")

    reference_key = next((k for k in ("reference", "citation", "references", "citations") if truthy(config.get(k))),
                         "citations")
    references = js_or(*(config.get(k, ABSENT) for k in ("reference", "citation", "references", "citations")))
    if references is not ABSENT:
        where = loc.key(header, reference_key)
        config["references"] = [_reference(r, where) for r in (references if isinstance(references, list) else [references])]
        for key in ("citation", "citations", "reference"):
            config.pop(key, None)

    for key in ("configId", "configTitle", "systemPrompt"):
        config.pop(key, None)

    render_as = config.get("render_as")
    if truthy(render_as) and render_as not in RENDER_AS_VALUES:
        raise BlueprintError(
            f"Invalid global 'render_as' value. Must be one of: {', '.join(RENDER_AS_VALUES)}.",
            loc.key(header, "render_as"), hint="use markdown, html or plaintext",
        )

    models = config.get("models")
    if truthy(models):
        if not isinstance(models, list):
            raise BlueprintError("The 'models' field must be an array of strings or custom model objects.",
                                 loc.key(header, "models"), hint="write models as a list, e.g. [openai:gpt-4o-mini]")
        for index, model in enumerate(models):
            problem = model_definition_problem(model)
            if problem:
                raise BlueprintError(problem, loc.item(models, index, f"models[{index}]"),
                                     hint="a model is a 'provider:model' string or an object with id, url, modelName and inherit")

    tools = config.get("tools")
    if truthy(tools):
        if not isinstance(tools, list):
            raise BlueprintError("The 'tools' field must be an array of tool definitions.", loc.key(header, "tools"))
        for index, tool in enumerate(tools):
            if not isinstance(tool, dict) or not truthy(tool.get("name")) or not isinstance(tool.get("name"), str):
                raise BlueprintError(
                    f"Invalid tool definition at index {index}: each tool must have a 'name' string.",
                    loc.item(tools, index, f"tools[{index}]"), hint="give every tool a `name:`",
                )
    _check_tool_use(config, header, loc)

    if truthy(config.get("id")):
        findings.append(Finding(
            message=f"the header 'id' ({js_string(config['id'])}) is ignored: a blueprint's id comes from its path",
            location=loc.key(header, "id" if "id" in header else "configId"), code="ignored-header-id",
        ))
    for key in header:
        if key not in HEADER_KEYS:
            suggestion = did_you_mean(key, HEADER_KEYS)
            findings.append(Finding(
                message=f"header key '{key}' is not used by Weval"
                        + (f" (did you mean '{suggestion}'?)" if suggestion else ""),
                location=loc.key(header, key), code="unknown-header-key",
            ))
    return config


def _reference(ref: Any, where: Location) -> dict[str, Any]:
    if isinstance(ref, str):
        return {"title": ref}
    if isinstance(ref, dict):
        title = js_or(ref.get("title", ABSENT), ref.get("name", ABSENT))
        if not isinstance(title, str) or js_trim(title) == "":
            raise BlueprintError("Invalid 'reference'/'citation' object: missing 'title' or 'name' string.",
                                 where, hint="give each reference a `title:` (or `name:`)")
        out = {"title": title}
        if "url" in ref:
            out["url"] = ref["url"]
        return out
    raise BlueprintError(
        "Invalid 'reference'/'citation' field: must be a string, an object with 'title'/'name', or an array of these.",
        where, hint="write a title string, or {title, url}",
    )


def model_definition_problem(model: Any) -> str | None:
    """_validateModelDefinition: why a `models` entry is unusable, or None (§1.3, §7.1)."""
    if isinstance(model, str):
        return None
    if not isinstance(model, dict):
        return "Invalid model definition: must be a string or an object."
    model_id = model.get("id")
    if not truthy(model_id) or not isinstance(model_id, str):
        return f"Invalid custom model definition: 'id' is required and must be a string. Found: {js_json(model)}"
    for key in ("url", "modelName", "inherit"):
        if not truthy(model.get(key)) or not isinstance(model.get(key), str):
            return f"Invalid custom model definition for '{model_id}': '{key}' is required and must be a string."
    fmt = model.get("format")
    if truthy(fmt) and not isinstance(fmt, str):
        return f"Invalid custom model definition for '{model_id}': 'format', if provided, must be a string."
    if truthy(fmt) and fmt not in ("chat", "completions"):
        return (f"Invalid custom model definition for '{model_id}': 'format' must be either 'chat' or "
                f"'completions'. Found: '{js_string(fmt)}'")
    headers = model.get("headers")
    if truthy(headers) and not isinstance(headers, dict):
        return f"Invalid custom model definition for '{model_id}': 'headers', if provided, must be an object."
    return None


def _check_tool_use(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> None:
    tool_use = config.get("toolUse")
    if not truthy(tool_use):
        return
    where = loc.key(header, "toolUse")
    if not isinstance(tool_use, (dict, list)):
        raise BlueprintError("The 'toolUse' field must be an object.", where)
    tool_use = tool_use if isinstance(tool_use, dict) else {}
    if truthy(tool_use.get("mode")) and tool_use["mode"] != "trace-only":
        raise BlueprintError("The 'toolUse.mode' field, if provided, must be 'trace-only'.",
                             loc.key(tool_use, "mode", "toolUse.mode"))
    if truthy(tool_use.get("outputFormat")) and tool_use["outputFormat"] != "json-line":
        raise BlueprintError("The 'toolUse.outputFormat' field, if provided, must be 'json-line'.",
                             loc.key(tool_use, "outputFormat", "toolUse.outputFormat"))
    if "maxSteps" in tool_use and (not is_number(tool_use["maxSteps"]) or tool_use["maxSteps"] < 1):
        raise BlueprintError("The 'toolUse.maxSteps' field, if provided, must be a positive number.",
                             loc.key(tool_use, "maxSteps", "toolUse.maxSteps"))


def _check_external_services(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> None:
    services = config.get("externalServices")
    if not truthy(services):
        return
    entries = services.items() if isinstance(services, dict) else (
        enumerate(services) if isinstance(services, list) else ())
    for name, service in entries:
        where = loc.key(services, str(name), f"externalServices.{name}")
        if service is None:
            raise BlueprintError(f"External service '{name}' must be an object with a 'url' field", where)
        url = service.get("url") if isinstance(service, dict) else None
        if not truthy(url):
            raise BlueprintError(f"External service '{name}' must have a 'url' field", where,
                                 hint="add `url: https://...`")
        if not _is_valid_url(url):
            raise BlueprintError(f"External service '{name}' has invalid URL: {js_string(url)}", where,
                                 hint="the URL must be absolute, e.g. https://host/path (no ${VAR} in it)")
        method = service.get("method")
        if truthy(method) and method not in ("GET", "POST", "PUT"):
            raise BlueprintError(
                f"External service '{name}' has invalid method: {js_string(method)}. Must be GET, POST, or PUT", where)
        if "timeout_ms" in service and (not is_number(service["timeout_ms"]) or service["timeout_ms"] <= 0):
            raise BlueprintError(
                f"External service '{name}' has invalid timeout_ms: {js_string(service['timeout_ms'])}. "
                "Must be a positive number", where)


_SPECIAL_SCHEMES = ("http", "https", "ws", "wss", "ftp")


def _is_valid_url(url: Any) -> bool:
    """Roughly what `new URL(url)` accepts: a scheme, and a host for the web schemes."""
    text = js_trim(js_string(url))
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return False
    if not parts.scheme or not parts.scheme[0].isalpha() or ":" not in text:
        return False
    if parts.scheme.lower() in _SPECIAL_SCHEMES:
        return bool(parts.hostname) and " " not in parts.netloc
    return True


# --- §1.4 prompts ------------------------------------------------------------------------------


def _normalize_prompt(p: Any, index: int, where: Location, config: dict[str, Any], header: dict[str, Any],
                      defs: dict[str, Any], loc: Locator, findings: list[Finding]) -> ParsedPrompt:
    field = f"prompts[{index}]"
    where = Location(path=where.path, line=where.line, column=where.column, field=field)
    if p is None:
        raise BlueprintError(f"prompt {index + 1} is empty (null)", where, hint="remove the empty list item")
    if not isinstance(p, dict):
        # JS reads no fields from a string or number: an empty prompt, which validation rejects.
        findings.append(Finding(message=f"prompt {index + 1} is a {js_typeof(p)}, not a mapping",
                                location=where, code="prompt-not-object"))
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
            raise BlueprintError(f"'messages' must be a list of messages in prompt '{shown_id}'.",
                                 at_key("messages"), hint="write messages as a list, e.g. - user: Hello")
        body["messages"] = [_normalize_message(m, i, shown_id, messages, loc, field) for i, m in enumerate(messages)]
    elif truthy(prompt_source):
        body["messages"] = [{"role": "user", "content": prompt_source}]

    body["description"] = p.get("description", ABSENT)
    body["idealResponse"] = js_or(p.get("ideal", ABSENT), p.get("idealResponse", ABSENT))
    if "system" in p:
        system = p["system"]
        if isinstance(system, list):
            raise BlueprintError(
                f"Invalid 'system' field in prompt '{id_or_unknown}': Per-prompt 'system' must be a string or "
                "null, not an array. Did you mean to use 'systems' (plural) at the global config level instead?",
                at_key("system"), hint="put the variants in the header as `systems:`",
            )
        if system is not None and not isinstance(system, str):
            raise BlueprintError(
                f"Invalid 'system' field in prompt '{id_or_unknown}': Must be a string or null. Found: {js_typeof(system)}",
                at_key("system"),
            )
        body["system"] = system
    if "noCache" in p:
        body["noCache"] = truthy(p["noCache"])
    elif "noCache" in config:
        body["noCache"] = truthy(config["noCache"])

    citation = js_or(p.get("citation", ABSENT), p.get("reference", ABSENT))
    if citation is not ABSENT:
        citation_key = "citation" if "citation" in p and truthy(p["citation"]) else "reference"
        if isinstance(citation, (dict, list)):
            title = js_or(citation.get("title", ABSENT), citation.get("name", ABSENT)) if isinstance(citation, dict) else ABSENT
            if not isinstance(title, str) or js_trim(title) == "":
                raise BlueprintError(
                    f"Invalid 'citation'/'reference' object in prompt '{shown_id}': missing 'title' or 'name' string.",
                    at_key(citation_key), hint="give the citation a `title:`")
        elif not isinstance(citation, str):
            raise BlueprintError(
                f"Invalid 'citation'/'reference' field in prompt '{shown_id}': must be a string or an object with 'title'/'name'.",
                at_key(citation_key))
        body["citation"] = citation

    weight = js_nullish(p.get("weight", ABSENT), p.get("importance", ABSENT), p.get("multiplier", ABSENT))
    if weight is not ABSENT:
        if not is_number(weight) or weight < 0.1 or weight > 10:
            weight_key = next((k for k in ("weight", "importance", "multiplier") if k in p), "weight")
            raise BlueprintError(
                f"Prompt weight must be a number between 0.1 and 10. Found {js_string(weight)}. Prompt ID: '{id_or_unknown}'",
                at_key(weight_key), hint="use a weight between 0.1 and 10")
        body["weight"] = weight

    render_as = p.get("render_as", ABSENT)
    if truthy(render_as):
        if render_as not in RENDER_AS_VALUES:
            raise BlueprintError(
                f"Invalid 'render_as' value on prompt '{id_or_unknown}'. Must be one of: {', '.join(RENDER_AS_VALUES)}.",
                at_key("render_as"), hint="use markdown, html or plaintext")
        body["render_as"] = render_as
    else:
        body["render_as"] = js_or(config.get("render_as", ABSENT), "markdown")

    if "temperature" in p:
        if not is_number(p["temperature"]):
            raise BlueprintError(
                f"Prompt temperature must be a number. Found {js_typeof(p['temperature'])}. Prompt ID: '{id_or_unknown}'",
                at_key("temperature"))
        body["temperature"] = p["temperature"]
    for key in ("requiredTools", "prohibitedTools"):
        if key in p:
            if not isinstance(p[key], list):
                raise BlueprintError(f"Prompt '{key}' must be an array. Prompt ID: '{id_or_unknown}'", at_key(key))
            body[key] = p[key]
    if "maxCalls" in p:
        if not is_number(p["maxCalls"]) or p["maxCalls"] < 0:
            raise BlueprintError(
                f"Prompt 'maxCalls' must be a non-negative number. Found {js_string(p['maxCalls'])}. Prompt ID: '{id_or_unknown}'",
                at_key("maxCalls"))
        body["maxCalls"] = p["maxCalls"]

    ctx = PointContext(prompt_id=pid, defs=defs,
                       locate=lambda seq, i, name: loc.item(seq, i, f"{field}.{name}"))
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
    return ParsedPrompt(raw=raw, index=index, location=where, points=view,
                        threshold=_threshold(p, at_key("threshold") if "threshold" in p else where))


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
            where, hint="write one message per list item, e.g. - user: Hello",
        )
    role = keys[0]
    if role not in ("user", "assistant", "system", "ai"):
        raise BlueprintError(f"Invalid role '{role}' in message at index {index} in prompt '{shown_id}'.",
                             where, hint="roles are user, assistant (or ai) and system")
    content = msg[role] if isinstance(msg, dict) else msg[0]
    return {"role": "assistant" if role == "ai" else role, "content": content}


def _threshold(p: dict[str, Any], where: Location) -> float | None:
    """Our extension (rulings.md 8): a pass mark in [0, 1], kept out of the normalized prompt."""
    value = p.get("threshold")
    if value is None:
        return None
    if not is_number(value) or not 0 <= value <= 1:
        raise BlueprintError(f"'threshold' must be a number between 0 and 1. Found {js_string(value)}.", where,
                             hint="e.g. threshold: 0.7")
    return float(value)


def _warn_not_a_list(p: dict[str, Any], key: str, at_key: Any, findings: list[Finding]) -> None:
    if not isinstance(p[key], list):
        findings.append(Finding(
            message=f"'{key}' is a {js_typeof(p[key])}, not a list, so it gives no points (as in Weval)",
            location=at_key(key), code="points-not-list",
        ))


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
                findings.append(Finding(
                    message=f"prompt key '{key}' is ignored" + (f" (did you mean '{suggestion}'?)" if suggestion else ""),
                    location=at_key(key), code="ignored-key",
                ))
    for group, group_set in zip(_ALIAS_GROUPS, _ALIAS_GROUP_SETS):
        if len(keys & group_set) < 2:
            continue
        used = next((k for k in group if truthy(p.get(k))), None)
        for key in group:
            if used is not None and key != used and truthy(p.get(key)):
                findings.append(Finding(message=f"prompt key '{key}' is ignored because '{used}' is set",
                                        location=at_key(key), code="ignored-key"))
    weights = [k for k in _WEIGHT_KEYS if p.get(k) is not None]
    for key in weights[1:]:
        findings.append(Finding(message=f"prompt key '{key}' is ignored because '{weights[0]}' is set",
                                location=at_key(key), code="ignored-key"))


def _report_duplicate_ids(prompts: list[ParsedPrompt], findings: list[Finding]) -> None:
    first_seen: dict[str, ParsedPrompt] = {}
    for prompt in prompts:
        pid = js_string(prompt.raw["id"])
        if pid in first_seen:
            first = first_seen[pid]
            findings.append(Finding(
                message=f"prompt id '{pid}' is used again (first at line {first.location.line}); "
                        "Weval keys results by prompt id, so the two collide there",
                location=prompt.location, code="duplicate-prompt-id",
            ))
        else:
            first_seen[pid] = prompt
