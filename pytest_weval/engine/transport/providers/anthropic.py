"""Anthropic messages API (docs/engine.md, 'Providers')."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_weval.engine.request import ChatMessage, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.keys import api_key, base_url
from pytest_weval.engine.transport.providers.base import (
    Adapter,
    BodyError,
    MalformedReply,
    as_int,
    dig,
    reply_from_blocks,
    split_text,
)
from pytest_weval.engine.transport.providers.openai_compat import anthropic_cache_min

ANTHROPIC_VERSION = "2023-06-01"


def split_system(messages: tuple[ChatMessage, ...]) -> tuple[str | None, list[dict[str, str]]]:
    """(the first system message, the user/assistant messages)."""
    system = next((m.content for m in messages if m.role == "system" and m.content), None)
    rest = [{"role": m.role, "content": m.content or ""} for m in messages if m.role in ("user", "assistant")]
    return system, rest


def parse_messages_reply(data: Any) -> ModelReply:
    if isinstance(data, dict) and data.get("type") == "error":
        error = data.get("error") or {}
        raise BodyError(502, str(error.get("message") if isinstance(error, dict) else error))
    content = dig(data, "content")
    if not isinstance(content, list):
        raise MalformedReply("reply content is not a list")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            calls.append({"name": block.get("name"), "arguments": block.get("input")})
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    # Anthropic's input_tokens leave out the cached reads and cache writes: the prompt is all three.
    prompt = sum(
        as_int(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    return reply_from_blocks(texts, calls, prompt, usage.get("output_tokens"), data)


class Anthropic(Adapter):
    provider = "anthropic"
    has_batch_api = True  # Message Batches
    endpoint = "messages"

    def __init__(self, model_id: str, model_name: str):
        super().__init__(model_id)
        self.model_name = model_name

    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "endpoint": self.endpoint, "model": self.model_name}

    def _connect(self, env: Mapping[str, str], redactor: Redactor) -> tuple[str, dict[str, str]]:
        key = api_key(self.provider, self.model_id, env, redactor)
        url = base_url(self.provider, env) + "/v1/messages"
        return url, {
            "x-api-key": key,
            "anthropic-version": ANTHROPIC_VERSION,
            "Content-Type": "application/json",
        }

    def body(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = split_system(request.messages)
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "max_tokens": self.max_tokens(request),
            "temperature": self.temperature(request),
            "stream": False,
        }
        if system:
            body["system"] = system
        return self._mark_prefix(body, request, {"type": "ephemeral"})

    def batch_body(self, request: ModelRequest) -> dict[str, Any]:
        # A batch may take longer than the 5-minute cache lives: the 1-hour cache, inside a batch.
        return self._mark_prefix(self.body(request), request, {"type": "ephemeral", "ttl": "1h"})

    def _mark_prefix(
        self, body: dict[str, Any], request: ModelRequest, cache_control: dict[str, str]
    ) -> dict[str, Any]:
        """The shared prefix marked for the prompt cache (``Adapter.caches_prefix``): the last
        message's text as two blocks, the first ending the prefix, with ``cache_control``."""
        at = self.caches_prefix(request, anthropic_cache_min(self.model_name))
        if not at or not body["messages"]:
            return body
        last = body["messages"][-1]
        text = last["content"] if isinstance(last["content"], str) else "".join(b["text"] for b in last["content"])
        last["content"] = split_text(text, at, cache_control)
        return body

    def parse(self, data: Any) -> ModelReply:
        return parse_messages_reply(data)
