"""What every provider adapter provides, and the helpers they share.

An adapter turns a ``ModelRequest`` into an ``HttpCall`` and a decoded JSON body into a
``ModelReply``. It knows nothing about retries, limits or caching. ``identity()`` is what the
cache key is made of: everything that changes the answer, never a secret.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pytest_weval.engine.prices import tier_priced
from pytest_weval.engine.request import ChatMessage, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor, masked_headers
from pytest_weval.errors import WevalError


@dataclasses.dataclass(frozen=True)
class HttpCall:
    url: str
    headers: Mapping[str, str]
    body: dict[str, Any]

    def __repr__(self) -> str:  # header values (keys) never shown
        return f"HttpCall(url={self.url!r}, headers={masked_headers(self.headers)!r}, body=...)"


class MalformedReply(WevalError):
    """A 2xx body that is not the shape the provider documents (retried)."""


class BodyError(WevalError):
    """A 2xx body that carries an error object instead of a completion."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(message)


class Adapter:
    provider: str = ""  # limiter group, stats
    endpoint: str = "chat"  # endpoint kind, part of the cache key
    default_temperature: float | None = 0.3
    default_max_tokens: int | None = 1500
    # A batch API at the provider (transport/batch_api.py BATCH_APIS) that this adapter's
    # requests may go through at the batch price (docs/batch.md); a custom model's never do.
    has_batch_api: bool = False
    # Set by the engine from its settings: --weval-service-tier and --weval-prompt-cache. An
    # adapter built alone sends the reference's bodies.
    service_tier: str = "auto"
    prompt_cache: str = "off"

    def __init__(self, model_id: str):
        self.model_id = model_id
        self._connection: tuple[str, dict[str, str]] | None = None

    # -- identity (cache key material; no secrets) -------------------------------------
    def identity(self) -> dict[str, Any]:
        raise NotImplementedError

    # -- credentials (read lazily: replay from the cache needs none) -------------------
    def connect(self, env: Mapping[str, str], redactor: Redactor) -> tuple[str, dict[str, str]]:
        """(url, headers) with the key in place. Raises MissingKeyError/ConfigError."""
        if self._connection is None:
            self._connection = self._connect(env, redactor)
        return self._connection

    def _connect(self, env: Mapping[str, str], redactor: Redactor) -> tuple[str, dict[str, str]]:
        raise NotImplementedError

    # -- request / reply ---------------------------------------------------------------
    def build(self, request: ModelRequest, env: Mapping[str, str], redactor: Redactor) -> HttpCall:
        url, headers = self.connect(env, redactor)
        return HttpCall(url=url, headers=headers, body=self.body(request))

    def body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def batch_body(self, request: ModelRequest) -> dict[str, Any]:
        """The body of ``request`` as a line of a batch: the live body, unless the provider's
        batch needs what the live URL says (Gemini's model) or a longer-lived prompt cache."""
        return self.body(request)

    def tier_sent(self) -> str | None:
        """The service tier this adapter asks its provider for (None: the provider's default)."""
        return None

    def caches_prefix(self, request: ModelRequest, min_tokens: int) -> int:
        """Where the prompt cache should end in the last message of ``request`` (characters), or
        0: under --weval-prompt-cache=auto, a prefix more than one call of the run shares, long
        enough for the model to cache (``min_tokens``, four characters a token)."""
        if self.prompt_cache != "auto" or request.shared_by < 2 or not request.shared_prefix_chars:
            return 0
        before = sum(len(m.content or "") for m in request.messages[:-1])
        if (before + request.shared_prefix_chars) / 4 < min_tokens:
            return 0
        return request.shared_prefix_chars

    def parse(self, data: Any) -> ModelReply:
        raise NotImplementedError

    def adapt(self, status: int, data: Any) -> bool:
        """After an HTTP 400: adjust parameters and return True to retry once at once."""
        return False

    def temperature(self, request: ModelRequest) -> float | None:
        return self.default_temperature if request.temperature is None else request.temperature

    def max_tokens(self, request: ModelRequest) -> int | None:
        return self.default_max_tokens if request.max_tokens is None else request.max_tokens


