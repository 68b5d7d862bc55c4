"""Custom model objects: any HTTP endpoint in a provider's format (docs/format.md, 'Custom model objects').

Fixes over the reference (docs/compatibility.md): generation passes the system prompt as a
message, so an anthropic-inherit model sends it as ``system`` (the reference dropped it) and a
google-inherit model as ``systemInstruction`` (the reference sent a ``system`` role inside
``contents``, which Gemini rejects). ``${VAR}`` in ``url`` and ``headers`` is substituted for
allowed variables only (docs/rulings.md, ruling 16).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_weval.engine.errors import ConfigError
from pytest_weval.engine.request import ChatMessage, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.keys import STANDARD_PROVIDERS, check_references, substitute
from pytest_weval.engine.transport.providers.anthropic import parse_messages_reply, split_system
from pytest_weval.engine.transport.providers.base import Adapter, MalformedReply, as_int, dig, openai_messages
from pytest_weval.engine.transport.providers.google import google_contents, parse_generate_content

_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|password", re.IGNORECASE)


def _field(definition: dict[str, Any], name: str, model_id: str, kind: type, default: Any, choices=None) -> Any:
    value = definition.get(name, default)
    if value is None:
        value = default
    if value is not None and not isinstance(value, kind):
        raise ConfigError(
            f"custom model '{model_id}': '{name}' must be a {kind.__name__}, not {type(value).__name__}",
            model_id=model_id,
        )
    if choices and value not in choices:
        raise ConfigError(
            f"custom model '{model_id}': {name} '{value}' is not one of {', '.join(choices)}",
            model_id=model_id,
        )
    return value


def completions_prompt(messages: tuple[ChatMessage, ...], raw: bool) -> str:
    """One prompt string for a completions endpoint (as the reference builds it)."""
    prompt = ""
    if not messages:
        return prompt
    for m in messages:
        content = m.content or ""
        if m.role == "system":
            prompt += content + "\n\n"
        elif raw:
            if m.role == "user" and len(messages) == 1:
                prompt += content
            elif m.role in ("user", "assistant"):
                prompt += content + "\n\n"
        elif m.role == "user":
            prompt += "User: " + content + "\n"
        elif m.role == "assistant":
            prompt += "Assistant: " + content + "\n"
    if not raw and not prompt.endswith("Assistant: "):
        prompt += "Assistant:"
    return prompt.strip()


class Custom(Adapter):
    def __init__(self, model_id: str, definition: dict[str, Any], allowed_env: frozenset[str]):
        super().__init__(model_id)
        self.definition = definition
        self.allowed_env = frozenset(allowed_env)
        self.url_template = _field(definition, "url", model_id, str, None)
        self.model_name = _field(definition, "modelName", model_id, str, None)
        if not self.url_template:
            raise ConfigError(f"custom model '{model_id}' has no 'url'", model_id=model_id)
        if self.model_name is None:
            raise ConfigError(f"custom model '{model_id}' has no 'modelName'", model_id=model_id)
        self.inherit = _field(definition, "inherit", model_id, str, "openai", STANDARD_PROVIDERS)
        self.format = _field(definition, "format", model_id, str, "chat", ("chat", "completions"))
        self.prompt_format = _field(
            definition, "promptFormat", model_id, str, "conversational", ("conversational", "raw")
        )
        self.headers_template = _field(definition, "headers", model_id, dict, {})
        self.parameters = _field(definition, "parameters", model_id, dict, {})
        self.mapping = _field(definition, "parameterMapping", model_id, dict, {})
        for name, value in self.headers_template.items():
            if not isinstance(value, str):
                raise ConfigError(f"custom model '{model_id}': header '{name}' must be a string", model_id=model_id)
            # A ${VAR} outside the allow-list is a config error at once, without reading the
            # environment (so a replay from the cache needs no variable set).
            check_references(value, f"header '{name}'", model_id, self.allowed_env)
        check_references(self.url_template, "url", model_id, self.allowed_env)
        # The limiter group is the id's provider part, as the reference's (default profile).
        self.provider = model_id.split(":", 1)[0].lower() if ":" in model_id else model_id.lower()
        self.endpoint = self.format

    def identity(self) -> dict[str, Any]:
        # The url *template* (a ${VAR} stays unsubstituted) and never a header value.
        return {
            "provider": "custom",
            "endpoint": self.format,
            "custom": {
                "url": self.url_template,
                "modelName": self.model_name,
                "inherit": self.inherit,
                "format": self.format,
                "promptFormat": self.prompt_format,
                "parameters": self.parameters,
                "parameterMapping": self.mapping,
            },
        }

    def _connect(self, env: Mapping[str, str], redactor: Redactor) -> tuple[str, dict[str, str]]:
        allowed = self.allowed_env
        url = substitute(self.url_template, "url", self.model_id, allowed, env, redactor)
        headers = {"Content-Type": "application/json"}
        for name, template in self.headers_template.items():
            value = substitute(template, f"header '{name}'", self.model_id, allowed, env, redactor)
            if _SECRET_HEADER.search(name):
                redactor.add(value)
            headers[str(name)] = value
        return url, headers

    def body(self, request: ModelRequest) -> dict[str, Any]:
        temperature = 0.3 if request.temperature is None else request.temperature
        max_tokens = 1500 if request.max_tokens is None else request.max_tokens
        body: dict[str, Any] = {"model": self.model_name, "stream": False}
        if self.inherit == "google":
            body["generationConfig"] = {"temperature": temperature, "maxOutputTokens": max_tokens}
        else:
            body[self.mapping.get("temperature") or "temperature"] = temperature
            body[self.mapping.get("maxTokens") or "max_tokens"] = max_tokens
        if self.format == "completions":
            body["prompt"] = completions_prompt(request.messages, raw=self.prompt_format == "raw")
        elif self.inherit == "anthropic":
            system, messages = split_system(request.messages)
            if system:
                body["system"] = system  # fix: the reference dropped the system message
            body["messages"] = messages
        elif self.inherit == "google":
            systems, contents = google_contents(request.messages)
            if systems:  # fix: the reference sent role "system" inside contents
                body["systemInstruction"] = {"parts": [{"text": "\n\n".join(systems)}]}
            body["contents"] = contents
        else:
            body["messages"] = openai_messages(request.messages)
        for name, value in self.parameters.items():  # applied last; null deletes
            if value is None:
                body.pop(name, None)
            else:
                body[name] = value
        return body

    def parse(self, data: Any) -> ModelReply:
        if self.format == "completions":
            text = dig(data, "choices", 0, "text")
            if not isinstance(text, str):
                raise MalformedReply("choices[0].text is not text")
            reply = ModelReply(text=text.strip())
        elif self.inherit == "anthropic":
            reply = parse_messages_reply(data)
        elif self.inherit == "google":
            reply = parse_generate_content(data)
        else:
            content = dig(data, "choices", 0, "message", "content")
            if content is None:
                content = ""
            if not isinstance(content, str):
                raise MalformedReply("choices[0].message.content is not text")
            reply = ModelReply(text=content.strip())
        usage = data.get("usage") if isinstance(data, dict) and isinstance(data.get("usage"), dict) else None
        if usage and not (reply.input_tokens or reply.output_tokens):
            reply.input_tokens = as_int(usage.get("prompt_tokens") or usage.get("input_tokens"))
            reply.output_tokens = as_int(usage.get("completion_tokens") or usage.get("output_tokens"))
        return reply
