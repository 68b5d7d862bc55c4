"""The blueprint header (docs/format.md, 'Header'): aliases, author, references, models, tools, toolUse and
externalServices, validated as the reference validates them; every other key passes through."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pytest_weval.jsvalues import ABSENT, is_number, js_json, js_or, js_string, js_trim, truthy

from .functions import did_you_mean
from .locate import Locator
from .model import BlueprintError, Finding, Location

RENDER_AS_VALUES = ("markdown", "html", "plaintext")

# Header keys something reads (the reference passes every header key through untouched).
HEADER_KEYS = frozenset((
    "id", "configId", "title", "configTitle", "description", "author", "reference", "references",
    "citation", "citations", "tags", "models", "system", "systemPrompt", "systems", "temperature",
    "temperatures", "evaluationConfig", "point_defs", "defs", "tools", "toolUse", "context",
    "render_as", "noCache", "externalServices", "embeddingModel", "concurrency", "threshold",
    "prompts",
))  # fmt: skip


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
    _check_author(config, header, loc)
    _merge_references(config, header, loc)
    for key in ("configId", "configTitle", "systemPrompt"):
        config.pop(key, None)
    _check_render_as(config, header, loc)
    _check_models(config, header, loc)
    _check_tools(config, header, loc)
    _check_tool_use(config, header, loc)
    findings.extend(_header_findings(config, header, loc))
    return config


def _check_author(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> None:
    if "author" in config:
        author = config["author"]
        if isinstance(author, (dict, list)):  # any JS object, arrays included
            name = author.get("name") if isinstance(author, dict) else None
            if not isinstance(name, str) or js_trim(name) == "":
                raise BlueprintError(
                    "Invalid 'author' object: missing 'name' string.",
                    loc.key(header, "author"),
                    hint="give the author a `name:`",
                )
        elif not isinstance(author, str):
            raise BlueprintError(
                "Invalid 'author' field: must be a string or an object with 'name'.",
                loc.key(header, "author"),
                hint="write `author: Name` or `author: {name: ...}`",
            )


def _merge_references(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> None:
    """``reference``, ``citation``, ``references`` and ``citations`` become ``references``."""
    reference_key = next(
        (k for k in ("reference", "citation", "references", "citations") if truthy(config.get(k))), "citations"
    )
    references = js_or(*(config.get(k, ABSENT) for k in ("reference", "citation", "references", "citations")))
    if references is not ABSENT:
        where = loc.key(header, reference_key)
        config["references"] = [
            _reference(r, where) for r in (references if isinstance(references, list) else [references])
        ]
        for key in ("citation", "citations", "reference"):
            config.pop(key, None)


def _check_render_as(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> None:
    render_as = config.get("render_as")
    if truthy(render_as) and render_as not in RENDER_AS_VALUES:
        raise BlueprintError(
            f"Invalid global 'render_as' value. Must be one of: {', '.join(RENDER_AS_VALUES)}.",
            loc.key(header, "render_as"),
            hint="use markdown, html or plaintext",
        )


def _check_models(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> None:
    models = config.get("models")
    if truthy(models):
        if not isinstance(models, list):
            raise BlueprintError(
                "The 'models' field must be an array of strings or custom model objects.",
                loc.key(header, "models"),
                hint="write models as a list, e.g. [openai:gpt-4o-mini]",
            )
        for index, model in enumerate(models):
            problem = model_definition_problem(model)
            if problem:
                raise BlueprintError(
                    problem,
                    loc.item(models, index, f"models[{index}]"),
                    hint="a model is a 'provider:model' string or an object with id, url, modelName and inherit",
                )


def _check_tools(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> None:
    tools = config.get("tools")
    if truthy(tools):
        if not isinstance(tools, list):
            raise BlueprintError(
                "The 'tools' field must be an array of tool definitions.",
                loc.key(header, "tools"),
                hint="write tools as a list of {name, description, schema}",
            )
        for index, tool in enumerate(tools):
            if not isinstance(tool, dict) or not truthy(tool.get("name")) or not isinstance(tool.get("name"), str):
                raise BlueprintError(
                    f"Invalid tool definition at index {index}: each tool must have a 'name' string.",
                    loc.item(tools, index, f"tools[{index}]"),
                    hint="give every tool a `name:`",
                )


def _header_findings(config: dict[str, Any], header: dict[str, Any], loc: Locator) -> list[Finding]:
    found: list[Finding] = []
    if truthy(config.get("id")):
        found.append(
            Finding(
                message=f"the header 'id' ({js_string(config['id'])}) is ignored: a blueprint's id comes from its path",
                location=loc.key(header, "id" if "id" in header else "configId"),
                code="ignored-header-id",
            )
        )
    for key in header:
        if key not in HEADER_KEYS:
            suggestion = did_you_mean(key, HEADER_KEYS)
            found.append(
                Finding(
                    message=f"header key '{key}' is not used by Weval"
                    + (f" (did you mean '{suggestion}'?)" if suggestion else ""),
                    location=loc.key(header, key),
                    code="unknown-header-key",
                )
            )
    return found


def _reference(ref: Any, where: Location) -> dict[str, Any]:
    if isinstance(ref, str):
        return {"title": ref}
    if isinstance(ref, dict):
        title = js_or(ref.get("title", ABSENT), ref.get("name", ABSENT))
        if not isinstance(title, str) or js_trim(title) == "":
            raise BlueprintError(
                "Invalid 'reference'/'citation' object: missing 'title' or 'name' string.",
                where,
                hint="give each reference a `title:` (or `name:`)",
            )
        out = {"title": title}
        if "url" in ref:
            out["url"] = ref["url"]
        return out
    raise BlueprintError(
        "Invalid 'reference'/'citation' field: must be a string, an object with 'title'/'name', or an array of these.",
        where,
        hint="write a title string, or {title, url}",
    )


def model_definition_problem(model: Any) -> str | None:
    """_validateModelDefinition: why a `models` entry is unusable, or None (docs/format.md, 'Models and collections')."""
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
        return (
            f"Invalid custom model definition for '{model_id}': 'format' must be either 'chat' or "
            f"'completions'. Found: '{js_string(fmt)}'"
        )
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
        raise BlueprintError(
            "The 'toolUse' field must be an object.", where, hint="e.g. toolUse: {mode: trace-only, maxSteps: 4}"
        )
    tool_use = tool_use if isinstance(tool_use, dict) else {}
    if truthy(tool_use.get("mode")) and tool_use["mode"] != "trace-only":
        raise BlueprintError(
            "The 'toolUse.mode' field, if provided, must be 'trace-only'.",
            loc.key(tool_use, "mode", "toolUse.mode"),
            hint="Weval supports only trace-only tool use: set `mode: trace-only` or remove it",
        )
    if truthy(tool_use.get("outputFormat")) and tool_use["outputFormat"] != "json-line":
        raise BlueprintError(
            "The 'toolUse.outputFormat' field, if provided, must be 'json-line'.",
            loc.key(tool_use, "outputFormat", "toolUse.outputFormat"),
            hint="set `outputFormat: json-line` or remove it",
        )
    if "maxSteps" in tool_use and (not is_number(tool_use["maxSteps"]) or tool_use["maxSteps"] < 1):
        raise BlueprintError(
            "The 'toolUse.maxSteps' field, if provided, must be a positive number.",
            loc.key(tool_use, "maxSteps", "toolUse.maxSteps"),
            hint="use a number of 1 or more",
        )


def check_external_services(config: dict[str, Any], loc: Locator) -> None:
    """Checked after the prompts, as in the reference."""
    services = config.get("externalServices")
    if not truthy(services):
        return
    entries = (
        services.items() if isinstance(services, dict) else (enumerate(services) if isinstance(services, list) else ())
    )
    for name, service in entries:
        where = loc.key(services, str(name), f"externalServices.{name}")
        if service is None:
            raise BlueprintError(
                f"External service '{name}' must be an object with a 'url' field", where, hint="add `url: https://...`"
            )
        url = service.get("url") if isinstance(service, dict) else None
        if not truthy(url):
            raise BlueprintError(
                f"External service '{name}' must have a 'url' field", where, hint="add `url: https://...`"
            )
        if not _is_valid_url(url):
            raise BlueprintError(
                f"External service '{name}' has invalid URL: {js_string(url)}",
                where,
                hint="the URL must be absolute, e.g. https://host/path (no ${VAR} in it)",
            )
        method = service.get("method")
        if truthy(method) and method not in ("GET", "POST", "PUT"):
            raise BlueprintError(
                f"External service '{name}' has invalid method: {js_string(method)}. Must be GET, POST, or PUT",
                where,
                hint="use GET, POST or PUT",
            )
        if "timeout_ms" in service and (not is_number(service["timeout_ms"]) or service["timeout_ms"] <= 0):
            raise BlueprintError(
                f"External service '{name}' has invalid timeout_ms: {js_string(service['timeout_ms'])}. "
                "Must be a positive number",
                where,
                hint="give the timeout in milliseconds, e.g. 5000",
            )


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
