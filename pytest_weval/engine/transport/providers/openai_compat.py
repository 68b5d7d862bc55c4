"""OpenAI-style chat completions: openai, mistral, together, xai, openrouter (docs/engine.md, 'Providers')."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_weval.engine.request import ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.keys import api_key, base_url
from pytest_weval.engine.transport.providers.base import (
    Adapter,
    MalformedReply,
    as_int,
    billing_of,
    body_error,
    dig,
    offers_tier,
    openai_messages,
    prefix_key,
    split_text,
    tool_call_line,
)

# OpenAI reasoning families: max_completion_tokens instead of max_tokens, no temperature.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
# Anthropic's smallest cacheable prompt, by model (its prompt-caching guide): 1,024 tokens
# unless listed here (first match wins).
ANTHROPIC_CACHE_MIN = (
    ("haiku-4-5", 4096),
    ("opus-4-5", 4096),
    ("opus-4-6", 4096),
    ("sonnet-4-6", 2048),
    ("3-5-haiku", 2048),
    ("3-haiku", 2048),
)


def anthropic_cache_min(model_name: str) -> int:
    name = model_name.lower()
    return next((tokens for part, tokens in ANTHROPIC_CACHE_MIN if part in name), 1024)


class OpenAICompat(Adapter):
    endpoint = "chat"

    def __init__(self, provider: str, model_id: str, model_name: str):
        super().__init__(model_id)
        self.provider = provider
        self.model_name = model_name
        # OpenAI's, xAI's, Together's and Mistral's batch APIs (transport/batch_api.py); OpenRouter has none
        self.has_batch_api = provider in ("openai", "xai", "together", "mistral")
        if provider == "openrouter":
            self.default_temperature = 0.7
            self.default_max_tokens = None  # not sent when not given
        reasoning = provider == "openai" and model_name.startswith(_REASONING_PREFIXES)
        self.use_max_completion_tokens = reasoning
        self.send_temperature = not reasoning

    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "endpoint": self.endpoint, "model": self.model_name}

    def _connect(self, env: Mapping[str, str], redactor: Redactor) -> tuple[str, dict[str, str]]:
        key = api_key(self.provider, self.model_id, env, redactor)
        url = base_url(self.provider, env) + "/chat/completions"
        return url, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": openai_messages(request.messages),
            "stream": False,
        }
        temperature = self.temperature(request)
        if self.send_temperature and temperature is not None:
            body["temperature"] = temperature
        max_tokens = self.max_tokens(request)
        if max_tokens is not None:
            body["max_completion_tokens" if self.use_max_completion_tokens else "max_tokens"] = max_tokens
        tier = self.tier_sent()
        if tier is not None:
            body["service_tier"] = tier
        if self.provider == "openai":
            # OpenAI caches any prompt of 1,024 tokens or more by itself; the key keeps the calls
            # that share a prefix on the same cache.
            if self.caches_prefix(request, 1024):
                body["prompt_cache_key"] = prefix_key(request, request.shared_prefix_chars)
        elif self.provider == "openrouter" and self.model_name.startswith("anthropic/"):
            at = self.caches_prefix(request, anthropic_cache_min(self.model_name))
            if at:  # Anthropic through OpenRouter: the same cache_control marks, on content parts
                last = body["messages"][-1]
                last["content"] = split_text(last["content"], at, {"type": "ephemeral"})
        return body

    def tier_sent(self) -> str | None:
        """OpenAI only: ``default`` as asked; ``flex`` and ``priority`` to the models that take them."""
        tier = self.service_tier
        if self.provider != "openai" or tier == "auto":
            return None
        if tier == "default" or offers_tier(self.model_id, tier):
            return tier
        return None

    def adapt(self, status: int, data: Any) -> bool:
        """OpenAI: a 400 naming max_tokens/temperature as unsupported adapts once per model."""
        if self.provider != "openai" or status != 400 or not isinstance(data, dict):
            return False
        error = data.get("error")
        if not isinstance(error, dict):
            error = {}
        param = str(error.get("param") or "")
        message = str(error.get("message") or "").lower()
        unsupported = "not supported" in message or "unsupported" in message
        changed = False
        if (param == "max_tokens" or ("max_tokens" in message and unsupported)) and not self.use_max_completion_tokens:
            self.use_max_completion_tokens = True
            changed = True
        if (param == "temperature" or ("temperature" in message and unsupported)) and self.send_temperature:
            self.send_temperature = False
            changed = True
        return changed

    def parse(self, data: Any) -> ModelReply:
        error = body_error(data)
        if error is not None:
            raise error
        choices = dig(data, "choices")
        if not isinstance(choices, list) or not choices:
            raise MalformedReply("reply has no choices")
        message = dig(choices[0], "message")
        if not isinstance(message, dict):
            raise MalformedReply("choices[0].message is not an object")
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise MalformedReply("choices[0].message.content is not text")
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and function.get("name"):
                calls.append({"name": function.get("name"), "arguments": function.get("arguments")})
        if self.provider == "openrouter":
            text = content  # the reference neither trims nor synthesises TOOL_CALL lines here
        else:
            lines = [tool_call_line(c["name"], c["arguments"]) for c in calls]
            if content.strip():
                lines.append(content.strip())
            text = "\n".join(lines)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return ModelReply(
            text=text,
            input_tokens=as_int(usage.get("prompt_tokens")),
            output_tokens=as_int(usage.get("completion_tokens")),
            tool_calls=calls,
            billing=billing_of(data),
        )
