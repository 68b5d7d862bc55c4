"""``$call`` / ``$external`` (docs/functions.md, '$call and $external'), without the HTTP.

Scoring stays pure: :func:`build_external_request` turns the point's arguments into an
:class:`ExternalRequest` (or an error), the caller's executor sends it (with the timeout, the
retries on 5xx and transport errors, and the cache), and :func:`read_external_response` turns
the status and body into the point's result.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_weval.jsvalues import (
    is_number,
    js_json,
    js_key_order,
    js_string,
    js_typeof,
    replace_all_literal,
    truthy,
    utf16_slice,
)
from pytest_weval.scoring.context import PointContext
from pytest_weval.scoring.tools import parse_strict_json
from pytest_weval.scoring.types import FnError, FnScore, RawResult

# Keys of the arguments that configure the call; every other key is a user parameter.
_CONFIG_KEYS = frozenset(
    ("service", "url", "method", "headers", "timeout_ms", "cache", "max_retries", "retry_backoff_ms")
)
_ENV_REF = re.compile(r"\$\{([^}]+)\}")
# fetch() upper-cases these method names and leaves any other as written.
_NORMALIZED_METHODS = frozenset(("DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"))


@dataclass(frozen=True)
class ExternalRequest:
    """One external-service request, ready for an HTTP executor.

    ``json_body`` is None for GET (the reference always sends a body, which makes every GET
    fail; a fix listed in docs/compatibility.md). ``cache``: the service allows caching the reply under
    ``cache_key`` (sha256 of the reference's key JSON, so keys match Weval's).
    """

    url: str
    method: str
    headers: tuple[tuple[str, str], ...]
    json_body: dict[str, Any] | None
    timeout_s: float
    max_retries: int
    retry_backoff_s: float
    cache: bool
    cache_key: str
    service: str  # the service name, or "inline"


def _failed(message: str) -> FnError:
    return FnError(f"External service call failed: {message}")


def _resolve_service(args: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[dict[str, Any], str] | FnError:
    if truthy(args.get("service")):
        name = args["service"]
        services = config.get("externalServices")
        key = js_string(name)
        if not isinstance(services, dict) or not truthy(services.get(key)):
            available = ", ".join(js_key_order(services)) if isinstance(services, dict) and services else "none"
            return _failed(f"External service '{key}' not found in config. Available services: {available}")
        service = services[key]
        return (service if isinstance(service, dict) else {}), key
    if truthy(args.get("url")):
        inline = {"url": args["url"], "method": args.get("method") or "POST"}
        for key in ("headers", "timeout_ms", "cache", "max_retries", "retry_backoff_ms"):
            if key in args:
                inline[key] = args[key]
        return inline, "inline"
    return _failed("Must provide either 'service' (named service) or 'url' (inline service)")


def _substitute(value: Any, data: dict[str, Any]) -> Any:
    """``substituteTemplates``: exact ``{response}``-style strings become the raw value;
    embedded ones are replaced with JS ``replace`` semantics (``$&`` etc. in the value)."""
    if isinstance(value, str):
        if value == "{messages}":
            return data["messages"]
        for name in ("response", "modelId", "promptId"):
            if value == "{" + name + "}":
                return data[name]
        result = value
        for name in ("response", "modelId", "promptId"):
            result = replace_all_literal(result, "{" + name + "}", data[name])
        if "{messages}" in result:
            result = replace_all_literal(result, "{messages}", js_json(data["messages"]))
        return result  # {promptText} is never defined in the reference's pipeline
    if isinstance(value, list):
        return [_substitute(item, data) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(value[key], data) for key in js_key_order(value)}
    return value


def _headers(
    configured: Any, allowed_env: frozenset[str], environ: Mapping[str, str]
) -> tuple[tuple[str, str], ...] | FnError:
    headers: dict[str, str] = {"Content-Type": "application/json"}
    if not truthy(configured):
        return tuple(headers.items())
    if not isinstance(configured, dict):
        return _failed(f"'headers' must be a mapping of header names to strings, got {js_typeof(configured)}")
    for key in js_key_order(configured):
        value = configured[key]
        if not isinstance(value, str):
            return _failed(f"Failed to substitute env var in header '{key}': value.replace is not a function")
        for var in _ENV_REF.findall(value):
            if var not in allowed_env:
                # docs/rulings.md, ruling 16: a blueprint reads only the variables the user allowed.
                return _failed(
                    f"header '{key}' references ${{{var}}}, which this run does not allow: "
                    f"pass --weval-allow-env={var} (or ini weval_allow_env) to let blueprints read it"
                )
            if var not in environ:
                return _failed(
                    f"Failed to substitute env var in header '{key}': Environment variable {var} is not defined"
                )
        headers[key] = _ENV_REF.sub(lambda m: environ[m.group(1)], value)
    return tuple(headers.items())


def build_external_request(
    args: Any,
    context: PointContext,
    allowed_env: frozenset[str] | None = None,
    *,
    response: str,
    environ: Mapping[str, str] | None = None,
) -> ExternalRequest | FnError:
    """The request a ``$call`` point makes for ``response`` (the subject text), or the error
    the reference would report first. ``allowed_env`` defaults to ``context.allowed_env``;
    ``environ`` to ``os.environ``."""
    if not isinstance(args, (dict, list)):
        return FnError("Argument for 'call' must be an object")
    # An array is an object to JS but has neither `service` nor `url`.
    call_args: dict[str, Any] = args if isinstance(args, dict) else {}
    resolved = _resolve_service(call_args, context.config or {})
    if isinstance(resolved, FnError):
        return resolved
    service, name = resolved

    data = {
        "response": response,
        "modelId": context.model_id,
        "promptId": context.prompt_id,
        "messages": context.messages,
    }
    params = {k: _substitute(call_args[k], data) for k in js_key_order(call_args) if k not in _CONFIG_KEYS}
    body: dict[str, Any] = {
        "response": data["response"],
        "modelId": context.model_id,
        "promptId": context.prompt_id,
    }
    body.update(params)  # user parameters may override the standard fields, as in JS spread

    key_payload: dict[str, Any] = {"type": "call", "service": name}
    if "url" in service:
        key_payload["url"] = service["url"]
    key_payload["body"] = body
    cache_key = hashlib.sha256(js_json(key_payload).encode("utf-8")).hexdigest()

    headers = _headers(
        service.get("headers"),
        context.allowed_env if allowed_env is None else allowed_env,
        os.environ if environ is None else environ,
    )
    if isinstance(headers, FnError):
        return headers

    method = js_string(service.get("method")) if truthy(service.get("method")) else "POST"
    if method.upper() in _NORMALIZED_METHODS:
        method = method.upper()
    timeout_ms = service.get("timeout_ms")
    retries = service.get("max_retries")
    backoff_ms = service.get("retry_backoff_ms")
    return ExternalRequest(
        url=js_string(service.get("url")),
        method=method,
        headers=headers,
        json_body=None if method == "GET" else body,
        timeout_s=(timeout_ms if is_number(timeout_ms) and timeout_ms > 0 else 30000) / 1000,
        # JS retries while `attempt < max_retries`, so 1.5 means two retries.
        max_retries=math.ceil(max(retries, 0)) if is_number(retries) and math.isfinite(retries) else 2,
        retry_backoff_s=(backoff_ms if is_number(backoff_ms) and backoff_ms > 0 else 1000) / 1000,
        cache=service.get("cache") is not False,
        cache_key=cache_key,
        service=name,
    )


def read_external_response(status: int, body_text: str, *, cached: bool = False) -> RawResult:
    """The point's result from the service's reply (``makeHttpRequest`` + ``call``)."""
    if not 200 <= status <= 299:
        return _failed(f"HTTP {status}: {utf16_slice(body_text, 200)}")
    try:
        reply = parse_strict_json(body_text)
    except (ValueError, RecursionError) as exc:
        return _failed(f"the service's reply is not JSON ({exc})")
    if not isinstance(reply, (dict, list)):
        return _failed("Invalid service response: Response must be an object")
    fields: dict[str, Any] = reply if isinstance(reply, dict) else {}
    if truthy(fields.get("error")):
        return FnError(f"External service error: {js_string(fields['error'])}")
    score = fields.get("score")
    if not is_number(score):
        kind = "undefined" if "score" not in fields else js_typeof(score)
        return _failed(f"Invalid service response: score must be a number, got {kind}")
    if score < 0 or score > 1:
        return _failed(f"Invalid service response: score must be between 0 and 1, got {js_string(score)}")
    explain = fields.get("explain")
    if cached and truthy(explain):
        explain = f"{js_string(explain)} (cached)"
    return FnScore(float(score), explain if isinstance(explain, str) else None)