# -- shared helpers --------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def offers_tier(model_id: str, tier: str) -> bool:
    """Whether ``model_id`` is served at ``tier`` (flex, priority): genai-prices prices that tier
    for it, as the provider's pricing page lists the models each tier takes."""
    return tier_priced(model_id, tier)


def prefix_key(request: ModelRequest, chars: int) -> str:
    """A name for the prefix ``request`` shares with other calls (OpenAI's ``prompt_cache_key``):
    the same judge asked about the same answer gets the same one."""
    head = [[m.role, m.content or ""] for m in request.messages[:-1]]
    last = request.messages[-1]
    head.append([last.role, (last.content or "")[:chars]])
    digest = hashlib.sha256(json.dumps([request.model.id, head]).encode()).hexdigest()
    return "weval-" + digest[:32]


def split_text(text: str, at: int, cache_control: dict[str, str]) -> list[dict[str, Any]]:
    """``text`` as content blocks, the first (up to ``at``) marked for the prompt cache: the
    same text, in two pieces."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text[:at], "cache_control": cache_control}]
    if text[at:]:
        blocks.append({"type": "text", "text": text[at:]})
    return blocks


def openai_messages(messages: tuple[ChatMessage, ...]) -> list[dict[str, str]]:
    """OpenAI-style messages: user/assistant/system only, null content as ""."""
    return [{"role": m.role, "content": m.content or ""} for m in messages if m.role in ("user", "assistant", "system")]


def tool_call_line(name: Any, arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    return "TOOL_CALL " + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def dig(data: Any, *path: Any) -> Any:
    """data[p0][p1]... or raise MalformedReply naming the missing step."""
    current = data
    trail = ""
    for step in path:
        trail += f"[{step!r}]" if isinstance(step, int) else f".{step}"
        try:
            current = current[step]
        except (KeyError, IndexError, TypeError):
            raise MalformedReply(f"reply has no {trail.lstrip('.')}") from None
    return current


def as_int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def error_message(text: str, limit: int = 500) -> str:
    """The useful part of an error body: error.message when it is JSON, else the text."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    message: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            message = error.get("message") or error.get("type") or json.dumps(error)
        elif isinstance(error, str):
            message = error
        elif data.get("message"):
            message = data.get("message")
        elif isinstance(data, dict) and data.get("detail"):
            message = data.get("detail")
    if isinstance(data, list) and data and isinstance(data[0], dict):  # google sometimes
        inner = data[0].get("error")
        if isinstance(inner, dict):
            message = inner.get("message")
    if not message:
        message = text.strip()
    message = str(message)
    return message if len(message) <= limit else message[:limit] + "…"


def body_error(data: Any) -> BodyError | None:
    """An ``{"error": {...}}`` object in a 2xx body (OpenRouter and others do this)."""
    if not isinstance(data, dict) or "error" not in data or data.get("choices"):
        return None
    error = data["error"]
    if isinstance(error, dict):
        code = error.get("code")
        status = code if isinstance(code, int) and 100 <= code < 600 else 502
        return BodyError(status, str(error.get("message") or json.dumps(error)))
    return BodyError(502, str(error))


# The parts of a reply body that say what it is billed: its usage (with cached reads and cache
# writes) and the service tier that answered it (engine/prices.py prices them).
BILLING_KEYS = ("model", "modelVersion", "usage", "usageMetadata", "service_tier")


def billing_of(data: Any) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    return {k: data[k] for k in BILLING_KEYS if k in data} or None


def reply_from_blocks(
    texts: list[str], calls: list[dict[str, Any]], input_tokens: Any, output_tokens: Any, data: Any = None
) -> ModelReply:
    """A reply whose text is one TOOL_CALL line per native tool call, then the joined text
    blocks (how the reference turns Anthropic and Google tool use into scoreable text)."""
    lines = [tool_call_line(c["name"], c["arguments"]) for c in calls]
    joined = "".join(texts).strip()
    if joined:
        lines.append(joined)
    return ModelReply(
        text="\n".join(lines),
        input_tokens=as_int(input_tokens),
        output_tokens=as_int(output_tokens),
        tool_calls=calls,
        billing=billing_of(data),
    )
