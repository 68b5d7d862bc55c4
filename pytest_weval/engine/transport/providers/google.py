"""Google Gemini generateContent (docs/engine.md, 'Providers'). The key goes in x-goog-api-key, never the URL (docs/rulings.md, ruling 17)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from pytest_weval.engine.request import ChatMessage, ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.keys import api_key, base_url
from pytest_weval.engine.transport.providers.base import (
    Adapter,
    BodyError,
    MalformedReply,
    offers_tier,
    reply_from_blocks,
)


def google_contents(messages: tuple[ChatMessage, ...]) -> tuple[list[str], list[dict[str, Any]]]:
    """(system texts, contents): system messages go to systemInstruction; assistant -> model."""
    systems: list[str] = []
    contents: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            if m.content:
                systems.append(m.content)
            continue
        role = "model" if m.role == "assistant" else m.role
        contents.append({"role": role, "parts": [{"text": m.content or ""}]})
    return systems, contents


def parse_generate_content(data: Any) -> ModelReply:
    candidates = data.get("candidates") if isinstance(data, dict) else None
    if not candidates:
        feedback = data.get("promptFeedback") if isinstance(data, dict) else None
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            raise BodyError(400, f"prompt blocked by the provider ({feedback['blockReason']})")
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            raise BodyError(502, str(data["error"].get("message")))
        raise MalformedReply("reply has no candidates")
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise MalformedReply("candidates[0] is not an object")
    parts = (candidate.get("content") or {}).get("parts") or []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, dict) or part.get("thought"):
            continue
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            calls.append({"name": call.get("name"), "arguments": call.get("args")})
    usage = data.get("usageMetadata") if isinstance(data.get("usageMetadata"), dict) else {}
    return reply_from_blocks(texts, calls, usage.get("promptTokenCount"), usage.get("candidatesTokenCount"), data)


class Google(Adapter):
    provider = "google"
    endpoint = "generateContent"
    has_batch_api = True  # Gemini batch mode (transport/batch_api.py GoogleBatches)

    def __init__(self, model_id: str, model_name: str):
        super().__init__(model_id)
        self.model_name = model_name.removeprefix("models/")

    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "endpoint": self.endpoint, "model": self.model_name}

    def _connect(self, env: Mapping[str, str], redactor: Redactor) -> tuple[str, dict[str, str]]:
        key = api_key(self.provider, self.model_id, env, redactor)
        name = quote(self.model_name, safe="-._~")
        url = f"{base_url(self.provider, env)}/v1beta/models/{name}:generateContent"
        return url, {"x-goog-api-key": key, "Content-Type": "application/json"}

    def body(self, request: ModelRequest) -> dict[str, Any]:
        systems, contents = google_contents(request.messages)
        body: dict[str, Any] = {
            "contents": contents,
            "generationConfig": {
                "temperature": self.temperature(request),
                "maxOutputTokens": self.max_tokens(request),
            },
        }
        if systems:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(systems)}]}
        tier = self.tier_sent()
        if tier is not None:
            body["serviceTier"] = tier  # as google-genai sends GenerateContentConfig.service_tier
        return body

    def tier_sent(self) -> str | None:
        """Gemini's flex and priority tiers, to the models that take them; ``default`` is its
        ``standard`` tier, what it serves when asked nothing."""
        tier = self.service_tier
        if tier in ("flex", "priority") and offers_tier(self.model_id, tier):
            return tier
        return None

    def batch_body(self, request: ModelRequest) -> dict[str, Any]:
        # A GenerateContentRequest inside a batch names its model (the live one has it in the URL).
        return {"model": f"models/{self.model_name}", **self.body(request)}

    def parse(self, data: Any) -> ModelReply:
        return parse_generate_content(data)
